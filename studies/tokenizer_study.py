"""Tokenisation and sentence splitting of raw text on UD English-EWT,
Greek-GDT and Gothic-PROIEL: :class:`omkl.Tokenizer` trained on each
training file tokenises the raw text of the test file (rebuilt from its
``# text`` comments and its ``# newpar`` / ``# newdoc`` paragraphs,
:func:`omkl.tokenizer.conllu_text`), scored by :func:`omkl.evaluate.evaluate`
(Tokens, Sentences and Words F1); with the training seconds, the tokenising
rate (characters a second) and the model's size on disk. With ``--udpipe``
(and ``ufal.udpipe`` installed), UDPipe 1's tokenizer trained on the same
file is a peer row (its default settings: 100 epochs of its GRU; or
``--udpipe-epochs`` epochs, its other options at their defaults).

    PYTHONPATH=python python studies/tokenizer_study.py [--treebanks ewt,greek,gothic]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _treebanks import DATA, TREEBANKS  # noqa: E402

from omkl.tokenizer import Tokenizer, _scores, conllu_text  # noqa: E402


def _files(key: str) -> tuple[str, pathlib.Path, pathlib.Path]:
    name, folder, stem = TREEBANKS[key]
    return name, *(DATA / folder / f"{stem}-ud-{part}.conllu" for part in ("train", "test"))


def omkl_row(train: pathlib.Path, test: pathlib.Path, epochs: int) -> dict[str, float]:
    t0 = time.perf_counter()
    model = Tokenizer(epochs=epochs).fit(train)
    seconds = time.perf_counter() - t0
    text = conllu_text(test)
    t0 = time.perf_counter()
    out = model.tokenize(text)
    rate = len(text) / (time.perf_counter() - t0)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "tok.omkl")
        model.save(path)
        size = os.path.getsize(path)
    return {**_scores(test, out), "train_s": seconds, "chars_s": rate, "size": size}


def udpipe_row(train: pathlib.Path, test: pathlib.Path, epochs: int | None) -> dict[str, float]:
    from ufal import udpipe  # type: ignore[import-not-found]

    fmt = udpipe.InputFormat.newConlluInputFormat()
    fmt.setText(train.read_text(encoding="utf-8"))
    sentences = udpipe.Sentences()
    error = udpipe.ProcessingError()
    s = udpipe.Sentence()
    while fmt.nextSentence(s, error):
        sentences.push_back(s)
        s = udpipe.Sentence()
    t0 = time.perf_counter()
    opts = "" if epochs is None else f"epochs={epochs}"
    data = udpipe.Trainer.train(
        "morphodita_parsito", sentences, udpipe.Sentences(), opts, "none", "none", error
    )
    if error.occurred():
        raise RuntimeError(error.message)
    seconds = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "udpipe.model")
        with open(path, "wb") as f:
            f.write(data.encode("latin-1") if isinstance(data, str) else data)
        size = os.path.getsize(path)
        model = udpipe.Model.load(path)
        pipeline = udpipe.Pipeline(model, "tokenize", "none", "none", "conllu")
        text = conllu_text(test)
        t0 = time.perf_counter()
        out = pipeline.process(text, error)
        rate = len(text) / (time.perf_counter() - t0)
        system = pathlib.Path(tmp) / "system.conllu"
        lines = []
        for line in out.splitlines():
            cells = line.split("\t")
            if len(cells) == 10 and cells[0].isdigit():
                cells[6], cells[7] = ("0", "root") if cells[0] == "1" else ("1", "dep")
            lines.append("\t".join(cells))
        system.write_text("\n".join(lines) + "\n", encoding="utf-8")
        from omkl.evaluate import evaluate

        g = pathlib.Path(tmp) / "gold.conllu"
        gold = []
        for line in test.read_text(encoding="utf-8").splitlines():
            cells = line.split("\t")
            if len(cells) == 10 and cells[0].isdigit():
                cells[6], cells[7] = ("0", "root") if cells[0] == "1" else ("1", "dep")
            gold.append("\t".join(cells))
        g.write_text("\n".join(gold) + "\n", encoding="utf-8")
        scores = evaluate(g, system)
    return {
        **{k: 100.0 * scores[k].f1 for k in ("Tokens", "Sentences", "Words")},
        "train_s": seconds,
        "chars_s": rate,
        "size": size,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--treebanks", default="ewt,greek,gothic")
    ap.add_argument("--epochs", type=int, default=15, help="epochs of omkl's character chain")
    ap.add_argument("--udpipe", action="store_true", help="add UDPipe 1's tokenizer as a peer")
    ap.add_argument(
        "--udpipe-epochs", type=int, default=None, help="UDPipe GRU epochs (default: 100, its own)"
    )
    args = ap.parse_args()
    print("| treebank | system | Tokens F1 | Sentences F1 | Words F1 | train s | chars/s | size |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for key in args.treebanks.split(","):
        name, train, test = _files(key)
        if not train.exists() or not test.exists():
            print(f"| {name} | (missing: {train.parent}) | | | | | | |")
            continue
        rows = [(f"omkl Tokenizer ({args.epochs} epochs)", omkl_row(train, test, args.epochs))]
        if args.udpipe:
            ep = args.udpipe_epochs
            label = f"UDPipe 1 tokenizer ({'defaults' if ep is None else f'{ep} epochs'})"
            rows.append((label, udpipe_row(train, test, args.udpipe_epochs)))
        for system, r in rows:
            print(
                f"| {name} | {system} | {r['Tokens']:.2f} | {r['Sentences']:.2f} | "
                f"{r['Words']:.2f} | {r['train_s']:.1f} | {r['chars_s']:,.0f} | "
                f"{r['size'] / 1e3:,.0f} kB |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
