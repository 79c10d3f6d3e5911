"""Every input accounted for (udfs/runtime/inputs.py): a folder is walked with its symlinks followed
(a symlinked sub-folder is read), a folder reached again (a symlink loop) is skipped with the reason,
never silently; the report of what a resolution considered and skipped reaches the job's run record
(``Job.resolve_inputs``, ``record["inputs"]``); with roots, a remote URL must lie under a URL root."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from udfs.runtime.inputs import InputError, InputReport, resolve_inputs

DATA = Path(__file__).resolve().parents[2] / "data"
ONE_PAGE = DATA / "warc" / "cc-main-2024-22-one-page.warc.gz"


@pytest.fixture()
def linked(tmp_path):
    """in/ holding a.nq, a symlinked sub-folder (elsewhere/, holding b.nq), a symlink loop (loop ->
    in/), a second link to the same sub-folder, a broken link, a hidden file and a file of another
    suffix."""
    top, elsewhere = tmp_path / "in", tmp_path / "elsewhere"
    (top / "sub").mkdir(parents=True)
    elsewhere.mkdir()
    (top / "a.nq").write_text("<s> <p> <o> .\n")
    (elsewhere / "b.nq").write_text("<s> <p> <o> .\n")
    (top / "linked").symlink_to(elsewhere, target_is_directory=True)
    (top / "sub" / "loop").symlink_to(top, target_is_directory=True)
    (top / "sub" / "twin").symlink_to(elsewhere, target_is_directory=True)
    (top / "broken.nq").symlink_to(tmp_path / "nowhere.nq")
    (top / ".hidden.nq").write_text("x\n")
    (top / "notes.md").write_text("x\n")
    return top, elsewhere


def test_symlinked_folders_are_read_and_a_loop_is_skipped_with_its_reason(linked):
    top, elsewhere = linked
    report = InputReport()
    files = resolve_inputs([str(top)], report=report)
    assert files == sorted([str(top / "a.nq"), str(elsewhere / "b.nq")])  # the linked sub-folder is read
    got = report.as_dict()
    assert got["considered"] == [str(top / "a.nq"), str(top / "linked" / "b.nq")]
    skipped = {Path(s["path"]).name: s["reason"] for s in got["skipped"]}
    assert skipped["loop"] == f"symlink loop: leads back to {top}, already walked"
    assert skipped["twin"] == f"the same folder as {top / 'linked'}, already walked"
    assert skipped["broken.nq"].startswith("broken symlink")
    assert skipped[".hidden.nq"].startswith("hidden")
    assert skipped["notes.md"].startswith("name does not end in .nq")
    assert len(skipped) == 5  # nothing passed over without a line


def test_a_file_named_twice_is_read_once_and_said(linked):
    """A folder and a file in it, and a link to that file: one input, read once; each other naming
    is a skipped line saying which file it is (before: dropped without a word)."""
    top, elsewhere = linked
    (top / "alias.nq").symlink_to(top / "a.nq")
    report = InputReport()
    files = resolve_inputs([str(top), str(top / "a.nq"), str(elsewhere / "b.nq")], report=report)
    assert files == sorted([str(top / "a.nq"), str(elsewhere / "b.nq")])
    again = {s["path"]: s["reason"] for s in report.skipped if "named again" in s["reason"]}
    assert again == {
        str(top / "alias.nq"): f"the same file as {top / 'a.nq'}, named again: read once",
        str(top / "a.nq"): f"the same file as {top / 'a.nq'}, named again: read once",
        str(elsewhere / "b.nq"): f"the same file as {top / 'linked' / 'b.nq'}, named again: read once",
    }


def test_without_the_walk_the_linked_folder_was_lost(linked):
    """The control: pathlib's rglob (what the walk replaced) does not enter a symlinked folder, so
    the test above fails on the old code."""
    top, _ = linked
    assert not any(p.name == "b.nq" for p in top.rglob("*.nq"))


def test_a_deep_loop_terminates(tmp_path):
    d = tmp_path / "d"
    (d / "x" / "y").mkdir(parents=True)
    (d / "x" / "y" / "up").symlink_to(d / "x", target_is_directory=True)
    (d / "x" / "y" / "self").symlink_to(d / "x" / "y" / "self")  # a link to itself: a dangling loop
    (d / "x" / "y" / "f.nq").write_text("x\n")
    report = InputReport()
    assert resolve_inputs([str(d)], report=report) == [str(d / "x" / "y" / "f.nq")]
    reasons = sorted(s["reason"].split(":")[0] for s in report.skipped)
    assert reasons == ["symlink loop", "symlink loop"]


def test_remote_lines_need_a_url_root(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    m = root / "remote.paths"
    for line in ("http://127.0.0.1:9/x.nq.gz", "s3://commoncrawl/crawl-data/x.nq.gz", "hdfs://nn/x.nq"):
        m.write_text(line + "\n")
        with pytest.raises(InputError, match="outside the allowed root"):
            resolve_inputs([str(m)], root=root)
        assert resolve_inputs([str(m)]) == [line]  # not confined: as before
    url_root = "s3://commoncrawl/crawl-data/"
    m.write_text("s3://commoncrawl/crawl-data/CC-MAIN-2024-22/x.nq.gz\n")
    assert resolve_inputs([str(m)], root=[root, url_root]) == ["s3://commoncrawl/crawl-data/CC-MAIN-2024-22/x.nq.gz"]
    for line in (
        "s3://commoncrawl/other/x.nq.gz",
        "s3://evil/crawl-data/x.nq.gz",
        "s3://commoncrawl/crawl-data/../x",
        "s3://commoncrawl/crawl-data/%2e%2e/x",
        "s3://commoncrawl/crawl-data-2/x",
        "https://commoncrawl/crawl-data/x",
    ):
        m.write_text(line + "\n")
        with pytest.raises(InputError, match="outside the allowed root"):
            resolve_inputs([str(m)], root=[root, url_root])


def test_the_run_record_lists_what_was_considered_and_skipped(spark, linked, tmp_path):
    from jobs.warc_index import WarcIndexJob

    top, elsewhere = linked
    shutil.copy(ONE_PAGE, elsewhere / "one.warc.gz")
    shutil.copy(ONE_PAGE, top / "sub" / "two.warc.gz")
    out = tmp_path / "out"
    WarcIndexJob(["--input", str(top), "--output", str(out)]).main()
    run = json.loads((out / "warc_index" / "_run.json").read_text())
    inputs = run["inputs"]
    assert inputs["files"] == 2
    assert inputs["considered"] == [str(top / "linked" / "one.warc.gz"), str(top / "sub" / "two.warc.gz")]
    skipped = {Path(s["path"]).name: (s["reason"], s["flag"]) for s in inputs["skipped"]}
    assert skipped["loop"] == (f"symlink loop: leads back to {top}, already walked", "--input")
    assert skipped["a.nq"][0].startswith("name does not end in .warc.gz")
    assert sorted(r["source"] for r in inputs["read"]) == [
        str(elsewhere / "one.warc.gz"),
        str(top / "sub" / "two.warc.gz"),
    ]
    assert all(r["records"] == 1 and r["damaged"] is None for r in inputs["read"])


def test_the_python_side_tables_report_their_inputs_too(tmp_path):
    """``parquet_dataset`` (the evaluation's --input) fills the same report: a symlinked folder of
    parts is read and its file listed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from udfs.runtime.io import parquet_dataset

    table, parts = tmp_path / "pages", tmp_path / "elsewhere"
    table.mkdir()
    parts.mkdir()
    pq.write_table(pa.table({"page_url": ["a"]}), table / "part-0.parquet")
    pq.write_table(pa.table({"page_url": ["b"]}), parts / "part-1.parquet")
    (table / "more").symlink_to(parts, target_is_directory=True)
    (table / "_SUCCESS").write_text("")
    report = InputReport()
    ds = parquet_dataset([str(table)], report=report)
    assert sorted(ds.to_table().column("page_url").to_pylist()) == ["a", "b"]
    assert sorted(report.considered) == [str(table / "more" / "part-1.parquet"), str(table / "part-0.parquet")]
    assert report.skipped == [
        {"path": str(table / "_SUCCESS"), "reason": "hidden or bookkeeping name (starts with . or _)"}
    ]


def test_the_report_job_counts_the_rows_of_each_scores_file(tmp_path):
    """Its input accounting alone (the report itself is tests/jobs/test_report_html.py's): every
    part with the rows its footer gives, adding up to the table's rows; the bookkeeping file skipped."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from jobs.report import ReportJob

    scores = tmp_path / "scores"
    scores.mkdir()
    pq.write_table(pa.table({"page_key": ["a", "b", "c"]}), scores / "part-0.parquet")
    pq.write_table(pa.table({"page_key": ["d"]}), scores / "part-1.parquet")
    pq.write_table(pa.table({"page_key": pa.array([], pa.string())}), scores / "part-2.parquet")
    (scores / "_SUCCESS").write_text("")
    job = ReportJob(["--input", str(scores), "--output", str(tmp_path)])
    # whether the files' rows add up: a check the base class reconciles (udfs.runtime.closing)
    adds_up = job.count_scores_rows()
    inputs, counters = job.record["inputs"], job.record["counters"]
    assert [(Path(r["source"]).name, r["rows"]) for r in inputs["read"]] == [
        ("part-0.parquet", 3),
        ("part-1.parquet", 1),
        ("part-2.parquet", 0),
    ]
    assert counters["scores_rows"] == 4 and adds_up is True
    assert [Path(s["path"]).name for s in inputs["skipped"]] == ["_SUCCESS"]
