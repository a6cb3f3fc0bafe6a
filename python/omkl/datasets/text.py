"""Reading and writing sentences for the tagger and the parser: CoNLL-U
(through :func:`omkl.parsing.read_conllu`) and pre-tokenised text (one
sentence per line, tokens separated by white space).

The CoNLL-U written from sentences (:func:`format_conllu`) has one line per
word, numbered from 1 in each sentence, with ``# sent_id`` and ``# text``
comments. A CoNLL-U input read as a :class:`ConlluDocument` is written back
with only the predicted columns replaced (:meth:`ConlluDocument.format`):
its comments, multiword-token lines, empty nodes and the other columns of
its words (ID, FORM, DEPS, MISC, and whatever the prediction does not
give) are kept as they were.
"""

from __future__ import annotations

import os
import pathlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ConlluDocument",
    "read_text",
    "read_sentences",
    "detect_format",
    "format_conllu",
    "write_conllu",
    "write_conllu_table",
    "sample_treebank",
]

_ID = re.compile(rb"[0-9]+(-[0-9]+|\.[0-9]+)?")
_COLUMNS = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")


def read_text(path: str | os.PathLike[str]) -> list[list[dict[str, Any]]]:
    """Reads pre-tokenised text, one sentence per line with tokens separated
    by white space (blank lines are skipped), into token dicts with ``id``
    and ``form``. ``ValueError`` naming the file and line for a line that
    is not valid UTF-8.

    >>> import tempfile, os
    >>> f = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False)
    >>> _ = f.write("I ran .\\n\\nYou too\\n"); f.close()
    >>> [[t["form"] for t in s] for s in read_text(f.name)]
    [['I', 'ran', '.'], ['You', 'too']]
    >>> os.unlink(f.name)
    """
    name = os.fspath(path)
    out: list[list[dict[str, Any]]] = []
    with open(name, "rb") as f:
        for n, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(f"{name}:{n}: not valid UTF-8 ({e.reason})") from None
            if n == 1:
                line = line.removeprefix("\ufeff")
            words = line.split()
            if words:
                out.append([{"id": i + 1, "form": w} for i, w in enumerate(words)])
    return out


def detect_format(path: str | os.PathLike[str]) -> str:
    r"""``"conllu"`` when the first line of ``path`` that is not blank is a
    word line of CoNLL-U (ten tab-separated fields, the first an ID such as
    ``1``, ``1-2`` or ``1.1``), or a comment (``#``) after which the first
    line that is neither blank nor a comment is a word line (tab-separated,
    the first field an ID) or there is none; else ``"text"``. The content
    decides, not the file's name: a text whose first line starts with ``#``
    is text.

    >>> import tempfile, os
    >>> f = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False)
    >>> _ = f.write("\n1\tHi\t_\t_\t_\t_\t0\troot\t_\t_\n"); f.close()
    >>> detect_format(f.name)
    'conllu'
    >>> with open(f.name, "w") as g:
    ...     _ = g.write("# Notes\n\nHi there.\n")
    >>> detect_format(f.name)
    'text'
    >>> os.unlink(f.name)
    """
    commented = False
    with open(os.fspath(path), "rb") as f:
        for raw in f:
            line = raw.removeprefix(b"\xef\xbb\xbf").rstrip(b"\r\n")
            if not line.strip():
                continue
            if line.startswith(b"#"):
                commented = True
                continue
            fields = line.split(b"\t")
            if commented:
                return "conllu" if len(fields) > 1 and _ID.fullmatch(fields[0]) else "text"
            return "conllu" if len(fields) == 10 and _ID.fullmatch(fields[0]) else "text"
    return "conllu" if commented else "text"


def read_sentences(path: str | os.PathLike[str], input_format: str | None = None) -> list[Any]:
    """The sentences of ``path``: CoNLL-U (:func:`omkl.parsing.read_conllu`)
    or text (:func:`read_text`), as ``input_format`` says or, when it is
    ``None``, as the content says (:func:`detect_format`)."""
    from omkl.parsing import read_conllu

    if input_format is None:
        input_format = detect_format(path)
    if input_format == "conllu":
        return read_conllu(path)
    if input_format == "text":
        return read_text(path)
    raise ValueError(
        f"invalid value for `input_format`: expected 'conllu' or 'text', got {input_format!r}"
    )


def _cell(value: Any) -> str:
    if value is None:
        return "_"
    text = str(value)
    if not text:
        return "_"
    if any(c in text for c in "\t\n\r"):
        raise ValueError(f"a CoNLL-U field may not hold a tab or a line break: {text!r}")
    return text


def format_conllu(sentences: Sequence[Sequence[Mapping[str, Any]]]) -> str:
    """CoNLL-U text of ``sentences`` (token dicts keyed by the lower-case
    column names; a missing or ``None`` column is ``_``; ``id`` defaults to
    the position), each sentence preceded by ``# sent_id`` and ``# text``.

    >>> format_conllu([[{"form": "Hi", "upos": "INTJ"}]]).splitlines()
    ['# sent_id = 1', '# text = Hi', '1\\tHi\\t_\\tINTJ\\t_\\t_\\t_\\t_\\t_\\t_', '']
    """
    lines: list[str] = []
    for s, sent in enumerate(sentences, 1):
        lines.append(f"# sent_id = {s}")
        lines.append("# text = " + " ".join(_cell(t.get("form")) for t in sent))
        for i, tok in enumerate(sent, 1):
            row = dict(tok)
            row.setdefault("id", i)
            lines.append("\t".join(_cell(row.get(c)) for c in _COLUMNS))
        lines.append("")
    return "\n".join(lines) + "\n" if lines else ""


@dataclass
class ConlluDocument:
    r"""The lines of a CoNLL-U file, block by block (a block is what blank
    lines separate), with the place of each word line: the predicted columns
    of its sentences are written back into it and everything else is kept.

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "in.conllu"
    >>> _ = path.write_text(
    ...     "# sent_id = s1\n1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No\n"
    ...     "1\tdo\t_\t_\t_\t_\t_\t_\t_\t_\n2\tn't\t_\t_\t_\t_\t_\t_\t_\t_\n\n")
    >>> doc = ConlluDocument.read(path)
    >>> [[t["form"] for t in s] for s in doc.sentences]
    [['do', "n't"]]
    >>> tagged = [[{"upos": "AUX"}, {"upos": "PART"}]]
    >>> print(doc.format(tagged, ("upos",)).replace("\t", " "), end="")
    # sent_id = s1
    1-2 don't _ _ _ _ _ _ _ SpaceAfter=No
    1 do _ AUX _ _ _ _ _ _
    2 n't _ PART _ _ _ _ _ _
    <BLANKLINE>
    """

    #: Each block's lines (without line ends).
    blocks: list[list[str]]
    #: Each block's word lines (integer IDs), by their index in the block.
    words: list[list[int]]
    #: The sentences of :func:`omkl.parsing.read_conllu` (one per block
    #: with words).
    sentences: list[Any]

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> ConlluDocument:
        """Reads ``path``: the sentences by :func:`omkl.parsing.read_conllu`
        (which checks the file, naming the line of an error), the lines as
        they are (a UTF-8 byte order mark and ``\\r`` line ends dropped)."""
        from omkl.parsing import read_conllu

        sentences = read_conllu(path)
        with open(path, encoding="utf-8-sig") as f:
            lines = f.read().splitlines()
        blocks: list[list[str]] = [[]]
        for line in lines:
            if line.strip():
                blocks[-1].append(line)
            elif blocks[-1]:
                blocks.append([])
        if not blocks[-1]:
            blocks.pop()
        words = [
            [i for i, line in enumerate(b) if line.split("\t", 1)[0].isdigit()] for b in blocks
        ]
        sizes = [len(w) for w in words if w]
        if sizes != [len(s) for s in sentences]:
            raise ValueError(
                f"{os.fspath(path)}: {len(sizes)} blocks of word lines between blank lines, "
                f"but {len(sentences)} sentences read"
            )
        return cls(blocks, words, sentences)

    def format(
        self, predicted: Sequence[Sequence[Mapping[str, Any]]], columns: Sequence[str]
    ) -> str:
        """The document with the ``columns`` (lower-case names of
        ``lemma``, ``upos``, ``xpos``, ``feats``, ``head``, ``deprel``) of
        each word set from ``predicted`` (one sentence per block with words,
        in order) and every other line and column as read."""
        at = [_COLUMNS.index(c) for c in columns]
        sents = iter(predicted)
        out: list[str] = []
        for block, words in zip(self.blocks, self.words, strict=True):
            lines = list(block)
            if words:
                sent = next(sents)
                if len(sent) != len(words):
                    raise ValueError(
                        f"a predicted sentence of {len(sent)} words for a block of {len(words)}"
                    )
                for i, tok in zip(words, sent, strict=True):
                    cells = lines[i].split("\t")
                    for k, c in zip(at, columns, strict=True):
                        cells[k] = _cell(tok.get(c))
                    lines[i] = "\t".join(cells)
            out.extend(lines)
            out.append("")
        return "\n".join(out) + "\n" if out else ""


def write_conllu(
    sentences: Sequence[Sequence[Mapping[str, Any]]], path: str | os.PathLike[str]
) -> None:
    """Writes :func:`format_conllu` of ``sentences`` to ``path`` atomically
    (no partial file on failure)."""
    from omkl._persist import save_bytes

    save_bytes(path, format_conllu(sentences).encode("utf-8"))


def write_conllu_table(path: str | os.PathLike[str], table: str) -> pathlib.Path:
    """Writes a treebank typed as a table to the CoNLL-U file ``path`` and
    returns it as a :class:`pathlib.Path`: each non-blank line of ``table``
    holds the ten columns of one word separated by white space (so that they
    can be aligned), and a blank line ends a sentence. The file has the
    columns separated by tabs and a blank line after every sentence.

    >>> import pathlib, tempfile
    >>> from omkl.datasets import read_conllu
    >>> table = '''
    ... 1 Dogs dog  NOUN NNS _ 2 nsubj _ _
    ... 2 bark bark VERB VBP _ 0 root  _ _
    ... '''
    >>> path = write_conllu_table(pathlib.Path(tempfile.mkdtemp()) / "tiny.conllu", table)
    >>> path.read_text().splitlines()[0].split("\\t")
    ['1', 'Dogs', 'dog', 'NOUN', 'NNS', '_', '2', 'nsubj', '_', '_']
    >>> [[(t["form"], t["head"]) for t in words] for words in read_conllu(path)]
    [[('Dogs', 2), ('bark', 0)]]
    """
    rows = ["\t".join(line.split()) for line in table.strip().splitlines()]
    out = pathlib.Path(path)
    out.write_text("\n".join(rows) + "\n\n", encoding="utf-8")
    return out


def sample_treebank() -> pathlib.Path:
    """The path of a two-sentence CoNLL-U treebank bundled with the package
    ("Dogs bark" and "The cat sleeps", with lemmas, tags, features, heads
    and relations), for examples and quick trials of the parser and taggers.

    >>> from omkl.datasets import read_conllu
    >>> [[t["form"] for t in words] for words in read_conllu(sample_treebank())]
    [['Dogs', 'bark'], ['The', 'cat', 'sleeps']]
    """
    return pathlib.Path(__file__).resolve().parent / "data" / "sample.conllu"
