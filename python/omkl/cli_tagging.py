"""The ``omkl train tagger|parser``, ``omkl tag`` and ``omkl parse`` commands
(input and output through :mod:`omkl.datasets.text`).

::

    omkl train tagger --train train.conllu [--dev dev.conllu] --out model.omkl [--epochs 15]
    omkl tag model.omkl in.conllu out.conllu        # only ID and FORM are read
    omkl tag parser.omkl in.conllu out.conllu       # the tagger of a parser's model
    omkl tag model.omkl in.txt out.conllu           # one sentence per line, tokens split on spaces
    omkl train parser --train train.conllu [--dev dev.conllu] --out parser.omkl [--folds 10]
    omkl parse parser.omkl in.txt out.conllu        # tags, then parses: complete CoNLL-U

The input format follows the file suffix (``.conllu`` or ``.conll``: CoNLL-U,
anything else: text) unless ``--input-format conllu|text`` says otherwise.
"""

from __future__ import annotations

import argparse
from typing import Any

from omkl.datasets.text import read_sentences, write_conllu
from omkl.pipeline import alternatives_option

__all__ = ["add_commands"]


def _train_tagger(args: argparse.Namespace) -> int:
    from omkl.morphology import MorphologyTagger
    from omkl.parsing import read_conllu

    train = read_conllu(args.train)
    dev = read_conllu(args.dev) if args.dev else None
    model = MorphologyTagger(n_buckets=args.n_buckets, folds=args.folds, seed=args.seed)
    model.fit(train, epochs=args.epochs)
    model.save(args.out)
    n = sum(map(len, train))
    print(f"trained on {len(train)} sentences ({n} words) from {args.train}; saved {args.out}")
    if dev is not None:
        scores = model.score(dev)
        print(f"{args.dev}: " + ", ".join(f"{k} {v:.2f}" for k, v in scores.items()))
    return 0


def _tag(args: argparse.Namespace) -> int:
    from omkl.pipeline import load_tagger

    sentences = read_sentences(args.input, args.input_format)
    model = load_tagger(args.model)
    write_conllu(model.tag(sentences) if sentences else [], args.output)
    print(f"tagged {len(sentences)} sentences into {args.output}")
    return 0


def _train_parser(args: argparse.Namespace) -> int:
    from omkl.morphology import MorphologyTagger
    from omkl.parsing import DependencyParser, _read_gold
    from omkl.pipeline import TextParser

    # both files are checked before any training (heads forming trees too),
    # each error naming the file, the line and the sentence
    train = _read_gold(args.train, complete=True)
    dev = _read_gold(args.dev, complete=False) if args.dev else None
    model = TextParser(
        MorphologyTagger(epochs=args.tagger_epochs, seed=args.seed),
        DependencyParser(epochs=args.epochs, seed=args.seed, stack_folds=args.stack_folds),
        folds=args.folds,
        seed=args.seed,
        alternatives=args.alternatives,
        label_gold=args.label_gold,
    )
    model.fit(train, progress=args.progress)
    model.save(args.out)
    print(f"trained on {len(train)} sentences from {args.train}; saved {args.out}")
    if dev is not None:
        scores = model.score(dev)
        shown = [f"{k} {v:.2f}" for k, v in scores.items() if v is not None]
        print(f"{args.dev}: " + ", ".join(shown))
    return 0


def _parse(args: argparse.Namespace) -> int:
    from omkl.pipeline import TextParser

    n = TextParser.load(args.model).parse_file(args.input, args.output, args.input_format)
    print(f"parsed {n} sentences into {args.output}")
    return 0


def _files(p: argparse.ArgumentParser, trained_by: str) -> None:
    """The positional MODEL IN OUT of a command that applies a model."""
    p.add_argument("model", help=f"a model saved by `omkl train {trained_by}`")
    p.add_argument("input", help="CoNLL-U (ID and FORM are read) or text, one sentence a line")
    p.add_argument("output", help="CoNLL-U file to write")
    p.add_argument(
        "--input-format",
        choices=("conllu", "text"),
        default=None,
        help="default: conllu for a .conllu/.conll file, text otherwise",
    )


def _training_files(p: argparse.ArgumentParser) -> None:
    """The --train, --dev and --out of a training command."""
    p.add_argument("--train", required=True, help="CoNLL-U training file")
    p.add_argument("--dev", help="CoNLL-U file to score the model on")
    p.add_argument("--out", required=True, help="where to save the model")


def add_commands(commands: Any) -> None:
    """Adds ``train tagger`` and ``tag`` to the sub-command set ``commands``
    of the ``omkl`` parser.

    >>> from omkl.cli import build_parser
    >>> a = build_parser().parse_args(["tag", "m.omkl", "in.txt", "out.conllu"])
    >>> a.model, a.input, a.output, a.input_format
    ('m.omkl', 'in.txt', 'out.conllu', None)
    """
    train = commands.add_parser("train", help="train a model on a CoNLL-U file")
    kinds = train.add_subparsers(dest="kind", required=True)
    tagger = kinds.add_parser("tagger", help="UPOS, XPOS, FEATS and LEMMA from word forms")
    _training_files(tagger)
    tagger.add_argument("--epochs", type=int, default=15)
    tagger.add_argument("--n-buckets", type=int, default=1 << 16)
    tagger.add_argument("--folds", type=int, default=10, help="folds of the ambiguity classes")
    tagger.add_argument("--seed", type=int, default=0)
    tagger.set_defaults(handler=_train_tagger)
    tag = commands.add_parser("tag", help="tag CoNLL-U or pre-tokenised text with a tagger")
    _files(tag, "tagger` or `omkl train parser")
    tag.set_defaults(handler=_tag)
    parser = kinds.add_parser(
        "parser", help="a tagger and a dependency parser trained on its jackknifed tags"
    )
    _training_files(parser)
    parser.add_argument("--epochs", type=int, default=5, help="epochs of the parser")
    parser.add_argument("--tagger-epochs", type=int, default=15)
    parser.add_argument("--folds", type=int, default=10, help="jackknife parts (0: gold tags)")
    parser.add_argument(
        "--stack-folds",
        type=int,
        default=5,
        help="parts of the stacked parser's jackknife (0: a single parser)",
    )
    parser.add_argument(
        "--alternatives",
        type=alternatives_option,
        default="auto",
        help="the parser reads the tagger's second-best UPOS where its marginal reaches "
        "this threshold (auto: 1e-9; none: the tags alone)",
    )
    parser.add_argument(
        "--label-gold",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the parser's label stage also learns from the gold-tagged training sentences",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--progress", action="store_true", help="show progress bars")
    parser.set_defaults(handler=_train_parser)
    parse = commands.add_parser("parse", help="tag and parse CoNLL-U or pre-tokenised text")
    _files(parse, "parser")
    parse.set_defaults(handler=_parse)
