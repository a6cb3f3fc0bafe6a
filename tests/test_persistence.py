"""Saved model files: every corruption is refused naming the file, saves are
atomic (a killed save leaves the old file intact and no temporary file once
the next save completes), modes and symbolic links are kept, and
impossible states are refused before anything is allocated."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import omkl
from omkl import _omkl, _persist
from omkl.parsing import DependencyParser

WORDS = [("The", "DET", "det"), ("dog", "NOUN", "nsubj"), ("barks", "VERB", "root")]


def _sentence(words):
    return [
        {"form": f, "lemma": f.lower(), "upos": u, "xpos": u, "feats": "_", "deprel": r}
        for f, u, r in words
    ]


def tokenizer_corpus(mwt: str | None = None) -> str:
    """A small CoNLL-U training file for :class:`omkl.Tokenizer` (in a new
    folder): two sentences, and a third with the multiword token ``mwt``
    (two words, split at its middle) when given."""
    import tempfile

    def row(i: int, form: str, misc: str = "_") -> str:
        return f"{i}\t{form}\t_\t_\t_\t_\t_\t_\t_\t{misc}\n"

    text = "# newpar\n# text = Dogs bark.\n" + row(1, "Dogs") + row(2, "bark", "SpaceAfter=No")
    text += row(3, ".") + "\n# text = Don't go!\n" + row(0, "").replace("0\t\t", "1-2\tDon't\t")
    text += row(1, "Do") + row(2, "n't") + row(3, "go", "SpaceAfter=No") + row(4, "!") + "\n"
    if mwt is not None:
        k = len(mwt) // 2
        text += f"# text = {mwt}\n1-2\t{mwt}\t_\t_\t_\t_\t_\t_\t_\t_\n"
        text += row(1, mwt[:k]) + row(2, mwt[k:]) + "\n"
    path = os.path.join(tempfile.mkdtemp(prefix="omkl-test-"), "train.conllu")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text * 3)
    return path


def make_model(name: str):
    """A small trained model of each estimator."""
    rng = np.random.default_rng(0)
    if name == "ProximalClassifier":
        m = omkl.ProximalClassifier(regularizer=("group_lasso", 1e-3), average=True)
        for i in range(60):
            m.learn_one({f"w_{i % 7}": 1.0, "len": float(i % 5)}, ["a", "b", 3][i % 3])
        return m
    if name == "ProximalRegressor":
        m = omkl.ProximalRegressor(regularizer=("l1", 1e-3))
        for i in range(60):
            m.learn_one({f"w_{i % 7}": 1.0, "x": float(i % 5)}, float(i % 4))
        return m
    if name == "MKLClassifier":
        X = rng.normal(size=(60, 3))
        y = [int(v > 0) for v in X[:, 0]]
        return omkl.MKLClassifier(average=True, history_every=10).fit(X, y)
    if name == "SequenceTagger":
        t = omkl.SequenceTagger()
        for _ in range(30):
            n = int(rng.integers(2, 5))
            xs = [{"a": float(rng.normal()), ("t", p % 2): 1.0} for p in range(n)]
            t.learn_one(xs, ["xy"[p % 2] for p in range(n)])
        return t
    if name == "TextTagger":
        tagger = omkl.TextTagger(regularizer=("squared_l21", 1e-3), average=True, n_buckets=64)
        for _ in range(30):
            n = int(rng.integers(2, 5))
            xs = [{"w": "ab"[p % 2], "x": float(rng.normal())} for p in range(n)]
            tagger.learn_one(xs, ["xy"[p % 2] for p in range(n)])
        return tagger
    if name == "DependencyParser":
        p = DependencyParser(templates=list(range(30)), prune_k=0, max_table_bits=8)
        for _ in range(3):
            p.learn_one(_sentence(WORDS), [2, 3, 0])
        return p
    if name == "MorphologyTagger":
        sents = [_sentence(WORDS), _sentence([("A", "DET", "det"), ("cat", "NOUN", "root")])]
        return omkl.MorphologyTagger(folds=2, n_buckets=64).fit(sents * 3, epochs=2)
    if name == "TextParser":
        sents = [_sentence(WORDS), _sentence([("A", "DET", "det"), ("cat", "NOUN", "root")])]
        for s, heads in zip(sents, ([2, 3, 0], [2, 0]), strict=True):
            for t, h in zip(s, heads, strict=True):
                t["head"] = h
        return omkl.TextParser(
            omkl.MorphologyTagger(folds=2, n_buckets=64, epochs=2),
            DependencyParser(templates=list(range(30)), prune_k=0, max_table_bits=8, epochs=2),
            folds=2,
            tokenizer=omkl.Tokenizer(epochs=2, n_buckets=64).fit(tokenizer_corpus()),
        ).fit(sents * 3)
    if name == "Tokenizer":
        return omkl.Tokenizer(epochs=2, n_buckets=64).fit(tokenizer_corpus())
    raise AssertionError(name)


#: Every estimator that omkl exports with ``save``/``load``: a new one is
#: tested here as soon as ``make_model`` can build it (and fails until then).
ESTIMATORS = [name for name in omkl.__all__ if hasattr(getattr(omkl, name), "save")]


def predictions(model) -> object:
    if isinstance(model, omkl.Tokenizer):
        return model.tokenize("Dogs don't bark. Go!")
    if isinstance(model, omkl.TextParser):
        words = model.predict([[{"form": w} for w in ["The", "cat", "barks"]]])
        return words, model.parse_text("Dogs don't bark. Go!")
    if isinstance(model, DependencyParser):
        return model.predict_one(_sentence(WORDS))
    if isinstance(model, omkl.MorphologyTagger):
        return model.tag_words(["The", "cat", "barks", "loudly"])
    if isinstance(model, omkl.TextTagger):
        return model.predict_marginals_one([{"w": "a", "x": 0.3}, {"w": "b"}])
    if isinstance(model, omkl.SequenceTagger):
        return model.predict_one([{"a": 0.3, ("t", 0): 1.0}, {"a": -1.0, ("t", 1): 1.0}])
    if isinstance(model, omkl.MKLClassifier):
        return model.predict([[0.5, 0.1, 0.0], [-0.5, 0.0, 1.0]])
    if isinstance(model, omkl.ProximalRegressor):
        return model.predict_one({"w_1": 1.0, "x": 2.0})
    return model.predict_proba_one({"w_1": 1.0, "len": 2.0})


def offsets(n: int, count: int, seed: int) -> list[int]:
    """``count`` offsets spread over ``[0, n)``: the whole header, then
    random ones."""
    rng = np.random.default_rng(seed)
    head = list(range(min(n, 48)))
    rest = sorted(set(rng.integers(0, n, size=count).tolist()) - set(head))
    return head + rest[: max(0, count - len(head))]


@pytest.mark.parametrize("name", ESTIMATORS)
def test_round_trip_is_exact(name, tmp_path):
    m = make_model(name)
    path = tmp_path / "m.omkl"
    m.save(path)
    back = type(m).load(path)
    assert predictions(back) == predictions(m)
    back.save(tmp_path / "again.omkl")
    assert (tmp_path / "again.omkl").read_bytes() == path.read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["again.omkl", "m.omkl"]


@pytest.mark.parametrize("name", ESTIMATORS)
def test_every_truncation_and_flip_is_refused_naming_the_file(name, tmp_path):
    m = make_model(name)
    good = tmp_path / "good.omkl"
    m.save(good)
    data = good.read_bytes()
    cls = type(m)
    bad = tmp_path / "bad.omkl"
    silent, tried = [], 0
    rng = np.random.default_rng(1)
    cases = [("cut", k) for k in offsets(len(data), 80, 2)]
    cases += [("flip", k) for k in offsets(len(data), 80, 3)]
    for kind, k in cases:
        if kind == "cut":
            bad.write_bytes(data[:k])
        else:
            b = bytearray(data)
            b[k] ^= int(rng.integers(1, 256))
            bad.write_bytes(bytes(b))
        tried += 1
        try:
            cls.load(bad)
        except ValueError as e:
            assert str(bad) in str(e), f"{kind} at {k}: {e}"
            continue
        silent.append((kind, k))
    assert tried >= 120
    assert silent == []


@pytest.mark.parametrize("name", ESTIMATORS)
def test_other_files_are_refused_naming_the_file(name, tmp_path):
    cls = type(make_model(name))
    with pytest.raises(FileNotFoundError):
        cls.load(tmp_path / "missing.omkl")
    junk = tmp_path / "junk.omkl"
    junk.write_bytes(b"hello")
    with pytest.raises(ValueError, match="junk.omkl.*not an omkl model file"):
        cls.load(junk)
    other_name = "ProximalRegressor" if name != "ProximalRegressor" else "ProximalClassifier"
    make_model(other_name).save(junk)
    with pytest.raises(ValueError, match=f'junk.omkl.*expected a saved "omkl.{name}"'):
        cls.load(junk)


def test_an_old_pickled_save_is_refused_as_an_older_format(tmp_path):
    import pickle

    path = tmp_path / "old.pkl"
    path.write_bytes(pickle.dumps({"format": "omkl.MKLClassifier", "format_version": 1}))
    with pytest.raises(ValueError, match="old.pkl.*older omkl format.*re-train"):
        omkl.MKLClassifier.load(path)


def test_mode_is_kept_and_new_files_follow_the_umask(tmp_path):
    m = make_model("ProximalClassifier")
    path = tmp_path / "m.omkl"
    m.save(path)
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
    for mode in (0o644, 0o640, 0o600):
        path.chmod(mode)
        m.save(path)
        assert path.stat().st_mode & 0o777 == mode


def test_saving_through_a_symlink_keeps_the_link(tmp_path):
    m = make_model("MKLClassifier")
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "m.omkl"
    target.write_bytes(b"old")
    link = tmp_path / "link.omkl"
    link.symlink_to(target)
    m.save(link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert predictions(omkl.MKLClassifier.load(target)) == predictions(m)
    assert sorted(os.listdir(tmp_path / "real")) == ["m.omkl"]


def test_a_failed_save_leaves_the_old_file_and_no_temporary_file(tmp_path):
    path = tmp_path / "m.bin"
    _persist.save_bytes(path, b"old contents")

    def chunks():
        yield b"new"
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        _persist.save_bytes(path, chunks())
    assert path.read_bytes() == b"old contents"
    assert os.listdir(tmp_path) == ["m.bin"]


def test_stale_temporary_files_are_removed_by_the_next_save(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stale = tmp_path / f".m.omkl.omkl-tmp-{dead.pid}-0a1b2c"
        running = tmp_path / f".m.omkl.omkl-tmp-{alive.pid}-0a1b2c"
        other = tmp_path / f".n.omkl.omkl-tmp-{dead.pid}-0a1b2c"
        for p in (stale, running, other):
            p.write_bytes(b"partial")
        _persist.save_bytes(tmp_path / "m.omkl", b"x")
        assert not stale.exists()  # a killed save of the same file
        assert running.exists()  # a save still under way elsewhere
        assert other.exists()  # another file's
    finally:
        alive.kill()
        alive.wait()


KILLED_SAVER = textwrap.dedent(
    """
    import sys
    from omkl import MKLClassifier
    m = MKLClassifier.load(sys.argv[1])
    print("ready", flush=True)
    while True:
        m.save(sys.argv[2])
    """
)


def test_a_killed_save_leaves_the_old_file_intact(tmp_path):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(3000, 40))
    y = rng.integers(0, 3, size=3000).tolist()  # noise: most inputs enter the support
    m = omkl.MKLClassifier(kernels=["linear", "gaussian"], max_support=None).fit(X, y)
    src = tmp_path / "src" / "m.omkl"
    src.parent.mkdir()
    m.save(src)
    work = tmp_path / "work"
    work.mkdir()
    path = work / "m.omkl"
    m.save(path)
    want = path.read_bytes()
    assert len(want) > 1_000_000
    for trial in range(6):
        proc = subprocess.Popen(
            [sys.executable, "-c", KILLED_SAVER, str(src), str(path)],
            stdout=subprocess.PIPE,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"ready"
        time.sleep(0.05 + 0.07 * trial)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        assert path.read_bytes() == want
        assert omkl.MKLClassifier.load(path).predict(X[:20]) == m.predict(X[:20])
    m.save(path)
    assert os.listdir(work) == ["m.omkl"]


# --- impossible states ---------------------------------------------------------------


def _edit_core(data: bytes, fmt: str, version: int, edit) -> bytes:
    """Core bytes with their JSON payload edited, sealed again."""
    _, start = _omkl.open_sealed(data, fmt, [version])
    v = json.loads(data[start:])
    edit(v)
    payload = json.dumps(v).encode()
    return _omkl.seal_header(fmt, version, [payload]) + payload


IMPOSSIBLE = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import omkl
    from omkl import _omkl

    def edit_core(data, fmt, version, edit):
        _, start = _omkl.open_sealed(data, fmt, [version])
        v = json.loads(data[start:])
        edit(v)
        payload = json.dumps(v).encode()
        return _omkl.seal_header(fmt, version, [payload]) + payload

    def setter(*path_value):
        *path, value = path_value
        def edit(v):
            for k in path[:-1]:
                v = v[k]
            v[path[-1]] = value
        return edit

    def duplicate_row(v):
        s = v["model"]["support"]
        d = s["d"]
        s["data"][d : 2 * d] = s["data"][:d]
        s["sq"][1] = s["sq"][0]

    alg1 = omkl.ProximalClassifier(average=True)
    for i in range(30):
        alg1.learn_one({f"w_{i % 5}": 1.0}, "ab"[i % 2])
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    mkl = omkl.MKLClassifier(max_support=30).fit(X, [int(v > 0) for v in X[:, 0]])
    cases = {
        "alg1 scale 0 (a zeroed group)": ("alg1", setter("groups", 0, "scale", 0.0)),
        "alg1 scale -1": ("alg1", setter("groups", 0, "scale", -1.0)),
        "alg1 negative squared norm": ("alg1", setter("groups", 0, "sq", -1.0)),
        "alg1 n_outputs 10**12": ("alg1", setter("n_outputs", 10**12)),
        "mkl scale 0": ("mkl", setter("model", "kgroups", 0, "s", 0.0)),
        "mkl scale -1": ("mkl", setter("model", "kgroups", 1, "s", -1.0)),
        "mkl negative squared norm": ("mkl", setter("model", "kgroups", 0, "q", -1.0)),
        "mkl max_support below support": ("mkl", setter("model", "config", "max_support", 1)),
        "mkl duplicate support rows": ("mkl", duplicate_row),
    }
    which = sys.argv[1:] or list(cases)
    out = {}
    for name in which:
        kind, edit = cases[name]
        if kind == "alg1":
            data = edit_core(alg1._state.to_bytes(), "omkl-alg1", 3, edit)
            load = _omkl.OnlineProximalLearner.from_bytes
        else:
            data = edit_core(mkl._state.to_bytes(), "omkl-stream-mkl", 2, edit)
            load = _omkl.StreamMkl.from_bytes
        try:
            load(data)
            out[name] = "loaded"
        except ValueError as e:
            out[name] = str(e)
    print(json.dumps(out))
    """
)


def test_impossible_states_are_refused_without_aborting():
    proc = subprocess.run(
        [sys.executable, "-c", IMPOSSIBLE], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    # Alg. 1 marks a group zeroed by a prox step with scale 0: a valid state
    assert out.pop("alg1 scale 0 (a zeroed group)") == "loaded"
    want = {
        "alg1 scale -1": "scale factor > 0, got -1",
        "alg1 negative squared norm": "squared norm >= 0, got -1",
        "alg1 n_outputs 10**12": "n_outputs is 1000000000000",
        "mkl scale 0": "scale factor > 0, got 0",
        "mkl scale -1": "scale factor > 0, got -1",
        "mkl negative squared norm": "squared norm >= 0, got -1",
        "mkl max_support below support": "more than max_support = 1",
        "mkl duplicate support rows": "stored twice",
    }
    assert set(out) == set(want)
    for name, fragment in want.items():
        assert fragment in out[name], f"{name}: {out[name]}"


def test_an_impossible_state_in_a_saved_file_names_the_file(tmp_path):
    m = make_model("ProximalClassifier")
    path = tmp_path / "m.omkl"
    m.save(path)
    version, header, sections = _persist.load_model(path, "omkl.ProximalClassifier", [1])
    sections[0] = _edit_core(sections[0], "omkl-alg1", 3, lambda v: v.update(n_outputs=10**12))
    params, state = header["params"], header["state"]
    _persist.save_model(
        path, "omkl.ProximalClassifier", version, {"params": params, "state": state}, sections
    )
    with pytest.raises(ValueError, match="m.omkl.*n_outputs is 1000000000000"):
        omkl.ProximalClassifier.load(path)


def test_docstring_examples_run():
    import doctest

    assert doctest.testmod(_persist).failed == 0
