"""Dev-set study of the dependency parser's hyper-parameters (EWT dev only).

Trains one parser per configuration ``regularizer:lam:eta`` on the first
``--max-train`` training sentences and prints the dev UAS after every epoch
(one run gives the whole learning curve), then the dev LAS of the label
stage after the last epoch. The test file is never read. The defaults of
:class:`omkl.DependencyParser` were chosen from this table.

Example::

    python studies/parser_dev_study.py --max-train 4000 --epochs 5 --json /tmp/study.json \\
        --configs l2_squared:1e-6:0.1,l2_squared:1e-5:0.1,squared_l21:1e-6:0.1
"""

from __future__ import annotations

import json
import os
import pathlib
import time
from typing import Any

import _ewt

from omkl import _omkl
from omkl.parsing import DependencyParser, read_conllu


def main() -> None:
    ap = _ewt.arguments(__doc__, 4000)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--configs", default="l2_squared:1e-6:0.1", help="regularizer:lam:eta,...")
    ap.add_argument("--prune-k", type=int, default=DependencyParser().prune_k)
    ap.add_argument("--pruner-epochs", type=int, default=DependencyParser().pruner_epochs)
    ap.add_argument("--prune-margin", type=float, default=DependencyParser().prune_margin)
    ap.add_argument(
        "--exclude",
        default="",
        help="comma-separated substrings: drop the default templates whose names contain one",
    )
    ap.add_argument("--label-epochs", type=int, default=DependencyParser().label_epochs)
    ap.add_argument("--json", default="", help="also write the rows as JSON here")
    args = _ewt.parse_dev_only(ap)

    train: Any = read_conllu(args.train)
    if args.max_train:
        train = train[: args.max_train]
    dev = args.dev
    names = _omkl.default_template_names()
    drop = [x for x in args.exclude.split(",") if x]
    keep = [i for i, name in enumerate(names) if not any(x in name for x in drop)]
    templates = keep if drop else None
    print(f"templates {len(keep)} of {len(names)}")
    rows: list[dict[str, Any]] = []
    print(f"train sentences {len(train)}, dev {dev}")
    print("| regularizer | lam | eta | epoch | dev UAS | dev LAS | active | arc CPU s |")
    print("|---|---|---|---|---|---|---|---|")
    for spec in args.configs.split(","):
        reg, lam_s, eta_s = spec.split(":")
        lam, eta = float(lam_s), float(eta_s)
        parser = DependencyParser(
            regularizer=reg,
            lam=lam,
            eta0=eta,
            epochs=args.epochs,
            prune_k=args.prune_k,
            pruner_epochs=args.pruner_epochs,
            prune_margin=args.prune_margin,
            templates=templates,
            label_epochs=args.label_epochs,
        )
        t0 = time.process_time()

        def on_epoch(
            epoch: int,
            p: DependencyParser,
            reg: str = reg,
            lam: float = lam,
            eta: float = eta,
            t0: float = t0,
        ) -> None:
            cpu = time.process_time() - t0
            uas = p.score(dev)["uas"]
            active = sum(b > 0 for b in p.template_weights_)
            row = {
                "regularizer": reg,
                "lam": lam,
                "eta": eta,
                "epoch": epoch,
                "dev_uas": uas,
                "dev_las": None,
                "active_templates": active,
                "cpu_seconds": cpu,
            }
            rows.append(row)
            print(
                f"| {reg} | {lam:g} | {eta:g} | {epoch} | {uas:.2f} | | {active} | {cpu:.0f} |",
                flush=True,
            )

        parser.fit(train, on_epoch=on_epoch)
        if args.label_epochs > 0:
            s = parser.score(dev)
            rows[-1]["dev_las"] = s["las"]
            print(
                f"| {reg} | {lam:g} | {eta:g} | {args.epochs} + labels | {s['uas']:.2f} | "
                f"{s['las']:.2f} | | |",
                flush=True,
            )
    peak = _ewt.peak_rss_mb()
    print(f"peak memory {peak:.0f} MB; load average {os.getloadavg()[0]:.2f}")
    if args.json:
        pathlib.Path(args.json).write_text(
            json.dumps({"args": vars(args), "rows": rows, "peak_memory_mb": peak}, indent=2)
        )


if __name__ == "__main__":
    main()
