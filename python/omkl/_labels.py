"""Labels learned as they appear, shared by the estimators that learn them."""

from __future__ import annotations

from collections.abc import Hashable, Iterable


class LabelIndex:
    """Labels in order of first appearance (``_labels``) and the id of each
    (``_label_index``, its position in ``_labels``)."""

    _labels: list[Hashable]
    _label_index: dict[Hashable, int]

    def _add_labels(self, new: Iterable[Hashable]) -> None:
        """Appends the labels ``new`` (none of them known yet), each with the
        next id."""
        for y in new:
            self._label_index[y] = len(self._labels)
            self._labels.append(y)
