"""Dev-set study of the first-pass arc pruner (EWT dev only).

Trains the pruner alone (``DependencyParser(...).fit(train, epochs=0)``) for
``--pruner-epochs`` passes, then prints on the dev file, at prediction time
(no gold arc forced in):

- the recall of gold arcs and the share of candidate arcs kept when every
  word keeps its ``k`` best heads, for each ``--ks``;
- the same for the margin rule (heads within a log-odds ``margin`` of the
  best, at most ``--prune-k``), for each ``--margins``.

The test file is never read. The pruner defaults of
:class:`omkl.DependencyParser` were chosen from this table together with the
dev UAS of the full parser (``studies/parser_dev_study.py``).

Example::

    python studies/parser_pruner_study.py --pruner-epochs 1,3 --ks 5,8,10,20 --margins 4,6,8
"""

from __future__ import annotations

import os
import time
from typing import Any

import _ewt

from omkl.parsing import DependencyParser, _corpus, read_conllu


def main() -> None:
    ap = _ewt.arguments(__doc__, 0)
    ap.add_argument("--pruner-epochs", default="1,3", help="comma-separated pass counts")
    ap.add_argument("--ks", default="3,5,8,10,15,20")
    ap.add_argument("--prune-k", type=int, default=20, help="the k cap of the margin rule")
    ap.add_argument("--margins", default="3,4,5,6,8,10")
    args = _ewt.parse_dev_only(ap)

    train: Any = read_conllu(args.train)
    if args.max_train:
        train = train[: args.max_train]
    dev = _corpus(args.dev)
    lengths = [len(u) for u in dev.upos()]
    candidates = sum(n * n for n in lengths)
    print(f"train sentences {len(train)}, dev sentences {len(dev)}, dev words {sum(lengths)}")
    for epochs in (int(e) for e in args.pruner_epochs.split(",")):
        p = DependencyParser(prune_k=args.prune_k, pruner_epochs=epochs, label_epochs=0)
        t0 = time.process_time()
        p.fit(train, epochs=0)
        cpu = time.process_time() - t0
        ranks = p._core.pruner_gold_ranks(dev)
        print(f"\npruner epochs {epochs} (train CPU {cpu:.1f} s)")
        print("| rule | dev recall % | arcs kept % |")
        print("|---|---|---|")
        for k in (int(x) for x in args.ks.split(",")):
            recall = 100.0 * sum(r < k for r in ranks) / len(ranks)
            kept = 100.0 * sum(min(k, n) * n for n in lengths) / candidates
            print(f"| top {k} | {recall:.2f} | {kept:.1f} |", flush=True)
        for margin in (float(x) for x in args.margins.split(",")):
            p._core.set_prune_margin(margin)
            hit, gold, kept, cand = p._core.pruner_stats(dev)
            print(
                f"| top {args.prune_k}, margin {margin:g} | {100.0 * hit / gold:.2f} "
                f"| {100.0 * kept / cand:.1f} |",
                flush=True,
            )
    peak = _ewt.peak_rss_mb()
    print(f"\npeak memory {peak:.0f} MB; load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
