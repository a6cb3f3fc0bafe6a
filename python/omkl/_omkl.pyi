"""Type stubs for the native module ``omkl._omkl``.

Each area of the binding has its own section below.
"""

__version__: str

# --- prox ---------------------------------------------------------------

import numpy as np
import numpy.typing as npt

def soft_threshold(x: npt.NDArray[np.float64], tau: float) -> npt.NDArray[np.float64]: ...

# --- decode -------------------------------------------------------------

# --- kernel -------------------------------------------------------------

# --- learner ------------------------------------------------------------

# --- parser -------------------------------------------------------------

import os  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import final  # noqa: E402

PARSER_FORMAT_VERSION: int
PARSER_HASH_NAME: str
PARSER_HASH_SEED: int

def read_conllu_file(
    path: str | os.PathLike[str],
) -> list[tuple[str, list[dict[str, str | int | None]]]]: ...
def default_template_names() -> list[str]: ...

@final
class ParseCorpus:
    @staticmethod
    def from_path(path: str | os.PathLike[str]) -> ParseCorpus: ...
    @staticmethod
    def from_tokens(
        ids: list[str],
        sentences: list[list[tuple[str, str, str, str, str]]],
        heads: list[list[int]] | None = None,
        deprels: list[list[str]] | None = None,
    ) -> ParseCorpus: ...
    def __len__(self) -> int: ...
    def ids(self) -> list[str]: ...
    def gold_heads(self) -> list[list[int] | None]: ...
    def deprels(self) -> list[list[str]]: ...
    def upos(self) -> list[list[str]]: ...
    def write_conllu(
        self,
        path: str | os.PathLike[str],
        heads: list[list[int]],
        deprels: list[list[str]] | None = None,
    ) -> None: ...

@final
class ArcParserCore:
    def __new__(
        cls,
        regularizer: str = "l2",
        lam: float = 1e-6,
        eta: float = 0.1,
        decoder: str = "chu-liu-edmonds",
        templates: list[int] | None = None,
    ) -> ArcParserCore: ...
    def learn_one(
        self,
        sentence_id: str,
        tokens: list[tuple[str, str, str, str, str]],
        heads: list[int],
    ) -> float: ...
    def predict_one(
        self, sentence_id: str, tokens: list[tuple[str, str, str, str, str]]
    ) -> list[int]: ...
    def fit_epoch(
        self,
        corpus: ParseCorpus,
        order: list[int] | None = None,
        progress: Callable[[int], object] | None = None,
    ) -> float: ...
    def predict_corpus(self, corpus: ParseCorpus) -> list[list[int]]: ...
    def template_weights(self) -> list[float]: ...
    def beta_trajectory(self) -> list[list[float]]: ...
    def template_names(self) -> list[str]: ...
    def template_ids(self) -> list[int]: ...
    def table_sizes(self) -> list[int]: ...
    def steps(self) -> int: ...
    def __getstate__(self) -> bytes: ...
    def __setstate__(self, state: bytes) -> None: ...
    def __getnewargs__(self) -> tuple[str]: ...
