"""Model files are untrusted input: a crafted file with a payload in any
field of any estimator's format (an import path, pickle opcodes, river's
object marker, another model class) is refused with an error naming the
file, and its payload never runs. Each estimator's crafted files are loaded
in a subprocess, which checks after every load that the payload's marker
file was not created."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from test_persistence import ESTIMATORS, make_model

import omkl
from omkl import _persist

#: The loader each format is read with.
LOADERS = {name: getattr(omkl, name) for name in ESTIMATORS}


def _payloads(marker: str) -> tuple[dict[str, object], dict[str, object]]:
    """``(refused, inert)``: JSON values that must make any file holding them
    be refused, and strings that a file may hold as data (a label may be
    any string) but that must never run."""
    cmd = f"touch {marker}"
    os_system = {"river": ["river.datasets.base:os.system", {"dict": [["command", cmd]]}]}
    refused: dict[str, object] = {
        "river marker to os.system": os_system,
        "river marker to os.system under river.drift": {
            "river": ["river.drift.adwin:os.system", {"dict": [["command", cmd]]}]
        },
        "river marker to an omkl function": {
            "river": [
                "omkl._persist:save_bytes",
                {"dict": [["path", marker], ["data", "x"]]},
            ]
        },
        "river marker to eval": {"river": ["builtins:eval", {"dict": [["source", cmd]]}]},
        "allowed detector with a payload parameter": {
            "river": ["river.drift.adwin:ADWIN", {"dict": [["delta", os_system]]}]
        },
        "allowed detector with an unknown parameter": {
            "river": ["river.drift.adwin:ADWIN", {"dict": [["__class__", "os:system"]]}]
        },
        "kernel with a payload argument": {"kernel": [os_system]},
        "random features with a payload argument": {"rff": [os_system, None, 1.0]},
        "numpy object dtype": {"numpy": "|O", "value": cmd},
        "pickle marker": {"pickle": f"cos\nsystem\n(V{cmd}\ntR."},
        "jsonpickle marker": {"py/object": "os.system", "py/state": cmd},
        "reduce marker": {"__reduce__": ["os:system", [cmd]]},
    }
    inert: dict[str, object] = {
        "import path": "os:system",
        "pickle opcodes": f"cos\nsystem\n(V{cmd}\ntR.",
    }
    return refused, inert


def _positions(node: object, path: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """Paths to the values of a JSON header: every entry of every object
    and the first two items of every list."""
    out = [path] if path else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _positions(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node[:2]):
            out += _positions(v, (*path, i))
    return out


def _replaced(header: object, path: tuple[object, ...], value: object) -> object:
    head = json.loads(json.dumps(header))
    node = head
    for key in path[:-1]:
        node = node[key]  # type: ignore[index]
    node[path[-1]] = value  # type: ignore[index]
    return head


#: Runs in a fresh interpreter: loads every crafted file, checks the
#: marker after each, and prints one JSON result per file.
_LOADER = textwrap.dedent(
    """
    import json, os, sys
    import omkl
    cls, marker, files = getattr(omkl, sys.argv[1]), sys.argv[2], json.loads(sys.stdin.read())
    out = []
    for path in files:
        try:
            cls.load(path)
            result = ["loaded", ""]
        except ValueError as e:
            result = ["refused", str(e)]
        except Exception as e:
            result = [type(e).__name__, str(e)]
        out.append([path, *result, os.path.exists(marker)])
    print(json.dumps(out))
    """
)


def _load_all(name: str, marker: str, files: list[str]) -> list[list[object]]:
    proc = subprocess.run(
        [sys.executable, "-c", _LOADER, name, marker],
        input=json.dumps(files),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_crafted_files_are_refused_and_never_run_their_payload(name, tmp_path):
    model = make_model(name)
    good = tmp_path / "good.omkl"
    model.save(good)
    fmt = f"omkl.{name}"
    version, header, sections = _persist.load_model(good, fmt, list(range(1, 100)))
    marker = str(tmp_path / "PAYLOAD-RAN")
    refused, inert = _payloads(marker)

    must_refuse: dict[str, str] = {}
    may_load: dict[str, str] = {}
    n = 0

    def craft(what: str, head: object, secs: list[bytes], into: dict[str, str]) -> None:
        nonlocal n
        n += 1
        path = str(tmp_path / f"crafted-{n}.omkl")
        _persist.save_model(path, fmt, version, head, secs)  # type: ignore[arg-type]
        into[path] = what

    positions = _positions(header)
    assert len(positions) >= 8
    for pos in positions:
        for label, payload in refused.items():
            craft(f"{label} at {pos}", _replaced(header, pos, payload), sections, must_refuse)
        for label, payload in inert.items():
            craft(f"{label} at {pos}", _replaced(header, pos, payload), sections, may_load)
    # the nested model class of a pipeline, by an import path of omkl or elsewhere
    if name == "TextParser":
        for part in ("tagger", "parser", "tokenizer"):
            for target in (
                "omkl._persist:save_bytes",
                "os:system",
                "builtins:eval",
                "omkl.tagging:TextTagger",
                "omkl.parsing:DependencyParser" if part == "tagger" else "omkl:MorphologyTagger",
            ):
                head = _replaced(header, (part, "class"), target)
                craft(f"{part} class {target}", head, sections, must_refuse)
    # pickle opcodes in place of each core section
    pickled = f"cos\nsystem\n(V{'touch ' + marker}\ntR.".encode()
    for i in range(len(sections)):
        secs = [*sections[:i], pickled, *sections[i + 1 :]]
        craft(f"pickle in section {i}", header, secs, must_refuse)
    # an unknown header entry, and each saved parameter and state entry left out
    craft("extra header entry", {**header, "extra": 1}, sections, must_refuse)
    for path in _entry_lists(header):
        pairs = _at(header, path)
        for i, (key, _) in enumerate(pairs):
            head = _replaced(header, path, [*pairs[:i], *pairs[i + 1 :]])
            craft(f"{key!r} left out of {path}", head, sections, must_refuse)
        head = _replaced(header, path, [*pairs, ["extra", 1]])
        craft(f"an extra entry in {path}", head, sections, must_refuse)

    results = _load_all(name, marker, [*must_refuse, *may_load])
    ran = [r for r in results if r[3]]
    assert ran == [], f"a payload ran: {ran[:3]}"
    wrong = [
        (must_refuse[p], outcome, msg[:200])
        for p, outcome, msg, _ in results
        if p in must_refuse and (outcome != "refused" or p not in msg)
    ]
    assert wrong == [], f"{len(wrong)} crafted files not refused naming the file: {wrong[:5]}"
    other = [
        (may_load[p], outcome, msg[:200])
        for p, outcome, msg, _ in results
        if p in may_load and outcome not in ("loaded", "refused")
    ]
    assert other == [], other[:5]
    assert not os.path.exists(marker)


def _at(header: object, path: tuple[object, ...]) -> list[list[object]]:
    node = header
    for key in path:
        node = node[key]  # type: ignore[index]
    return node  # type: ignore[return-value]


def _entry_lists(node: object, path: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """Paths to the ``[key, value]`` lists of the encoded parameter and
    state dicts (``"params": {"dict": [...]}``), at any depth (a pipeline's
    components, a stacked parser's first stage)."""
    if isinstance(node, dict):
        items: list[tuple[object, object]] = list(node.items())
    elif isinstance(node, list):
        items = list(enumerate(node))
    else:
        return []
    out: list[tuple[object, ...]] = []
    for k, v in items:
        here = (*path, k)
        first_stage = isinstance(node, list) and k == 1 and node[0] == "first_stage"
        if (k in ("params", "state") or first_stage) and isinstance(v, dict) and set(v) == {"dict"}:
            out.append((*here, "dict"))
        out += _entry_lists(v, here)
    return out
