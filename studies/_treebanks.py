"""The UD treebanks of ``../shared/data`` that the studies compare on, and
their files."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator
from typing import Any

DATA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"

#: key -> (name, folder under DATA, file stem)
TREEBANKS = {
    "ewt": ("UD English-EWT", "ud-english-ewt", "en_ewt"),
    "greek": ("UD Greek-GDT", "ud-greek-gdt", "el_gdt"),
    "gothic": ("UD Gothic-PROIEL", "ud-gothic-proiel", "got_proiel"),
}


def train_and_dev(key: str) -> tuple[str, pathlib.Path, pathlib.Path]:
    """The name of treebank ``key`` and its training and dev files (which
    may not exist)."""
    name, folder, stem = TREEBANKS[key]
    train, dev = (DATA / folder / f"{stem}-ud-{part}.conllu" for part in ("train", "dev"))
    return name, train, dev


def read_train_and_dev(keys: str) -> Iterator[tuple[str, list[Any], list[Any]]]:
    """The name, training sentences and dev sentences of each treebank of
    the comma-separated ``keys``; for one whose files are missing, a table
    row saying so is printed instead."""
    from omkl.parsing import read_conllu

    for key in keys.split(","):
        name, train, dev = train_and_dev(key)
        if not (train.exists() and dev.exists()):
            print(f"| {name} | skipped: {train.parent} not found |")
            continue
        yield name, read_conllu(str(train)), read_conllu(str(dev))
