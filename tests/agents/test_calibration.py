"""Calibration: the threshold fit (max class-balanced F1, ties to the middle) and the isotonic map against answers
worked out by hand and against scikit-learn, the seeded split by group, the file and the entries
a judge matches in it."""

import json

import numpy as np
import pytest

from udfs.agents import calibration as cal


def test_the_threshold_is_the_middle_of_the_best_interval():
    labels = [True, True, True, False, False, False]
    scores = [0.6, 0.7, 0.8, 0.1, 0.2, 0.3]
    # any threshold in (0.3, 0.6] separates them: the middle is 0.45
    assert cal.fit_threshold(labels, scores) == (pytest.approx(0.45), 1.0)
    # the classes weigh the same: 6 true items and 2 false, each false one counting 3 times.
    # t in (0.1, 0.15] passes 6 true and 1 false: F1 12 / (12 + 3) = 0.8 (unweighted 12/13, its
    # best); t in (0.2, 0.5] passes 5 true and no false: 10 / 11, the best; the middle is 0.35
    labels2 = [True] * 6 + [False] * 2
    scores2 = [0.5, 0.6, 0.7, 0.8, 0.9, 0.15, 0.1, 0.2]
    t, f1 = cal.fit_threshold(labels2, scores2)
    assert t == pytest.approx(0.35) and f1 == pytest.approx(10 / 11)
    # no false item: plain F1, every item passes
    t, f1 = cal.fit_threshold([True, True], [0.2, 0.6])
    assert t <= 0.2 and f1 == 1.0
    # items without a score are left out; no positive: the neutral threshold
    assert cal.fit_threshold([True, False, True], [0.9, 0.1, None])[0] == pytest.approx(0.5)
    assert cal.fit_threshold([False, False], [0.2, 0.3]) == (0.5, 0.0)


def test_isotonic_map_by_hand_and_against_scikit_learn():
    knots = cal.isotonic_fit([0.1, 0.2, 0.3, 0.4], [False, True, False, True])
    assert knots == {"x": [0.1, 0.2, 0.3, 0.4], "y": [0.0, 0.5, 0.5, 1.0]}
    assert cal.apply_map(knots, 0.25) == pytest.approx(0.5)
    assert cal.apply_map(knots, 0.0) == 0.0 and cal.apply_map(knots, 1.0) == 1.0  # flat outside
    assert cal.apply_map(knots, None) is None and cal.apply_map({"x": [], "y": []}, 0.3) is None
    from sklearn.isotonic import IsotonicRegression

    rng = np.random.default_rng(3)
    y = rng.random(300) < 0.5
    s = np.round(np.clip(np.where(y, rng.normal(0.6, 0.2, 300), rng.normal(0.4, 0.2, 300)), 0, 1), 2)
    knots = cal.isotonic_fit(s.tolist(), y.tolist())
    ref = IsotonicRegression(out_of_bounds="clip").fit(s, y.astype(float))
    grid = np.linspace(0, 1, 101)
    ours = [cal.apply_map(knots, x) for x in grid]
    assert np.allclose(ours, ref.predict(grid), atol=1e-5)
    assert all(a <= b + 1e-12 for a, b in zip(ours, ours[1:]))


def test_the_split_is_by_group_seeded_and_near_the_fraction():
    groups = [f"example-{i}" for i in range(2000)]
    sides = {g: cal.split_of(g, 42, 0.5) for g in groups}
    assert sides == {g: cal.split_of(g, 42, 0.5) for g in reversed(groups)}
    share = sum(v == "fit" for v in sides.values()) / len(groups)
    assert 0.45 < share < 0.55
    assert sum(cal.split_of(g, 42, 0.7) == "fit" for g in groups) / len(groups) == pytest.approx(0.7, abs=0.04)
    assert sides != {g: cal.split_of(g, 43, 0.5) for g in groups}
    # a larger fraction only moves groups from test to fit
    assert all(cal.split_of(g, 42, 0.7) == "fit" for g, v in sides.items() if v == "fit")


def simulated_items(n_groups=300, seed=5):
    """A judge whose scores are Beta(5, 2) for true claims and Beta(2, 5) for false ones: the best
    threshold is where the densities cross (0.5), the isotonic map rises through 0.5 there."""
    rng = np.random.default_rng(seed)
    items = []
    for g in range(n_groups):
        for k in range(4):
            label = bool(k % 2)
            score = float(rng.beta(5, 2) if label else rng.beta(2, 5))
            items.append(cal.Item(f"text-{g}", label, score, ("intrinsic",) if k < 2 or label else ("extrinsic",)))
    return items


def test_a_fitted_entry_reports_on_the_test_split_only():
    items = simulated_items()
    e = cal.fit_entry(
        items,
        model="m",
        agent="factuality",
        strategy="direct",
        layout="shared_prefix",
        seed=42,
        fit_fraction=0.5,
        ground_truth_sha256="abc",
        tasks=("intrinsic", "extrinsic"),
    )
    assert 0.4 < e["threshold"] < 0.6
    assert e["fit"]["n"] + e["test"]["n"] == len(items)
    fit_groups = {i.group for i in items if cal.split_of(i.group, 42, 0.5) == "fit"}
    assert e["fit"]["groups"] == len(fit_groups) and e["test"]["groups"] == 300 - len(fit_groups)
    t = e["test"]
    assert t["tp"] + t["fn"] == t["positives"] and t["tn"] + t["fp"] == t["negatives"]
    # Beta(5,2) vs Beta(2,5) at 0.5: P(pass | true) = P(Beta(5,2) >= 0.5) = 57/64
    assert t["sensitivity"] == pytest.approx(57 / 64, abs=0.05) and t["specificity"] == pytest.approx(57 / 64, abs=0.05)
    assert 0.85 < t["auroc"] < 0.98
    assert set(t["tasks"]) == {"intrinsic", "extrinsic"} and t["tasks"]["intrinsic"]["n"] < t["n"]
    assert cal.apply_map(e["knots"], 0.1) < 0.2 < 0.8 < cal.apply_map(e["knots"], 0.9)


def test_the_file_keeps_other_keys_and_a_judge_matches_its_entries(tmp_path):
    path = str(tmp_path / "calibration.json")
    items = simulated_items(60)
    kw = dict(strategy="direct", layout="shared_prefix", seed=1, fit_fraction=0.5, ground_truth_sha256="x")
    a = cal.fit_entry(items, model="m", agent="factuality", **kw)
    b = cal.fit_entry(items, model="m", agent="compliance", **{**kw, "layout": "shared_prefix:ranged"})
    other = cal.fit_entry(items, model="n", agent="factuality", **kw)
    cal.write(path, [a, other])
    cal.write(path, [b, {**a, "threshold": 0.42}])
    doc = json.loads((tmp_path / "calibration.json").read_text())
    assert len(doc["entries"]) == 3 and doc["version"] == 1
    layouts = {"factuality": "shared_prefix", "compliance": "shared_prefix:ranged"}
    found = cal.match(path, ["m"], "direct", layouts, {})
    assert {ag: e["threshold"] for ag, e in found.entries.items()} == {"factuality": 0.42, "compliance": b["threshold"]}
    assert found.path == path and found.why == {}
    assert all(e["knots"]["x"] for e in found.entries.values())
    summary = cal.summary(found.entries["factuality"])
    assert summary["id"] == cal.entry_id(a) == "m factuality direct shared_prefix"
    assert summary["test"]["tp"] == a["test"]["tp"] and summary["ground_truth_sha256"] == "x"
    # each agent matches on its own layout: another factuality layout, no factuality entry
    partial = cal.match(path, ["m"], "direct", {**layouts, "factuality": "shared_prefix:claim"}, {})
    assert set(partial.entries) == {"compliance"}
    assert partial.why == {"factuality": f"no entry m factuality direct shared_prefix:claim in {path}"}
    # an entry fitted on other prompts than the judge's is not taken, and said; one without a
    # fingerprint (fitted before they were recorded) is
    cal.write(path, [{**b, "prompts_sha256": "0" * 16}])
    stale = cal.match(path, ["m"], "direct", layouts, {"compliance": "1" * 16})
    assert set(stale.entries) == {"factuality"} and "fitted on other prompts" in stale.why["compliance"]
    assert set(cal.match(path, ["m"], "direct", layouts, {"compliance": "0" * 16}).entries) == {
        "factuality",
        "compliance",
    }
    # another strategy, a model the service picks, no file, no path: nothing matched, and said
    for found, why in (
        (cal.match(path, ["m"], "fewshot", layouts, {}), "no entry m factuality fewshot shared_prefix"),
        (cal.match(path, [None], "direct", layouts, {}), "default"),
        (cal.match("", ["m"], "direct", layouts, {}), "no calibration file configured"),
    ):
        assert found.entries == {} and set(found.why) == {"factuality", "compliance"}
        assert why in found.why["factuality"]
    with pytest.raises(ValueError, match="none.json not found"):  # a file named is there, never a fallback
        cal.match(str(tmp_path / "none.json"), ["m"], "direct", layouts, {})
    assert cal.model_key(["a", "b"], "j") == "a+b judge:j" and cal.model_key(["a"], "j") == "a"
