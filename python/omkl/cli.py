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
    omkl tag MODEL IN OUT         # CoNLL-U or pre-tokenised text in, CoNLL-U out
    omkl train parser --train FILE.conllu --out MODEL  # tagger + parser on jackknifed tags
    omkl parse MODEL IN OUT       # tags and parses: complete CoNLL-U out
    omkl --version
"""

from __future__ import annotations

import argparse
import importlib
import sys

#: experiment name -> module under ``omkl.experiments``
EXPERIMENTS: dict[str, str] = {"ocr": "ocr", "parsing": "parsing", "drift": "drift"}
EXPERIMENTS["tagging"] = "tagging"


def build_parser() -> argparse.ArgumentParser:
    """The ``omkl`` argument parser, with one ``reproduce`` sub-command per
    entry of :data:`EXPERIMENTS`.

    >>> args = build_parser().parse_args(["reproduce", "ocr", "--folds", "0,1", "--epochs", "5"])
    >>> args.experiment, args.folds, args.epochs, args.rows
    ('ocr', [0, 1], 5, ['linear', 'quadratic', 'gaussian', 'mkl_lqg'])
    """
    parser = argparse.ArgumentParser(prog="omkl", description="omkl command-line interface")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    commands = parser.add_subparsers(dest="command")
    reproduce = commands.add_parser("reproduce", help="reproduce one of the paper's experiments")
    experiments = reproduce.add_subparsers(dest="experiment", required=True)
    for name, module_name in EXPERIMENTS.items():
        module = importlib.import_module(f"omkl.experiments.{module_name}")
        sub = experiments.add_parser(name, help=(module.__doc__ or "").strip().splitlines()[0])
        module.add_arguments(sub)
        sub.set_defaults(handler=module.run)
    from omkl import cli_tagging

    cli_tagging.add_commands(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs the command line ``argv`` (default: ``sys.argv[1:]``) and returns
    the exit status.

    >>> import contextlib, io
    >>> import omkl
    >>> out = io.StringIO()
    >>> with contextlib.redirect_stdout(out):
    ...     status = main(["--version"])
    >>> status, out.getvalue() == omkl.__version__ + "\\n"
    (0, True)
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        from omkl import __version__

        print(__version__)
        return 0
    if args.command is None:
        parser.print_help()
        return 0
    return int(args.handler(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
