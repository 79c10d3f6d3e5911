"""Every job with an output root that is a URL, not a local folder.

The Python-side jobs (evaluate without the model, report, agents_bench build) run against s3://
on a local S3-compatible server (moto, 127.0.0.1); what they wrote is read back with DuckDB
through s3fs (DuckDB's httpfs extension would need a download) and listed with boto3. The Spark
jobs need Hadoop's s3a connector (hadoop-aws and the AWS SDK bundle), which pyspark does not ship
and this machine cannot download: they run with a file:// output root, the same code path (URL
strings handed to Spark, no Path normalisation, plots and run records written through fsspec)."""

from __future__ import annotations

import io
import json
import uuid

import pyarrow.parquet as pq
import pytest

from tests.conftest import DATA, SCHEMAORG, demo_pages_table


@pytest.fixture
def s3_root(s3_server):
    return f"s3://{s3_server}/{uuid.uuid4().hex[:12]}"


def duckdb_on_s3():
    """DuckDB reading s3:// through s3fs (the same endpoint and keys as the jobs)."""
    import duckdb
    import s3fs

    con = duckdb.connect()
    con.register_filesystem(s3fs.S3FileSystem())
    return con


EVALUATE_WITHOUT_MODEL = [
    "--no-generation",
    "--stages",
    "validity",
    "--executor",
    "local",
    "--limit",
    "0",
    "--base-url",
    "http://127.0.0.1:9/v1",
]


def test_evaluate_and_report_on_a_local_root_write_what_they_wrote_before(tmp_path):
    """The same two jobs on a plain folder: the Folder layer changes nothing there."""
    from jobs.evaluate import EvaluateJob
    from jobs.report import ReportJob

    out = tmp_path / "out"
    (out / "pages").mkdir(parents=True)
    pq.write_table(demo_pages_table(), out / "pages" / "part-0.parquet")
    assert EvaluateJob(["--input", str(out / "pages"), "--output", str(out), *EVALUATE_WITHOUT_MODEL]).main() == 0
    scores = pq.read_table(sorted((out / "scores").glob("part-*.parquet"))).to_pylist()
    assert len(scores) == 2 and (out / "cache").is_dir()  # the request cache stays under a local root
    assert sorted(p.name for p in (out / "scores").iterdir() if p.name.startswith(".")) == []
    assert ReportJob(["--input", str(out / "scores"), "--output", str(out)]).main() == 0
    t7 = (out / "report" / "table7.csv").read_text().splitlines()
    assert t7[1].startswith(f"human,{sum(s['n_triples'] for s in scores)},{sum(s['n_valid'] for s in scores)},")
    assert (out / "report" / "triples_per_stage.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Table 7" in (out / "report" / "index.html").read_text()


def test_evaluate_and_report_read_and_write_an_s3_root(s3_server, s3_root, s3_keys, tmp_path, monkeypatch):
    """pages/ on S3 -> evaluate (validity only: no model) -> scores/ on S3 -> report/ on S3."""
    import boto3

    from jobs.evaluate import EvaluateJob
    from jobs.report import ReportJob

    buf = io.BytesIO()
    pq.write_table(demo_pages_table(), buf)
    prefix = s3_root.split("/", 3)[3]
    boto3.client("s3").put_object(Bucket=s3_server, Key=f"{prefix}/pages/part-0.parquet", Body=buf.getvalue())
    monkeypatch.setenv("LLM4SCHEMA_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)  # a URL mangled into a path would become a folder here

    argv = ["--input", f"{s3_root}/pages", "--output", s3_root, *EVALUATE_WITHOUT_MODEL]
    assert EvaluateJob(argv).main() == 0
    keys = s3_keys(prefix)
    for table in ("markups", "triples", "scores"):
        assert len([k for k in keys if k.startswith(f"{prefix}/{table}/part-")]) == 1, keys  # both pages, one part
    assert f"{prefix}/scores/_run.json" in keys and f"{prefix}/rejects/evaluate/no_text.parquet" in keys
    assert not any("/cache/" in k or k.endswith(".tmp") for k in keys)  # SQLite stays on a local disk
    con = duckdb_on_s3()
    scores = con.execute(
        f"SELECT page_key, n_triples, n_valid FROM read_parquet('{s3_root}/scores/part-*.parquet') ORDER BY page_key"
    ).fetchall()
    assert len(scores) == 2 and all(n > 0 and 0 < v <= n for _, n, v in scores)
    rej = con.execute(f"SELECT source FROM read_parquet('{s3_root}/rejects/evaluate/no_text.parquet')").fetchall()
    assert rej == [("http://extruct-samples.example/misc/null_ld_mock.html",)]

    # A rerun resumes from the parts it finds on S3.
    assert EvaluateJob(argv).main() == 0
    record = json.loads(con.execute(f"SELECT content FROM read_text('{s3_root}/scores/_run.json')").fetchone()[0])
    assert record["counters"]["already_scored"] == 2 and record["counters"].get("evaluated", 0) == 0

    # The report reads scores/ and pages/ from S3 and writes its tables, plot and page there.
    assert ReportJob(["--input", f"{s3_root}/scores", "--output", s3_root]).main() == 0
    t7 = con.execute(
        f"SELECT source, triples_in, after_validity, pages FROM read_csv('{s3_root}/report/table7.csv')"
    ).fetchall()
    assert t7 == [("human", sum(n for _, n, _ in scores), sum(v for _, _, v in scores), 2)]
    t8 = con.execute(f"SELECT feature, stratum FROM read_csv('{s3_root}/report/table8.csv') ORDER BY ALL").fetchall()
    assert t8 == [("n_instances", "low"), ("n_properties", "high")]
    body = boto3.client("s3").get_object(Bucket=s3_server, Key=f"{prefix}/report/triples_per_stage.png")["Body"].read()
    assert body[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Table 7" in con.execute(f"SELECT content FROM read_text('{s3_root}/report/index.html')").fetchone()[0]
    assert f"{prefix}/report/_run.json" in s3_keys(prefix)
    assert not any(p.name.startswith(("s3:", "s3a:")) for p in tmp_path.iterdir())


def test_agents_bench_build_writes_its_ground_truth_to_an_s3_root(s3_root, s3_keys, tmp_path, monkeypatch):
    from jobs.agents_bench import AgentsBenchJob

    monkeypatch.chdir(tmp_path)
    examples = SCHEMAORG / "schemaorg-all-examples.txt"
    job = AgentsBenchJob(["build", "--input", str(examples), "--output", s3_root])
    assert job.main() == 0
    prefix = s3_root.split("/", 3)[3]
    gt = f"{prefix}/agents_bench/ground_truth"
    assert {f"{gt}/factuality.parquet", f"{gt}/compliance.parquet", f"{gt}/_run.json"} <= set(s3_keys(prefix))
    con = duckdb_on_s3()
    counts = job.record["counts"]
    for agent in ("factuality", "compliance"):
        n = con.execute(f"SELECT count(*) FROM '{s3_root}/agents_bench/ground_truth/{agent}.parquet'").fetchone()[0]
        assert n == sum(v for k, v in counts.items() if k.startswith(agent + "/")) > 0
    # a rebuild replaces the ground truth (same seed: same rows), it does not add to it
    assert AgentsBenchJob(["build", "--input", str(examples), "--output", s3_root]).main() == 0
    n2 = con.execute(f"SELECT count(*) FROM '{s3_root}/agents_bench/ground_truth/factuality.parquet'").fetchone()[0]
    assert n2 == sum(v for k, v in counts.items() if k.startswith("factuality/"))


def test_spark_jobs_chain_under_a_file_url_root(spark, tmp_path, monkeypatch):
    """extract_quads -> csets -> sample, warc_index -> pages, all under file://<tmp>/run."""
    from jobs.csets import CsetsJob
    from jobs.extract_quads import ExtractQuadsJob
    from jobs.pages import PagesJob
    from jobs.sample import SampleJob
    from jobs.warc_index import WarcIndexJob

    monkeypatch.chdir(tmp_path)  # a URL mangled into a path ("file:/...") would land here
    run = tmp_path / "run"
    url = f"file://{run}"
    warc = DATA / "demo" / "extruct-samples.warc.gz"
    assert ExtractQuadsJob(["--input", str(warc), "--output", url]).main() == 0
    assert CsetsJob(["--input", str(run / "quads"), "--output", url]).main() == 0
    assert SampleJob(["--input", str(run / "csets"), "--output", url, "--per-stratum", "2"]).main() == 0
    assert WarcIndexJob(["--input", str(warc), "--output", url]).main() == 0
    assert (
        PagesJob(["--input", str(run / "samples"), "--warc-index", str(run / "warc_index"), "--output", url]).main()
        == 0
    )

    for table in ("quads", "csets", "samples", "warc_index", "pages"):
        record = json.loads((run / table / "_run.json").read_text())
        outputs = record.get("outputs", {})
        assert all(v.startswith(("file://", str(run))) for v in outputs.values()), outputs
    assert json.loads((run / "csets" / "_run.json").read_text())["outputs"]["csets"] == f"{url}/csets"
    assert pq.read_table(run / "csets").num_rows > 0 and pq.read_table(run / "samples").num_rows > 0
    pages = pq.read_table(run / "pages").to_pylist()
    assert pages and any(p["status"] == "ok" for p in pages if p["selected"])
    pngs = sorted((run / "report" / "sample").glob("hist_*.png"))
    assert [p.name for p in pngs] == ["hist_n_instances.png", "hist_n_properties.png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    assert json.loads((run / "samples" / "_run.json").read_text())["report"] == [
        f"{url}/report/sample/{p.name}" for p in pngs
    ]
    assert sorted(p.name for p in (run / "quads").iterdir() if not p.name.startswith((".", "_"))) == [
        "part-00000.nq.gz"
    ]
    assert not list(tmp_path.glob("file*")) and not list(run.rglob("*.tmp"))

    # A rerun replaces the job's outputs (Folder.rm under a URL root), it does not add to them.
    n = pq.read_table(run / "csets").num_rows
    assert CsetsJob(["--input", str(run / "quads"), "--output", url]).main() == 0
    assert pq.read_table(run / "csets").num_rows == n
