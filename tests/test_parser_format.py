"""The parser's saved format version: saves of an older version are refused
by the first check that reads them, with a message naming both versions."""

from __future__ import annotations

import pathlib
import pickle
import struct

import pytest

from omkl import DependencyParser, _omkl

SENT = [
    {"form": f, "lemma": f.lower(), "upos": u, "xpos": u, "feats": "_"}
    for f, u in [("The", "DET"), ("dog", "NOUN"), ("barks", "VERB")]
]


def test_format_version_is_3_and_written_in_the_core_bytes() -> None:
    assert _omkl.PARSER_FORMAT_VERSION == 3
    core = _omkl.ArcParserCore()
    b = core.__getstate__()
    assert b[:8] == b"OMKLARC\0"
    assert struct.unpack("<I", b[8:12])[0] == 3


def test_an_older_save_is_refused_naming_its_version(tmp_path: pathlib.Path) -> None:
    p = DependencyParser(prune_k=0)
    p.learn_one(SENT, [2, 3, 0])
    path = tmp_path / "p.pkl"
    p.save(path)
    assert DependencyParser.load(path).predict_one(SENT) == p.predict_one(SENT)
    # the same save as version 2 wrote it: version 2 in the file and the core
    blob = pickle.loads(path.read_bytes())
    state = blob["parser"].__getstate__()
    core = bytearray(state["_core"])
    core[8:12] = struct.pack("<I", 2)
    with pytest.raises(ValueError, match="format version 2, expected 3"):
        _omkl.ArcParserCore().__setstate__(bytes(core))
    old = pickle.dumps({**blob, "format_version": 2}).replace(bytes(state["_core"]), bytes(core))
    old_path = tmp_path / "old.pkl"
    old_path.write_bytes(old)
    with pytest.raises(ValueError, match="format version 2"):
        DependencyParser.load(old_path)
