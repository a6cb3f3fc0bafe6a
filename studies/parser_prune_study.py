"""Dev-set study of the template ranking used by the pruning curve (EWT dev).

Trains one MKL parser per ``--mkl-lams`` value on the first ``--max-train``
training sentences, ranks the templates by its β (the last iterate's and the
averaged model's), retrains SVM parsers on the top ``--fraction`` of each
ranking and on all templates, and prints their dev UAS. The test file is
never read. The ranking of ``omkl reproduce parsing`` was chosen from it.

Example::

    python studies/parser_prune_study.py --max-train 4000 --epochs 2 --mkl-lams 1e-6,1e-5
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

import _ewt

from omkl.parsing import DependencyParser, read_conllu


def main() -> None:
    ap = _ewt.arguments(__doc__, 4000)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--mkl-lams", default="1e-6")
    ap.add_argument("--eta", type=float, default=DependencyParser().eta0)
    ap.add_argument("--svm-lam", type=float, default=DependencyParser().lam)
    ap.add_argument("--fraction", type=float, default=0.4)
    ap.add_argument("--no-full", action="store_true", help="skip the all-templates SVM")
    args = _ewt.parse_dev_only(ap)
    train: Any = read_conllu(args.train)[: args.max_train or None]
    kw = {"eta0": args.eta, "epochs": args.epochs, "label_epochs": 0}

    def svm(templates: list[int] | None) -> float:
        p = DependencyParser(lam=args.svm_lam, templates=templates, **kw).fit(train)
        return float(p.score(args.dev)["uas"])  # type: ignore[arg-type]

    print(f"train sentences {len(train)}, epochs {args.epochs}, eta {args.eta}")
    print(
        "| MKL lam | MKL dev UAS | MKL active templates | ranking | templates "
        "| retrained SVM dev UAS | CPU s |"
    )
    print("|---|---|---|---|---|---|---|")
    if not args.no_full:
        t0 = time.process_time()
        print(
            f"| - | - | all | 312 | {svm(None):.2f} | {time.process_time() - t0:.0f} |", flush=True
        )
    for lam in [float(x) for x in args.mkl_lams.split(",")]:
        mkl = DependencyParser(regularizer="squared_l21", lam=lam, **kw).fit(train)
        muas = mkl.score(args.dev)["uas"]
        active = sum(b > 0 for b in mkl.template_weights_)
        rankings = {"last": mkl.template_weights_, "averaged": mkl.averaged_template_weights_}
        for name, beta in rankings.items():
            assert beta is not None
            n_t = len(beta)
            k = max(1, math.ceil(args.fraction * n_t))
            order = sorted(range(n_t), key=lambda i: -beta[i])
            t0 = time.process_time()
            uas = svm(sorted(order[:k]))
            print(
                f"| {lam:g} | {muas:.2f} | {active} | {name} β | {k} | {uas:.2f} | "
                f"{time.process_time() - t0:.0f} |",
                flush=True,
            )
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
