"""Shared setup of the parser studies: the UD English-EWT paths, the
``--train``/``--dev``/``--max-train`` arguments, the refusal of a test file
as the dev file, and the peak resident memory."""

from __future__ import annotations

import argparse
import os
import pathlib
import resource

DATA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data" / "ud-english-ewt"


def arguments(doc: str | None, max_train: int) -> argparse.ArgumentParser:
    """An argument parser described by the first paragraph of ``doc``, with
    the treebank paths and ``--max-train`` (default ``max_train``)."""
    ap = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    ap.add_argument("--train", default=str(DATA / "en_ewt-ud-train.conllu"))
    ap.add_argument("--dev", default=str(DATA / "en_ewt-ud-dev.conllu"))
    ap.add_argument("--max-train", type=int, default=max_train, help="first N sentences (0: all)")
    return ap


def parse_dev_only(ap: argparse.ArgumentParser) -> argparse.Namespace:
    """The parsed arguments; exits if the dev file's name contains ``test``."""
    args = ap.parse_args()
    if "test" in os.path.basename(args.dev):
        raise SystemExit("the study must be run on the dev file, not the test file")
    return args


def peak_rss_mb() -> float:
    """Peak resident memory of this process, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
