"""Plots of fitted models: the kernel weights β over time, and template-pruning
curves.

:func:`plot_kernel_weights` draws the ``kernel_weights_history_`` of
:class:`omkl.MKLClassifier` or :class:`omkl.SequenceTagger` (or any list of
``(round, {name: beta})``) as one line per group, with optional vertical
marks at given rounds (a known change of concept, a drift detection).

The plots need matplotlib, which the ``plot`` extra installs
(``pip install "omkl[plot]"``); without it they raise
:class:`ModuleNotFoundError` saying so, and the rest of omkl works.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["MISSING_MATPLOTLIB", "plot_kernel_weights", "plot_pruning_curve", "pyplot"]

#: The message of the error raised by a plot when matplotlib is missing.
MISSING_MATPLOTLIB = (
    'plots need matplotlib, which is not installed; install it with: pip install "omkl[plot]"'
)


def pyplot(headless: bool = False) -> Any:
    """``matplotlib.pyplot``, after selecting the non-interactive ``Agg``
    backend when ``headless`` (figures only written to files). When
    matplotlib is not installed, :class:`ModuleNotFoundError` (an
    ``ImportError``) with the message :data:`MISSING_MATPLOTLIB`, which
    names the ``plot`` extra.

    >>> plt = pyplot(headless=True)
    >>> plt.get_backend().lower()
    'agg'
    """
    try:
        import matplotlib

        if headless:
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ModuleNotFoundError as e:
        if (e.name or "").partition(".")[0] != "matplotlib":
            raise  # matplotlib is there but something it needs is not
        raise ModuleNotFoundError(MISSING_MATPLOTLIB, name="matplotlib") from e
    return plt


def plot_kernel_weights(
    history: Any,
    ax: Any = None,
    title: str | None = None,
    events: Iterable[int] = (),
) -> Any:
    """Draws β over time and returns the matplotlib ``Axes``.

    ``history`` is a model with ``kernel_weights_history_`` or a sequence of
    ``(round, {group name: beta})``; ``events`` are rounds marked by dashed
    vertical lines. ``ax=None`` draws on a new figure.

    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> hist = [(100, {"linear": 0.7, "gaussian": 0.3}), (200, {"linear": 0.2, "gaussian": 0.8})]
    >>> ax = plot_kernel_weights(hist, title="toy", events=[150])
    >>> [line.get_label() for line in ax.get_lines()][:2]
    ['linear', 'gaussian']
    >>> ax.get_xlabel(), ax.get_title()
    ('round', 'toy')
    >>> plot_kernel_weights([(1, {"a": 1.0})], events=["x"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: invalid value for `events`: expected round numbers, got 'x'
    """
    points: Sequence[tuple[int, dict[str, float]]] = (
        history.kernel_weights_history_ if hasattr(history, "kernel_weights_history_") else history
    )
    marks = list(events)
    for e in marks:
        if isinstance(e, bool) or not isinstance(e, (int, float)):
            raise ValueError(f"invalid value for `events`: expected round numbers, got {e!r}")
    if ax is None:
        _, ax = pyplot().subplots(figsize=(6, 3.5))
    names: list[str] = []
    for _, beta in points:
        names.extend(n for n in beta if n not in names)
    rounds = [r for r, _ in points]
    for name in names:
        ax.plot(rounds, [beta.get(name, 0.0) for _, beta in points], label=name)
    for e in marks:
        ax.axvline(e, color="black", linestyle="--", linewidth=1)
    ax.set_xlabel("round")
    ax.set_ylabel("β")
    ax.set_ylim(0.0, 1.0)
    if title is not None:
        ax.set_title(title)
    if names:
        ax.legend(fontsize="small", loc="upper right")
    return ax


def plot_pruning_curve(
    curve: dict[str, list[dict[str, Any]]],
    metric: str,
    ylabel: str,
    path: Any,
    labels: dict[str, str] | None = None,
) -> None:
    """Saves a template-pruning curve to ``path`` (PNG): for each ranking
    in ``curve`` (``{ranking: [{"templates": k, metric: value}, ...]}``), the
    ``metric`` of the models retrained on the top ``k`` templates, against
    ``k``; ``labels`` names the rankings in the legend (default: the
    ranking's name).

    >>> import pathlib, tempfile
    >>> curve = {"mkl": [{"templates": 2, "uas": 80.0}, {"templates": 4, "uas": 85.0}]}
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "curve.png"
    >>> plot_pruning_curve(curve, "uas", "UAS (%)", path, {"mkl": "ranked by MKL β"})
    >>> path.read_bytes()[:4]
    b'\\x89PNG'
    """
    plt = pyplot(headless=True)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for name, pts in curve.items():
        ax.plot(
            [p["templates"] for p in pts],
            [p[metric] for p in pts],
            "o-",
            label=(labels or {}).get(name, name),
        )
    ax.set_xlabel("number of templates")
    ax.set_ylabel(ylabel)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
