"""The README's quick start runs as written against the installed package and
prints what the README says it prints."""

from __future__ import annotations

import ast
import contextlib
import io
import pathlib
import re

import pytest
from river import datasets

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def _section(text: str, title: str) -> str:
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def test_quick_start_runs_and_prints_what_the_readme_says():
    if not README.is_file():
        pytest.skip("not run from a source checkout")
    quick = _section(README.read_text(encoding="utf-8"), "Quick start")
    blocks = re.findall(r"^```python\n(.*?)^```$", quick, re.S | re.M)
    assert len(blocks) == 2, "the quick start has two python blocks"
    namespace: dict[str, object] = {"__name__": "readme"}
    printed = []
    for block in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, str(README), "exec"), namespace)
        printed.append(out.getvalue().splitlines())

    # block 1: an accuracy, then one group norm per prefix before "-"
    assert printed[0][0].startswith("Accuracy: "), printed[0]
    x, _ = next(iter(datasets.ImageSegments()))
    prefixes = {name.split("-")[0] for name in x}
    group_norms = ast.literal_eval(printed[0][1])  # a printed dict of floats
    assert set(group_norms) == prefixes
    assert all(norm > 0 for norm in group_norms.values())

    # block 2: the accuracy and the linear kernel's weight stated in the README
    claimed = re.search(r"this prints\s+`(Accuracy: [\d.]+%)`", quick)
    assert claimed, "the quick start states the MKL accuracy it prints"
    assert printed[1][0] == claimed.group(1)
    linear = re.search(r"# linear ([\d.]+)", blocks[1])
    assert linear, "the quick start states the linear kernel's weight"
    weights = ast.literal_eval(printed[1][1])
    assert f"{weights['linear']:.2f}" == linear.group(1)
