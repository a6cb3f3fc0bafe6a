"""Tests of the CoNLL-U reader and the dependency parser."""

from __future__ import annotations

import pathlib
import pickle
from typing import Any

import pytest

from omkl import ParseError
from omkl.parsing import DependencyParser, attachment_scores, read_conllu

EWT = "ud-english-ewt"

SAMPLE = """# newdoc id = d1
# sent_id = s-1
# text = I don't know.
1\tI\tI\tPRON\tPRP\tCase=Nom|Number=Sing|Person=1|PronType=Prs\t4\tnsubj\t_\t_
2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
2\tdo\tdo\tAUX\tVBP\tMood=Ind\t4\taux\t_\t_
3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t_\t_
4\tknow\tknow\tVERB\tVB\tVerbForm=Inf\t0\troot\t_\t_
4.1\tknow\tknow\tVERB\tVB\t_\t_\t_\t0:root\t_
5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t_\t_

# sent_id = s-2
1\tYes\tyes\tINTJ\tUH\t_\t0\troot\t_\t_
"""


def _write(tmp_path: pathlib.Path, text: str) -> pathlib.Path:
    p = tmp_path / "x.conllu"
    p.write_text(text, encoding="utf-8")
    return p


def test_reader_skips_comments_multiword_and_empty_nodes(tmp_path: pathlib.Path) -> None:
    sents = read_conllu(_write(tmp_path, SAMPLE))
    assert len(sents) == 2
    assert [t["form"] for t in sents[0]] == ["I", "do", "n't", "know", "."]
    assert [t["head"] for t in sents[0]] == [4, 4, 4, 0, 4]
    assert sents[0][0]["feats"].startswith("Case=Nom")
    assert sents[1][0]["deprel"] == "root"


@pytest.mark.parametrize(
    ("line", "lineno"),
    [
        ("1\tx\tx\tX\tX\t_\t0\troot\t_", 1),  # 9 columns
        ("1\tx\tx\tX\tX\t_\tzero\troot\t_\t_", 1),  # bad head
        ("one\tx\tx\tX\tX\t_\t0\troot\t_\t_", 1),  # bad id
    ],
)
def test_reader_malformed_line_names_file_and_line(
    tmp_path: pathlib.Path, line: str, lineno: int
) -> None:
    p = _write(tmp_path, "# c\n" + line + "\n")
    with pytest.raises(ParseError, match=rf"x\.conllu:{lineno + 1}:"):
        read_conllu(p)
    p = _write(tmp_path, "1\ta\ta\tX\tX\t_\t0\troot\t_\t_\n2\tb\tb\tX\tX\t_\t9\tdep\t_\t_\n")
    with pytest.raises(ParseError, match=r"x\.conllu:2:.*out of range"):
        read_conllu(p)


def test_uas_hand_worked_example() -> None:
    gold = [[2, 0, 2, 2], [0, 1]]
    pred = [[2, 0, 1, 3], [0, 1]]
    upos = [["DET", "NOUN", "PUNCT", "ADJ"], ["VERB", "NOUN"]]
    # non-punctuation words: 3 + 2 = 5; correct: word 1, 2 and both of s2 = 4
    scores = attachment_scores(gold, pred, upos)
    assert scores["uas"] == pytest.approx(80.0)
    labels_g = [["det", "root", "punct", "amod"], ["root", "obj"]]
    labels_p = [["det", "root", "punct", "amod"], ["root", "nsubj"]]
    las = attachment_scores(gold, pred, upos, labels_g, labels_p)["las"]
    assert las == pytest.approx(60.0)


def _toy() -> list[list[dict[str, str]]]:
    def s(tags: list[str]) -> list[dict[str, str]]:
        return [
            {"form": f"w{t}", "lemma": t.lower(), "upos": t, "xpos": t, "feats": "_"} for t in tags
        ]

    return [s(["DET", "NOUN", "VERB"]), s(["NOUN", "VERB", "DET", "NOUN"])]


def test_bad_input_raises_value_error_with_sentence_id() -> None:
    p = DependencyParser(templates=list(range(10)))
    sent = _toy()[0]
    with pytest.raises(ValueError, match=r"s42.*cycle"):
        p.learn_one(sent, [2, 1, 0], sentence_id="s42")
    with pytest.raises(ValueError, match=r"s43.*out of range"):
        p.learn_one(sent, [2, 7, 0], sentence_id="s43")
    with pytest.raises(ValueError, match=r"s44.*empty"):
        p.learn_one([], [], sentence_id="s44")
    with pytest.raises(ValueError, match=r"s45"):
        p.predict_one([], sentence_id="s45")
    with pytest.raises(ValueError, match=r"regularizer"):
        DependencyParser(regularizer="l1")
    with pytest.raises(ValueError, match=r"eta0"):
        DependencyParser(eta0=-1.0)
    with pytest.raises(ValueError, match=r"decoder"):
        DependencyParser(decoder="cky")
    # the failed steps left the parser untouched
    assert p._core.steps() == 0


def test_mkl_beta_is_a_distribution_and_large_lambda_zeroes_templates() -> None:
    data = _toy()
    heads = [[2, 3, 0], [2, 0, 4, 2]]
    sents = [
        [dict(t, head=h) for t, h in zip(s, hs, strict=True)]
        for s, hs in zip(data, heads, strict=True)
    ]
    trained = DependencyParser(regularizer="squared_l21", lam=0.01, templates=list(range(60)))
    trained.fit(sents, epochs=3)
    beta = trained.template_weights_
    assert len(beta) == 60
    assert all(b >= 0 for b in beta)
    assert sum(beta) == pytest.approx(1.0)
    assert len(trained.template_weights_trajectory_) == 3
    avg_beta = trained.averaged_template_weights_
    assert avg_beta is not None and sum(avg_beta) == pytest.approx(1.0)
    assert all(b >= 0 for b in avg_beta)
    # the averaged model is dense where the last iterate was ever non-zero
    assert sum(b > 0 for b in avg_beta) >= sum(b > 0 for b in beta)
    # One step from zero: every λ sees the same subgradient, so the templates
    # with non-zero β under λ = 0 are the gradient's support; a large λ keeps
    # a strict, non-empty subset of them.
    support = {}
    for lam in (0.0, 10.0):
        p = DependencyParser(regularizer="squared_l21", lam=lam, templates=list(range(104)))
        p.learn_one(data[1], heads[1])
        b = p.template_weights_
        assert sum(b) == pytest.approx(1.0)
        support[lam] = {i for i, x in enumerate(b) if x > 0}
    assert support[10.0] and support[10.0] < support[0.0]


def test_save_load_and_pickle_round_trip(tmp_path: pathlib.Path) -> None:
    data = _toy()
    p = DependencyParser(templates=list(range(30)))
    p.learn_one(data[0], [2, 3, 0])
    p.learn_one(data[1], [2, 0, 4, 2])
    path = tmp_path / "model.bin"
    p.save(path)
    assert [f.name for f in tmp_path.iterdir()] == ["model.bin"]
    q = DependencyParser.load(path)
    assert q.predict_one(data[1]) == p.predict_one(data[1])
    r = pickle.loads(pickle.dumps(p))
    assert pickle.dumps(r) == pickle.dumps(p)
    (tmp_path / "junk.bin").write_bytes(pickle.dumps({"format": "other"}))
    with pytest.raises(ValueError, match="junk.bin.*older omkl format"):
        DependencyParser.load(tmp_path / "junk.bin")


@pytest.fixture(scope="module")
def ewt_small(shared_data: pathlib.Path) -> tuple[list[Any], list[Any]]:
    """The first 500 EWT training sentences and the first 300 dev sentences."""
    train = read_conllu(shared_data / EWT / "en_ewt-ud-train.conllu")[:500]
    dev = read_conllu(shared_data / EWT / "en_ewt-ud-dev.conllu")[:300]
    return train, dev


@pytest.fixture(scope="module")
def ewt_parser(ewt_small: tuple[list[Any], list[Any]]) -> DependencyParser:
    """One parser (104 templates, first-pass pruner with k = 10, label stage)
    trained for 3 epochs on 500 EWT sentences, shared by the tests below.
    Tests must not train it further."""
    train, _ = ewt_small
    return DependencyParser(templates=list(range(104, 208)), prune_k=10).fit(train, epochs=3)


def _nearest_compatible_baseline(sentence: list[dict[str, object]]) -> list[int]:
    """Attach each word to the nearest word whose UPOS may head it (a table of
    compatible head tags for UD English), else to the nearest verb, else the root."""
    heads_of = {
        "DET": {"NOUN", "PROPN", "NUM"},
        "ADJ": {"NOUN", "PROPN"},
        "ADP": {"NOUN", "PROPN", "PRON", "NUM"},
        "NUM": {"NOUN"},
        "AUX": {"VERB", "ADJ", "NOUN"},
        "PART": {"VERB"},
        "ADV": {"VERB", "ADJ"},
        "CCONJ": {"NOUN", "VERB", "ADJ", "PROPN"},
        "PRON": {"VERB"},
        "NOUN": {"VERB"},
        "PROPN": {"VERB", "PROPN"},
        "PUNCT": {"VERB"},
        "SCONJ": {"VERB"},
    }
    upos = [str(t["upos"]) for t in sentence]
    n = len(upos)
    verbs = [i for i, u in enumerate(upos) if u == "VERB"]
    root = verbs[0] if verbs else 0
    heads = []
    for i, u in enumerate(upos):
        if i == root:
            heads.append(0)
            continue
        want = heads_of.get(u, {"VERB"})
        best = None
        for d in range(1, n):
            for j in (
                (i + 1 + d - 1, i - d) if u in {"DET", "ADJ", "ADP", "NUM"} else (i - d, i + d)
            ):
                if 0 <= j < n and j != i and upos[j] in want:
                    best = j
                    break
            if best is not None:
                break
        heads.append((best if best is not None else root) + 1)
    return heads


def test_parser_beats_nearest_compatible_baseline(
    ewt_small: tuple[list[Any], list[Any]], ewt_parser: DependencyParser
) -> None:
    _, dev = ewt_small
    parser = ewt_parser
    assert len(parser.history_) == 3
    pred = parser.parse(dev)
    gold = [[int(t["head"]) for t in s] for s in dev]
    upos = [[str(t["upos"]) for t in s] for s in dev]
    for heads in pred:
        n = len(heads)
        assert sum(h == 0 for h in heads) == 1
        for m in range(1, n + 1):  # every word reaches the root without a cycle
            seen, v = set(), m
            while v != 0:
                assert v not in seen and 0 <= heads[v - 1] <= n
                seen.add(v)
                v = heads[v - 1]
    ours = attachment_scores(gold, pred, upos)["uas"]
    base = attachment_scores(gold, [_nearest_compatible_baseline(s) for s in dev], upos)["uas"]
    assert ours > base + 10.0, (ours, base)
    assert parser.score(dev)["uas"] == pytest.approx(ours)


def _is_projective(heads: list[int]) -> bool:
    arcs = [(min(h, m), max(h, m)) for m, h in enumerate(heads, start=1)]
    return not any(a < c < b < d for a, b in arcs for c, d in arcs)


def _check_tree(heads: list[int]) -> None:
    n = len(heads)
    assert sum(h == 0 for h in heads) == 1
    for m in range(1, n + 1):
        seen, v = set(), m
        while v != 0:
            assert v not in seen and 0 <= heads[v - 1] <= n
            seen.add(v)
            v = heads[v - 1]


def test_eisner_decoder_gives_projective_single_root_trees(
    ewt_small: tuple[list[Any], list[Any]],
) -> None:
    train, dev = ewt_small[0][:200], ewt_small[1][:100]
    p = DependencyParser(decoder="eisner", templates=list(range(104, 208)), prune_k=0)
    p.fit(train, epochs=2)
    pred = p.parse(dev)
    for heads in pred:
        _check_tree(heads)
        assert _is_projective(heads)
    # Chu-Liu-Edmonds with the same model finds some non-projective trees;
    # Eisner's are at most as good under the model but always projective.
    assert p.score(dev)["uas"] > 60.0


def _with_heads(heads: list[int], copies: int) -> list[list[dict[str, Any]]]:
    """``copies`` sentences of the toy's second tags with the given heads."""
    words = _toy()[1]
    return [[dict(t, head=h, deprel="dep") for t, h in zip(words, heads, strict=True)]] * copies


def test_auto_decoder_is_eisner_only_on_nearly_projective_training_trees() -> None:
    tpl = list(range(20))
    # 0 -> 2, 2 -> 1, 2 -> 4, 4 -> 3: projective
    projective = _with_heads([2, 0, 4, 2], 10)
    # 0 -> 2, 2 -> 4, 4 -> 1, 2 -> 3: the arc 4 -> 1 passes over 2 and 3
    crossing = _with_heads([4, 0, 2, 2], 1)
    assert _is_projective([2, 0, 4, 2]) and not _is_projective([4, 0, 2, 2])
    # 1 non-projective arc of 44 (2.3%) is too many; 1 of 404 (0.25%) is not
    for data, want in (
        (projective, "eisner"),
        (projective + crossing, "chu-liu-edmonds"),
        (projective * 10 + crossing, "eisner"),
        (crossing, "chu-liu-edmonds"),
    ):
        p = DependencyParser(templates=tpl, prune_k=0, label_epochs=0)
        assert p.decoder_ == "chu-liu-edmonds"
        p.fit(data, epochs=1)
        assert (p.decoder, p.decoder_) == ("auto", want)
        assert pickle.loads(pickle.dumps(p)).decoder_ == want
        # a later fit keeps the choice made before the first step
        p.fit(crossing if want == "eisner" else projective, epochs=1)
        assert p.decoder_ == want
    # an explicit decoder is kept whatever the trees
    for name in ("eisner", "chu-liu-edmonds"):
        p = DependencyParser(decoder=name, templates=tpl, prune_k=0, label_epochs=0)
        assert p.fit(crossing if name == "eisner" else projective, epochs=1).decoder_ == name
    # learn_one before any fit has no training set to measure
    p = DependencyParser(templates=tpl, prune_k=0, label_epochs=0)
    p.learn_one(projective[0], [2, 0, 4, 2])
    p.fit(projective, epochs=1)
    assert p.decoder_ == "chu-liu-edmonds"


def test_pruner_keeps_most_gold_arcs_and_is_saved(
    ewt_small: tuple[list[Any], list[Any]],
    ewt_parser: DependencyParser,
    tmp_path: pathlib.Path,
) -> None:
    train, dev = ewt_small[0], ewt_small[1][:200]
    with pytest.raises(ValueError, match="pruner"):
        DependencyParser(templates=list(range(104, 208)), prune_k=10).pruner_recall(dev)
    p = ewt_parser
    assert len(p.pruner_history_) == 1
    recall = p.pruner_recall(dev)
    assert 90.0 < recall <= 100.0
    for heads in p.parse(dev):
        _check_tree(heads)
    # the score matrices that prediction decodes give the same trees
    import numpy as np

    from omkl import _omkl
    from omkl.decode import eisner

    # "auto" chose Eisner: EWT's training trees are almost all projective
    assert (p.decoder, p.decoder_) == ("auto", "eisner")

    corpus = _omkl.ParseCorpus.from_tokens(
        [str(i) for i in range(20)],
        [[(t["form"], t["lemma"], t["upos"], t["xpos"], t["feats"]) for t in s] for s in dev[:20]],
    )
    mats = p._core.score_matrices(corpus)
    for m, s, heads in zip(mats, dev[:20], p.parse(dev[:20]), strict=True):
        n1 = len(s) + 1
        assert len(m) == n1 * n1
        got, _ = eisner(np.array(m).reshape(n1, n1), single_root=True)
        assert got.tolist()[1:] == heads
    p.save(tmp_path / "m.bin")
    q = DependencyParser.load(tmp_path / "m.bin")
    assert q.pruner_recall(dev) == recall
    assert q.parse(dev) == p.parse(dev)
    # with k = all words and no margin every gold arc is kept
    wide = DependencyParser(
        templates=list(range(104, 208)), prune_k=1000, prune_margin=float("inf"), label_epochs=0
    )
    wide.fit(train[:100], epochs=1)
    assert wide.pruner_recall(dev) == 100.0


def test_label_stage_learns_a_hand_example() -> None:
    def tok(form: str, upos: str, head: int, rel: str) -> dict[str, object]:
        return {"form": form, "lemma": form.lower(), "upos": upos, "xpos": upos}.copy() | {
            "feats": "_",
            "head": head,
            "deprel": rel,
        }

    sents = [
        [
            tok("The", "DET", 2, "det"),
            tok("dog", "NOUN", 3, "nsubj"),
            tok("barks", "VERB", 0, "root"),
        ],
        [
            tok("A", "DET", 2, "det"),
            tok("cat", "NOUN", 3, "nsubj"),
            tok("saw", "VERB", 0, "root"),
            tok("the", "DET", 5, "det"),
            tok("dog", "NOUN", 3, "obj"),
        ],
    ]
    p = DependencyParser(templates=list(range(104, 208)), prune_k=0, label_epochs=5)
    p.fit(sents, epochs=5)
    heads, labels = p.parse_with_labels(sents)
    assert heads == [[2, 3, 0], [2, 3, 0, 5, 3]]
    assert labels == [["det", "nsubj", "root"], ["det", "nsubj", "root", "det", "obj"]]
    assert p.score(sents) == {"uas": 100.0, "las": 100.0}
    # without relations there is no label stage and no LAS
    bare = [[{k: v for k, v in t.items() if k != "deprel"} for t in s] for s in sents]
    q = DependencyParser(templates=list(range(104, 208)), prune_k=0).fit(bare, epochs=2)
    assert q.score(bare)["las"] is None

    r = pickle.loads(pickle.dumps(p))
    assert r.parse_with_labels(sents) == (heads, labels)


def test_label_stage_beats_majority_label_on_ewt(
    ewt_small: tuple[list[Any], list[Any]], ewt_parser: DependencyParser
) -> None:
    import collections

    train, dev = ewt_small
    p = ewt_parser
    assert len(p.label_history_) == p.label_epochs > 0
    scores = p.score(dev)
    assert scores["las"] is not None
    assert scores["las"] <= scores["uas"]
    # majority relation per modifier UPOS (a strong label baseline), on the
    # same predicted heads
    by_upos: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for s in train:
        for t in s:
            by_upos[str(t["upos"])][str(t["deprel"])] += 1
    heads, _ = p.parse_with_labels(dev)
    base_labels = [
        [by_upos[str(t["upos"])].most_common(1)[0][0] if t["upos"] in by_upos else "dep" for t in s]
        for s in dev
    ]
    gold_h = [[int(t["head"]) for t in s] for s in dev]
    gold_l = [[str(t["deprel"]) for t in s] for s in dev]
    upos = [[str(t["upos"]) for t in s] for s in dev]
    base = attachment_scores(gold_h, heads, upos, gold_l, base_labels)["las"]
    assert base is not None
    assert scores["las"] > base + 10.0, (scores, base)
    # labels are right for most correctly attached words
    assert scores["las"] > 0.8 * scores["uas"]


def test_write_conllu_replaces_a_file_only_with_the_whole_output(tmp_path: pathlib.Path) -> None:
    sents = [
        [
            {"form": "Dogs", "lemma": "dog", "upos": "NOUN", "xpos": "NNS", "feats": "_"},
            {"form": "bark", "lemma": "bark", "upos": "VERB", "xpos": "VBP", "feats": "_"},
        ]
    ]
    p = DependencyParser(templates=list(range(20)), prune_k=0)
    for _ in range(3):
        p.learn_one(sents[0], [2, 0])
    out = tmp_path / "out.conllu"
    out.write_text("old contents\n")
    out.chmod(0o640)
    p.write_conllu(sents, out)
    assert [[t["head"] for t in s] for s in read_conllu(out)] == [[2, 0]]
    assert out.stat().st_mode & 0o777 == 0o640
    before = out.read_bytes()
    with pytest.raises(ValueError):
        p.write_conllu([[{"form": "x"}]], out)  # no lemma, tags or features
    assert out.read_bytes() == before
    assert sorted(x.name for x in tmp_path.iterdir()) == ["out.conllu"]
