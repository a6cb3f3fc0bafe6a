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


if __name__ == "__main__":
    sys.exit(main())
