"""Command-line interface: ``omkl <command>``."""

from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="omkl", description=__doc__)
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_subparsers(dest="command")
    return parser


def main(argv: list[str] | None = None) -> int:
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
