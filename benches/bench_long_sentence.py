"""Tagging and parsing one overlong sentence, as a failed sentence split
gives: the time and peak memory of ``TextParser.predict`` on a "sentence"
of 1,000, 3,000 and 10,000 words (test sentences of UD English-EWT written
one after the other), parsed in pieces of at most
:data:`omkl.pipeline.MAX_PARSED_WORDS` words, against the same pipeline
parsing it whole (the behaviour before the pieces; 10,000 words whole are
not run, they do not fit in this machine's time).

Each measurement runs in a fresh child process (its peak RSS is its own).
The pipeline is trained here on a prefix of the EWT training file with
fewer epochs than the defaults: the figures are of the rule, not of the
best model.

    python benches/bench_long_sentence.py [--train-sentences 500]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

DATA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data" / "ud-english-ewt"
LENGTHS = (1_000, 3_000, 10_000)
WHOLE_MAX = 3_000


def child(args: argparse.Namespace) -> None:
    from omkl import pipeline
    from omkl.parsing import read_conllu
    from omkl.pipeline import TextParser

    model = TextParser.load(args.model)
    words: list[dict[str, str]] = []
    for sent in read_conllu(DATA / "en_ewt-ud-test.conllu"):
        words.extend({"form": t["form"]} for t in sent)
        if len(words) >= args.words:
            break
    words = words[: args.words]
    if args.whole:
        pipeline.MAX_PARSED_WORDS = len(words) + 1
    t0 = time.perf_counter()
    (out,) = model.predict([words])
    seconds = time.perf_counter() - t0
    assert [t["head"] for t in out].count(0) == 1
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak_rss_mb": peak}))


def measure(model: pathlib.Path, words: int, whole: bool) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--child", "--model", str(model), "--words", str(words)]
    out = subprocess.run(cmd + (["--whole"] if whole else []), capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--train-sentences", type=int, default=500)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--words", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--whole", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    train = DATA / "en_ewt-ud-train.conllu"
    if not train.exists():
        print(f"skipped: {train} not found")
        return
    from omkl import DependencyParser, MorphologyTagger, TextParser
    from omkl.parsing import read_conllu
    from omkl.pipeline import MAX_PARSED_WORDS

    sentences = read_conllu(train)[: args.train_sentences]
    with tempfile.TemporaryDirectory() as tmp:
        model = pathlib.Path(tmp) / "pipeline.omkl"
        TextParser(
            MorphologyTagger(epochs=5, seed=0),
            DependencyParser(epochs=2, seed=0, stack_folds=5),
            folds=2,
        ).fit(sentences).save(model)
        print(
            f"TextParser trained on {len(sentences)} EWT sentences (5 tagger epochs, 2 parser "
            f"epochs, 2 jackknife parts); pieces of at most {MAX_PARSED_WORDS} words\n"
        )
        print(
            "| words | in pieces, s | whole, s | whole / pieces | in pieces, peak RSS MB "
            "| whole, peak RSS MB |"
        )
        print("|---|---|---|---|---|---|")
        for n in LENGTHS:
            cut = measure(model, n, whole=False)
            whole = measure(model, n, whole=True) if n <= WHOLE_MAX else None
            w_s = f"{whole['seconds']:.2f}" if whole else "not run"
            ratio = f"{whole['seconds'] / cut['seconds']:.1f}" if whole else "-"
            w_m = f"{whole['peak_rss_mb']:.0f}" if whole else "not run"
            print(
                f"| {n:,} | {cut['seconds']:.2f} | {w_s} | {ratio} | {cut['peak_rss_mb']:.0f} "
                f"| {w_m} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
