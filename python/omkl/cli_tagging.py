"""The ``omkl train tagger|parser``, ``omkl tag`` and ``omkl parse`` commands
(input and output through :mod:`omkl.datasets.text`).

::

    omkl train tagger --train train.conllu [--dev dev.conllu] --out model.omkl [--epochs 15]
    omkl tag model.omkl in.conllu out.conllu        # only ID and FORM are read
    omkl tag parser.omkl in.conllu out.conllu       # the tagger of a parser's model
    omkl tag model.omkl in.txt out.conllu           # one sentence per line, tokens split on spaces
    omkl train parser --train train.conllu [--dev dev.conllu] --out parser.omkl [--folds 10]
    omkl parse parser.omkl in.txt out.conllu        # tags, then parses: complete CoNLL-U

With a CoNLL-U input, the output is the input with only the predicted
columns replaced: LEMMA, UPOS, XPOS and FEATS by ``omkl tag`` (:data:`TAGGED`),
and also HEAD and DEPREL by ``omkl parse`` (:data:`PARSED`); comments,
sentence ids, multiword-token lines, empty nodes, ID, FORM, DEPS and MISC are
copied as they are. With text, each sentence gets a ``# sent_id`` and a
``# text`` comment.

The input format follows the content (CoNLL-U when the first line that is
not blank is a comment or a word line of ten tab-separated fields; text
otherwise: :func:`omkl.datasets.detect_format`) unless
``--input-format conllu|text`` says otherwise. An input or output of ``-``
is standard input or output. Where the model or the output goes is checked
before anything is read or trained: a directory that does not exist or
cannot be written is an error at once.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pathlib
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any

from omkl.datasets.text import ConlluDocument, detect_format, format_conllu, read_sentences
from omkl.pipeline import alternatives_option

__all__ = ["PARSED", "TAGGED", "add_commands"]

#: The columns that ``omkl tag`` writes into a CoNLL-U input.
TAGGED = ("lemma", "upos", "xpos", "feats")
#: The columns that ``omkl parse`` writes into a CoNLL-U input.
PARSED = (*TAGGED, "head", "deprel")


def check_output(path: str) -> None:
    """``OSError`` naming ``path`` unless a file can be written there (``-``
    is standard output): its directory exists and is writable, and it is
    not a directory.

    >>> check_output("/no/such/dir/model.omkl")
    Traceback (most recent call last):
    ...
    FileNotFoundError: [Errno 2] No such directory: '/no/such/dir/model.omkl'
    """
    import errno

    if path == "-":
        return
    p = pathlib.Path(path)
    folder = p.parent if str(p.parent) else pathlib.Path(".")
    if p.is_dir():
        raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
    if not folder.is_dir():
        raise FileNotFoundError(errno.ENOENT, "No such directory", path)
    if not os.access(folder, os.W_OK):
        raise PermissionError(errno.EACCES, "Cannot write in its directory", path)


@contextlib.contextmanager
def _readable(path: str) -> Iterator[str]:
    """``path``, or for ``-`` a temporary copy of standard input."""
    if path != "-":
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="omkl-") as tmp:
        copy = os.path.join(tmp, "stdin")
        with open(copy, "wb") as f:
            shutil.copyfileobj(sys.stdin.buffer, f)
        yield copy


def _read(path: str, input_format: str | None) -> tuple[list[Any], ConlluDocument | None]:
    """The sentences of ``path`` (``-``: standard input) and, for CoNLL-U,
    its lines (to write the predictions back into)."""
    with _readable(path) as name:
        doc = None
        if (input_format or detect_format(name)) == "conllu":
            doc = ConlluDocument.read(name)
            sentences = doc.sentences
        else:
            sentences = read_sentences(name, input_format)
    if not sentences:
        shown = "standard input" if path == "-" else path
        raise ValueError(f"{shown}: no sentence in it (expected CoNLL-U or text)")
    return sentences, doc


def _write(
    sentences: Sequence[Any], path: str, doc: ConlluDocument | None, columns: Sequence[str]
) -> None:
    """Writes CoNLL-U to ``path`` (atomically) or, for ``-``, to standard
    output: ``doc`` with its ``columns`` predicted when the input was
    CoNLL-U, else every column of ``sentences``."""
    from omkl._persist import save_bytes

    text = format_conllu(sentences) if doc is None else doc.format(sentences, columns)
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        save_bytes(path, text.encode("utf-8"))


def _say(text: str, output: str) -> None:
    """A status line: on standard error when the output is standard output."""
    print(text, file=sys.stderr if output == "-" else sys.stdout)


def _train_tagger(args: argparse.Namespace) -> int:
    from omkl.morphology import MorphologyTagger
    from omkl.parsing import read_conllu

    check_output(args.out)
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

    check_output(args.output)
    sentences, doc = _read(args.input, args.input_format)
    model = load_tagger(args.model)
    _write(model.tag(sentences), args.output, doc, TAGGED)
    _say(f"tagged {len(sentences)} sentences into {args.output}", args.output)
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from omkl.evaluate import evaluate, format_scores

    print(format_scores(evaluate(args.gold, args.system)))
    return 0


def _train_parser(args: argparse.Namespace) -> int:
    from omkl.morphology import MorphologyTagger
    from omkl.parsing import DependencyParser, _read_gold
    from omkl.pipeline import TextParser

    # the output and both files are checked before any training (heads
    # forming trees too), each error naming the file, the line and the sentence
    check_output(args.out)
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
    progress = sys.stderr.isatty() if args.progress is None else args.progress
    model.fit(train, progress=progress)
    model.save(args.out)
    print(f"trained on {len(train)} sentences from {args.train}; saved {args.out}")
    if dev is not None:
        scores = model.score(dev)
        shown = [f"{k} {v:.2f}" for k, v in scores.items() if v is not None]
        print(f"{args.dev}: " + ", ".join(shown))
    return 0


def _parse(args: argparse.Namespace) -> int:
    from omkl.pipeline import TextParser

    check_output(args.output)
    sentences, doc = _read(args.input, args.input_format)
    model = TextParser.load(args.model)
    _write(model.predict(sentences), args.output, doc, PARSED)
    _say(f"parsed {len(sentences)} sentences into {args.output}", args.output)
    return 0


class _Defaults(argparse.ArgumentDefaultsHelpFormatter):
    """``--help`` with each option's default, unless it has none."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None:
            return action.help
        return super()._get_help_string(action)


def _files(p: argparse.ArgumentParser, trained_by: str) -> None:
    """The positional MODEL IN OUT of a command that applies a model."""
    p.add_argument("model", help=f"a model saved by `omkl train {trained_by}`")
    p.add_argument(
        "input", help="CoNLL-U (ID and FORM are read) or text, one sentence a line; - for stdin"
    )
    p.add_argument("output", help="CoNLL-U file to write; - for stdout")
    p.add_argument(
        "--input-format",
        choices=("conllu", "text"),
        default=None,
        help="the input's format (default: detected from its content)",
    )


def _training_files(p: argparse.ArgumentParser) -> None:
    """The --train, --dev and --out of a training command."""
    p.add_argument("--train", required=True, help="CoNLL-U training file")
    p.add_argument("--dev", help="CoNLL-U file to score the model on")
    p.add_argument("--out", required=True, help="where to save the model (checked before training)")


def add_commands(commands: Any) -> Any:
    """Adds ``train tagger`` and ``tag`` to the sub-command set ``commands``
    of the ``omkl`` parser; returns the sub-commands of ``omkl train``.

    >>> from omkl.cli import build_parser
    >>> a = build_parser().parse_args(["tag", "m.omkl", "in.txt", "out.conllu"])
    >>> a.model, a.input, a.output, a.input_format
    ('m.omkl', 'in.txt', 'out.conllu', None)
    """
    shown = _Defaults
    train = commands.add_parser("train", help="train a model on a CoNLL-U file")
    kinds = train.add_subparsers(dest="kind", required=True)
    tagger = kinds.add_parser(
        "tagger", help="UPOS, XPOS, FEATS and LEMMA from word forms", formatter_class=shown
    )
    _training_files(tagger)
    tagger.add_argument("--epochs", type=int, default=15, help="epochs of each stage")
    tagger.add_argument("--n-buckets", type=int, default=1 << 16, help="hashed feature buckets")
    tagger.add_argument("--folds", type=int, default=10, help="folds of the ambiguity classes")
    tagger.add_argument("--seed", type=int, default=0, help="seed of the shuffles and folds")
    tagger.set_defaults(handler=_train_tagger)
    tag = commands.add_parser(
        "tag", help="tag CoNLL-U or pre-tokenised text with a tagger", formatter_class=shown
    )
    _files(tag, "tagger` or `omkl train parser")
    tag.set_defaults(handler=_tag)
    parser = kinds.add_parser(
        "parser",
        help="a tagger and a dependency parser trained on its jackknifed tags",
        formatter_class=shown,
    )
    _training_files(parser)
    parser.add_argument("--epochs", type=int, default=5, help="epochs of the parser")
    parser.add_argument("--tagger-epochs", type=int, default=15, help="epochs of each stage")
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
    parser.add_argument("--seed", type=int, default=0, help="seed of the shuffles and folds")
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show progress bars (default: when standard error is a terminal)",
    )
    parser.set_defaults(handler=_train_parser)
    parse = commands.add_parser(
        "parse", help="tag and parse CoNLL-U or pre-tokenised text", formatter_class=shown
    )
    _files(parse, "parser")
    parse.set_defaults(handler=_parse)
    evaluate = commands.add_parser(
        "evaluate",
        help="score a system's CoNLL-U file against the gold one (the CoNLL 2018 metric)",
        formatter_class=shown,
    )
    evaluate.add_argument("gold", help="the gold CoNLL-U file")
    evaluate.add_argument("system", help="the system's CoNLL-U file (of the same text)")
    evaluate.set_defaults(handler=_evaluate)
    return kinds
