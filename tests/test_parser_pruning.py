"""The parser's first-pass pruner from Python: recall statistics, gold ranks
and the score margin, on a small synthetic treebank."""

from __future__ import annotations

import pickle

import pytest

from omkl import _omkl

TAGS = ["DET", "ADJ", "NOUN", "VERB", "ADP"]


def raw_treebank(
    n_sent: int = 60,
) -> tuple[list[str], list[list[tuple[str, str, str, str, str]]], list[list[int]]]:
    """Every word attaches to the next NOUN or VERB, else to the first VERB;
    the first VERB (or word 1) is the root's child."""
    ids, sents, heads = [], [], []
    for i in range(n_sent):
        tags = [TAGS[(i * 7 + j * 3 + j * j) % 5] for j in range(4 + i % 9)]
        root = tags.index("VERB") if "VERB" in tags else 0
        hs = []
        for j in range(len(tags)):
            if j == root:
                hs.append(0)
                continue
            nxt = [k for k in range(j + 1, len(tags)) if tags[k] in ("NOUN", "VERB")]
            hs.append((nxt[0] if nxt else root) + 1)
        ids.append(f"s{i}")
        sents.append([(f"{t.lower()}{j}", t.lower(), t, t, "_") for j, t in enumerate(tags)])
        heads.append(hs)
    return ids, sents, heads


def treebank(n_sent: int = 60) -> _omkl.ParseCorpus:
    return _omkl.ParseCorpus.from_tokens(*raw_treebank(n_sent))


def test_ranks_stats_and_margin() -> None:
    corpus = treebank()
    core = _omkl.ArcParserCore(prune_k=2)
    with pytest.raises(ValueError, match="pruner"):
        core.pruner_stats(corpus)
    for _ in range(3):
        core.fit_epoch(corpus, None, None, True)
    ranks = core.pruner_gold_ranks(corpus)
    gold = corpus.gold_heads()
    assert len(ranks) == sum(len(g or []) for g in gold)
    hit, total, kept, cand = core.pruner_stats(corpus)
    assert total == len(ranks)
    n_words = [len(g or []) for g in gold]
    # a rank counts the other candidates (root and words) scoring higher
    flat_n = [n for n in n_words for _ in range(n)]
    assert all(0 <= r < n for r, n in zip(ranks, flat_n, strict=True))
    assert sum(r < 2 for r in ranks) / total > 0.9
    assert hit / total > 0.9
    assert cand == sum(n * n for n in n_words)
    assert kept <= sum(min(2, n) * n for n in n_words)
    assert (hit, total) == core.pruner_recall(corpus)
    # a margin keeps fewer arcs, never more, and is pickled with the parser
    assert core.prune_margin() == float("inf")
    core.set_prune_margin(0.5)
    hit2, _, kept2, _ = core.pruner_stats(corpus)
    assert kept2 <= kept and hit2 <= hit
    clone = pickle.loads(pickle.dumps(core))
    assert clone.prune_margin() == 0.5
    assert clone.pruner_stats(corpus) == core.pruner_stats(corpus)
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="margin"):
            core.set_prune_margin(bad)
    with pytest.raises(ValueError, match="pruner"):
        _omkl.ArcParserCore(prune_k=0).set_prune_margin(1.0)


def test_estimator_prune_margin_is_validated_and_applied() -> None:
    from omkl.parsing import DependencyParser

    for bad in (0.0, -2.0, float("nan"), "3"):
        with pytest.raises(ValueError, match="prune_margin"):
            DependencyParser(prune_margin=bad)  # type: ignore[arg-type]
    corpus = treebank()
    _, raw, gold = raw_treebank()
    sents = [
        [
            {"form": f, "lemma": lem, "upos": u, "xpos": x, "feats": ft, "head": h}
            for (f, lem, u, x, ft), h in zip(toks, heads, strict=True)
        ]
        for toks, heads in zip(raw, gold, strict=True)
    ]
    wide = DependencyParser(prune_k=3, prune_margin=float("inf"), label_epochs=0, epochs=1)
    wide.fit(sents)
    narrow = DependencyParser(prune_k=3, prune_margin=0.5, label_epochs=0, epochs=1).fit(sents)
    assert wide._core.prune_margin() == float("inf")
    assert narrow._core.prune_margin() == 0.5
    # the same first pass (same data and seed), so the margin only drops arcs
    _, _, kept_wide, cand = wide._core.pruner_stats(corpus)
    _, _, kept_narrow, cand2 = narrow._core.pruner_stats(corpus)
    assert cand == cand2 and kept_narrow < kept_wide
    assert pickle.loads(pickle.dumps(narrow))._core.prune_margin() == 0.5


LONG_SENTENCE = """
import resource, sys
from omkl.parsing import DependencyParser

tags = ["DET", "ADJ", "NOUN", "VERB", "ADP", "PUNCT"]
def tok(j, t, head):
    return {"form": f"{t.lower()}{j % 7}", "lemma": t.lower(), "upos": t, "xpos": t,
            "feats": "_", "head": head}
train = [[tok(0, "DET", 2), tok(1, "NOUN", 3), tok(2, "VERB", 0), tok(3, "PUNCT", 3)]] * 20
parser = DependencyParser(epochs=1, label_epochs=0).fit(train)
sentence = [tok(j, tags[(j * 5) % 6], 0) for j in range(1200)]
extra_mb = int(sys.argv[1])
if extra_mb:
    with open("/proc/self/statm") as f:
        used = int(f.read().split()[0]) * resource.getpagesize()
    limit = used + extra_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
try:
    heads = parser.predict_one(sentence)
except MemoryError as e:
    print("MemoryError:", e)
else:
    assert len(heads) == 1200 and sum(h == 0 for h in heads) == 1
    print("parsed")
"""


@pytest.mark.parametrize("extra_mb", [0, 8, 40])
def test_a_1200_word_sentence_parses_or_raises_memory_error(extra_mb: int) -> None:
    """A default parser predicts a 1,200-word sentence; with little memory to
    spare it raises MemoryError instead of aborting."""
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-c", LONG_SENTENCE, str(extra_mb)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    if extra_mb == 0:
        assert run.stdout.strip() == "parsed"
    else:
        assert run.stdout.startswith(("parsed", "MemoryError: cannot allocate")), run.stdout
