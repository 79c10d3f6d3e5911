"""Duplicate keys in the agents benchmark's inputs (udfs/agents_bench/commands.py): an item_id that
several rows of one agent give is judged by none of them (before, it was an item twice, or two
claims under one id, and its verdict was counted once per row); a page voted on twice in one group
counts in no kappa. Each such row is a reject naming its key, counted in the run record and said on
the console."""

from __future__ import annotations

import json
import logging

import pyarrow as pa
import pyarrow.parquet as pq

from tests.bench.test_calibrate import own_ground_truth
from udfs.agents_bench import commands
from udfs.agents_bench.runner import VERDICTS_SCHEMA, to_table
from udfs.runtime.io import Folder


def ground_truth(tmp_path):
    """own_ground_truth with ids: row 0's claim given again (the last row), and id "shared" on a
    true and a swapped compliance claim (rows 4 and 5)."""
    rows = [{**r, "item_id": f"i{k}"} for k, r in enumerate(own_ground_truth())]
    rows[4]["item_id"] = rows[5]["item_id"] = "shared"
    rows.append(dict(rows[0]))
    cols = ["item_id", "text", "property", "value", "entity_type", "label", "kind", "definition"]
    path = tmp_path / "gt.parquet"
    pq.write_table(pa.table({c: [r.get(c) for r in rows] for c in cols}), path)
    return path, rows


def test_an_item_id_given_twice_is_no_item_and_each_of_its_rows_is_a_reject(tmp_path, caplog):
    path, rows = ground_truth(tmp_path)
    with caplog.at_level(logging.WARNING, logger="llm4schema.agents_bench"):
        gt = commands.load_ground_truth(Folder(str(path)))
    ids = [r["item_id"] for t in gt.tables.values() for r in t]
    assert len(ids) == len(set(ids)) == len(rows) - 4 and not {"i0", "shared"} & set(ids)
    assert [(d["position"], d["reason"], json.loads(d["raw"])["item_id"]) for d in gt.duplicates] == [
        (0, commands.DUPLICATE_ITEM, "i0"),
        (4, commands.DUPLICATE_ITEM, "shared"),
        (5, commands.DUPLICATE_ITEM, "shared"),
        (len(rows) - 1, commands.DUPLICATE_ITEM, "i0"),
    ]
    assert gt.duplicate_items == ["compliance/shared", "factuality/i0"]
    [line] = [r.getMessage() for r in caplog.records]
    assert line.endswith(
        "4 rows share an item_id with another row of their agent, none is judged (compliance/shared, factuality/i0)"
    )
    # every task's items are distinct: no verdict counts twice in a metric
    for items in commands.select_items(gt, ["intrinsic", "extrinsic", "compliance"], 0, 7).values():
        assert len({it["item_id"] for it in items}) == len(items)


def test_the_run_counts_and_names_the_left_out_items(tmp_path, capsys):
    """A run over that ground truth (every verdict already written: no model asked): its record
    counts the rows left out and names their items."""
    from jobs.agents_bench import AgentsBenchJob

    path, _ = ground_truth(tmp_path)
    gt = commands.load_ground_truth(Folder(str(path)))
    out = tmp_path / "out"
    argv = ["run", "--input", str(path), "--output", str(out), "--verdict-models", "m", "--limit", "0", "--seed", "3"]
    results = Folder(str(out / "agents_bench" / "results" / AgentsBenchJob(argv).verdict_config().name))
    verdicts = [
        {**{k: r[k] for k in ("item_id", "kind", "label", "property", "value", "entity_type")}, "agent": agent}
        | {"score": 0.8 if r["label"] else 0.2, "passed": r["label"], "threshold": 0.5, "model": "m"}
        | {"latency_s": 0.0, "from_cache": True, "requests": 1, "prompt_tokens": 0, "completion_tokens": 0}
        | {"cached_prompt_tokens": 0}
        for agent, table in gt.tables.items()
        for r in table
    ]
    results.write_parquet("verdicts/part-00000.parquet", to_table(verdicts, VERDICTS_SCHEMA))
    assert AgentsBenchJob(argv).main() == 0
    record = json.loads((results.local_path / "_run.json").read_text())
    assert record["counters"]["ground_truth_duplicate_rows"] == 4 and record["counters"]["judged_now"] == 0
    assert record["benchmark"]["ground_truth_duplicate_items"] == ["compliance/shared", "factuality/i0"]


def test_kappa_counts_a_page_voted_twice_in_its_group_for_none(tmp_path, caplog):
    from jobs.agents_bench import AgentsBenchJob

    votes = tmp_path / "votes.csv"
    votes.write_text(
        "page,group,memr_h,memr_l,human_vote\n"
        "p1,gpt4,0.9,0.1,human\np2,gpt4,0.2,0.7,llm\np1,gpt4,0.1,0.9,llm\n"
        "p1,gpt35,0.6,0.4,human\np2,gpt35,0.1,0.9,llm\n"
    )
    with caplog.at_level(logging.WARNING, logger="llm4schema.agents_bench"):
        assert AgentsBenchJob(["kappa", "--input", str(votes), "--output", str(tmp_path / "out")]).main() == 0
    out = {r["group"]: r for r in pq.read_table(tmp_path / "out/agents_bench/kappa/kappa.parquet").to_pylist()}
    assert out["gpt4"]["pages"] == 1 and out["gpt35"]["pages"] == 2  # p1 of gpt35 is another group's page
    rej = [json.loads(x) for x in (tmp_path / "out/rejects/agents_bench/kappa.jsonl").read_text().splitlines()]
    assert [(r["position"], r["reason"]) for r in rej] == [(0, commands.DUPLICATE_VOTE), (2, commands.DUPLICATE_VOTE)]
    run = json.loads((tmp_path / "out/agents_bench/kappa/_run.json").read_text())["counters"]
    assert run == {"rows_read": 5, "rows_rejected": 2, "rows_used": 3, "duplicate_vote_rows": 2}
    assert any(
        "2 vote rows give a page that another row of their group gives too" in r.getMessage() for r in caplog.records
    )
