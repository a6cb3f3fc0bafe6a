"""Flat cost of :class:`omkl.TextTagger` on an open vocabulary: EWT train
sentences (UPOS) streamed through ``learn_one`` again and again, every word
with a random suffix appended (so that nearly every word, prefix-free
feature and bigram is new), for ``--tokens`` tokens in all. Prints the
resident memory after 10^5 tokens and at the end, and the time per token
over each tenth of the stream. Uses ℓ2² (each round costs O(non-zeros ×
labels + length × labels²); ℓ1 would touch every weight written so far).

    PYTHONPATH=python python benches/flat_cost_tagging.py [--tokens 1000000]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import random
import time

from omkl.parsing import read_conllu
from omkl.tagging import TextTagger, token_features

DATA = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "data" / "ud-english-ewt"


def rss_mb() -> float:
    """Current resident memory of the process, in MB."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", type=int, default=1_000_000)
    ap.add_argument("--n-buckets", type=int, default=1 << 16)
    args = ap.parse_args()
    if not (DATA / "en_ewt-ud-train.conllu").exists():
        print(f"skipped: no EWT data in {DATA}")
        return
    train = read_conllu(DATA / "en_ewt-ud-train.conllu")
    rng = random.Random(0)
    tagger = TextTagger(
        loss="hinge",
        regularizer=("l2_squared", 1e-6),
        schedule="constant",
        average=True,
        n_buckets=args.n_buckets,
    )
    seen, mark, rss_1e5 = 0, args.tokens // 10, None
    times: list[float] = []
    learn_s, chunk = 0.0, 0
    while seen < args.tokens:
        for sent in train:
            words = [t["form"] + "".join(rng.choices("abcdefgh", k=3)) for t in sent]
            xs, ys = token_features(words), [t["upos"] for t in sent]
            t0 = time.perf_counter()
            tagger.learn_one(xs, ys)
            learn_s += time.perf_counter() - t0
            seen += len(sent)
            chunk += len(sent)
            if rss_1e5 is None and seen >= 100_000:
                rss_1e5 = rss_mb()
                print(f"after {seen:,} tokens: RSS {rss_1e5:.0f} MB", flush=True)
            if chunk >= mark:
                times.append(1e6 * learn_s / chunk)
                print(f"tokens {seen:>9,}: learn_one {times[-1]:.2f} µs/token", flush=True)
                learn_s, chunk = 0.0, 0
            if seen >= args.tokens:
                break
    end = rss_mb()
    assert rss_1e5 is not None
    print(f"after {seen:,} tokens: RSS {end:.0f} MB ({100 * (end / rss_1e5 - 1):+.1f}%)")
    print(
        f"time per token, last tenth / first tenth: {times[-1] / times[0]:.2f} "
        f"(min {min(times):.2f}, max {max(times):.2f} µs)"
    )


if __name__ == "__main__":
    main()
