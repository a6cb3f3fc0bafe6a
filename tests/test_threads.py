"""One model shared by threads: one learns (with the GIL released in Rust)
while two predict. Every call waits for the model's lock, so no thread sees
a borrow error or a vocabulary out of step with the Rust state, and the
learned model is the one the same calls give on one thread."""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest

import omkl


def _data(seed: int, n: int = 300):
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for i in range(n):
        # new feature names keep arriving, so the vocabulary grows
        x = {f"f{j}": float(rng.normal()) for j in range(2 + i // 60)}
        xs.append(x)
        ys.append(int(x["f0"] > 0))
    return xs, ys


def _learn(model, xs, ys, one_by_one=False):
    if one_by_one:
        for x, y in zip(xs, ys, strict=True):
            model.learn_one(x, y)
        return
    for a in range(0, len(xs), 50):
        if isinstance(model, omkl.MKLClassifier):
            model.fit(xs[a : a + 50], ys[a : a + 50])
        else:
            model.learn_batch(xs[a : a + 50], ys[a : a + 50])


@pytest.mark.parametrize(
    ("make", "one_by_one"),
    [
        (omkl.MKLClassifier, False),
        (omkl.ProximalClassifier, False),
        (omkl.ProximalClassifier, True),
    ],
)
def test_predicting_while_learning_on_other_threads(make, one_by_one):
    xs, ys = _data(0)
    shared, alone = make(), make()
    errors: list[BaseException] = []
    done = threading.Event()

    def predict():
        rng = np.random.default_rng(threading.get_ident() % 2**32)
        while not done.is_set():
            x = xs[int(rng.integers(len(xs)))]
            try:
                shared.predict_one(x)
                if isinstance(shared, omkl.MKLClassifier):
                    shared.predict([x, x])
            except BaseException as e:  # noqa: BLE001 - any error fails the test
                errors.append(e)

    readers = [threading.Thread(target=predict) for _ in range(2)]
    for t in readers:
        t.start()
    try:
        _learn(shared, xs, ys, one_by_one)
    finally:
        done.set()
        for t in readers:
            t.join()
    assert errors == []
    _learn(alone, xs, ys, one_by_one)
    shared.__dict__.pop("_lock", None)
    alone.__dict__.pop("_lock", None)
    assert pickle.dumps(shared) == pickle.dumps(alone)
