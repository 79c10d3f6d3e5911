"""WARC files to WDC-style N-Quads without the job (udfs/corpus/quads.py): the bundled demo parts
are reproduced byte for byte, the quads are the way WDC writes them, and every page or block that
cannot be used is a reject row of the one contract with its reason (data/demo, data/warc)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow.parquet as pq

from tests.conftest import gzip_member_offsets
from udfs.corpus.quads import COUNTERS, extract_file
from udfs.runtime.rejects import COLUMNS

DATA = Path(__file__).resolve().parents[2] / "data"
DEMO = DATA / "demo" / "extruct-samples.warc.gz"
ONE_PAGE = DATA / "warc" / "cc-main-2024-22-one-page.warc.gz"
LIMITS = {
    "max_html_bytes": 5_000_000,
    "max_record_bytes": 10_000_000,
    "max_markup_chars": 1_000_000,
    "max_markup_nodes": 200_000,
    "reject_raw_chars": 200,
    "time_limit_s": 30.0,
}


def run(index: int, path: Path, out: Path, **limits) -> tuple[list[dict], dict]:
    items = list(extract_file(index, str(path), str(out), **{**LIMITS, **limits}))
    assert [kind for kind, _ in items] == ["reject"] * (len(items) - 1) + ["counters"]
    return [row for _, row in items[:-1]], items[-1][1]


def reconciles(c: dict) -> bool:
    return (
        c["blocks"] == c["blocks_converted"] + c["blocks_rejected"] + c["blocks_empty"]
        and c["records"]
        == c["html_responses"]
        + c["skipped_not_html_response"]
        + c["skipped_oversized"]
        + c["records_over_max_bytes"]
        + c["records_unreadable"]
    )


def test_quads_are_wdc_style_and_the_demo_files_are_reproducible(tmp_path):
    import rdflib

    rejects, counters = run(0, DEMO, tmp_path)
    assert reconciles(counters) and set(counters) == set(COUNTERS)
    made = gzip.decompress((tmp_path / "part-00000.nq.gz").read_bytes())
    assert (tmp_path / "part-00000.nq.gz").read_bytes() == (DATA / "demo" / "quads" / "part-00000.nq.gz").read_bytes()
    lines = made.decode().splitlines()
    assert len(lines) == counters["quads"] > 1000
    assert all(ln.endswith(">   .") for ln in lines)
    ds = rdflib.Dataset()
    ds.parse(data=made.decode(), format="nquads")
    graphs = {str(g.identifier) for g in ds.graphs() if len(g)}
    assert "http://extruct-samples.example/songkick/tovestyrke.html" in graphs
    assert not any("https://schema.org/" in ln for ln in lines)
    # a blank node never spans two pages or two blocks
    owners = {}
    for ln in lines:
        s, graph = ln.split(" ", 1)[0], ln.rsplit(" ", 2)[0].rsplit(" ", 1)[-1]
        if s.startswith("_:"):
            assert owners.setdefault(s, graph) == graph


def test_the_demo_rejects_are_the_committed_ones(tmp_path):
    rejects, counters = run(0, DEMO, tmp_path)
    committed = pq.read_table(DATA / "demo" / "rejects" / "extract_quads").to_pylist()
    assert [(r["position"], r["reason"], r["raw"]) for r in rejects] == [
        (r["position"], r["reason"], r["raw"]) for r in committed
    ]
    assert all(list(r) == list(COLUMNS) and r["source"] == str(DEMO) for r in rejects)
    assert counters["blocks_rejected"] == len(rejects) == 1


def test_a_real_common_crawl_record_gives_the_committed_part(tmp_path):
    rejects, counters = run(2, ONE_PAGE, tmp_path)
    assert rejects == [] and counters["html_responses"] == 1 and counters["quads"] > 0 and reconciles(counters)
    assert (tmp_path / "part-00002.nq.gz").read_bytes() == (DATA / "demo" / "quads" / "part-00002.nq.gz").read_bytes()


def test_oversized_pages_are_rejects_not_parsed(tmp_path):
    rejects, counters = run(0, DEMO, tmp_path, max_html_bytes=2_000)
    big = [r for r in rejects if "page larger than max_html_bytes=2000" in r["reason"]]
    assert len(big) == counters["skipped_oversized"] > 0 and all(r["raw"] is None for r in big)
    assert all(isinstance(r["position"], int) for r in big) and reconciles(counters)
    assert counters["html_responses"] + counters["skipped_oversized"] == 57


def test_a_rejected_block_keeps_its_text_cut_to_the_bound(tmp_path):
    rejects, _ = run(0, DEMO, tmp_path, reject_raw_chars=3)
    assert [r["raw"] for r in rejects] == ["fal"]  # the block `false`, cut to 3 characters


# ---- robustness (issue 22): damage is a reject naming the file and the offset, work is bounded ----


def _quads(part: Path) -> list[str]:
    return gzip.decompress(part.read_bytes()).decode().splitlines()


def test_a_warc_cut_or_damaged_inside_a_gzip_member_is_a_reject_not_a_silent_end(tmp_path):
    """The demo WARC cut inside its 31st member, its 31st member's deflate data overwritten, its
    31st member's header overwritten: warcio's reader stopped there without a word (30 of 58
    records, exit 0). Each is now a reject row naming the file and the offset of the damage; the
    30 records before it are read and their quads written, and after damage in the middle the
    walk goes on at the next gzip member, as the index's does (one walker, one set of rules): the
    27 records after it are read too, only the damaged member's quads are missing."""
    data = DEMO.read_bytes()
    starts = gzip_member_offsets(data)
    assert len(starts) == 58
    at = starts[30]
    _, whole = run(0, DEMO, tmp_path / "whole")
    full = _quads(tmp_path / "whole" / "part-00000.nq.gz")
    (tmp_path / "first31.warc.gz").write_bytes(data[: starts[31]])
    run(0, tmp_path / "first31.warc.gz", tmp_path / "first31")
    through_31 = len(_quads(tmp_path / "first31" / "part-00000.nq.gz"))
    middle = (starts[30] + starts[31]) // 2
    damaged = {
        "cut.warc.gz": (data[:middle], "is cut (truncated gzip member"),
        "deflate.warc.gz": (data[:middle] + bytes(20) + data[middle + 20 :], "corrupt gzip member"),
        "header.warc.gz": (data[:at] + b"<html>oops" + data[at + 10 :], "not a gzip member there"),
    }
    for name, (content, why) in damaged.items():
        f = tmp_path / name
        f.write_bytes(content)
        rejects, c = run(0, f, tmp_path / name.split(".")[0])
        [end] = [r for r in rejects if r["reason"].startswith(str(f))]
        assert end["source"] == str(f) and end["position"] == at, end
        assert str(f) in end["reason"] and f"offset {at}" in end["reason"] and why in end["reason"], end
        records = 30 if name == "cut.warc.gz" else 57
        assert c["file_errors"] == 1 and c["records"] == records and reconciles(c)
        quads = _quads(tmp_path / name.split(".")[0] / "part-00000.nq.gz")
        assert 0 < len(quads) == c["quads"] < whole["quads"]
        if name == "cut.warc.gz":
            assert quads == full[: len(quads)]
        else:  # all but the 31st member's
            n30 = len(quads) - (len(full) - through_31)
            assert quads == full[:n30] + full[through_31:]


def test_a_plain_warc_cut_inside_a_record_is_a_reject(tmp_path):
    plain = gzip.decompress(DEMO.read_bytes())
    f = tmp_path / "cut.warc"
    f.write_bytes(plain[: len(plain) // 2])
    rejects, c = run(0, f, tmp_path / "out")
    [end] = [r for r in rejects if "runs" in r["reason"] and "past the end of the file" in r["reason"]]
    assert end["source"] == str(f) and str(f) in end["reason"] and f"offset {end['position']}" in end["reason"]
    assert c["file_errors"] == 1 and c["records_unreadable"] == 1 and reconciles(c)  # the cut page is not used


def test_a_record_inflating_past_max_record_bytes_is_a_reject_and_the_next_records_are_read(tmp_path):
    """A 3 kB member that inflates to 3 MB between real records, under a 1 MB bound: never held
    whole (the member is streamed), a reject row with its first bytes, the records after it read."""
    data = DEMO.read_bytes()
    starts = gzip_member_offsets(data)
    bomb = gzip.compress(b"WARC/1.0\r\n" + bytes(3_000_000))
    assert len(bomb) < 5_000
    f = tmp_path / "bomb.warc.gz"
    f.write_bytes(data[: starts[3]] + bomb + data[starts[3] : starts[6]])
    rejects, c = run(0, f, tmp_path / "out", max_record_bytes=1_000_000)
    [big] = [r for r in rejects if "max_record_bytes" in r["reason"]]
    assert big["position"] == starts[3] and "inflates to 3000010 bytes, over max_record_bytes=1000000" in big["reason"]
    assert big["raw"].startswith("WARC/1.0") and len(big["raw"]) <= LIMITS["reject_raw_chars"]
    assert (c["records"], c["records_over_max_bytes"], c["file_errors"]) == (7, 1, 0) and reconciles(c)


def test_blocks_over_the_markup_bounds_are_rejects_before_conversion(tmp_path):
    _, whole = run(0, DEMO, tmp_path / "whole")
    for limit, needle in (
        ({"max_markup_nodes": 30}, "over max_markup_nodes=30 JSON values"),
        ({"max_markup_chars": 500}, "characters over max_markup_chars=500"),
    ):
        rejects, c = run(0, DEMO, tmp_path / "out", **limit)
        over = [r for r in rejects if needle in r["reason"]]
        assert len(over) == c["blocks_over_limits"] > 0 and reconciles(c)
        assert c["blocks_rejected"] == whole["blocks_rejected"] + c["blocks_over_limits"]
        assert c["blocks_converted"] == whole["blocks_converted"] - c["blocks_over_limits"]
        assert all(r["raw"] is not None and len(r["raw"]) <= LIMITS["reject_raw_chars"] for r in over)


def test_the_job_accounts_for_every_input_file_with_its_records(spark, tmp_path):
    """The job over three WARC files, one of them cut inside a member: the run record lists each
    file with the records it gave (the cut one with its file error), adding up to ``records``;
    the cut is a reject row naming the file and the offset."""
    from jobs.extract_quads import ExtractQuadsJob

    data = DEMO.read_bytes()
    starts = gzip_member_offsets(data)
    d = tmp_path / "in"
    d.mkdir()
    (d / "cut.warc.gz").write_bytes(data[: (starts[30] + starts[31]) // 2])
    for f in (ONE_PAGE, DATA / "warc" / "warcio-example.warc.gz"):
        (d / f.name).write_bytes(f.read_bytes())
    out = tmp_path / "out"
    assert ExtractQuadsJob(["--input", str(d), "--output", str(out)]).main() == 0
    record = json.loads((out / "quads" / "_run.json").read_text())
    c, inputs = record["counters"], record["inputs"]
    read = {Path(r["source"]).name: r for r in inputs["read"]}
    assert inputs["read_unit"] == "records" and set(read) == {"cut.warc.gz", ONE_PAGE.name, "warcio-example.warc.gz"}
    assert read["cut.warc.gz"]["records"] == 30 and read["cut.warc.gz"]["file_errors"] == 1
    assert read[ONE_PAGE.name]["records"] == 4 and read[ONE_PAGE.name]["quads"] > 0
    assert sum(r["records"] for r in read.values()) == c["records"] and c["reconciles"] is True
    assert sum(r["quads"] for r in read.values()) == c["quads"] and c["file_errors"] == 1
    rejects = pq.read_table(out / "rejects" / "extract_quads").to_pylist()
    [cut] = [r for r in rejects if r["source"].endswith("cut.warc.gz") and "is cut" in r["reason"]]
    assert cut["position"] == starts[30]
