"""Named nodes asked with their type: the averaged factuality judge (``plain claim extract
complies-ranged``, the default before its questions were combined) against the same with ``typed`` and ``claim-typed`` in place of ``plain`` and
``claim`` ("Music Resource Centre (an Organization)" rather than "Music Resource Centre"), on the
only items the two ask differently: those whose value is a named node. Then both are projected
onto the shipped calibration entry's test-split counts at its threshold.

    .venv/bin/python benchmarks/judge_configs.py --ground-truth OUT/agents_bench/ground_truth \\
        --work OUT/typed_nodes --limit 400 --tasks intrinsic extrinsic --named-nodes \\
        --configs direct+claim+extract+complies-ranged typed+claim-typed+extract+complies-ranged
    git show 4fd43df:conf/calibration.json > OUT/averaged.json   # the averaged judge's entry
    .venv/bin/python benchmarks/typed_nodes.py --ground-truth OUT/agents_bench/ground_truth \\
        --work OUT/typed_nodes --limit 400 --calibration-file OUT/averaged.json

The items are ``calibrate``'s (the same seeded picks per task and the same split by example text).
The projection replaces, in the entry's test confusion counts, the outcomes of the named-node test
items under the default questions (asked again here) by their outcomes under the typed ones; every
other item asks the very same requests under both judges, so its outcome does not move. What it
cannot give: a threshold refitted for the typed judge (that needs every fit-split item asked), and
the default questions' answers of the run the entry was fitted on (the engine gave one request
scores 0.0035 apart in two runs), so the "default, re-asked" row is shown beside the entry's.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import judge_configs as J

from udfs.scores import calibration as cal

DEFAULT = ("direct", "claim", "extract", "complies-ranged")
TYPED = ("typed", "claim-typed", "extract", "complies-ranged")
LAYOUT = "shared_prefix:plain+claim+extract+complies-ranged"


def answers(work: Path, config: str) -> dict:
    rows = [json.loads(x) for x in (work / f"{config}.jsonl").read_text().splitlines()]
    return {(r["agent"], r["item_id"]): r for r in rows}


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ground-truth", required=True)
    ap.add_argument("--work", required=True, help="judge_configs.py --named-nodes answers")
    ap.add_argument("--limit", type=int, default=400)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--fit-fraction", type=float, default=0.5)
    ap.add_argument("--calibration-file", default="conf/calibration.json")
    args = ap.parse_args(argv)

    entry = next((e for e in json.loads(Path(args.calibration_file).read_text())["entries"]
                  if e["agent"] == "factuality" and e.get("layout") == LAYOUT), None)
    if entry is None:
        # the projection is onto the averaged judge's entry, shipped until the questions were combined
        ap.error(f"--calibration-file {args.calibration_file}: no factuality entry for {LAYOUT} (the averaged "
                 "default's; shipped until the text and property questions were combined: "
                 "git show 4fd43df:conf/calibration.json > averaged.json, then --calibration-file averaged.json)")
    thr = entry["threshold"]
    work = Path(args.work)
    parts = {c: answers(work, c) for c in set(DEFAULT + TYPED)}
    means = {"default": J.combine("+".join(DEFAULT), {c: parts[c] for c in DEFAULT}),
             "typed": J.combine("+".join(TYPED), {c: parts[c] for c in TYPED})}
    task_items = J.load_items(Path(args.ground_truth), args.limit, args.seed, ("intrinsic", "extrinsic"))
    nodes = {t: [it for it in items if it.get("value_type")] for t, items in task_items.items()}

    print(f"Named-node items of calibrate's picks ({args.limit} per task, seed {args.seed}); "
          f"threshold {thr:.4f} (the shipped entry's)\n")
    print("| judge | split | positives passing | extrinsic negatives passing | AUROC (positives vs extrinsic) |")
    print("|---|---|---|---|---|")
    flips = {}
    for judge, m in means.items():
        for split in ("fit", "test"):
            its = [it for it in nodes["extrinsic"] if J.split_of(it, args.seed, args.fit_fraction) == split]
            score = {it["item_id"]: m[("factuality", it["item_id"])]["score"] for it in its}
            pos = [score[it["item_id"]] for it in its if it["label"]]
            neg = [score[it["item_id"]] for it in its if not it["label"]]
            auroc = cal.auroc([True] * len(pos) + [False] * len(neg), pos + neg)
            print(f"| {judge} | {split} | {sum(s >= thr for s in pos)} of {len(pos)} | "
                  f"{sum(s >= thr for s in neg)} of {len(neg)} | {auroc:.3f} |")
            if split == "test":
                flips[judge] = (sum(s >= thr for s in pos), sum(s >= thr for s in neg))
    print("\nProjected onto the entry's test split (named-node test items' outcomes replaced):\n")
    print("| task | judge | tp | fp | fn | tn | P | R | F1 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for task in ("intrinsic", "extrinsic"):
        c = entry["test"]["tasks"][task]
        print(f"| {task} | entry (default, its own run) | {c['tp']} | {c['fp']} | {c['fn']} | {c['tn']} | "
              + " | ".join(f"{x:.3f}" for x in prf(c["tp"], c["fp"], c["fn"])) + " |")
        base_pos, base_neg = flips["default"]
        for judge in ("typed",):
            pos, neg = flips[judge]
            tp, fn = c["tp"] + pos - base_pos, c["fn"] - pos + base_pos
            fp, tn = c["fp"], c["tn"]
            if task == "extrinsic":
                fp, tn = c["fp"] + neg - base_neg, c["tn"] - neg + base_neg
            print(f"| {task} | {judge} (projected) | {tp} | {fp} | {fn} | {tn} | "
                  + " | ".join(f"{x:.3f}" for x in prf(tp, fp, fn)) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
