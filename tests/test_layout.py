"""Layout of the Rust core: no two of its files import each other (directly
or through a longer circle), and no file grows far beyond 600 lines.

The file-level graph is read from the ``crate::``/``super::``/``self::``
paths of each file (test modules left out), following the ``pub use``
re-exports of ``mod.rs`` files to the file that defines the item.
"""

from __future__ import annotations

import pathlib
import re

import networkx as nx
import pytest

SRC = pathlib.Path(__file__).resolve().parents[1] / "rust_core" / "src"
MAX_LINES = 650

pytestmark = pytest.mark.skipif(not SRC.is_dir(), reason="needs the source tree")


def _modules() -> dict[tuple[str, ...], pathlib.Path]:
    out = {}
    for p in SRC.rglob("*.rs"):
        parts = p.relative_to(SRC).with_suffix("").parts
        if parts[-1] in ("mod", "lib"):
            parts = parts[:-1]
        out[tuple(parts)] = p
    return out


def _import_graph() -> nx.DiGraph:
    mods = _modules()
    reexport: dict[tuple[tuple[str, ...], str], tuple[str, ...]] = {}
    for m, p in mods.items():
        if p.name in ("mod.rs", "lib.rs"):
            for mm in re.finditer(r"pub(?:\(crate\))? use\s+(\w+)::\{?([^;]*?)\}?;", p.read_text()):
                sub = (*m, mm.group(1))
                if sub in mods:
                    for name in re.findall(r"\b(\w+)\b", mm.group(2)):
                        reexport[(m, name)] = sub

    def resolve(cur: tuple[str, ...], segs: list[str]) -> tuple[str, ...] | None:
        head, rest = segs[0], segs[1:]
        if head == "crate":
            base: tuple[str, ...] = ()
        elif head == "super":
            base = cur[:-1]
            while rest and rest[0] == "super":
                base, rest = base[:-1], rest[1:]
        elif head == "self":
            base = cur
        else:
            return None
        best = None
        for s in rest:
            if (*base, s) in mods:
                base = best = (*base, s)
            else:
                best = reexport.get((base, s), best)
                break
        return best

    g = nx.DiGraph()
    g.add_nodes_from(mods)
    for m, p in mods.items():
        src = p.read_text()
        cut = src.find("#[cfg(test)]\nmod tests")
        src = re.sub(r"//[^\n]*", "", src if cut < 0 else src[:cut])
        paths = [
            mm.group(1).split("::")
            for mm in re.finditer(r"\b((?:crate|super|self)(?:::[A-Za-z_]\w*)+)", src)
        ]
        for mm in re.finditer(r"\buse\s+((?:crate|super|self)(?:::\w+)*)::\{([^;]*)\};", src):
            base = mm.group(1).split("::")
            paths += [
                [*base, item] for item in re.findall(r"([A-Za-z_]\w*)(?:::[\w:]*)?", mm.group(2))
            ]
        for segs in paths:
            t = resolve(m, segs)
            # a file's own parent modules (mod.rs) are not imports of a sibling
            if t and t != m and m[: len(t)] != t:
                g.add_edge(m, t)
    return g


def test_no_two_core_files_import_each_other():
    circles = [
        sorted("/".join(m) for m in c) for c in nx.strongly_connected_components(_import_graph())
    ]
    assert [c for c in circles if len(c) > 1] == []


def test_the_graph_sees_imports():
    """The reader finds real edges (so the test above can fail)."""
    g = _import_graph()
    assert g.has_edge(("learner", "stream_mkl", "round"), ("learner", "stream_mkl", "state"))
    assert g.has_edge(("model", "parser"), ("model", "parser_state"))


def test_no_core_file_is_far_above_600_lines():
    sizes = {str(p.relative_to(SRC)): len(p.read_text().splitlines()) for p in SRC.rglob("*.rs")}
    assert {p: n for p, n in sizes.items() if n > MAX_LINES} == {}
