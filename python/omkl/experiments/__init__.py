"""The experiments of ``omkl reproduce`` (one module each, see
:mod:`omkl.cli`), and the ``--plot`` option they share.

An experiment writes its tables whether or not matplotlib is installed; its
figures need matplotlib (the ``plot`` extra). By default they are drawn when
matplotlib is installed and skipped with a note otherwise; ``--plot``
requires them (and fails before the run starts without matplotlib);
``--no-plot`` skips them.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["add_plot_option", "plots_wanted"]


def add_plot_option(parser: argparse.ArgumentParser, figures: str) -> None:
    """Adds ``--plot/--no-plot`` (``args.plot``: ``True``, ``False`` or
    ``None`` for the default) to an experiment that draws ``figures``.

    >>> p = argparse.ArgumentParser()
    >>> add_plot_option(p, "beta.png")
    >>> [p.parse_args(a).plot for a in ([], ["--plot"], ["--no-plot"])]
    [None, True, False]
    """
    parser.add_argument(
        "--plot",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f'draw {figures} (needs matplotlib: pip install "omkl[plot]"); '
        "default: when matplotlib is installed",
    )


def plots_wanted(args: argparse.Namespace, figures: str) -> bool:
    """Whether the run draws ``figures``, decided before it starts:
    ``--no-plot``: no; ``--plot``: yes, or the
    :class:`ModuleNotFoundError` of :func:`omkl.plotting.pyplot` (naming
    the ``plot`` extra) when matplotlib is missing; by default: when
    matplotlib is installed, else no, with a note on standard error.

    >>> plots_wanted(argparse.Namespace(plot=False), "beta.png")
    False
    """
    from omkl.plotting import pyplot

    plot = getattr(args, "plot", None)
    if plot is False:
        return False
    try:
        pyplot(headless=True)
    except ModuleNotFoundError as e:
        if plot:
            raise
        print(f"omkl: {figures} not drawn: {e}", file=sys.stderr)
        return False
    return True
