"""Training on a Dask cluster by iterative parameter mixing.

:func:`train` trains a :class:`~omkl.ProximalClassifier`,
:class:`~omkl.ProximalRegressor`, :class:`~omkl.tagging.TextTagger`,
:class:`~omkl.DependencyParser`, :class:`~omkl.MKLClassifier` or
:class:`~omkl.SequenceTagger` on shards of data held by the workers of a
``dask.distributed`` cluster, by iterative parameter mixing (McDonald, Hall
and Mann, 2010): in every round (one epoch), each worker makes one pass over
its own shard starting from the current mixed parameters; the driver
averages the workers' parameters, weighted by shard size, and the next round
starts from that average.
Needs the optional dependency ``pip install "omkl[dask]"``.

**What travels.** Workers read their own shards (a list of examples is sent
once; a path is read on the worker by ``shard_reader``; a ``dask.bag``'s
partitions stay where they are). In each round only parameters travel: the
estimator's weights, running sums and round counters as flat numpy arrays
(see ``history[i]["bytes"]``): the mixed parameters to each shard's task,
the changed parameters back to the driver.
The initial estimator is sent once. With one shard, mixing is the identity
and the worker goes on with its own model: only its parameters travel back.

**The parser** keeps each shard's model on the worker that trains it (a
shard's rounds go to the same worker), so a round only sends what the
previous round mixed: the trained stage's arrays (the pruner's, the arc
model's or the label stage's), once to each worker (``client.scatter``
with ``broadcast=True``), and each worker sends back its arrays of the
stage. A worker's pass does not end the epoch (the exact norms, the
averaged parameters and β are computed once, on the driver's model). In the
arc rounds the workers take the mixed weights and step count but keep their
own running sums, and send them back only when the driver needs the
averaged model (the last round of a stage, or a round with
``validation``): the running sums are linear in the iterates, so the
weighted average of the workers' own sums is the sum the mixed models
would have accumulated, and the driver's model is the same, up to the
float32 rounding of the sums, as when the sums are mixed every round. A
worker lost between rounds is replaced by a model built from the initial
estimator and the driver's last mixed parameters (the running sums its shard
added since they were last sent back are then lost).

**State outside the parameters** is made the same on every worker before the
first round: with several shards, the driver collects every shard's classes
and feature groups (classifiers, regressors), labels and templates (text
tagger) or relation labels (parser)
and registers them, in shard order, in the initial model that every worker
starts from; the parser's table sizes are fitted to the summed per-shard
counts of distinct features (an upper bound of the count on their union),
and its ``decoder="auto"`` chooses from the shards' summed counts of
non-projective arcs, as ``fit`` does from its training file.
A classifier thus scores every class from the first round, where one process
adds a class when it first sees it. With ``classes=``, a shard holding a
label outside them is an error naming the shard. With one shard nothing is
registered ahead and training gives exactly the parameters of training in
one process (``learn_batch`` once per epoch, or the parser's ``fit``). The
parser's shard ``k`` shuffles its sentences with the seed ``seed + k``; the
text tagger's shard ``k`` visits its sequences in the order
:meth:`TextTagger.fit` draws with ``shuffle=True, seed=seed + k`` (one shard
trains as ``fit(X, Y, epochs, shuffle=True, seed=seed)``).
Round counters (the step-size clock, the rounds in the running sums) are
mixed like the other arrays and rounded to the nearest integer.

**The regulariser stays exact.** Each worker's rounds are the estimator's
own: a subgradient step, then the exact prox step(s) of the regulariser, on
that worker's iterate. The mixed point is the weighted average of the
workers' post-prox iterates (and of their running sums, whose ratio to the
averaged round counter is the averaged iterate); no prox step is applied to
the average. For a convex regulariser the average of points of its
domain stays in it (a ball constraint holds for the average), though an
ℓ1-type regulariser's zeros are zeros of the average only where every worker
has them.

**Shards** should each be a sample of the whole data (examples dealt
round-robin, or shuffled before the cut): mixing averages what the workers
learned from their shards, and contiguous blocks of a file ordered by
source or genre teach each worker a different part of the data between
mixings (``benches/README.md`` measures both on EWT).

**Failures.** A round's task that fails (a worker that dies mid-round) is
retried by Dask on the surviving workers (``retries`` times, and the
scheduler's own reassignment of lost tasks); if it still fails, a
``RuntimeError`` names the shard and the round. The estimator passed in is
never modified: :func:`train` returns a new one, built only after the last
round is mixed.

**Kernel estimators** (:class:`~omkl.MKLClassifier`,
:class:`~omkl.SequenceTagger`): a worker's pass is ``fit(X, y)`` on its
shard; its model travels as the Rust model's bytes and the driver mixes the
models in Rust (:mod:`omkl._kernel_mixing`): the average of kernel
expansions is an expansion over the union of the workers' supports, with
the coefficients of an input held by several workers summed (weighted by
shard size); scores are exactly the weighted average of the workers'
scores, the group norms and kernel weights are recomputed from the mixed
coefficients, and ``max_support`` is then enforced by keeping the inputs
with the largest coefficients (whatever the ``budget_rule``: shards are
streams with no common order). With several shards the labels, and the
feature names of dict inputs, are registered ahead (as for the
classifiers): each dict feature gets its column in shard order, as one
process learning the shards one after the other would give them, so that
every worker numbers the columns alike (and the scale rule of a named
Gaussian sees the same ``d``). A shard whose model ends a round with other
columns, labels or kernels is an error naming it. A drift detector's state
is not mixed (each round starts from the initial one).

Examples
--------
>>> from dask.distributed import Client, LocalCluster
>>> import omkl
>>> from omkl.distributed import train
>>> cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False)
>>> client = Client(cluster)
>>> data = [({"x_a": 1.0}, "yes"), ({"x_b": 1.0}, "no")] * 50
>>> model, history = train(omkl.ProximalClassifier(), [data[:50], data[50:]], epochs=3,
...                        client=client, progress=False)
>>> model.predict_one({"x_a": 1.0}), len(history), history[0]["shards"]
('yes', 3, 2)
>>> client.close(); cluster.close()
"""

from __future__ import annotations

import asyncio
import copy
import os
import random
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

try:
    from dask.distributed import Client, Future, LocalCluster, get_worker
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        'omkl.distributed needs Dask: install it with pip install "omkl[dask]"'
    ) from e

from omkl import _omkl
from omkl._kernel_mixing import KERNEL_MIXABLE, layout_of, mix_kernel, set_layout
from omkl._mixing import check_mixable, export_params, import_params, mix, nbytes
from omkl.linear import ProximalClassifier, ProximalRegressor
from omkl.mkl import SequenceTagger
from omkl.parsing import DependencyParser, _training_corpus
from omkl.tagging import TextTagger

__all__ = ["train"]

#: How long :func:`train` waits for a worker to join a cluster that has
#: none (its workers may be restarting) before it gives up.
WORKER_WAIT_SECONDS = 60

#: Parsed corpora of the parser's shards, by shard key, on each worker.
_CORPORA: dict[str, Any] = {}
_CORPORA_LOCK = threading.Lock()


def _shard_examples(data: Any, key: str) -> list[Any]:
    """A shard's examples as a list, or ``ValueError`` naming it."""
    if isinstance(data, str | bytes | dict) or not hasattr(data, "__iter__"):
        raise TypeError(f"{key}: expected a list of examples, got {type(data).__name__}")
    out = list(data)
    if len(out) == 0:
        raise ValueError(f"{key} is empty; expected at least one example")
    return out


def _parser_corpus(data: Any, key: str, cache: str) -> Any:
    """The parsed corpus of a parser shard (a path or a list of sentences),
    kept on the worker under ``cache`` for the next rounds."""
    with _CORPORA_LOCK:
        corpus = _CORPORA.get(cache)
    if corpus is None:
        if not isinstance(data, str | os.PathLike):
            data = _shard_examples(data, key)
        try:
            corpus = _training_corpus(data)
        except ValueError as e:
            raise ValueError(f"{key}: {e}") from None
        with _CORPORA_LOCK:
            _CORPORA[cache] = corpus
    return corpus


def _forget_corpora(caches: list[str]) -> None:
    """Drops the parsed corpora of a finished training from a worker."""
    with _CORPORA_LOCK:
        for c in caches:
            _CORPORA.pop(c, None)


def _scan(template: Any, data: Any, key: str, cache: str, several: bool) -> dict[str, Any]:
    """What the driver needs to know of a shard before the first round: its
    size and (with several shards) its labels, groups or feature counts."""
    if isinstance(template, DependencyParser):
        corpus = _parser_corpus(data, key, cache)
        out: dict[str, Any] = {"n": len(corpus)}
        rels = corpus.deprels()
        out["labelled"] = all(r not in ("", "_") for s in rels for r in s)
        if several and out["labelled"]:
            out["labels"] = list(dict.fromkeys(r for s in rels for r in s))
        if template._core.steps() == 0 and not template.history_:
            out["counts"] = _omkl.parser_key_counts(template._core, corpus)
            out["nonprojective"] = corpus.nonprojective_arcs()
        return out
    if isinstance(template, TextTagger):
        return _scan_tagger(template, data, key, several)
    if isinstance(template, KERNEL_MIXABLE):
        return _scan_kernel(template, data, key)
    xs = _shard_examples(data, key)
    labels: dict[Hashable, None] = {}
    names: dict[str, None] = {}
    for i, ex in enumerate(xs):
        if not (isinstance(ex, tuple | list) and len(ex) == 2 and isinstance(ex[0], dict)):
            raise ValueError(f"{key}, example {i}: expected a pair (dict of features, target)")
        if isinstance(template, ProximalRegressor):
            y = ex[1]
            if isinstance(y, bool) or not isinstance(y, int | float):
                raise ValueError(f"{key}, example {i}: expected a numeric target, got {y!r}")
        else:
            labels.setdefault(ex[1], None)
        if several:
            names.update(dict.fromkeys(str(k) for k in ex[0]))
    out = {"n": len(xs), "labels": list(labels)}
    if several:
        out["groups"] = _omkl.feature_groups(template._state, list(names))
    return out


def _tagger_shard(model: TextTagger, data: Any, key: str) -> tuple[list[Any], list[list[int]]]:
    """A text tagger's shard as token sequences and label ids, the labels
    it adds registered in ``model`` (as :meth:`TextTagger.fit` does)."""
    pairs = _shard_examples(data, key)
    xs: list[Any] = []
    ids: list[list[int]] = []
    for i, ex in enumerate(pairs):
        if not (isinstance(ex, tuple | list) and len(ex) == 2):
            raise ValueError(
                f"{key}, example {i}: expected a pair (list of tokens, list of labels)"
            )
        try:
            y, new = model._ids(ex[1])
        except ValueError as e:
            raise ValueError(f"{key}, example {i}: {e}") from None
        model._add_labels(new)
        xs.append(ex[0])
        ids.append(y)
    return xs, ids


def _scan_tagger(template: TextTagger, data: Any, key: str, several: bool) -> dict[str, Any]:
    """:func:`_scan` for a text tagger: the shard's size, labels and
    (with several shards) templates."""
    model = copy.deepcopy(template)
    n0 = len(model._labels)
    xs, ids = _tagger_shard(model, data, key)
    out: dict[str, Any] = {"n": len(xs), "labels": model._labels[n0:]}
    if several:
        try:
            model._learner().prepare(xs, ids)
        except ValueError as e:
            raise ValueError(f"{key}: {e}") from None
        out["groups"] = [g for g, _ in model._state.group_norms()]
    return out


def _kernel_shard(template: Any, data: Any, key: str) -> tuple[list[Any], list[Any]]:
    """A kernel estimator's shard as inputs and targets (rows and labels,
    or sequences and label sequences)."""
    pairs = _shard_examples(data, key)
    for i, ex in enumerate(pairs):
        if not (isinstance(ex, tuple | list) and len(ex) == 2):
            raise ValueError(f"{key}, example {i}: expected a pair (input, target)")
    return [x for x, _ in pairs], [y for _, y in pairs]


def _scan_kernel(template: Any, data: Any, key: str) -> dict[str, Any]:
    """:func:`_scan` for a kernel estimator: the shard's size, labels and
    (dict inputs) the feature names that would get new columns, in order."""
    xs, ys = _kernel_shard(template, data, key)
    tagger = isinstance(template, SequenceTagger)
    flat = [y for s in ys for y in s] if tagger else ys
    try:
        labels = list(dict.fromkeys(flat))
    except TypeError:
        raise ValueError(f"{key}: expected hashable labels") from None
    rows = [x for s in xs for x in s] if tagger else xs
    try:
        features = template._new_features(rows)
    except ValueError as e:
        raise ValueError(f"{key}: {e}") from None
    return {"n": len(ys), "labels": labels, "features": features}


class _Trained:
    """A model trained on a worker in one round, with the round's figures."""

    def __init__(
        self, model: Any, loss: float | None, seconds: float, cpu_seconds: float, n: int
    ) -> None:
        self.model, self.loss, self.n = model, loss, n
        self.seconds, self.cpu_seconds = seconds, cpu_seconds


def _pass(
    base: tuple[str, Any, Any],
    data: Any,
    key: str,
    order: list[int] | None,
) -> _Trained:
    """One pass over a shard from ``base`` (the estimators other than the
    parser, whose rounds are :func:`_parser_round`): ``("copy", model,
    None)`` continues a copy of a model (an estimator, or the one of a
    :class:`_Trained`), ``("params", template, params)`` starts from the
    template with the mixed parameters."""
    kind, a, b = base
    if kind == "copy":
        model = copy.deepcopy(a.model if isinstance(a, _Trained) else a)
    else:
        model = copy.deepcopy(a)
        import_params(model, b)
    t0, c0 = time.perf_counter(), time.process_time()
    loss: float | None = None
    if isinstance(model, KERNEL_MIXABLE):
        xs, ys = _kernel_shard(model, data, key)
        model.fit(xs, ys)
        n = len(xs)
    elif isinstance(model, TextTagger):
        xs, ids = _tagger_shard(model, data, key)
        learner = model._learner()
        loss = learner.fit_epoch(learner.prepare(xs, ids), order)
        n = len(xs)
    else:
        xs = _shard_examples(data, key)
        model.learn_batch([x for x, _ in xs], [y for _, y in xs])
        n = len(xs)
    return _Trained(model, loss, time.perf_counter() - t0, time.process_time() - c0, n)


def _layout_of(model: Any) -> dict[str, list[Any]]:
    """The state outside the parameters that the driver's model must share
    with a worker's to import its parameters."""
    if isinstance(model, DependencyParser):
        return {"labels": model._labeler.labels()}
    if isinstance(model, KERNEL_MIXABLE):
        return layout_of(model)
    if isinstance(model, TextTagger):
        return {"groups": [g for g, _ in model._state.group_norms()], "labels": list(model._labels)}
    out: dict[str, list[Any]] = {"groups": [g for g, _ in model._state.group_norms()]}
    if isinstance(model, ProximalClassifier):
        out["classes"] = list(model._classes)
    return out


def _set_layout(model: Any, layout: dict[str, list[Any]]) -> None:
    """Gives ``model`` the layout of a worker's model (see :func:`_layout_of`)."""
    if isinstance(model, DependencyParser):
        if layout["labels"]:
            _omkl.labeler_register(model._labeler, layout["labels"])
        return
    if isinstance(model, KERNEL_MIXABLE):
        set_layout(model, layout)
        return
    if isinstance(model, TextTagger):
        _omkl.register_layout(model._learner(), layout["groups"], max(len(layout["labels"]), 1))
        model._labels = list(layout["labels"])
        model._label_index = {y: k for k, y in enumerate(model._labels)}
        return
    classes = layout.get("classes")
    _omkl.register_layout(model._state, layout["groups"], max(len(classes or []), 1))
    if classes is not None:
        model._classes = list(classes)
        model._class_index = {y: k for k, y in enumerate(classes)}


def _export(trained: _Trained) -> tuple[dict[str, Any], dict[str, Any]]:
    """The parameters of a round's model, its layout and the round's figures."""
    params = export_params(trained.model)
    figures = {
        "loss": trained.loss,
        "seconds": trained.seconds,
        "cpu_seconds": trained.cpu_seconds,
        "layout": _layout_of(trained.model),
    }
    return params, figures


def _connect(client: Client | str | None) -> tuple[Client, Callable[[], None]]:
    """A running client, and how to close what this call opened."""
    if client is None:
        # one single-threaded worker process per core, and the parser's own
        # thread pool held to one thread in each: the cores are not shared
        cluster = LocalCluster(
            n_workers=os.cpu_count() or 1,
            threads_per_worker=1,
            processes=True,
            env={"RAYON_NUM_THREADS": "1"},
        )
        c = Client(cluster)

        def close() -> None:
            c.close()
            cluster.close()

        return c, close
    if isinstance(client, str):
        try:
            c = Client(client, timeout=10)
        except OSError as e:
            raise OSError(f"client: could not reach the Dask scheduler at {client!r}: {e}") from e
        return c, c.close
    if not isinstance(client, Client):
        raise TypeError(
            f"client: expected a dask.distributed.Client, an address or None, got {client!r}"
        )
    if client.status != "running":
        raise OSError(f"client: the Dask client is not connected (status {client.status!r})")
    return client, lambda: None


def _stages(est: Any, epochs: int, labelled: bool) -> list[str]:
    """The stage of every round."""
    if not isinstance(est, DependencyParser):
        return ["linear"] * epochs
    out: list[str] = []
    if est.prune_k > 0 and not est.pruner_history_:
        out += ["pruner"] * est.pruner_epochs
    out += ["arc"] * epochs
    if est.label_epochs > 0 and labelled:
        out += ["label"] * est.label_epochs
    return out


def _layout(
    est: Any, scans: list[dict[str, Any]], keys: list[str], classes: Sequence[Hashable] | None
) -> None:
    """Makes the state outside the parameters of the initial model ``est``
    what every shard needs (see the module docs)."""
    several = len(scans) > 1
    if isinstance(est, DependencyParser):
        if "counts" in scans[0]:
            est._choose_decoder(c for s in scans for c in s["nonprojective"])
            counts = [sum(c) for c in zip(*(s["counts"] for s in scans), strict=True)]
            _omkl.parser_set_table_counts(
                est._core, counts, float(est.slots_per_feature), est.max_table_bits
            )
        if several and all(s["labelled"] for s in scans) and est.label_epochs > 0:
            labels = list(dict.fromkeys(r for s in scans for r in s["labels"]))
            _omkl.labeler_register(est._labeler, labels)
        return
    known = list(est._classes) if isinstance(est, ProximalClassifier) else []
    if isinstance(est, (TextTagger, *KERNEL_MIXABLE)):
        known = list(est._labels)
    if classes is not None:
        allowed = set(classes)
        for s, key in zip(scans, keys, strict=True):
            bad = [y for y in s["labels"] if y not in allowed]
            if bad:
                raise ValueError(
                    f"{key} has labels {bad!r} outside the declared classes {list(classes)!r}"
                )
    if not several:
        return
    if isinstance(est, KERNEL_MIXABLE):
        _kernel_labels(est, [*known, *(classes or []), *(y for s in scans for y in s["labels"])])
        est._register_features([f for s in scans for f in s["features"]])
        return
    groups = list(dict.fromkeys(g for s in scans for g in s["groups"]))
    if isinstance(est, TextTagger):
        seen = [*known, *(classes or []), *(y for s in scans for y in s["labels"])]
        _set_layout(est, {"groups": groups, "labels": list(dict.fromkeys(seen))})
    elif isinstance(est, ProximalClassifier):
        seen = [*known, *(classes or []), *(y for s in scans for y in s["labels"])]
        all_classes = list(dict.fromkeys(seen))
        _omkl.register_layout(est._state, groups, max(len(all_classes), 1))
        est._classes = all_classes
        est._class_index = {y: k for k, y in enumerate(all_classes)}
    else:
        _omkl.register_layout(est._state, groups, 1)


def _kernel_labels(est: Any, seen: list[Hashable]) -> None:
    """Gives a kernel estimator every label of ``seen`` (in order), so that
    every worker numbers them alike."""
    labels = list(dict.fromkeys(seen))
    if est._state is not None and est._state.n_labels < len(labels):
        est._state.grow(est._state.dim, len(labels))
    est._labels = labels
    est._label_index = {y: k for k, y in enumerate(labels)}


def _shard_futures(
    client: Client, shards: Any, reader: Callable[[Any], Any] | None
) -> list[Future[Any]]:
    """One future per shard, holding its data on a worker (spread over the
    workers; reassigned by Dask if a worker is lost)."""
    try:
        import dask.bag as db

        if isinstance(shards, db.Bag):
            return list(client.compute(shards.to_delayed()))
    except ImportError:  # pragma: no cover - dask.bag is part of dask
        pass
    if isinstance(shards, str | os.PathLike) or not isinstance(shards, Sequence):
        raise TypeError(
            "shards: expected a list of shards (lists of examples, or paths with "
            f"shard_reader) or a dask.bag, got {type(shards).__name__}"
        )
    if len(shards) == 0:
        raise ValueError("shards: expected at least one shard, got none")
    # No worker restrictions: Dask spreads the reads over idle workers, and
    # a read restricted to a worker that died is never run again once every
    # worker has died and come back under new addresses.
    try:
        # workers that died come back through their nannies: wait for one
        client.wait_for_workers(1, timeout=WORKER_WAIT_SECONDS)
    except (TimeoutError, asyncio.TimeoutError):
        raise RuntimeError(
            f"client: the Dask cluster has no workers (none joined in {WORKER_WAIT_SECONDS} s)"
        ) from None
    out = []
    for s in shards:
        if reader is not None:
            out.append(client.submit(reader, s, pure=False))
        elif isinstance(s, str | os.PathLike):
            out.append(client.submit(os.fspath, s, pure=False))
        else:
            out.append(client.submit(list, s, pure=False))
    return out


def _value(obj: Any) -> Any:
    return obj


def _put(client: Client, obj: Any) -> Future[Any]:
    """``obj`` on the cluster as a task's result (so that Dask can compute
    it again if the worker holding it is lost), moved to the workers that
    need it."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Large object", category=UserWarning)
        warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
        return client.submit(_value, obj, pure=False)


def _gather(client: Client, futures: list[Future[Any]], keys: list[str], what: str) -> list[Any]:
    """The results of ``futures``, or an error naming the shard that failed."""
    out = []
    for f, key in zip(futures, keys, strict=True):
        try:
            out.append(client.gather(f))
        except (ValueError, TypeError) as e:
            raise type(e)(f"{what}: {e}") from e
        except Exception as e:
            raise RuntimeError(f"{key} failed in {what}: {type(e).__name__}: {e}") from e
    return out


def train(
    estimator: Any,
    shards: Any,
    epochs: int | None = None,
    *,
    client: Client | str | None = None,
    shard_reader: Callable[[Any], Any] | None = None,
    classes: Sequence[Hashable] | None = None,
    validation: Callable[[Any], float] | None = None,
    retries: int = 2,
    progress: bool = True,
    seed: int = 0,
) -> tuple[Any, list[dict[str, Any]]]:
    """Trains a copy of ``estimator`` on ``shards`` by iterative parameter
    mixing and returns it with the history of the mixing rounds.

    Parameters
    ----------
    estimator
        A :class:`~omkl.ProximalClassifier`, :class:`~omkl.ProximalRegressor`,
        :class:`~omkl.tagging.TextTagger`, :class:`~omkl.DependencyParser`,
        :class:`~omkl.MKLClassifier` or :class:`~omkl.SequenceTagger`, fresh
        or already trained (training continues from its parameters). It is
        not modified.
    shards
        A list of shards, or a ``dask.bag`` whose partitions are the shards.
        A shard is a list of ``(x, y)`` pairs (classifier, regressor; for the
        text tagger ``x`` is a list of token dicts, ``y`` their labels) or of
        sentences (parser), or anything ``shard_reader`` turns into one on
        the worker. For the parser a shard may also be a CoNLL-U path.
    epochs
        Rounds of the main stage (default 1; the parser's default is its
        ``epochs``). The parser also runs its ``pruner_epochs`` first-pass
        rounds first and its ``label_epochs`` label rounds last, each mixed.
    client
        A ``dask.distributed.Client``, a scheduler address, or ``None`` to
        start a ``LocalCluster`` for this call.
    shard_reader
        A function run on a worker that reads a shard (e.g. from a path).
    classes
        The classes shards may hold (classifier); a shard with another
        label is an error.
    validation
        ``validation(model)`` after each round, on the driver; its value is
        the round's ``"validation"`` in the history.
    retries
        Times Dask retries a failed task of a round.
    progress
        Show a tqdm bar over the rounds.
    seed
        The text tagger's shard ``k`` visits its sequences in a new order
        every round, drawn from ``seed + k`` as :meth:`TextTagger.fit`
        with ``shuffle=True`` draws them (the parser shuffles with its own
        ``seed``; the other estimators go through their shards in order).

    Returns
    -------
    (model, history)
        ``history`` has one dict per round: ``round``, ``stage``, ``shards``,
        ``examples``, ``loss`` (summed over shards; ``None`` for the linear
        estimators), ``seconds`` (wall-clock of the round), ``worker_seconds``
        (the longest pass), ``worker_cpu_seconds`` (the most CPU time a pass
        used, over all threads of its worker process), ``bytes`` (parameters
        sent to and from the workers) and ``validation``; the parser's
        rounds also have ``profile``, seconds of the round's parts: ``send``
        (the mixed arrays to the workers), ``load`` (a worker setting
        them), ``pass``, ``export`` (a worker's arrays out), ``gather``
        (the driver's wait for the workers' arrays), ``mix`` and
        ``import`` (into the driver's model), the worker figures the
        slowest shard's.

    With ``client=None`` the ``LocalCluster`` has one single-threaded
    worker process per core, and the parser's own thread pool
    (``RAYON_NUM_THREADS``) is held to one thread in each, so that the
    workers do not share cores. On a cluster of your own, give each worker
    process one thread (``threads_per_worker=1``) and set
    ``RAYON_NUM_THREADS`` in its environment to the cores it should use.
    """
    check_mixable(estimator)
    if epochs is None:
        epochs = estimator.epochs if isinstance(estimator, DependencyParser) else 1
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs: expected an integer >= 1, got {epochs!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed: expected an integer >= 0, got {seed!r}")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ValueError(f"retries: expected an integer >= 0, got {retries!r}")
    template = copy.deepcopy(estimator)
    client, close = _connect(client)
    futures: list[Future[Any]] = []
    try:
        data = _shard_futures(client, shards, shard_reader)
        futures += data
        keys = [f"shard {k}" for k in range(len(data))]
        several = len(data) > 1
        # shard k's tasks go to worker k mod n (or elsewhere when it is busy or gone)
        workers = sorted(client.scheduler_info()["workers"])
        homes = [workers[k % len(workers)] if workers else None for k in range(len(data))]
        probe = _put(client, template)
        scans = _gather(
            client,
            [
                client.submit(
                    _scan,
                    probe,
                    d,
                    key,
                    str(d.key),
                    several,
                    pure=False,
                    retries=retries,
                    workers=None if home is None else [home],
                    allow_other_workers=True,
                )
                for d, key, home in zip(data, keys, homes, strict=True)
            ],
            keys,
            "the scan of the shards",
        )
        del probe
        _layout(template, scans, keys, classes)
        stages = _stages(template, epochs, all(s.get("labelled", False) for s in scans))
        if isinstance(template, DependencyParser):
            sizes = [int(s["n"]) for s in scans]
            return _parser_rounds(
                client, template, data, keys, sizes, stages, homes, validation, retries, progress
            )
        return _rounds(
            client, template, data, keys, scans, stages, validation, retries, progress, seed
        )
    finally:
        if isinstance(template, DependencyParser) and client.status == "running":
            try:
                client.run(_forget_corpora, [str(f.key) for f in futures])
            except Exception:  # noqa: S110 - a lost worker has nothing left to drop
                pass
        for f in futures:
            f.release()
        close()


def _check_layouts(figures: list[dict[str, Any]], keys: list[str], r: int) -> None:
    """``ValueError`` unless every shard ended round ``r`` (0-based) with the
    first shard's layout (classes, groups or labels)."""
    for f, key in zip(figures[1:], keys[1:], strict=True):
        if f["layout"] != figures[0]["layout"]:
            raise ValueError(
                f"{key} ended round {r + 1} with a different layout (classes, groups "
                f"or labels) from {keys[0]}: shards must share their feature space"
            )


def _record(
    r: int,
    stage: str,
    sizes: list[int],
    figures: list[dict[str, Any]],
    t0: float,
    sent: int,
    validation: Callable[[Any], float] | None,
    model: Any,
) -> dict[str, Any]:
    """The history record of round ``r`` (0-based) from the workers' figures,
    with the mixed ``model``'s validation score when ``validation`` is given."""
    losses = [f["loss"] for f in figures]
    record: dict[str, Any] = {
        "round": r + 1,
        "stage": stage,
        "shards": len(sizes),
        "examples": sum(sizes),
        "loss": None if None in losses else float(sum(losses)),
        "seconds": time.perf_counter() - t0,
        "worker_seconds": max(f["seconds"] for f in figures),
        "worker_cpu_seconds": max(f["cpu_seconds"] for f in figures),
        "bytes": sent,
        "validation": None,
    }
    if validation is not None:
        record["validation"] = validation(model)
    return record


def _rounds(
    client: Client,
    template: Any,
    data: list[Future[Any]],
    keys: list[str],
    scans: list[dict[str, Any]],
    stages: list[str],
    validation: Callable[[Any], float] | None,
    retries: int,
    progress: bool,
    shuffle_seed: int,
) -> tuple[Any, list[dict[str, Any]]]:
    """The mixing rounds (see :func:`train`)."""
    from tqdm.auto import tqdm

    sizes = [int(s["n"]) for s in scans]
    tagger = isinstance(template, TextTagger)
    np_rngs = [np.random.default_rng(shuffle_seed + k) for k in range(len(data))]
    model = copy.deepcopy(template)
    params = export_params(model)
    base_future = _put(client, template)
    previous: list[Future[Any]] = []
    history: list[dict[str, Any]] = []
    bar = tqdm(total=len(stages), desc="mixing rounds", unit="round", disable=not progress)
    try:
        for r, stage in enumerate(stages):
            t0 = time.perf_counter()
            sent = 0
            if len(data) == 1:
                # one shard: mixing is the identity, the worker goes on with its model
                bases: list[tuple[str, Any, Any]] = [
                    ("copy", previous[0] if previous else base_future, None)
                ]
            else:
                mixed = _put(client, params)
                sent = nbytes(params) * len(data)
                bases = [("params", base_future, mixed)] * len(data)
            orders: list[list[int] | None] = [None] * len(data)
            if tagger:
                orders = [g.permutation(n).tolist() for g, n in zip(np_rngs, sizes, strict=True)]
            trained = [
                client.submit(_pass, b, d, key, o, pure=False, retries=retries)
                for b, d, key, o in zip(bases, data, keys, orders, strict=True)
            ]
            results = _gather(
                client,
                [client.submit(_export, t, pure=False, retries=retries) for t in trained],
                keys,
                f"round {r + 1} ({stage})",
            )
            for f in previous:
                f.release()
            if len(data) > 1:
                mixed.release()
            previous = trained
            got = [p for p, _ in results]
            figures = [f for _, f in results]
            _check_layouts(figures, keys, r)
            if isinstance(template, KERNEL_MIXABLE):
                mixed_params = mix_kernel(got, sizes, keys)
            else:
                mixed_params = {**params, **mix(got, sizes, keys)}
            new_model = copy.deepcopy(template)
            _set_layout(new_model, figures[0]["layout"])
            import_params(new_model, mixed_params)
            params, model = mixed_params, new_model
            sent += sum(nbytes(p) for p in got)
            history.append(_record(r, stage, sizes, figures, t0, sent, validation, model))
            bar.update(1)
    finally:
        bar.close()
        for f in previous:
            f.release()
        base_future.release()
    return model, history


class _LostModel(RuntimeError):
    """A shard's model is not on the worker that runs its round (the worker
    that held it was lost, or the task ran elsewhere)."""


#: The parser models of the shards being trained, on each worker, by slot.
_MODELS: dict[str, Any] = {}


def _forget_models(slots: list[str]) -> None:
    """Drops the models of a finished training from a worker."""
    with _CORPORA_LOCK:
        for s in slots:
            _MODELS.pop(s, None)


def _import_update(model: DependencyParser, arrays: dict[str, Any]) -> None:
    """Sets the mixed arrays of a round in a worker's model: the label
    stage's, the pruner's, or the arc model's weights and step count (the
    arc model then keeps its own running sums; see :func:`train`)."""
    label = {k: v for k, v in arrays.items() if k.startswith("label/")}
    core = {k: v for k, v in arrays.items() if not k.startswith("label/")}
    if label:
        _omkl.import_params(model._labeler, label)
    if core:
        _omkl.parser_import_stages(model._core, core)


def _parser_round(
    start: tuple[str, Any, Any],
    data: Any,
    key: str,
    cache: str,
    stage: str,
    order: list[int],
    slot: str,
    alone: bool,
    sums: bool,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One round of the parser on a shard, on the worker that keeps the
    shard's model between rounds (under ``slot``). ``start`` is
    ``("update", None, arrays)``: the kept model takes the mixed ``arrays``
    of the previous round; or ``("params", template, params)``: the model
    is a copy of ``template`` with ``params`` (all of them, or none). With
    ``alone`` (one shard) the pass is the parser's own epoch; otherwise it
    does not end the epoch (norms, averaged parameters and β are the
    driver's). Returns the stage's arrays (the arc model's running sums only
    when ``sums``) and the round's figures."""
    kind, a, b = start
    t0 = time.perf_counter()
    with _CORPORA_LOCK:
        # taken out during the pass: a pass that fails leaves no half-trained model
        model = _MODELS.pop(slot, None)
    if kind == "update":
        if model is None:
            raise _LostModel(f"{key}: its model is not on this worker")
        if b:
            _import_update(model, b)
    else:
        model = copy.deepcopy(a)
        if b is not None:
            import_params(model, b)
    load = time.perf_counter() - t0
    corpus = _parser_corpus(data, key, cache)
    t0, c0 = time.perf_counter(), time.process_time()
    if stage == "label":
        loss = model._labeler.fit_epoch(corpus, order)
    elif alone:
        loss = model._core.fit_epoch(corpus, order, None, stage == "pruner")
    else:
        loss = _omkl.parser_fit_pass(model._core, corpus, order, stage == "pruner")
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    t0 = time.perf_counter()
    if stage == "label":
        params = dict(_omkl.export_params(model._labeler))
    else:
        params = dict(_omkl.parser_export_stage(model._core, stage, sums or stage == "pruner"))
    figures = {
        "loss": loss,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "load_seconds": load,
        "export_seconds": time.perf_counter() - t0,
        "worker": get_worker().address,
        "layout": _layout_of(model),
    }
    with _CORPORA_LOCK:
        _MODELS[slot] = model
    return params, figures


def _parser_rounds(
    client: Client,
    template: DependencyParser,
    data: list[Future[Any]],
    keys: list[str],
    sizes: list[int],
    stages: list[str],
    homes: list[str | None],
    validation: Callable[[Any], float] | None,
    retries: int,
    progress: bool,
) -> tuple[Any, list[dict[str, Any]]]:
    """The parser's mixing rounds (see :func:`train`): each shard's model
    stays on its worker between rounds, and only the arrays a round changed
    travel."""
    from tqdm.auto import tqdm

    rngs = [random.Random(template.seed + k) for k in range(len(data))]
    alone = len(data) == 1
    run = uuid.uuid4().hex
    slots = [f"{run}/{k}" for k in range(len(data))]
    model = copy.deepcopy(template)
    params = export_params(model)
    base_future = _put(client, template)
    update: dict[str, Any] | None = None  # None: the workers start from the template
    history: list[dict[str, Any]] = []
    bar = tqdm(total=len(stages), desc="mixing rounds", unit="round", disable=not progress)
    try:
        for r, stage in enumerate(stages):
            t0 = time.perf_counter()
            last = r + 1 == len(stages) or stages[r + 1] != stage
            sums = alone or last or validation is not None
            sent = 0
            if update is None:
                start: tuple[str, Any, Any] = ("params", base_future, None)
                update_future = None
            else:
                update_future = client.scatter([update], broadcast=True, hash=False)[0]
                start = ("update", None, update_future)
                sent = nbytes(update) * len(data)
            t_send = time.perf_counter() - t0
            orders = [list(range(n)) for n in sizes]
            for rng, order in zip(rngs, orders, strict=True):
                rng.shuffle(order)

            def submit(
                k: int,
                start: tuple[str, Any, Any],
                order: list[int],
                home: str | None,
                stage: str = stage,
                sums: bool = sums,
            ) -> Future[Any]:
                return client.submit(
                    _parser_round,
                    start,
                    data[k],
                    keys[k],
                    str(data[k].key),
                    stage,
                    order,
                    slots[k],
                    alone,
                    sums,
                    pure=False,
                    retries=retries,
                    workers=None if home is None else [home],
                    allow_other_workers=home is not None,
                )

            futures = [submit(k, start, orders[k], homes[k]) for k in range(len(data))]
            results = []
            t1 = time.perf_counter()
            for k, f in enumerate(futures):
                try:
                    results.append(_gather(client, [f], [keys[k]], f"round {r + 1} ({stage})")[0])
                except RuntimeError as e:
                    if not isinstance(e.__cause__, _LostModel):
                        raise
                    # the shard's worker was lost: a new model from the last mixed parameters
                    full = _put(client, params)
                    sent += nbytes(params)
                    results.append(
                        _gather(
                            client,
                            [submit(k, ("params", base_future, full), orders[k], homes[k])],
                            [keys[k]],
                            f"round {r + 1} ({stage})",
                        )[0]
                    )
            t_gather = time.perf_counter() - t1
            if update_future is not None:
                update_future.release()
            got = [p for p, _ in results]
            figures = [f for _, f in results]
            homes = [f["worker"] for f in figures]
            _check_layouts(figures, keys, r)
            t1 = time.perf_counter()
            mixed = mix(got, sizes, keys)
            t_mix = time.perf_counter() - t1
            params = {**params, **mixed}
            t1 = time.perf_counter()
            if sums:
                _set_layout(model, figures[0]["layout"])
                import_params(model, params)
            t_import = time.perf_counter() - t1
            if alone:
                update = {}
            elif stage == "arc":
                update = {k: v for k, v in mixed.items() if k != "arc/sums"}
            else:
                update = mixed
            sent += sum(nbytes(p) for p in got)
            record = _record(r, stage, sizes, figures, t0, sent, validation, model)
            record["profile"] = {
                "send": t_send,
                "load": max(f["load_seconds"] for f in figures),
                "pass": max(f["seconds"] for f in figures),
                "export": max(f["export_seconds"] for f in figures),
                "gather": t_gather,
                "mix": t_mix,
                "import": t_import,
            }
            history.append(record)
            bar.update(1)
    finally:
        bar.close()
        base_future.release()
        if client.status == "running":
            try:
                client.run(_forget_models, slots)
            except Exception:  # noqa: S110 - a lost worker has nothing left to drop
                pass
    _parser_history(model, history)
    return model, history


def _parser_history(model: DependencyParser, history: list[dict[str, Any]]) -> None:
    """The parser's own per-stage histories, from the mixing rounds."""
    targets = {
        "pruner": model.pruner_history_,
        "arc": model.history_,
        "label": model.label_history_,
    }
    for h in history:
        out = targets[h["stage"]]
        out.append(
            {
                "epoch": len(out) + 1,
                "loss": h["loss"],
                "seconds": h["seconds"],
                "sentences_per_s": h["examples"] / h["seconds"],
            }
        )
