"""Iterative parameter mixing on a local Dask cluster (omkl.distributed)."""

from __future__ import annotations

import copy
import os
import pickle
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("dask.distributed")

import cloudpickle  # noqa: E402
from dask.distributed import Client, LocalCluster  # noqa: E402
from river.linear_model import LogisticRegression  # noqa: E402

import omkl  # noqa: E402
from omkl._kernel_mixing import export_kernel, mix_kernel  # noqa: E402
from omkl._mixing import export_params, import_params, mix  # noqa: E402
from omkl.distributed import train  # noqa: E402

# the readers below run on the workers, which cannot import this file
cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="session")
def client():
    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


def _problem(n: int, seed: int) -> list[tuple[dict[str, float], str]]:
    """Three linearly separable classes; the ``noise`` group carries nothing."""
    rng = np.random.default_rng(seed)
    out = []
    centres = {"a": (3.0, 0.0), "b": (0.0, 3.0), "c": (-3.0, -3.0)}
    for i in range(n):
        y = "abc"[i % 3]
        cx, cy = centres[y]
        x = {
            "sig_x": cx + rng.normal(scale=0.5),
            "sig_y": cy + rng.normal(scale=0.5),
            "noise_u": rng.normal(),
            "noise_v": rng.normal(),
        }
        out.append((x, y))
    return out


def _warm(est: Any, data: list[tuple[dict[str, float], Any]]) -> Any:
    """``est`` after one example of each class (so it knows every class and
    group before distributed training)."""
    seen: set[Any] = set()
    for x, y in data:
        if y not in seen:
            est.learn_one(x, y)
            seen.add(y)
    return est


def _assert_same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].dtype == b[k].dtype, k
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def _assert_close(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=1e-12, atol=1e-12, err_msg=k)


def _mix_by_hand(
    est: Any, shards: list[Any], learn: Callable[[Any, list[Any], int], None], rounds: int = 2
) -> dict[str, np.ndarray]:
    """The parameters after ``rounds`` rounds of mixing computed here: in each
    round every shard ``k``'s worker, a copy of ``est`` holding the mixed
    parameters, runs ``learn(worker, shard, k)``, and the workers' parameters
    are averaged weighted by shard size."""
    sizes = [len(s) for s in shards]
    start = export_params(est)
    for _ in range(rounds):
        workers = []
        for k, shard in enumerate(shards):
            m = copy.deepcopy(est)
            import_params(m, start)
            learn(m, shard, k)
            workers.append(export_params(m))
        start = _average(workers, sizes)
    return start


def _fit_copies(est: Any, shards: list[Any]) -> list[Any]:
    """One copy of ``est`` fitted on each shard."""
    workers = []
    for shard in shards:
        m = copy.deepcopy(est)
        m.fit([x for x, _ in shard], [y for _, y in shard])
        workers.append(m)
    return workers


def _average(models: list[dict[str, np.ndarray]], sizes: list[int]) -> dict[str, np.ndarray]:
    total = sum(sizes)
    out = {}
    for k in models[0]:
        acc = sum(n / total * m[k].astype(np.float64) for m, n in zip(models, sizes, strict=True))
        if k.endswith(("rounds", "steps")):
            acc = np.round(acc)  # round counters are integers
        out[k] = np.asarray(acc).astype(models[0][k].dtype)
    return out


@pytest.mark.parametrize(
    "make",
    [
        lambda: omkl.ProximalClassifier(regularizer=("group_lasso", 1e-3), average=True),
        lambda: omkl.ProximalRegressor(regularizer=[("l1", 1e-3), ("l2_squared", 1e-3)]),
    ],
)
def test_one_shard_equals_training_in_one_process(client, make):
    data = _problem(150, 0)
    if isinstance(make(), omkl.ProximalRegressor):
        data = [(x, x["sig_x"] - 0.5 * x["sig_y"]) for x, _ in data]
    est = make()
    before = export_params(est)
    single = copy.deepcopy(est)
    for _ in range(3):
        single.learn_batch([x for x, _ in data], [y for _, y in data])
    model, history = train(est, [data], epochs=3, client=client, progress=False)
    _assert_same(export_params(model), export_params(single))
    got = [model.predict_one(x) for x, _ in data]
    want = [single.predict_one(x) for x, _ in data]
    if isinstance(est, omkl.ProximalRegressor):
        # the same parameters; the scale factors are folded into the weights
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    else:
        assert got == want
    assert [h["round"] for h in history] == [1, 2, 3]
    assert all(h["bytes"] > 0 and h["seconds"] > 0 for h in history)
    assert all(0 < h["worker_cpu_seconds"] and h["worker_seconds"] < h["seconds"] for h in history)
    _assert_same(export_params(est), before)  # the estimator passed in is untouched


def test_two_shards_mix_to_the_weighted_average_of_the_workers_models(client):
    data = _problem(210, 1)
    shards = [data[:60], data[60:]]
    est = _warm(omkl.ProximalClassifier(regularizer=[("group_lasso", 1e-3)], average=True), data)

    def learn(m: Any, shard: list[Any], _: int) -> None:
        m.learn_batch([x for x, _ in shard], [y for _, y in shard])

    want = _mix_by_hand(est, shards, learn)
    model, _ = train(est, shards, epochs=2, client=client, progress=False)
    _assert_close(export_params(model), want)
    assert model.classes_ == est.classes_


def test_mixing_keeps_the_regularisers_constraint_and_common_zeros(client):
    # each worker's round ends with the exact prox and projection on its own
    # iterate; the mixed point, their average, stays in the l2,1 ball and keeps
    # the zeros that every worker has
    data = _problem(240, 2)
    shards = [data[:80], data[80:160], data[160:]]
    est = _warm(
        omkl.ProximalClassifier(
            regularizer=[("group_lasso", 2.0), ("l21_ball", 0.1)], fit_intercept=False
        ),
        data,
    )
    workers = []
    for shard in shards:
        m = copy.deepcopy(est)
        m.learn_batch([x for x, _ in shard], [y for _, y in shard])
        workers.append(m.group_norms_)
    assert all(w["noise"] == 0.0 for w in workers)
    assert max(sum(w.values()) for w in workers) == pytest.approx(0.1)  # the ball is active
    model, _ = train(est, shards, client=client, progress=False)
    norms = model.group_norms_
    assert norms["noise"] == 0.0
    assert 0.0 < sum(norms.values()) <= 0.1 + 1e-12


def test_training_converges_on_a_separable_problem(client):
    data = _problem(400, 3)
    shards = [data[k::4] for k in range(4)]
    model, history = train(
        omkl.ProximalClassifier(regularizer=None),
        shards,
        epochs=4,
        client=client,
        progress=False,
        validation=lambda m: float(np.mean([m.predict_one(x) == y for x, y in data])),
    )
    assert [h["shards"] for h in history] == [4] * 4
    assert history[-1]["validation"] == 1.0
    assert all(h["bytes"] > 0 for h in history)


def test_a_dask_bag_gives_one_shard_per_partition(client):
    import dask.bag as db

    data = _problem(90, 6)
    est = _warm(omkl.ProximalClassifier(), data)
    bag = db.from_sequence(data, npartitions=3)
    parts = [p.compute() for p in bag.to_delayed()]
    model, history = train(est, bag, epochs=2, client=client, progress=False)
    plain, _ = train(est, parts, epochs=2, client=client, progress=False)
    assert history[0]["shards"] == len(parts) == 3
    _assert_same(export_params(model), export_params(plain))


def _reader_that_kills_its_worker_once(path: str) -> list[Any]:
    """Reads a shard, but kills its worker the first time it reads each
    shard: the workers reading the shards of a round all die at once."""
    flag = path + ".killed"
    try:
        os.close(os.open(flag, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        with open(path, "rb") as f:
            return pickle.load(f)
    os._exit(1)


def test_a_worker_killed_mid_round_is_survived(client, tmp_path):
    data = _problem(120, 4)
    paths = []
    for k, shard in enumerate([data[:60], data[60:]]):
        p = tmp_path / f"shard{k}.pkl"
        p.write_bytes(pickle.dumps(shard))
        paths.append(str(p))
    est = _warm(omkl.ProximalClassifier(), data)
    model, _ = train(
        est,
        paths,
        epochs=2,
        client=client,
        shard_reader=_reader_that_kills_its_worker_once,
        progress=False,
    )
    assert all(os.path.exists(p + ".killed") for p in paths)
    plain, _ = train(est, [data[:60], data[60:]], epochs=2, client=client, progress=False)
    _assert_same(export_params(model), export_params(plain))
    client.wait_for_workers(2, timeout=60)


def _failing_reader(name: str) -> list[Any]:
    if name == "b":
        raise OSError("disk gone")
    return _problem(30, 5)


def test_a_cluster_without_workers_is_reported_after_waiting(monkeypatch):
    import omkl.distributed

    monkeypatch.setattr(omkl.distributed, "WORKER_WAIT_SECONDS", 0.5)
    with (
        LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster,
        Client(cluster) as empty,
    ):
        with pytest.raises(RuntimeError, match="no workers .*0.5 s"):
            train(omkl.ProximalClassifier(), [_problem(20, 3)], client=empty, progress=False)


def test_bad_input_raises_clear_errors_and_leaves_the_model_unchanged(client):
    data = _problem(30, 5)
    est = _warm(omkl.ProximalClassifier(), data)
    before = export_params(est)
    with pytest.raises(ValueError, match="shard 1 is empty"):
        train(est, [data, []], client=client, progress=False)
    with pytest.raises(ValueError, match=r"shard 1 has labels \['z'\] outside"):
        train(
            est,
            [data, [({"sig_x": 1.0}, "z")]],
            classes=["a", "b", "c"],
            client=client,
            progress=False,
        )
    with pytest.raises(ValueError, match="shard 0, example 0: expected a pair"):
        train(est, [[{"sig_x": 1.0}], data], client=client, progress=False)
    with pytest.raises(RuntimeError, match="shard 1 failed in .*: OSError: disk gone"):
        train(est, ["a", "b"], shard_reader=_failing_reader, client=client, progress=False)
    with pytest.raises(TypeError, match="got LogisticRegression"):
        train(LogisticRegression(), [data], client=client, progress=False)
    with pytest.raises(OSError, match="could not reach the Dask scheduler"):
        train(est, [data], client="tcp://127.0.0.1:1", progress=False)
    with pytest.raises(OSError):
        Client("tcp://127.0.0.1:1", timeout="1s")
    with pytest.raises(ValueError, match="expected an integer >= 1"):
        train(est, [data], epochs=0, client=client, progress=False)
    _assert_same(export_params(est), before)
    assert est.n_rounds_ == 3


def test_mixing_models_of_different_feature_spaces_is_refused():
    a = omkl.ProximalClassifier()
    b = omkl.ProximalClassifier()
    a.learn_one({"x": 1.0}, "p")
    b.learn_one({"x": 1.0}, "p")
    b.learn_one({"y": 1.0}, "q")
    with pytest.raises(ValueError, match="shard 1 has a different layout from shard 0"):
        mix([export_params(a), export_params(b)], [1, 1], ["shard 0", "shard 1"])
    with pytest.raises(ValueError, match="params"):
        import_params(a, export_params(b))
    with pytest.raises(TypeError, match="got LogisticRegression"):
        export_params(LogisticRegression())


TREEBANK = """
1 Dogs dog NOUN NNS _ 2 nsubj _ _
2 bark bark VERB VBP _ 0 root _ _
3 . . PUNCT . _ 2 punct _ _

1 The the DET DT _ 2 det _ _
2 cat cat NOUN NN _ 3 nsubj _ _
3 sleeps sleep VERB VBZ _ 0 root _ _

1 Birds bird NOUN NNS _ 2 nsubj _ _
2 sing sing VERB VBP _ 0 root _ _
3 songs song NOUN NNS _ 2 obj _ _

1 A a DET DT _ 2 det _ _
2 dog dog NOUN NN _ 3 nsubj _ _
3 saw see VERB VBD _ 0 root _ _
4 birds bird NOUN NNS _ 3 obj _ _
"""


def _write_treebank(path: Path, copies: int) -> str:
    rows = ["\t".join(line.split()) if line.strip() else "" for line in TREEBANK.splitlines()]
    path.write_text(("\n".join(rows[1:]) + "\n\n") * copies)
    return str(path)


def _arc_parser(**params: Any) -> omkl.DependencyParser:
    """A parser over the first 30 templates with tables of the smallest size whatever the
    counts (so that every shard's model agrees) and no labeler."""
    return omkl.DependencyParser(
        templates=list(range(30)), label_epochs=0, max_table_bits=8, **params
    )


def test_parser_one_shard_equals_fit(client, tmp_path):
    path = _write_treebank(tmp_path / "train.conllu", 3)
    est = omkl.DependencyParser(templates=list(range(30)), epochs=2, prune_k=2, label_epochs=1)
    single = copy.deepcopy(est).fit(path)
    model, history = train(est, [path], client=client, progress=False)
    assert [h["stage"] for h in history] == ["pruner", "arc", "arc", "label"]
    _assert_same(export_params(model), export_params(single))
    assert model.parse_with_labels(path) == single.parse_with_labels(path)
    assert len(model.history_) == 2 and len(model.pruner_history_) == 1
    assert est._core.steps() == 0


def test_parser_two_shards_mix_to_the_weighted_average(client, tmp_path):
    a = _write_treebank(tmp_path / "a.conllu", 2)
    b = _write_treebank(tmp_path / "b.conllu", 3)
    est = _arc_parser(regularizer="squared_l21", lam=1e-3, epochs=1, prune_k=0, seed=5)
    workers = []
    for k, path in enumerate([a, b]):
        m = copy.deepcopy(est)
        m.seed = est.seed + k  # shard k shuffles with seed + k
        workers.append(export_params(m.fit(path)))
    expected = _average(workers, [8, 12])
    model, history = train(est, [a, b], client=client, progress=False)
    got = export_params(model)
    for k in ("arc/weights", "arc/sums", "arc/steps"):
        np.testing.assert_array_equal(got[k], expected[k], err_msg=k)
    assert history[0]["bytes"] > 0


def test_parser_two_shards_with_a_pruner_mix_each_stage_to_the_weighted_average(client, tmp_path):
    import random

    from omkl.parsing import _training_corpus

    paths = [_write_treebank(tmp_path / "a.conllu", 2), _write_treebank(tmp_path / "b.conllu", 3)]
    est = _arc_parser(epochs=2, prune_k=2, seed=3)
    # by hand: the pruner round, then two arc rounds, each mixed weighted by
    # shard size; shard k shuffles with seed + k, one order per round; the
    # workers of the arc rounds start from the mixed pruner and arc weights
    # and keep their own running sums, which are averaged at the end
    corpora = [_training_corpus(p) for p in paths]
    rngs = [random.Random(est.seed + k) for k in range(2)]
    sizes = [len(c) for c in corpora]

    def orders() -> list[list[int]]:
        out = [list(range(n)) for n in sizes]
        for rng, order in zip(rngs, out, strict=True):
            rng.shuffle(order)
        return out

    base = copy.deepcopy(est)  # tables sized for the summed per-shard counts
    counts = np.sum([omkl._omkl.parser_key_counts(base._core, c) for c in corpora], axis=0)
    omkl._omkl.parser_set_table_counts(base._core, counts.tolist(), 1.0, est.max_table_bits)
    # decoder="auto" chooses from the shards' trees, all projective here
    assert est.decoder == "auto" and {c[0] for k in corpora for c in k.nonprojective_arcs()} == {0}
    base._core.decoder = "eisner"
    workers = [copy.deepcopy(base) for _ in corpora]
    for m, c, o in zip(workers, corpora, orders(), strict=True):
        m._core.fit_epoch(c, o, None, True)
    pruner = _average(
        [{k: v for k, v in export_params(m).items() if k.startswith("pruner/")} for m in workers],
        sizes,
    )
    for m in workers:
        import_params(m, {**export_params(m), **pruner})
    assert all(m.pruner_recall(paths[0]) > 0 for m in workers)
    for r in range(2):
        for m, c, o in zip(workers, corpora, orders(), strict=True):
            m._core.fit_epoch(c, o, None, False)
        arc = _average([export_params(m) for m in workers], sizes)
        if r == 0:  # the mixed weights and steps, each worker's own sums
            for m in workers:
                own = export_params(m)
                import_params(
                    m, {**own, "arc/weights": arc["arc/weights"], "arc/steps": arc["arc/steps"]}
                )
    model, history = train(est, paths, client=client, progress=False)
    assert [h["stage"] for h in history] == ["pruner", "arc", "arc"]
    assert model.decoder_ == "eisner"
    got = export_params(model)
    for k in ("pruner/weights", "pruner/sums", "pruner/steps"):
        np.testing.assert_array_equal(got[k], pruner[k], err_msg=k)
    for k in ("arc/weights", "arc/sums", "arc/steps"):
        np.testing.assert_array_equal(got[k], arc[k], err_msg=k)
    # the arc rounds send the mixed weights to the workers, not their sums
    n = got["arc/weights"].nbytes
    # (the weights and step count out to each worker, with the sums back)
    assert history[2]["bytes"] == 2 * (n + 8) + 2 * (2 * n + 8)


def _drop_parser_models() -> None:
    import omkl.distributed

    omkl.distributed._MODELS.clear()


def test_a_parser_model_lost_between_rounds_is_rebuilt_from_the_mixed_parameters(client, tmp_path):
    paths = [_write_treebank(tmp_path / "a.conllu", 2), _write_treebank(tmp_path / "b.conllu", 3)]
    est = _arc_parser(epochs=3, prune_k=2)

    def lose_models(_: Any) -> float:
        client.run(_drop_parser_models)  # as if every worker had been replaced
        return 0.0

    plain, _ = train(est, paths, client=client, progress=False, validation=lambda m: 0.0)
    model, history = train(
        est, paths, client=client, progress=False, validation=lose_models, retries=0
    )
    assert [h["stage"] for h in history] == ["pruner", "arc", "arc", "arc"]
    got, want = export_params(model), export_params(plain)
    for k in ("pruner/weights", "pruner/sums", "arc/weights", "arc/steps"):
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)
    # the rebuilt workers start from the mixed sums instead of their own:
    # the same sums up to float32 rounding
    np.testing.assert_allclose(got["arc/sums"], want["arc/sums"], rtol=1e-5, atol=1e-6)


def _sequences(n: int, seed: int) -> list[tuple[list[dict[str, Any]], list[str]]]:
    """Short tagged sentences: determiners, nouns and verbs in a simple
    grammar, each token described by ``token_features``."""
    from omkl.tagging import token_features

    rng = np.random.default_rng(seed)
    words = {"DET": ["the", "a"], "NOUN": ["dog", "cat", "bird"], "VERB": ["sees", "runs"]}
    out = []
    for _ in range(n):
        tags = ["DET", "NOUN", "VERB"] + (["DET", "NOUN"] if rng.random() < 0.5 else [])
        ws = [str(rng.choice(words[t])) for t in tags]
        out.append((token_features(ws), tags))
    return out


def test_text_tagger_one_shard_equals_fit(client):
    data = _sequences(40, 7)
    est = omkl.TextTagger(regularizer=[("group_lasso", 1e-3)], average=True, n_buckets=64)
    single = copy.deepcopy(est).fit(
        [x for x, _ in data], [y for _, y in data], epochs=3, shuffle=True, seed=4
    )
    model, history = train(est, [data], epochs=3, client=client, progress=False, seed=4)
    _assert_same(export_params(model), export_params(single))
    assert model.labels_ == single.labels_
    assert model.predict([x for x, _ in data]) == single.predict([x for x, _ in data])
    assert [h["round"] for h in history] == [1, 2, 3]
    assert all(h["loss"] is not None and h["bytes"] > 0 for h in history)
    assert est.labels_ == []  # the estimator passed in is untouched


def test_text_tagger_two_shards_mix_to_the_weighted_average(client):
    data = _sequences(50, 8)
    shards = [data[:20], data[20:]]
    est = omkl.TextTagger(regularizer=[("squared_l21", 1e-3)], average=True, n_buckets=64)
    # a pass over everything first, so that every template and label is known
    # and registering the shards' layout ahead of the first round changes nothing
    est.fit([x for x, _ in data], [y for _, y in data])
    rngs = [np.random.default_rng(2 + k) for k in range(2)]

    def learn(m: Any, shard: list[Any], k: int) -> None:
        order = rngs[k].permutation(len(shard))
        m.fit([shard[i][0] for i in order], [shard[i][1] for i in order])

    want = _mix_by_hand(est, shards, learn)
    model, _ = train(est, shards, epochs=2, client=client, progress=False, seed=2)
    _assert_close(export_params(model), want)
    assert model.labels_ == est.labels_


def test_text_tagger_shards_get_a_common_layout_and_bad_input_is_refused(client):
    data = _sequences(30, 9)
    extra = [([{"w": "ok", "suffix": "k"}], ["INTJ"])]  # a label and a template of its own
    est = omkl.TextTagger(n_buckets=64)
    model, history = train(est, [data, extra], epochs=2, client=client, progress=False)
    assert model.labels_ == ["DET", "NOUN", "VERB", "INTJ"]
    assert "suffix" in model.template_weights_
    assert history[0]["shards"] == 2
    with pytest.raises(ValueError, match="shard 1, example 0: expected a pair"):
        train(est, [data, [[{"w": "x"}]]], client=client, progress=False)
    with pytest.raises(ValueError, match=r"shard 1 has labels \['INTJ'\] outside"):
        train(est, [data, extra], classes=["DET", "NOUN", "VERB"], client=client, progress=False)
    with pytest.raises(ValueError, match="seed: expected an integer"):
        train(est, [data], seed=-1, client=client, progress=False)
    assert est.labels_ == [] and est._state.rounds == 0


def _rows(n: int, seed: int) -> list[tuple[np.ndarray, str]]:
    """``_problem`` with its two informative features as arrays."""
    return [(np.array([x["sig_x"], x["sig_y"]]), y) for x, y in _problem(n, seed)]


def _mkl(**kw: Any) -> omkl.MKLClassifier:
    return omkl.MKLClassifier(kernels=["linear", "gaussian"], lam=1e-3, **kw)


def test_mkl_one_shard_equals_training_in_one_process(client):
    data = _rows(90, 10)
    est = _mkl(max_support=40)
    single = copy.deepcopy(est)
    for _ in range(2):
        single.fit([x for x, _ in data], [y for _, y in data])
    model, history = train(est, [data], epochs=2, client=client, progress=False)
    assert model._state.to_bytes() == single._state.to_bytes()
    assert model.kernel_weights_ == single.kernel_weights_
    assert model.predict([x for x, _ in data]) == single.predict([x for x, _ in data])
    assert len(history) == 2 and est._state is None


def _xor(n: int, seed: int) -> list[tuple[np.ndarray, str]]:
    """Two noisy classes by the signs of two features: many mistakes, so
    many support inputs."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2))
    flip = rng.random(n) < 0.1
    return [(v, "ab"[int((v[0] * v[1] > 0) ^ f)]) for v, f in zip(x, flip, strict=True)]


def test_mkl_two_shards_mix_to_the_weighted_average_of_the_workers(client):
    data = _xor(150, 11)
    # the same inputs on both shards: their coefficients are summed in the union
    shards = [data[:50], data[50:] + data[:25]]
    sizes = [len(s) for s in shards]
    est = _mkl(labels=["a", "b"])
    workers = _fit_copies(est, shards)
    model, history = train(est, shards, epochs=1, client=client, progress=False)
    assert (
        max(w.n_support_ for w in workers) < model.n_support_ < sum(w.n_support_ for w in workers)
    )
    w = np.array(sizes, dtype=float) / sum(sizes)
    for x, _ in _xor(30, 12):
        want = w[0] * np.array(workers[0]._scores(x)) + w[1] * np.array(workers[1]._scores(x))
        np.testing.assert_allclose(model._scores(x), want, rtol=1e-9, atol=1e-9)
    assert model.n_rounds_ == round(w @ [wk.n_rounds_ for wk in workers])
    # the norms are those of the mixed expansion: mixing it alone keeps them
    again = copy.deepcopy(model)
    import_params(again, mix_kernel([export_kernel(model), export_kernel(model)], [1, 1]))
    assert again.group_norms_ == pytest.approx(model.group_norms_, rel=1e-9)
    assert sum(model.kernel_weights_.values()) == pytest.approx(1.0)
    assert history[0]["bytes"] > 0


def test_mkl_shards_of_dict_inputs_get_their_columns_ahead_in_shard_order(client):
    # Shard 0's first input names "u" and "v", shard 1's only "v": each
    # worker alone would number the columns differently. Registered ahead in
    # shard order, the columns are (u, v) on both, and the mixed model is the
    # one the same shards give as arrays with the columns (u, v).
    data = _xor(120, 15)
    drop_u = {i for i in range(60, 120, 3)}
    drop_v = {i for i in range(1, 60, 4)}
    dicts, arrays = [], []
    for i, (v, y) in enumerate(data):
        d = {"u": float(v[0]), "v": float(v[1])}
        if i in drop_u:
            d.pop("u")
        if i in drop_v:
            d.pop("v")
        dicts.append((d, y))
        arrays.append((np.array([d.get("u", 0.0), d.get("v", 0.0)]), y))
    est = _mkl(intercept=False)
    by_dict, _ = train(est, [dicts[:60], dicts[60:]], epochs=2, client=client, progress=False)
    by_array, _ = train(est, [arrays[:60], arrays[60:]], epochs=2, client=client, progress=False)
    assert by_dict._features == ["u", "v"]
    for (d, _), (a, _) in zip(dicts[:30], arrays[:30], strict=True):
        np.testing.assert_allclose(by_dict._scores(d), by_array._scores(a), rtol=1e-12)
    assert by_dict.kernel_weights_ == pytest.approx(by_array.kernel_weights_, rel=1e-12)
    assert est._state is None and est._features == []


def test_mkl_mixing_keeps_the_budget_and_refuses_models_that_differ(client):
    data = _xor(200, 13)
    shards = [data[:100], data[100:]]
    est = _mkl(max_support=12)
    free = []
    for shard in shards:
        m = _mkl(labels=["a", "b"])
        m.fit([x for x, _ in shard], [y for _, y in shard])
        free.append(m.n_support_)
    model, _ = train(est, shards, epochs=2, client=client, progress=False)
    assert sum(free) > 12 and model.n_support_ == 12
    a, b, c = _mkl(), omkl.MKLClassifier(kernels=["linear"]), _mkl()
    for m in (a, b):
        m.learn_one(data[0][0], "a")
    c.fit([x for x, _ in data[:3]], ["a", "b", "c"])
    with pytest.raises(ValueError, match="shard 1 has a different configuration"):
        mix_kernel([export_kernel(a), export_kernel(b)], [1, 1], ["shard 0", "shard 1"])
    with pytest.raises(ValueError, match="shard 1 has .* 3 labels, shard 0 has .* 1"):
        mix_kernel([export_kernel(a), export_kernel(c)], [1, 1], ["shard 0", "shard 1"])
    with pytest.raises(ValueError, match="model 1 has no model to mix"):
        mix_kernel([export_kernel(a), export_kernel(_mkl())], [1, 1])


def test_sequence_tagger_one_shard_equals_fit_and_two_shards_mix_to_the_average(client):
    rng = np.random.default_rng(14)
    data = []
    for _ in range(40):
        ys = [str(v) for v in rng.integers(0, 2, size=int(rng.integers(2, 5)))]
        xs = np.array([[float(t) + rng.normal(scale=0.5), rng.normal()] for t in ys])
        data.append((xs, ys))
    est = omkl.SequenceTagger(labels=["0", "1"])
    single = copy.deepcopy(est)
    for _ in range(2):
        single.fit([x for x, _ in data], [y for _, y in data])
    model, _ = train(est, [data], epochs=2, client=client, progress=False)
    assert model._state.to_bytes() == single._state.to_bytes()
    shards = [data[:15], data[15:]]
    workers = _fit_copies(est, shards)
    model, _ = train(est, shards, epochs=1, client=client, progress=False)
    w = [15 / 40, 25 / 40]
    for xs, _ in data[:5]:
        rows = np.asarray(xs, dtype=np.float32)
        want = sum(wk * np.asarray(m._state.scores(rows)) for wk, m in zip(w, workers, strict=True))
        np.testing.assert_allclose(model._state.scores(rows), want, rtol=1e-9, atol=1e-9)
    for k, t in model.transitions_.items():
        want = sum(wk * m.transitions_[k] for wk, m in zip(w, workers, strict=True))
        np.testing.assert_allclose(t, want, rtol=1e-9, atol=1e-12)
