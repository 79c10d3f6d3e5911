"""WARC files to WDC-style N-Quads without the job (udfs/corpus/quads.py): the bundled demo parts
are reproduced byte for byte, the quads are the way WDC writes them, and every page or block that
cannot be used is a reject row of the one contract with its reason (data/demo, data/warc)."""
from __future__ import annotations

import gzip
from pathlib import Path

import pyarrow.parquet as pq

from udfs.corpus.quads import COUNTERS, extract_file
from udfs.runtime.rejects import COLUMNS

DATA = Path(__file__).resolve().parents[2] / "data"
DEMO = DATA / "demo" / "extruct-samples.warc.gz"
ONE_PAGE = DATA / "warc" / "cc-main-2024-22-one-page.warc.gz"
LIMITS = {"max_html_bytes": 5_000_000, "reject_raw_chars": 200, "time_limit_s": 30.0}


def run(index: int, path: Path, out: Path, **limits) -> tuple[list[dict], dict]:
    items = list(extract_file(index, str(path), str(out), **{**LIMITS, **limits}))
    assert [kind for kind, _ in items] == ["reject"] * (len(items) - 1) + ["counters"]
    return [row for _, row in items[:-1]], items[-1][1]


def reconciles(c: dict) -> bool:
    return (c["blocks"] == c["blocks_converted"] + c["blocks_rejected"] + c["blocks_empty"]
            and c["records"] == c["html_responses"] + c["skipped_not_html_response"] + c["skipped_oversized"])


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
    assert [(r["position"], r["reason"], r["raw"]) for r in rejects] == \
        [(r["position"], r["reason"], r["raw"]) for r in committed]
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

