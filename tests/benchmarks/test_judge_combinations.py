"""benchmarks/judge_combinations.py on constructed verdicts with a known answer: a text question that
passes every value the text holds (so it cannot tell a value moved from another property) and a
property question that cannot tell a value the text lacks, each sure where it can tell. Averaged,
the false claims score above the true ones; combined (the agent's ``combined_score``), each kind
is told from the true ones."""
from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import judge_combinations as C  # noqa: E402
from udfs.bench.runner import VerdictConfig  # noqa: E402

# (text question, property question) per kind
SCORES = {"positive": (0.5, 0.5), "intrinsic": (0.95, 0.1), "extrinsic": (0.1, 0.95)}


def _write(tmp_path: Path, n: int = 120) -> tuple[Path, Path]:
    rows = [{"item_id": f"i{k}", "text": f"Text of example {k}.", "property": "name", "value": f"v{k}",
             "entity_type": "Thing", "kind": kind, "label": kind == "positive", "text_example_id": f"ex{k}"}
            for k in range(n) for kind in [("positive", "intrinsic", "positive", "extrinsic")[k % 4]]]
    gt = tmp_path / "gt.parquet"
    pq.write_table(pa.Table.from_pylist(rows), gt)
    results = tmp_path / "results"
    for q, at in (("plain", 0), ("complies-ranged", 1)):
        name = VerdictConfig(["m"], "direct", 0.5, 0.5, factuality_questions=[q],
                             compliance_questions=["ranged"]).name
        (results / name / "verdicts").mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist([{"agent": "factuality", "item_id": r["item_id"],
                                              "score": SCORES[r["kind"]][at]} for r in rows]),
                       results / name / "verdicts" / "part-00000.parquet")
    return gt, results


def _rows(out: str, how: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in out.splitlines()
            if line.startswith(f"| {how} |")]


def test_the_combination_tells_both_kinds_of_false_claim_where_the_mean_cannot(tmp_path, capsys):
    gt, results = _write(tmp_path)
    assert C.main(["--ground-truth", str(gt), "--results", str(results), "--limit", "0", "--model", "m",
                   "--judge", "plain", "complies-ranged"]) == 0
    out = capsys.readouterr().out
    mean, combined = _rows(out, "mean"), _rows(out, "combined")
    assert len(mean) == len(combined) == 2  # both folds
    for row in combined:
        assert row[3].endswith("/ 1.000") and row[4].endswith("/ 1.000")  # intrinsic, extrinsic F1
    # averaged, both kinds of false claim (0.525) score above the true ones (0.5): no threshold
    # tells them apart; combined they score 0.308
    for row in mean:
        assert min(float(row[3].split("/")[-1]), float(row[4].split("/")[-1])) < 1.0
    # the subsets' table: the one mixed subset, combined better in both folds
    assert "fit -> test: combined better in 1 of 1; test -> fit: combined better in 1 of 1" in out
    # the fitted threshold already separates the held-out side: its ceiling is no better
    assert out.count("1.000 / 1.000; the best threshold on the held-out side itself") == 2


def test_a_question_not_asked_is_left_out_and_a_missing_verdict_leaves_no_score():
    answers = {"plain": {"a": 0.64, "b": 0.5}, "choice": {"a": None, "b": 0.25}}
    assert C.score_of(answers, ("plain", "choice"), "combined", "a") == 0.64  # choice not asked
    assert abs(C.score_of(answers, ("plain", "choice"), "combined", "b") - (0.5 * 0.25) ** 0.5) < 1e-12
    assert C.score_of(answers, ("plain", "choice"), "mean", "b") == 0.375
    assert C.score_of(answers, ("plain",), "mean", "c") is None


def test_the_ceiling_is_the_best_threshold_on_the_held_out_side_and_no_better_than_its_ranking():
    # held out: two positives at 0.6, an intrinsic negative above them, an extrinsic one below
    items = {"p1": {"label": True, "tasks": ("intrinsic", "extrinsic")},
             "p2": {"label": True, "tasks": ("intrinsic", "extrinsic")},
             "i": {"label": False, "tasks": ("intrinsic",)}, "e": {"label": False, "tasks": ("extrinsic",)},
             "fit": {"label": True, "tasks": ("intrinsic",)}}
    scores = {"p1": 0.6, "p2": 0.6, "i": 0.7, "e": 0.1, "fit": 0.05}
    side = {k: "fit" if k == "fit" else "test" for k in items}
    best = C.ceiling(items, side, scores.get)
    # at 0.6: intrinsic P 2/3, R 1 (F1 0.8), extrinsic 1.0; at 0.7 no positive passes; the fit
    # side's score (0.05) is never tried
    assert best["threshold"] == 0.6
    assert abs(best["intrinsic"] - 0.8) < 1e-12 and best["extrinsic"] == 1.0
    assert abs(best["criterion"] - 0.8 / 0.90) < 1e-12
    # ranked apart, the ceiling separates them completely
    scores["i"] = 0.3
    best = C.ceiling(items, side, scores.get)
    assert best["threshold"] == 0.6 and best["intrinsic"] == best["extrinsic"] == 1.0
