"""Bringing one's own ground truth (any Parquet file with the documented columns, a clear error
for a missing one) and the calibrate step on it: the verdict scores a run wrote are constructed
here with known separations (true claims score in [0.6, 0.9], false ones in [0.1, 0.4]), so the
fitted threshold, the split and the test-split figures have known answers. A calibration of the
embedded model's own scores is a model run (README), not a unit test."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import SERVED_MODEL_ID

from udfs.agents import calibration as cal
from udfs.agents.questions import prompt_fingerprint
from udfs.agents_bench import commands
from udfs.agents_bench.runner import VERDICTS_SCHEMA, to_table
from udfs.runtime.io import Folder
from udfs.runtime.judge_record import CALIBRATION, COMMAND_LINE, FALLBACK, read_judge

TEXTS = 60


def own_ground_truth():
    """Factuality: per text two true claims, an intrinsic and an extrinsic false one; compliance
    (no text): true values and swapped ones, each with its own definition. No ids of any kind."""
    rows = []
    for i in range(TEXTS):
        text = f"Shop number {i} in Springfield sells {i + 3} kinds of tea; call 555-01{i:02d}."
        rows += [
            {
                "text": text,
                "property": "name",
                "value": f"Shop number {i}",
                "entity_type": "Store",
                "label": True,
                "kind": "positive",
            },
            {
                "text": text,
                "property": "telephone",
                "value": f"555-01{i:02d}",
                "entity_type": "Store",
                "label": True,
                "kind": "positive",
            },
            {
                "text": text,
                "property": "telephone",
                "value": "Springfield",
                "entity_type": "Store",
                "label": False,
                "kind": "intrinsic",
            },
            {
                "text": text,
                "property": "addressLocality",
                "value": "Shelbyville",
                "entity_type": "PostalAddress",
                "label": False,
                "kind": "extrinsic",
            },
        ]
        rows += [
            {
                "text": None,
                "property": "telephone",
                "value": f"555-02{i:02d}",
                "entity_type": "Store",
                "label": True,
                "kind": "positive",
                "definition": "The telephone number.",
            },
            {
                "text": None,
                "property": "telephone",
                "value": f"{i} kinds of tea",
                "entity_type": "Store",
                "label": False,
                "kind": "swapped",
                "definition": "The telephone number.",
            },
        ]
    return rows


def write_ground_truth(path, rows, drop=()):
    cols = ["text", "property", "value", "entity_type", "label", "kind", "definition"]
    table = pa.table({c: [r.get(c) for r in rows] for c in cols if c not in drop})
    pq.write_table(table, path)
    return path


def test_a_missing_column_is_named(tmp_path, capsys):
    from jobs.agents_bench import AgentsBenchJob

    path = write_ground_truth(tmp_path / "gt.parquet", own_ground_truth(), drop=("label",))
    with pytest.raises(commands.BenchInputError, match="missing column label"):
        commands.load_ground_truth(Folder(str(path)))
    with pytest.raises(SystemExit) as exit_:
        AgentsBenchJob(["run", "--input", str(path), "--output", str(tmp_path / "out"), "--verdict-models", "m"]).main()
    assert exit_.value.code == 2 and "agents_bench.py: error: " in capsys.readouterr().err
    bad = own_ground_truth()
    bad[2]["kind"] = "wrong"
    with pytest.raises(commands.BenchInputError, match="kind 'wrong' is not a factuality kind"):
        commands.load_ground_truth(Folder(str(write_ground_truth(tmp_path / "bad.parquet", bad))))


def test_a_brought_ground_truth_is_split_by_text_and_keeps_its_definitions(tmp_path):
    path = write_ground_truth(tmp_path / "gt.parquet", own_ground_truth())
    gt = commands.load_ground_truth(Folder(str(path)))
    fact, comp = gt.tables["factuality"], gt.tables["compliance"]
    assert len(fact) == 4 * TEXTS and len(comp) == 2 * TEXTS
    assert len({r["item_id"] for r in fact}) == len(fact)
    # without example ids, an item's group is its text: four items per group
    assert len({r["group"] for r in fact}) == TEXTS
    assert {r["definition"] for r in comp} == {"The telephone number."}
    items = commands.select_items(gt, ["intrinsic", "extrinsic", "compliance"], 40, 7)
    assert {t: len(v) for t, v in items.items()} == {"intrinsic": 40, "extrinsic": 40, "compliance": 40}
    # the folder build writes reads the same way; a folder with neither table is an error
    Folder(str(tmp_path / "gt")).write_parquet(
        "factuality.parquet", pq.read_table(path).filter(pa.compute.is_valid(pq.read_table(path).column("text")))
    )
    assert len(commands.load_ground_truth(Folder(str(tmp_path / "gt"))).tables["factuality"]) == 4 * TEXTS
    with pytest.raises(commands.BenchInputError, match="not a ground truth"):
        commands.load_ground_truth(Folder(str(tmp_path)))


def constructed_score(item):
    """True claims in [0.6, 0.9], false ones in [0.1, 0.4], spread by the item id."""
    u = int(item["item_id"][:8], 16) / 16**8
    return (0.6 if item["label"] else 0.1) + 0.3 * u


def test_calibrate_fits_on_one_split_and_reports_on_the_other(tmp_path, capsys):
    from jobs.agents_bench import AgentsBenchJob

    path = write_ground_truth(tmp_path / "gt.parquet", own_ground_truth())
    gt = commands.load_ground_truth(Folder(str(path)))
    out = tmp_path / "out"
    calib = tmp_path / "conf/calibration.json"
    argv = [
        "calibrate",
        "--input",
        str(path),
        "--output",
        str(out),
        "--verdict-models",
        "m",
        "--limit",
        "0",
        "--seed",
        "3",
        "--fit-fraction",
        "0.5",
        "--calibration",
        str(calib),
        "--factuality-questions",
        "plain",
        "--compliance-questions",
        "ranged",
    ]  # the verdicts below
    questions = {"factuality": ["plain"], "compliance": ["ranged"]}
    # calibrate takes no calibration entry, whatever the file holds: the thresholds left "calibrated"
    # are the fallback's, and its folder is theirs
    assert AgentsBenchJob(argv).verdict_config().name == "m_direct_f0.5_c0.5_cq-ranged"
    results = Folder(str(out / "agents_bench/results/m_direct_f0.5_c0.5_cq-ranged"))
    # the verdicts a run of model m wrote, for every item (so calibrate asks nothing)
    rows = [
        {
            "agent": agent,
            "item_id": r["item_id"],
            "kind": r["kind"],
            "label": r["label"],
            "property": r["property"],
            "value": r["value"],
            "entity_type": r["entity_type"],
            "score": constructed_score(r),
            "passed": constructed_score(r) >= 0.5,
            "threshold": 0.5,
            "model": "m",
            "latency_s": 0.0,
            "from_cache": True,
            "requests": 1,
            "prompt_tokens": 0,
            "cached_prompt_tokens": 0,
            "completion_tokens": 0,
        }
        for agent, table in gt.tables.items()
        for r in table
    ]
    results.write_parquet("verdicts/part-00000.parquet", to_table(rows, VERDICTS_SCHEMA))
    capsys.readouterr()
    assert AgentsBenchJob(argv).main() == 0
    # the entries go to the results folder; --calibration is not touched without --install, and the
    # report says how to install them
    assert not calib.exists()
    assert "--install" in capsys.readouterr().out
    written = results.local_path / "calibration.json"
    doc = json.loads(written.read_text())
    entries = {e["agent"]: e for e in doc["entries"]}
    assert set(entries) == {"factuality", "compliance"}
    layouts = {"factuality": "shared_prefix", "compliance": "shared_prefix:ranged"}
    for agent, e in entries.items():
        assert (e["model"], e["strategy"], e["layout"], e["seed"]) == ("m", "direct", layouts[agent], 3)
        assert e["ground_truth_sha256"] == gt.sha256
        assert e["prompts_sha256"] == prompt_fingerprint(agent, "direct", None, questions[agent])
        # the fitted threshold separates the two bands; the test split is judged perfectly
        assert 0.4 < e["threshold"] < 0.6
        assert e["test"]["f1"] == 1.0 and e["test"]["auroc"] == 1.0
        table = gt.tables[agent]
        fit_groups = {r["group"] for r in table if cal.split_of(r["group"], 3, 0.5) == "fit"}
        assert e["fit"]["n"] == sum(r["group"] in fit_groups for r in table)
        assert e["fit"]["n"] + e["test"]["n"] == len(table) and 0 < e["fit"]["n"] < len(table)
        assert cal.apply_map(e["knots"], 0.2) == 0.0 and cal.apply_map(e["knots"], 0.8) == 1.0
    assert set(entries["factuality"]["test"]["tasks"]) == {"intrinsic", "extrinsic"}
    record = json.loads((results.local_path / "_run.json").read_text())
    assert record["counters"]["judged_now"] == 0 and record["counters"]["already_judged"] == 6 * TEXTS
    assert record["calibration"]["installed"] is False and record["calibration"]["sha256"] is None
    assert record["calibration"]["file"].endswith("m_direct_f0.5_c0.5_cq-ranged/calibration.json")
    assert "| m | factuality | intrinsic |" in (results.local_path / "calibration.md").read_text()
    judge = read_judge(record)
    for agent in entries:
        t = judge.agents[agent].threshold
        assert (t.value, t.origin.kind) == (0.5, FALLBACK) and judge.agents[agent].entry is None
        assert {p.kind: p.why for p in t.passed_over}[CALIBRATION] == (
            "not applied: calibrate fits thresholds on the raw scores"
        )
    # with --install they go to --calibration as well (asking nothing again)
    assert AgentsBenchJob([*argv, "--install"]).main() == 0
    installed = {e["agent"]: e for e in json.loads(calib.read_text())["entries"]}
    same = lambda e: {k: v for k, v in e.items() if k != "created_at"}  # noqa: E731 - the fit again, a moment later
    assert {a: same(e) for a, e in installed.items()} == {a: same(e) for a, e in entries.items()}
    record = json.loads((results.local_path / "_run.json").read_text())
    assert record["calibration"]["installed"] is True and record["counters"]["judged_now"] == 0
    assert record["calibration"]["file"] == str(calib) and record["calibration"]["sha256"] == cal.sha256(str(calib))
    # an evaluation with model m, strategy direct and these questions takes these thresholds
    found = cal.match(
        str(calib),
        ["m"],
        "direct",
        layouts,
        {a: prompt_fingerprint(a, "direct", None, questions[a]) for a in layouts},
    )
    assert {a: e["threshold"] for a, e in found.entries.items()} == {a: e["threshold"] for a, e in entries.items()}
    # and so does the benchmark's run: it measures the judge that runs
    run = AgentsBenchJob(["run", *argv[1:]]).verdict_config()
    assert {a: run.threshold(a) for a in entries} == {a: e["threshold"] for a, e in entries.items()}
    origin = run.judge.record.agents["compliance"].threshold.origin
    assert (origin.kind, origin.file, origin.entry) == (
        CALIBRATION,
        str(calib),
        "m compliance direct shared_prefix:ranged",
    )
    assert run.name != "m_direct_f0.5_c0.5_cq-ranged"
    # unless the command line gives a threshold
    given = AgentsBenchJob(["run", *argv[1:], "--factuality-threshold", "0.5"]).verdict_config()
    origin = given.judge.record.agents["factuality"].threshold.origin
    assert given.threshold("factuality") == 0.5 and (origin.kind, origin.flag) == (
        COMMAND_LINE,
        "--factuality-threshold",
    )


@pytest.mark.model
def test_calibrate_on_the_embedded_model(service, tmp_path):
    """The real path end to end, a few items: run (real verdicts), fit, file (installed), and a
    second calibrate that asks the model nothing (every answer from the verdict parts)."""
    from jobs.agents_bench import AgentsBenchJob

    path = write_ground_truth(tmp_path / "gt.parquet", own_ground_truth()[: 6 * 4])
    calib = tmp_path / "calibration.json"
    argv = [
        "calibrate",
        "--input",
        str(path),
        "--output",
        str(tmp_path / "out"),
        "--base-url",
        service,
        "--verdict-models",
        SERVED_MODEL_ID,
        "--limit",
        "4",
        "--seed",
        "1",
        "--calibration",
        str(calib),
        "--install",
    ]
    assert AgentsBenchJob(argv).main() == 0
    entries = {e["agent"]: e for e in json.loads(calib.read_text())["entries"]}
    assert set(entries) == {"factuality", "compliance"}
    for e in entries.values():
        assert e["model"] == SERVED_MODEL_ID and e["fit"]["n"] + e["test"]["n"] > 0
        assert 0.0 <= e["threshold"] <= 1.0
    out = next((tmp_path / "out/agents_bench/results").iterdir())
    first = json.loads((out / "_run.json").read_text())["counters"]
    assert AgentsBenchJob(argv).main() == 0
    second = json.loads((out / "_run.json").read_text())["counters"]
    assert first["judged_now"] > 0 and second["judged_now"] == 0
    assert {e["agent"]: e["threshold"] for e in json.loads(calib.read_text())["entries"]} == {
        a: e["threshold"] for a, e in entries.items()
    }


def test_a_held_out_sample_shares_no_item_and_no_text_with_the_first_items(tmp_path):
    gt = commands.load_ground_truth(Folder(str(write_ground_truth(tmp_path / "gt.parquet", own_ground_truth()))))
    tasks = ["intrinsic", "extrinsic", "compliance"]
    first = commands.select_items(gt, tasks, 16, 7)
    held = commands.select_items(gt, tasks, 16, 7, after=16)
    seen = [it for items in first.values() for it in items]
    later = [it for items in held.values() for it in items]
    assert later and not {it["item_id"] for it in seen} & {it["item_id"] for it in later}
    fact = lambda items: {it["text"] for it in items if it["text"]}  # noqa: E731
    assert fact(later) and not fact(seen) & fact(later)
    # the same draw every time, and the first items are what a run without it judges
    assert commands.select_items(gt, tasks, 16, 7, after=16) == held
    assert commands.select_items(gt, tasks, 16, 7) == first
