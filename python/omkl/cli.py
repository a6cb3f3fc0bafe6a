"""Command-line interface.

``omkl reproduce <experiment>`` runs one of the paper's experiments. Each
experiment is a module ``omkl.experiments.<name>`` that defines
``add_arguments(parser)`` and ``run(args) -> int``::

    omkl reproduce ocr            # Table 1 on the bundled OCR data (docs/ocr.md)
    omkl reproduce ocr --full     # all ten folds and all eight rows
    omkl reproduce parsing        # dependency parsing on UD English-EWT (docs/parser.md)
    omkl reproduce drift          # drifting streams: accuracy and β over time
    omkl reproduce tagging        # UPOS/XPOS/FEATS/LEMMA on UD English-EWT, template pruning
    omkl train tagger --train FILE.conllu --out MODEL   # see omkl.cli_tagging
    omkl tag MODEL IN OUT         # CoNLL-U, raw or pre-tokenised text in, CoNLL-U out
    omkl train parser --train FILE.conllu --out MODEL  # tagger + parser (+ tokenizer)
    omkl parse MODEL IN OUT       # tags and parses: complete CoNLL-U out (--input text|...)
    omkl train tokenizer --train FILE.conllu --out MODEL  # see omkl.cli_tokenize
    omkl tokenize MODEL IN OUT    # raw text in: sentences, tokens, multiword tokens out
    omkl evaluate GOLD SYSTEM     # the CoNLL 2018 shared task's scores (omkl.evaluate)
    omkl --version
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Collection

#: experiment name -> module under ``omkl.experiments``
EXPERIMENTS: dict[str, str] = {"ocr": "ocr", "parsing": "parsing", "drift": "drift"}
EXPERIMENTS["tagging"] = "tagging"


def build_parser(experiments: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The ``omkl`` argument parser, with one ``reproduce`` sub-command per
    entry of :data:`EXPERIMENTS`. The modules of the ``experiments`` named
    (all when ``None``) are imported for their options; the others get a
    bare sub-command, so that a command line that reproduces none of them
    does not pay for importing them.

    >>> args = build_parser().parse_args(["reproduce", "ocr", "--folds", "0,1", "--epochs", "5"])
    >>> args.experiment, args.folds, args.epochs, args.rows
    ('ocr', [0, 1], 5, ['linear', 'quadratic', 'gaussian', 'mkl_lqg'])
    >>> build_parser(["ocr"]).parse_args(["reproduce", "ocr"]).rows
    ['linear', 'quadratic', 'gaussian', 'mkl_lqg']
    """
    parser = argparse.ArgumentParser(prog="omkl", description="omkl command-line interface")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument(
        "--debug", action="store_true", help="show the traceback of an error, not one line"
    )
    commands = parser.add_subparsers(dest="command")
    reproduce = commands.add_parser("reproduce", help="reproduce one of the paper's experiments")
    chosen = reproduce.add_subparsers(dest="experiment", required=True)
    for name, module_name in EXPERIMENTS.items():
        if experiments is not None and name not in experiments:
            chosen.add_parser(name)
            continue
        module = importlib.import_module(f"omkl.experiments.{module_name}")
        sub = chosen.add_parser(name, help=(module.__doc__ or "").strip().splitlines()[0])
        module.add_arguments(sub)
        sub.set_defaults(handler=module.run)
    from omkl import cli_tagging, cli_tokenize

    cli_tokenize.add_commands(commands, cli_tagging.add_commands(commands))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs the command line ``argv`` (default: ``sys.argv[1:]``) and returns
    the exit status; an error is raised (:func:`run`, the ``omkl`` command,
    reports it on one line).

    >>> import contextlib, io
    >>> import omkl
    >>> out = io.StringIO()
    >>> with contextlib.redirect_stdout(out):
    ...     status = main(["--version"])
    >>> status, out.getvalue() == omkl.__version__ + "\\n"
    (0, True)
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    # only `omkl reproduce` imports the experiments, and only the one named
    experiments: list[str] | None = []
    if argv[:1] == ["reproduce"]:
        experiments = argv[1:2] if argv[1:2] and argv[1] in EXPERIMENTS else None
    parser = build_parser(experiments)
    args = parser.parse_args(argv)
    if args.version:
        from omkl import __version__

        print(__version__)
        return 0
    if args.command is None:
        parser.print_help()
        return 0
    return int(args.handler(args) or 0)


def _one_line(e: BaseException) -> str:
    """The message of ``e`` on one line (an ``OSError`` as its file and
    reason)."""
    if isinstance(e, OSError) and e.strerror and e.filename is not None:
        text = f"{e.filename}: {e.strerror}"
    else:
        text = str(e) or type(e).__name__
    return " ".join(text.split())


def run(argv: list[str] | None = None) -> int:
    """The ``omkl`` command: :func:`main` with an error on one line. A bad
    input, file or model (``ValueError``, ``OSError``, ``MemoryError``,
    ``RuntimeError``) prints ``omkl: error: ...`` on standard error and
    returns 2 (``omkl --debug ...`` shows the traceback instead); Ctrl-C
    prints ``omkl: interrupted`` and returns 130.

    >>> import contextlib, io
    >>> err = io.StringIO()
    >>> with contextlib.redirect_stderr(err):
    ...     status = run(["tag", "/no/model.omkl", "/no/in.txt", "out.conllu"])
    >>> status, err.getvalue()
    (2, 'omkl: error: /no/in.txt: No such file or directory\\n')
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in argv
    try:
        return main(argv)
    except KeyboardInterrupt:
        if debug:
            raise
        print("omkl: interrupted", file=sys.stderr)
        return 130
    except (ValueError, OSError, MemoryError, RuntimeError) as e:
        if debug:
            raise
        print(f"omkl: error: {_one_line(e)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(run())
