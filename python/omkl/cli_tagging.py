"""The ``omkl train tagger|parser``, ``omkl tag`` and ``omkl parse`` commands
(input and output through :mod:`omkl.datasets.text`).

::

    omkl train tagger --train train.conllu [--dev dev.conllu] --out model.omkl [--epochs 15]
    omkl tag model.omkl in.conllu out.conllu        # only ID and FORM are read
    omkl tag parser.omkl in.conllu out.conllu       # the tagger of a parser's model
    omkl tag model.omkl in.txt out.conllu           # one sentence per line, tokens split on spaces
    omkl train parser --train train.conllu [--dev dev.conllu] --out parser.omkl [--folds 10]
                                                    # a tokenizer too, unless --no-tokenizer
    omkl parse parser.omkl in.txt out.conllu        # tags, then parses: complete CoNLL-U
    omkl parse parser.omkl raw.txt out.conllu --input text   # tokenises raw text first

The input is one of (``--input``):

* ``conllu``: CoNLL-U, of which ID and FORM are read. The output is the
  input with only the predicted columns replaced: LEMMA, UPOS, XPOS and
  FEATS by ``omkl tag`` (:data:`TAGGED`), and also HEAD and DEPREL by ``omkl
  parse`` (:data:`PARSED`); comments, sentence ids, multiword-token lines,
  empty nodes, ID, FORM, DEPS and MISC are copied as they are.
* ``text``: raw text, paragraphs between blank lines, which the model's
  tokenizer (:class:`omkl.Tokenizer`, trained by ``omkl train parser`` on a
  file with ``# text`` comments) cuts into sentences, tokens and the words
  of multiword tokens, as ``udpipe --tokenize --tag --parse`` does. The
  output has ``# newdoc``, ``# newpar``, ``# sent_id``, ``# text``,
  multiword-token lines and the white space of the text in MISC
  (``SpaceAfter=No``; :func:`omkl.tokenizer.format_tokenized`). A model
  without a tokenizer refuses it.
* ``horizontal``: pre-tokenised text, one sentence per line, tokens
  separated by spaces; each sentence gets a ``# sent_id`` and a ``# text``.

Without ``--input``, the content decides: CoNLL-U when it reads as CoNLL-U
(:func:`omkl.datasets.detect_format`), else raw text when the model has a
tokenizer, else horizontal. ``--input-format conllu|text`` is the older,
deprecated spelling of ``--input conllu|horizontal``. An input or output of
``-`` is standard input or output. Where the model or the output goes is
checked before anything is read or trained: a directory that does not exist
or cannot be written is an error at once.
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
from typing import Any, cast

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


#: The choices of ``--input``.
INPUTS = ("text", "horizontal", "conllu")


class _Input:
    """What a command read: CoNLL-U (``doc``, its ``sentences``), the
    sentences of horizontal text, or raw ``text``; ``format`` is ``None``
    until the model decides between raw and horizontal text."""

    def __init__(self, shown: str) -> None:
        self.shown = shown
        self.format: str | None = None
        self.doc: ConlluDocument | None = None
        self.sentences: list[Any] = []
        self.text = ""

    def decide(self, has_tokenizer: bool, model: str) -> None:
        """Raw text when the model has a tokenizer, else horizontal (for an
        input whose format was neither given nor CoNLL-U); ``ValueError``
        for raw text and a model without a tokenizer, or an input without
        a sentence."""
        if self.format is None:
            self.format = "text" if has_tokenizer else "horizontal"
            if self.format == "horizontal":
                self.sentences = _horizontal(self.text)
        if self.format == "text":
            if not has_tokenizer:
                raise ValueError(
                    f"{model}: the model has no tokenizer, so it cannot read raw text "
                    "(train it with `omkl train parser` on a file with '# text' comments, "
                    "or give --input horizontal or --input conllu)"
                )
            if not self.text.strip():
                raise ValueError(f"{self.shown}: no text in it")
        elif not self.sentences:
            raise ValueError(f"{self.shown}: no sentence in it (expected CoNLL-U or text)")


def _horizontal(text: str) -> list[Any]:
    """The sentences of pre-tokenised text (:func:`omkl.datasets.read_text`)."""
    out = []
    for line in text.split("\n"):
        words = line.split()
        if words:
            out.append([{"id": i + 1, "form": w} for i, w in enumerate(words)])
    return out


def _decoded(name: str, shown: str) -> str:
    """The UTF-8 text of the file ``name``; ``ValueError`` naming it as
    ``shown`` when it is not UTF-8."""
    with open(name, "rb") as f:
        data = f.read()
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        raise ValueError(f"{shown}: not valid UTF-8 (byte {e.start}: {e.reason})") from None


def _read(path: str, input_format: str | None) -> _Input:
    """The input ``path`` (``-``: standard input) in ``input_format`` (one
    of :data:`INPUTS`; ``None``: CoNLL-U if it reads as CoNLL-U, else
    undecided text). Horizontal text and CoNLL-U without a sentence are
    refused."""
    shown = "standard input" if path == "-" else path
    got = _Input(shown)
    with _readable(path) as name:
        if input_format is None and detect_format(name) == "conllu":
            input_format = "conllu"
        got.format = input_format
        if input_format == "conllu":
            got.doc = ConlluDocument.read(name)
            got.sentences = got.doc.sentences
        elif input_format == "horizontal":
            got.sentences = read_sentences(name, "text")
        else:
            got.text = _decoded(name, shown)
    if input_format in ("conllu", "horizontal") and not got.sentences:
        raise ValueError(f"{shown}: no sentence in it (expected CoNLL-U or text)")
    return got


def _input_format(args: argparse.Namespace) -> str | None:
    """``--input``, or the deprecated ``--input-format`` (whose ``text`` is
    ``horizontal``), with one line on standard error for the latter."""
    if args.input_format is not None:
        new = "horizontal" if args.input_format == "text" else args.input_format
        print(f"omkl: warning: --input-format is deprecated; use --input {new}", file=sys.stderr)
        return new
    return cast(str | None, args.input_kind)


def _write_text(text: str, path: str) -> None:
    """Writes ``text`` to ``path`` atomically, or to standard output for ``-``."""
    from omkl._persist import save_bytes

    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        save_bytes(path, text.encode("utf-8"))


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
    progress = sys.stderr.isatty() if args.progress is None else args.progress
    model.fit(train, epochs=args.epochs, progress=progress)
    model.save(args.out)
    n = sum(map(len, train))
    print(f"trained on {len(train)} sentences ({n} words) from {args.train}; saved {args.out}")
    if dev is not None:
        scores = model.score(dev)
        print(f"{args.dev}: " + ", ".join(f"{k} {v:.2f}" for k, v in scores.items()))
    return 0


def _tag(args: argparse.Namespace) -> int:
    from omkl._persist import saved_format
    from omkl.morphology import MorphologyTagger
    from omkl.pipeline import TextParser, annotate_text
    from omkl.tokenizer import format_tokenized

    check_output(args.output)
    got = _read(args.input, _input_format(args))
    tokenizer = None
    if saved_format(args.model) == TextParser._FORMAT:
        pipe = TextParser.load(args.model)
        tagger, tokenizer = pipe.tagger, pipe.tokenizer_
    else:
        tagger = MorphologyTagger.load(args.model)
    got.decide(tokenizer is not None, args.model)
    if got.format == "text":
        assert tokenizer is not None
        done = annotate_text(tokenizer, got.text, tagger.tag)
        _write_text(format_tokenized(done), args.output)
        n = len(done)
    else:
        _write(tagger.tag(got.sentences), args.output, got.doc, TAGGED)
        n = len(got.sentences)
    _say(f"tagged {n} sentences into {args.output}", args.output)
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from omkl.evaluate import evaluate, format_scores

    print(format_scores(evaluate(args.gold, args.system)))
    return 0


def _train_parser(args: argparse.Namespace) -> int:
    from omkl.morphology import MorphologyTagger
    from omkl.parsing import DependencyParser, _read_gold
    from omkl.pipeline import TextParser, has_text

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
        tokenizer=None if args.no_tokenizer else "auto",
    )
    progress = sys.stderr.isatty() if args.progress is None else args.progress
    model.fit(args.train, progress=progress)
    model.save(args.out)
    print(f"trained on {len(train)} sentences from {args.train}; saved {args.out}")
    if model.tokenizer_ is not None:
        print(f"with a tokenizer trained on the '# text' of {args.train} (--no-tokenizer: none)")
    elif not args.no_tokenizer:
        print(f"without a tokenizer: some sentences of {args.train} have no '# text' comment")
    if dev is not None:
        scores = model.score(dev)
        shown = [f"{k} {v:.2f}" for k, v in scores.items() if v is not None]
        if model.tokenizer_ is not None and has_text(args.dev):
            shown += [f"{k} {v:.2f}" for k, v in model.tokenizer_.score(args.dev).items()]
        print(f"{args.dev}: " + ", ".join(shown))
    return 0


def _parse(args: argparse.Namespace) -> int:
    from omkl.pipeline import TextParser
    from omkl.tokenizer import format_tokenized

    check_output(args.output)
    got = _read(args.input, _input_format(args))
    model = TextParser.load(args.model)
    got.decide(model.tokenizer_ is not None, args.model)
    if got.format == "text":
        done = model.predict_text(got.text)
        _write_text(format_tokenized(done), args.output)
        n = len(done)
    else:
        _write(model.predict(got.sentences), args.output, got.doc, PARSED)
        n = len(got.sentences)
    _say(f"parsed {n} sentences into {args.output}", args.output)
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
        "input",
        help="CoNLL-U (ID and FORM are read), raw text, or pre-tokenised text (one sentence "
        "a line); - for stdin",
    )
    p.add_argument("output", help="CoNLL-U file to write; - for stdout")
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--input",
        dest="input_kind",
        choices=INPUTS,
        default=None,
        help="the input's format: raw text (tokenised by the model's tokenizer), horizontal "
        "(one pre-tokenised sentence a line) or conllu (default: conllu when it reads as "
        "CoNLL-U, else text when the model has a tokenizer, else horizontal)",
    )
    group.add_argument(
        "--input-format",
        choices=("conllu", "text"),
        default=None,
        help="deprecated: --input conllu or --input horizontal (its text)",
    )


def _training_files(p: argparse.ArgumentParser) -> None:
    """The --train, --dev and --out of a training command."""
    p.add_argument("--train", required=True, help="CoNLL-U training file")
    p.add_argument("--dev", help="CoNLL-U file to score the model on")
    p.add_argument("--out", required=True, help="where to save the model (checked before training)")


def _progress(p: argparse.ArgumentParser) -> None:
    """The ``--progress/--no-progress`` option of a training command."""
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show progress bars (default: when standard error is a terminal)",
    )


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
    _progress(tagger)
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
    parser.add_argument(
        "--no-tokenizer",
        action="store_true",
        help="train no tokenizer (by default one learns from the '# text' of the training "
        "file, when every sentence has it, for `omkl parse --input text`)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the shuffles and folds")
    _progress(parser)
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
