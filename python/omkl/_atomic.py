"""Atomic, versioned model files shared by the estimators' ``save`` methods."""

from __future__ import annotations

import os
import pathlib
import pickle
import tempfile
from typing import Any


def atomic_pickle(payload: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Pickles ``payload`` to ``path`` atomically: a temporary file in the
    same folder, fsync, then ``os.replace``. A failure leaves any existing
    file at ``path`` untouched and removes the temporary file.

    >>> import pathlib, pickle, shutil, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> atomic_pickle({"format": "demo", "x": 1}, d / "m.pkl")
    >>> sorted(p.name for p in d.iterdir())  # no temporary file left behind
    ['m.pkl']
    >>> pickle.loads((d / "m.pkl").read_bytes())
    {'format': 'demo', 'x': 1}
    >>> shutil.rmtree(d)
    """
    target = pathlib.Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=target.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            pickle.dump(payload, f, protocol=pickle.HIGHEST_PROTOCOL)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
