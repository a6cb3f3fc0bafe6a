"""The ``omkl train tokenizer`` and ``omkl tokenize`` commands.

::

    omkl train tokenizer --train train.conllu [--dev dev.conllu] --out tok.omkl [--epochs 15]
    omkl tokenize tok.omkl in.txt out.conllu    # raw text in, CoNLL-U out; - for stdin/stdout

The training file's ``# text`` comments, tokens, multiword tokens,
``SpaceAfter=No`` and ``# newdoc`` / ``# newpar`` comments are what the
tokenizer learns from (:class:`omkl.tokenizer.Tokenizer`); ``--dev`` scores
the model on the raw text of a CoNLL-U file (Tokens, Sentences and Words F1).
The input of ``omkl tokenize`` is UTF-8 text, paragraphs separated by blank
lines; the output has ``# newdoc``, ``# newpar``, ``# sent_id``, ``# text``,
multiword-token lines and ``SpaceAfter=No`` (:func:`omkl.tokenizer.format_tokenized`),
every predicted column ``_``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from omkl.cli_tagging import _Defaults, _say, check_output

__all__ = ["add_commands"]


def _read_text(path: str) -> str:
    """The UTF-8 text of ``path`` (``-``: standard input); ``ValueError``
    naming it when it is not UTF-8."""
    shown = "standard input" if path == "-" else path
    if path == "-":
        data = sys.stdin.buffer.read()
    else:
        with open(path, "rb") as f:
            data = f.read()
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        raise ValueError(f"{shown}: not valid UTF-8 (byte {e.start}: {e.reason})") from None


def _train_tokenizer(args: argparse.Namespace) -> int:
    from omkl.tokenizer import Tokenizer

    check_output(args.out)
    model = Tokenizer(epochs=args.epochs, n_buckets=args.n_buckets, seed=args.seed)
    model.fit(args.train)
    model.save(args.out)
    print(f"trained a tokenizer on {args.train}; saved {args.out}")
    if args.dev:
        scores = model.score(args.dev)
        print(f"{args.dev}: " + ", ".join(f"{k} {v:.2f}" for k, v in scores.items()))
    return 0


def _tokenize(args: argparse.Namespace) -> int:
    from omkl._persist import save_bytes
    from omkl.tokenizer import Tokenizer, format_tokenized

    check_output(args.output)
    model = Tokenizer.load(args.model)
    text = _read_text(args.input)
    if not text.strip():
        shown = "standard input" if args.input == "-" else args.input
        raise ValueError(f"{shown}: no text in it")
    sentences = model.tokenize(text)
    out = format_tokenized(sentences)
    if args.output == "-":
        sys.stdout.write(out)
        sys.stdout.flush()
    else:
        save_bytes(args.output, out.encode("utf-8"))
    _say(f"tokenized {len(sentences)} sentences into {args.output}", args.output)
    return 0


def add_commands(commands: Any, kinds: Any) -> None:
    """Adds ``train tokenizer`` to ``kinds`` (the sub-commands of ``omkl
    train``) and ``tokenize`` to ``commands``.

    >>> from omkl.cli import build_parser
    >>> a = build_parser().parse_args(["tokenize", "m.omkl", "-", "out.conllu"])
    >>> a.model, a.input, a.output
    ('m.omkl', '-', 'out.conllu')
    """
    train = kinds.add_parser(
        "tokenizer",
        help="sentences, tokens and multiword tokens of raw text",
        formatter_class=_Defaults,
    )
    train.add_argument("--train", required=True, help="CoNLL-U training file (with # text)")
    train.add_argument("--dev", help="CoNLL-U file to score the model on (its raw text)")
    train.add_argument("--out", required=True, help="where to save the model (checked first)")
    train.add_argument("--epochs", type=int, default=15, help="epochs of the character chain")
    train.add_argument("--n-buckets", type=int, default=1 << 18, help="hashed feature buckets")
    train.add_argument("--seed", type=int, default=0, help="seed of the shuffles")
    train.set_defaults(handler=_train_tokenizer)
    tokenize = commands.add_parser(
        "tokenize", help="split raw text into sentences and tokens", formatter_class=_Defaults
    )
    tokenize.add_argument("model", help="a model saved by `omkl train tokenizer`")
    tokenize.add_argument("input", help="UTF-8 text, paragraphs between blank lines; - for stdin")
    tokenize.add_argument("output", help="CoNLL-U file to write; - for stdout")
    tokenize.set_defaults(handler=_tokenize)
