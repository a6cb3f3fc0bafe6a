"""Model files: atomic writes and one checksummed envelope for every estimator.

A saved estimator is one envelope of the Rust core (``b"OMKL"``, format
name, version, payload length, xxh3-64 checksum, payload). Its payload is

    u64 little-endian length of a JSON header | JSON header | sections

where the JSON header holds the Python-side state (constructor parameters,
label and feature-name lists, histories) and the byte length of each
section, and each section is the core's own sealed bytes of one Rust state.
The checksum covers everything, so a flipped byte or a cut anywhere is an
error naming the file, never a different model.

Python values go into the header through :func:`encode`, which keeps the
types of labels and feature names (``str``, ``int``, ``float``, ``bool``,
``None``, tuples, lists, dicts, numpy scalars, :class:`omkl.Kernel`); no
pickle is involved.

A model file is data, never code. Loading one builds only the estimator
class that the loader was called on (or, inside a saved
:class:`omkl.TextParser`, one of its two closed component classes); the
few objects a model may hold beside plain values (kernels, random feature
maps, river drift detectors) come from closed lists of omkl's and river's
own classes, with plain, validated parameters. Nothing that a file names is
imported, called or unpickled. Every entry of the header is required and
accounted for: a missing or an unknown one is refused, naming the file.
``pickle`` serves in-process copies only; like river's and scikit-learn's
models, a pickle is for data you trust, and :meth:`Persistent.load` is the
path for files from elsewhere.
"""

from __future__ import annotations

import contextlib
import copy
import errno
import functools
import inspect
import json
import math
import os
import secrets
import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, ClassVar, TypeVar, cast

import numpy as np

from omkl import _omkl
from omkl._feature_maps import SAVED_AS, GaussianFeatureMap
from omkl._sync import synchronized

__all__ = [
    "IndependentCopies",
    "Persistent",
    "constructor_params",
    "decode",
    "encode",
    "index_of",
    "load_estimator",
    "load_bytes",
    "load_model",
    "named_errors",
    "save_bytes",
    "save_estimator",
    "save_model",
    "saved_format",
    "SavedEntries",
    "build_estimator",
    "restore_state",
]

_TMP_MARK = ".omkl-tmp-"
_MAGIC = b"OMKL"


def _tmp_prefix(name: str) -> str:
    return f".{name}{_TMP_MARK}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_stale(folder: str, name: str) -> None:
    """Removes temporary files of saves of ``name`` whose process is gone
    (killed part-way); a save still running in another process is left
    alone."""
    prefix = _tmp_prefix(name)
    try:
        entries = os.listdir(folder)
    except OSError:
        return
    for entry in entries:
        if not entry.startswith(prefix):
            continue
        pid_part = entry[len(prefix) :].split("-", 1)[0]
        if not pid_part.isdigit():
            continue
        pid = int(pid_part)
        if pid == os.getpid() or _pid_alive(pid):
            continue
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(folder, entry))


def _fsync_dir(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as e:  # some filesystems cannot sync a directory
        if e.errno not in (errno.EINVAL, errno.EBADF, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


def save_bytes(path: str | os.PathLike[str], data: bytes | Iterable[bytes]) -> None:
    """Writes ``data`` (bytes, or chunks written one after another) to
    ``path`` atomically: a temporary file ``.<name>.omkl-tmp-<pid>-<random>``
    in the same folder, fsync, ``os.replace``, fsync of the folder. An
    existing file keeps its permission bits; a new file gets the default
    mode of the umask. A symbolic link is followed: its target is replaced
    and the link stays a link. On any exception the temporary file is
    removed and an existing file is left as it was; temporary files left by
    saves of the same file that were killed are removed once this save has
    completed.

    >>> import os, pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> save_bytes(d / "m.omkl", b"abc")
    >>> save_bytes(d / "m.omkl", [b"de", b"f"])
    >>> (d / "m.omkl").read_bytes(), sorted(os.listdir(d))
    (b'def', ['m.omkl'])
    """
    target = os.path.realpath(os.fspath(path))
    folder, name = os.path.split(target)
    try:
        mode: int | None = os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    chunks = [data] if isinstance(data, (bytes, bytearray, memoryview)) else data
    while True:
        tmp = os.path.join(folder, f"{_tmp_prefix(name)}{os.getpid()}-{secrets.token_hex(6)}")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as f:
            if mode is not None:
                os.fchmod(f.fileno(), mode)
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(folder)
    _remove_stale(folder, name)


def load_bytes(
    path: str | os.PathLike[str], format: str, versions: Sequence[int]
) -> tuple[int, memoryview]:
    """Reads ``path`` and checks its envelope: ``(version, payload)``.

    ``FileNotFoundError`` for a missing file; ``ValueError`` naming the file
    and saying what is wrong (not an omkl file, another model's format, an
    unsupported or older version, truncated, checksum mismatch).

    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "m.omkl"
    >>> save_bytes(p, [_omkl.seal_header("demo", 1, [b"xyz"]), b"xyz"])
    >>> version, payload = load_bytes(p, "demo", [1])
    >>> version, bytes(payload)
    (1, b'xyz')
    >>> p.write_bytes(p.read_bytes()[:-1])
    31
    >>> load_bytes(p, "demo", [1])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: ...m.omkl: ...truncated file: expected 32 bytes, got 31
    """
    name = os.fspath(path)
    with open(name, "rb") as f:
        data = f.read()
    try:
        version, start = _omkl.open_sealed(data, format, list(versions))
    except ValueError as e:
        raise ValueError(f"{name}: {e}") from None
    return version, memoryview(data)[start:]


def saved_format(path: str | os.PathLike[str]) -> str:
    """The format name in the envelope of the file ``path`` (such as
    ``"omkl.TextParser"``), read from its first bytes; ``ValueError`` naming
    the file when it is not an omkl model file. Nothing else is checked
    here: the loader of that format checks the whole file.

    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "m.omkl"
    >>> save_bytes(p, [_omkl.seal_header("demo", 1, [b"xyz"]), b"xyz"])
    >>> saved_format(p)
    'demo'
    """
    name = os.fspath(path)
    with open(name, "rb") as f:
        head = f.read(69)
    n = head[4] if len(head) > 4 else 0
    fmt = head[5 : 5 + n]
    if head[:4] != _MAGIC or not 1 <= n <= 64 or len(fmt) != n or not fmt.isascii():
        raise ValueError(f"{name}: not an omkl model file")
    return fmt.decode("ascii")


def save_model(
    path: str | os.PathLike[str],
    format: str,
    version: int,
    header: dict[str, Any],
    sections: Sequence[bytes],
) -> None:
    """Saves a JSON ``header`` and byte ``sections`` in one envelope
    (see the module docs), atomically with :func:`save_bytes`."""
    head = dict(header)
    head["sections"] = [len(s) for s in sections]
    text = json.dumps(head, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    js = text.encode()
    parts = [struct.pack("<Q", len(js)), js, *sections]
    save_bytes(path, [_omkl.seal_header(format, version, parts), *parts])


def _read_pieces(name: str) -> tuple[bytes, bytes, bytes, list[bytes]] | None:
    """The envelope header, the header length, the JSON header and the
    sections of a file of :func:`save_model`, each read into its own bytes
    (no copy of a large section), or ``None`` when the layout does not add
    up (then the caller reads the whole file, whose checks say what is
    wrong). Nothing here is trusted before the checksum is verified."""
    with open(name, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(5)
        if len(head) < 5 or head[:4] != _MAGIC or not 1 <= head[4] <= 64:
            return None
        head += f.read(20 + head[4])
        if len(head) != 25 + head[4]:
            return None
        (plen,) = struct.unpack_from("<Q", head, 9 + head[4])
        lenb = f.read(8)
        if len(head) + plen != size or len(lenb) != 8:
            return None
        (n,) = struct.unpack("<Q", lenb)
        if n > plen - 8:
            return None
        js = f.read(n)
        try:
            lens = json.loads(js.decode())["sections"]
        except (ValueError, UnicodeDecodeError, TypeError, KeyError):
            return None
        if not (
            isinstance(lens, list)
            and all(isinstance(x, int) and x >= 0 for x in lens)
            and 8 + n + sum(lens) == plen
        ):
            return None
        sections = [f.read(length) for length in lens]
        if any(len(s) != length for s, length in zip(sections, lens, strict=True)):
            return None
    return head, lenb, js, sections


def load_model(
    path: str | os.PathLike[str], format: str, versions: Sequence[int]
) -> tuple[int, dict[str, Any], list[bytes]]:
    """Reads a file written by :func:`save_model`: ``(version, header,
    sections)``; ``ValueError`` naming the file when it is not one.
    The checksum covers every byte read."""
    name = os.fspath(path)
    pieces = _read_pieces(name)
    if pieces is not None:
        head, lenb, js, sections = pieces
        try:
            version = _omkl.open_sealed_parts(head, [lenb, js, *sections], format, list(versions))
        except ValueError as e:
            raise ValueError(f"{name}: {e}") from None
        header = json.loads(js.decode())
        header.pop("sections")
        return version, header, sections
    version, payload = load_bytes(path, format, versions)
    try:
        if len(payload) < 8:
            raise ValueError("payload shorter than its header length")
        (n,) = struct.unpack("<Q", payload[:8])
        if n > len(payload) - 8:
            raise ValueError(f"header of {n} bytes, {len(payload) - 8} left")
        header = json.loads(bytes(payload[8 : 8 + n]).decode())
        if not isinstance(header, dict):
            raise ValueError("the header is not a JSON object")
        lens = header.pop("sections", None)
        if not isinstance(lens, list) or not all(isinstance(x, int) and x >= 0 for x in lens):
            raise ValueError("the header has no list of section lengths")
        if 8 + n + sum(lens) != len(payload):
            raise ValueError(
                f"sections of {sum(lens)} bytes declared, {len(payload) - 8 - n} present"
            )
        sections, off = [], 8 + n
        for length in lens:
            sections.append(bytes(payload[off : off + length]))
            off += length
    except (ValueError, UnicodeDecodeError, struct.error) as e:
        raise ValueError(f"{name}: corrupted model file: {e}") from None
    return version, header, sections


@contextlib.contextmanager
def named_errors(path: str | os.PathLike[str]) -> Iterator[None]:
    """Turns ``ValueError``/``TypeError``/``KeyError``/``IndexError`` raised
    while rebuilding a model from a file into a ``ValueError`` naming the
    file."""
    name = os.fspath(path)
    try:
        yield
    except (ValueError, TypeError, KeyError, IndexError) as e:
        if str(e).startswith(name):
            raise
        raise ValueError(f"{name}: corrupted model file: {e}") from None


# --- Python values in the JSON header --------------------------------------


def encode(value: Any) -> Any:
    """A JSON value that :func:`decode` turns back into ``value`` (same
    types), for ``None``, ``bool``, ``int``, ``float`` (also NaN and
    infinities), ``str``, tuples, lists, dicts (any encodable keys, order
    kept), numpy scalars, :class:`omkl.Kernel`,
    :class:`omkl.RandomFourierFeatures`, :class:`omkl.NystroemFeatures` (with
    its given landmarks) and river objects such as drift
    detectors (their class and constructor parameters: a fresh one is built
    on decoding). Anything else is a ``TypeError`` naming the value.

    >>> v = {"a": (1, 2.5, None), 3: [True, float("inf")]}
    >>> decode(json.loads(json.dumps(encode(v)))) == v
    True
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.generic):
        kind = value.dtype.str
        return {"numpy": kind, "value": encode(value.item())}
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, tuple):
        return {"tuple": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {"dict": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, _omkl.Kernel):
        return {"kernel": list(value.args())}
    if isinstance(value, GaussianFeatureMap) and value.saved_as:
        return {value.saved_as: [encode(v) for v in value._key()]}
    if type(value).__module__.startswith("river.") and hasattr(value, "_get_params"):
        # A river drift detector as its class and its constructor
        # parameters: a fresh one is built on load.
        name = f"{type(value).__module__}:{type(value).__qualname__}"
        if _river_classes().get(type(value).__qualname__) is not type(value):
            raise TypeError(
                f"cannot save {value!r}: of river's objects, a model file holds only the drift "
                f"detectors {', '.join(sorted(_river_classes()))}"
            )
        params = cast(Any, value)._get_params()
        _check_plain(params, f"the parameters of {name}")
        return {"river": [name, encode(params)]}
    raise TypeError(
        f"cannot save {value!r} of type {type(value).__name__}: labels, feature names and "
        "parameters must be str, int, float, bool, None, numpy scalars, omkl.Kernel, "
        "omkl.RandomFourierFeatures, omkl.NystroemFeatures, river drift detectors (saved by "
        "their parameters), or tuples, lists and dicts of these"
    )


def decode(value: Any) -> Any:
    """The inverse of :func:`encode`. It builds only the closed set of
    objects that :func:`encode` writes, from plain values: a kernel, a
    random feature map or a river drift detector named by anything else,
    a numpy type other than a number, or any other object marker is a
    ``ValueError``; nothing is imported or called by the name a file gives.

    >>> decode({"river": ["river.drift.adwin:ADWIN", {"dict": [["delta", 0.01]]}]}).delta
    0.01
    >>> decode({"river": ["river.datasets.base:os.system", {"dict": []}]})
    Traceback (most recent call last):
    ...
    ValueError: unknown encoded object 'river.datasets.base:os.system': a model file names only \
the drift detectors of river.drift
    """
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((key, inner),) = value.items()
        if key == "tuple" and isinstance(inner, list):
            return tuple(decode(v) for v in inner)
        if key == "dict" and isinstance(inner, list):
            if not all(isinstance(kv, list) and len(kv) == 2 for kv in inner):
                raise ValueError("an encoded dict must be a list of [key, value] pairs")
            return {decode(k): decode(v) for k, v in inner}
        if key == "float" and inner in _NON_FINITE:
            return float(inner)
        if key == "kernel" and isinstance(inner, list):
            _check_plain(inner, "a saved kernel's arguments")
            return _omkl.Kernel(*inner)
        if key in SAVED_AS and isinstance(inner, list):
            args = [decode(v) for v in inner]
            _check_plain(args, f"the arguments of a saved {SAVED_AS[key].__name__}")
            return SAVED_AS[key](*args)
        if key == "river" and isinstance(inner, list) and len(inner) == 2:
            return _river_object(*inner)
    if set(value) == {"numpy", "value"} and value["numpy"] in _NUMPY_SCALARS:
        item = decode(value["value"])
        if isinstance(item, (bool, int, float)):
            return np.dtype(value["numpy"]).type(item)
    raise ValueError(f"unknown encoded value {_short(value)}")


#: The ``repr`` of the floats that JSON cannot hold.
_NON_FINITE = ("nan", "inf", "-inf")
#: The numpy scalar types a header may hold (``dtype.str`` of numbers).
_NUMPY_SCALARS = frozenset(
    np.dtype(t).str
    for t in (
        np.bool_,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
        np.float16,
        np.float32,
        np.float64,
    )
)


def _short(value: Any, limit: int = 120) -> str:
    """``repr`` of ``value``, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check_plain(value: Any, what: str) -> None:
    """``ValueError`` naming ``what`` unless ``value`` is a plain value:
    ``None``, ``bool``, ``int``, ``float``, ``str``, or lists, tuples and
    dicts (with ``str`` keys) of these."""
    stack = [value]
    while stack:
        v = stack.pop()
        if v is None or isinstance(v, (bool, int, float, str)):
            continue
        if isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, dict) and all(isinstance(k, str) for k in v):
            stack.extend(v.values())
        else:
            raise ValueError(f"{what} must be plain values, got {_short(v)}")


@functools.cache
def _river_classes() -> dict[str, type]:
    """The river classes that a model file may name, by class name: the
    drift detectors of ``river.drift`` and ``river.drift.binary``."""
    from river import drift
    from river.drift import binary

    names = ("ADWIN", "KSWIN", "PageHinkley", "DummyDriftDetector", "NoDrift")
    binary_names = ("DDM", "EDDM", "FHDDM", "HDDM_A", "HDDM_W", "HDDMA", "HDDMW")
    classes = [getattr(drift, n) for n in names if isinstance(getattr(drift, n, None), type)]
    classes += [
        getattr(binary, n) for n in binary_names if isinstance(getattr(binary, n, None), type)
    ]
    return {c.__qualname__: c for c in classes}


def _river_object(name: Any, params: Any) -> Any:
    """A fresh river drift detector of class ``name`` (``"module:QualName"``
    of a module of ``river.drift``, the class one of :func:`_river_classes`,
    looked up there and never imported by the name) built from its encoded
    plain constructor parameters; ``ValueError`` for any other name or
    parameter."""
    module, _, qualname = name.partition(":") if isinstance(name, str) else ("", "", "")
    in_drift = module == "river.drift" or module.startswith("river.drift.")
    cls = _river_classes().get(qualname) if in_drift else None
    if cls is None:
        raise ValueError(
            f"unknown encoded object {_short(name)}: a model file names only the drift "
            "detectors of river.drift"
        )
    kwargs = decode(params)
    if not isinstance(kwargs, dict):
        raise ValueError(f"the parameters of {name} must be a dict, got {_short(kwargs)}")
    _check_plain(kwargs, f"the parameters of {name}")
    allowed = set(inspect.signature(cls).parameters)
    unknown = sorted(set(kwargs) - allowed)
    if unknown:
        raise ValueError(f"unknown parameters of {name}: {', '.join(map(repr, unknown))}")
    return cls(**kwargs)


# --- estimators -------------------------------------------------------------


def _param_names(cls: type) -> list[str]:
    """The names of the constructor parameters of ``cls``."""
    sig = inspect.signature(cast(Any, cls).__init__)
    return [
        n
        for n, p in sig.parameters.items()
        if n != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def constructor_params(model: Any) -> dict[str, Any]:
    """``{name: value}`` of the constructor parameters of ``model`` (stored
    as same-named attributes)."""
    return {n: getattr(model, n) for n in _param_names(type(model))}


class SavedEntries(dict[str, Any]):
    """The entries of a saved header or state, read from a file, that keep
    account of what the loader reads: :meth:`check_all_read` refuses an
    entry nobody read (an unknown one), and reading a missing entry is a
    ``ValueError`` naming it. In a file of an older format version
    (``strict=False``) a missing entry read with ``get`` takes the default
    that the loader gives, as that version was written without it.

    >>> e = SavedEntries({"a": 1, "b": 2}, "the saved state")
    >>> e["a"]
    1
    >>> e.check_all_read()
    Traceback (most recent call last):
    ...
    ValueError: unknown entries in the saved state: 'b'
    >>> e.get("c", 0)
    Traceback (most recent call last):
    ...
    ValueError: the saved state has no entry 'c'
    """

    def __init__(self, entries: Any, what: str, strict: bool = True) -> None:
        if not isinstance(entries, dict):
            raise ValueError(f"{what} must be a dict, got {_short(entries)}")
        super().__init__(entries)
        self.what = what
        self.strict = strict
        #: the file's format version, where the loader records it
        self.version: int | None = None
        self._read: set[Any] = set()
        self._children: list[SavedEntries] = []

    def __getitem__(self, key: Any) -> Any:
        self._read.add(key)
        if not dict.__contains__(self, key):
            raise ValueError(f"{self.what} has no entry {key!r}")
        return dict.__getitem__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._read.add(key)
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        if self.strict:
            raise ValueError(f"{self.what} has no entry {key!r}")
        return default

    def entries(self, key: str, what: str) -> SavedEntries:
        """The dict entry ``key`` as entries of its own, checked by this
        one's :meth:`check_all_read`."""
        child = SavedEntries(self[key], what, self.strict)
        self._children.append(child)
        return child

    def check_all_read(self) -> None:
        """``ValueError`` naming the entries (here and in the entries taken
        with :meth:`entries`) that were never read."""
        unknown = [k for k in self if k not in self._read]
        if unknown:
            raise ValueError(f"unknown entries in {self.what}: {', '.join(map(repr, unknown))}")
        for child in self._children:
            child.check_all_read()


def build_estimator(cls: type, params: Any, strict: bool = True) -> Any:
    """``cls(**params)`` from the saved constructor parameters; a
    ``ValueError`` naming any parameter that ``cls`` does not take and, with
    ``strict`` (a file of the current format), any it takes that the file
    lacks. The values are what :func:`decode` gives: plain values and the
    closed set of objects it builds, validated by the constructor."""
    if not isinstance(params, dict):
        raise ValueError(f"the saved parameters of {cls.__name__} must be a dict")
    names = _param_names(cls)
    unknown = [k for k in params if k not in names]
    if unknown:
        raise ValueError(f"unknown parameters of {cls.__name__}: {', '.join(map(repr, unknown))}")
    missing = [n for n in names if n not in params]
    if strict and missing:
        raise ValueError(
            f"the saved parameters of {cls.__name__} lack {', '.join(map(repr, missing))}"
        )
    return cls(**params)


def save_estimator(
    model: Any,
    path: str | os.PathLike[str],
    version: int,
    state: dict[str, Any],
    sections: Sequence[bytes],
) -> None:
    """Saves an estimator as format ``omkl.<class name>``: its constructor
    parameters and the Python ``state`` in the JSON header, the core's
    sealed bytes as ``sections``."""
    header = {"params": encode(constructor_params(model)), "state": encode(state)}
    save_model(path, f"omkl.{type(model).__name__}", version, header, sections)


def load_estimator(
    cls: type, path: str | os.PathLike[str], versions: Sequence[int], n_sections: Sequence[int]
) -> tuple[Any, SavedEntries, list[bytes]]:
    """Reads a file of :func:`save_estimator`: a new ``cls`` built from the
    saved parameters, the Python state (:class:`SavedEntries`, whose
    ``version`` is the file's format version, and which is strict when that
    is the newest of ``versions``) and the sections (as many as one of
    ``n_sections``); ``ValueError`` naming the file for anything wrong."""
    version, header, sections = load_model(path, f"omkl.{cls.__name__}", versions)
    with named_errors(path):
        strict = version == max(versions)
        head = SavedEntries(header, "the header", strict)
        if len(sections) not in n_sections:
            want = " or ".join(map(str, n_sections))
            raise ValueError(f"expected {want} sections, got {len(sections)}")
        params = decode(head["params"])
        state = SavedEntries(decode(head["state"]), "the saved state", strict)
        head.check_all_read()
        state.version = version
        model = build_estimator(cls, params, strict)
    return model, state, sections


def restore_state(
    model: Any, path: str | os.PathLike[str], state: SavedEntries, sections: list[bytes]
) -> None:
    """``model._load_state(state, sections)``, then a check that every entry
    of ``state`` was read; any error becomes a ``ValueError`` naming the
    file."""
    with named_errors(path):
        model._load_state(state, sections)
        state.check_all_read()


def index_of(values: list[Any], what: str) -> dict[Any, int]:
    """``{value: position}`` of a list of distinct values (``ValueError``
    on a repeated one)."""
    index = {v: i for i, v in enumerate(values)}
    if len(index) != len(values):
        raise ValueError(f"the saved {what} are not distinct")
    return index


class IndependentCopies:
    """Mixin of the estimators whose copies are independent models.

    ``copy.copy`` is ``copy.deepcopy``: a shallow copy would share the
    Python-side state (label and feature lists, histories, sub-models) with
    the original while the core states, which travel as their bytes, are
    rebuilt, so that learning on either would change the other or leave it
    out of step with its core. ``copy.deepcopy`` copies what a pickle holds
    (``__getstate__``, rebuilt by ``__setstate__``) under the model's lock,
    so that a copy taken while another thread learns is of one round; the
    copy gets a lock of its own. Without a ``__getstate__`` of its class, a
    model pickles as its ``__dict__``, lock included (a pickle restores a
    fresh one), taken under the lock: a model pickles the same before and
    after its lock is first used."""

    @synchronized
    def __getstate__(self) -> dict[str, Any]:
        return self.__dict__.copy()

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __copy__(self) -> Any:
        return copy.deepcopy(self)

    @synchronized
    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        cls = type(self)
        new = cls.__new__(cls)
        memo[id(self)] = new
        new.__setstate__(copy.deepcopy(self.__getstate__(), memo))
        return new


class BytesState:
    """Mixin of the pickling of an estimator whose learner is one core object
    ``_state`` with ``to_bytes`` and a ``from_bytes`` on ``_STATE_TYPE``: the
    learner travels as its bytes, everything else as it is."""

    _STATE_TYPE: ClassVar[Any]

    @synchronized
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_state"] = state["_state"].to_bytes()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        state["_state"] = self._state_from_bytes(state["_state"])
        self.__dict__.update(state)

    @classmethod
    def _state_from_bytes(cls, data: bytes) -> Any:
        """The core state of ``data`` (its ``to_bytes``)."""
        return cls._STATE_TYPE.from_bytes(data)

    @synchronized
    def __sizeof__(self) -> int:
        return object.__sizeof__(self) + int(self.__dict__["_state"].__sizeof__())


_P = TypeVar("_P", bound="Persistent")


class Persistent:
    """Mixin of the estimators' ``save`` and ``load``, through
    :func:`save_estimator` and :func:`load_estimator`.

    A subclass sets ``_SAVE_VERSION`` (its format version) and
    ``_SAVE_SECTIONS`` (the section counts a file may hold), and defines
    ``_save_state()``, which returns the Python state and the core's sections,
    and ``_load_state(state, sections)``, which checks them and restores them
    into a model freshly built from the saved parameters (any exception there
    becomes a ``ValueError`` naming the file).
    """

    _SAVE_VERSION: ClassVar[int]
    _SAVE_SECTIONS: ClassVar[tuple[int, ...]]

    def _save_state(self) -> tuple[dict[str, Any], list[bytes]]:
        raise NotImplementedError

    def _load_state(self, state: dict[str, Any], sections: list[bytes]) -> None:
        raise NotImplementedError

    @synchronized
    def save(self, path: str | os.PathLike[str]) -> None:
        """Saves the model to ``path`` atomically (see :func:`save_bytes`):
        one checksummed file with the constructor parameters, the
        Python-side state (labels, feature names, histories) and the core
        states. The file keeps an existing file's mode and is written
        through a symbolic link to its target."""
        state, sections = self._save_state()
        save_estimator(self, path, self._SAVE_VERSION, state, sections)

    @classmethod
    def load(cls: type[_P], path: str | os.PathLike[str]) -> _P:
        """Loads a model saved by :meth:`save`. ``FileNotFoundError`` if
        ``path`` is missing; ``ValueError`` naming the file if it is not a
        saved model of this class, was saved by an older format, or is
        truncated or corrupted.

        >>> import pathlib, tempfile
        >>> from omkl import ProximalClassifier
        >>> m = ProximalClassifier()
        >>> m.learn_one({"a": 1.0}, "x")
        >>> m.learn_one({"b": 1.0}, "y")
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "m.omkl"
        >>> m.save(p)
        >>> ProximalClassifier.load(p).predict_one({"b": 1.0})
        'y'
        """
        model, state, sections = load_estimator(cls, path, [cls._SAVE_VERSION], cls._SAVE_SECTIONS)
        restore_state(model, path, state, sections)
        return cast(_P, model)
