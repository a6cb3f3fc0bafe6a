"""Flat cost of the text tagger on an open vocabulary: ``TextTagger.learn_one``
on a stream of 10^6 tokens or more whose word forms keep changing.

The stream is UD English-EWT's training file (read from
``../shared/data/ud-english-ewt``; the script exits cleanly without it),
pass after pass, each word given a random suffix of three letters with
probability ``--novel`` (so new feature names keep arriving: the word, its
lower case, suffixes, shape and neighbour features all change). Features
are :func:`omkl.tagging.token_features` of each sentence, computed outside
the timed ``learn_one`` call. Every 10^5 tokens the script prints the
resident set size (``VmRSS``), the microseconds per token of ``learn_one``
over the last 10^5 tokens and the number of distinct word forms so far; at
the end it compares the RSS and the time per token after the first 10^5
tokens with those at the end.

    python benches/flat_cost_tagging.py [--tokens 1000000] [--novel 0.5]
"""

from __future__ import annotations

import argparse
import pathlib
import random
import string
import time
from collections.abc import Iterator

from omkl.datasets import read_conllu
from omkl.tagging import TextTagger, token_features

DATA = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "data" / "ud-english-ewt"


def rss_mb() -> float:
    """Current resident memory of the process, in MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def stream(
    sentences: list[tuple[list[str], list[str]]], novel: float, seed: int
) -> Iterator[tuple[list[str], list[str]]]:
    """The sentences pass after pass, each word suffixed at random."""
    rng = random.Random(seed)
    letters = string.ascii_lowercase
    while True:
        for words, tags in sentences:
            yield (
                [
                    w + "".join(rng.choices(letters, k=3)) if rng.random() < novel else w
                    for w in words
                ],
                tags,
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", type=int, default=1_000_000)
    ap.add_argument("--novel", type=float, default=0.5)
    ap.add_argument("--window", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--regularizer", default=None, help="e.g. l2_squared (default: TextTagger's default)"
    )
    ap.add_argument("--lam", type=float, default=1e-6, help="strength of --regularizer")
    args = ap.parse_args()
    train = DATA / "en_ewt-ud-train.conllu"
    if not train.exists():
        print(f"skipped: no EWT data in {DATA}")
        return
    sentences = [([t["form"] for t in s], [t["upos"] for t in s]) for s in read_conllu(train)]
    tagger = TextTagger()
    if args.regularizer is not None:
        tagger = TextTagger(regularizer=(args.regularizer, args.lam))
    print(f"TextTagger (n_buckets={tagger.n_buckets}, regularizer={tagger.regularizer})")
    print(f"stream: EWT train pass after pass, {args.novel:.0%} of the words suffixed at random")
    print(f"{'tokens':>10} {'RSS MB':>8} {'us/token':>9} {'forms seen':>11}")
    seen: set[str] = set()
    done = next_mark = 0
    next_mark = args.window
    spent = 0.0
    rows: list[tuple[int, float, float]] = []
    for words, tags in stream(sentences, args.novel, args.seed):
        xs = token_features(words)
        t0 = time.perf_counter()
        tagger.learn_one(xs, tags)
        spent += time.perf_counter() - t0
        seen.update(words)
        done += len(words)
        if done >= next_mark:
            per = 1e6 * spent / (done - (rows[-1][0] if rows else 0))
            rows.append((done, rss_mb(), per))
            print(f"{done:>10,} {rows[-1][1]:>8.1f} {per:>9.2f} {len(seen):>11,}", flush=True)
            spent = 0.0
            next_mark += args.window
        if done >= args.tokens:
            break
    first, last = rows[0], rows[-1]
    print(
        f"RSS: {first[1]:.1f} MB after {first[0]:,} tokens, {last[1]:.1f} MB after "
        f"{last[0]:,} ({100 * (last[1] / first[1] - 1):+.1f}%)"
    )
    # the first window also pays for first touches of the weight tables
    second = rows[1] if len(rows) > 1 else rows[0]
    print(
        f"time per token: {second[2]:.2f} us in the window after {first[0]:,} tokens, "
        f"{last[2]:.2f} us in the last ({100 * (last[2] / second[2] - 1):+.1f}%); "
        f"{first[2]:.2f} us in the first window"
    )


if __name__ == "__main__":
    main()
