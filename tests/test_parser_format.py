"""The parser's saved format version: files of an older format are refused
by the first check that reads them, with a message saying so."""

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


def test_format_version_is_6_and_written_in_the_core_envelope() -> None:
    assert _omkl.PARSER_FORMAT_VERSION == 6
    b = _omkl.ArcParserCore().__getstate__()
    name = b"omkl-arc-parser"
    assert b[:4] == b"OMKL" and b[4] == len(name) and b[5 : 5 + len(name)] == name
    assert struct.unpack("<I", b[5 + len(name) : 9 + len(name)])[0] == 6
    version, _ = _omkl.open_sealed(b, "omkl-arc-parser", [4, 5, 6])
    assert version == 6


def test_older_saves_are_refused_as_older_formats(tmp_path: pathlib.Path) -> None:
    p = DependencyParser(prune_k=0)
    p.learn_one(SENT, [2, 3, 0])
    path = tmp_path / "p.omkl"
    p.save(path)
    assert DependencyParser.load(path).predict_one(SENT) == p.predict_one(SENT)
    # the core bytes of format versions 1 to 3: magic, version, payload
    core = p._core.__getstate__()
    _, start = _omkl.open_sealed(core, "omkl-arc-parser", [6])
    for old in (1, 2, 3):
        old_core = b"OMKLARC\0" + struct.pack("<I", old) + core[start:]
        with pytest.raises(ValueError, match="older omkl format"):
            _omkl.ArcParserCore().__setstate__(old_core)
        # the pickled file that earlier versions saved
        blob = {"format": "omkl.DependencyParser", "format_version": old, "parser": None}
        old_path = tmp_path / f"old{old}.pkl"
        old_path.write_bytes(pickle.dumps(blob) + old_core)
        with pytest.raises(ValueError, match=f"old{old}.pkl.*older omkl format.*re-train"):
            DependencyParser.load(old_path)
