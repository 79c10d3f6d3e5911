"""udfs/runtime/io.py: one Folder for local paths and URLs. Each behaviour is checked on a local
folder and on s3:// against a local S3-compatible server (moto, 127.0.0.1); what lands in the
bucket is read back with boto3, not through the code under test."""

import json
import os
import uuid
from pathlib import Path

import pyarrow as pa
import pytest

from udfs.runtime.io import Folder, fsspec_url, local_state_dir, output_location, parquet_dataset, spark_url


@pytest.fixture(params=["local", "s3"])
def root(request, tmp_path):
    """A fresh, empty output root: a local folder, or a prefix of the test bucket."""
    if request.param == "local":
        return Folder(tmp_path / "run")
    bucket = request.getfixturevalue("s3_server")
    return Folder(f"s3a://{bucket}/{uuid.uuid4().hex[:12]}/run")


def stored(root: Folder, request) -> list[str]:
    """Every file under ``root``, relative to it, read around the Folder (os.walk / boto3)."""
    if root.is_local:
        base = root.local_path
        return sorted(str(p.relative_to(base)) for p in base.rglob("*") if p.is_file()) if base.exists() else []
    prefix = root.path.split("/", 1)[1]
    return [k[len(prefix) + 1 :] for k in request.getfixturevalue("s3_keys")(prefix)]


def test_urls_keep_their_form_and_s3_has_one_name_per_engine():
    run = Folder("s3a://bucket/run")
    assert str(run / "csets") == "s3a://bucket/run/csets"  # Path() would give s3a:/bucket/run/csets
    assert (run / "csets").url == "s3://bucket/run/csets"  # what s3fs is given
    assert str(Folder("s3://bucket/run/") / "/rejects/" / "csets") == "s3a://bucket/run/rejects/csets"
    assert (run / "rejects" / "csets").name == "csets" and str((run / "csets").parent) == "s3a://bucket/run"
    assert spark_url("s3://b/k") == spark_url("s3n://b/k") == "s3a://b/k" and fsspec_url("s3a://b/k") == "s3://b/k"
    assert spark_url("gs://b/k") == fsspec_url("gs://b/k") == "gs://b/k"
    assert str(Folder("hdfs://nn:8020/out") / "pages") == "hdfs://nn:8020/out/pages"
    assert str(output_location("out/demo") / "csets") == os.path.join("out", "demo", "csets")
    assert Folder("file:///tmp/run").is_local and Folder("file:///tmp/run").local_path == Path("/tmp/run")
    assert os.fspath(Folder("out/demo")) == "out/demo"
    with pytest.raises(TypeError):  # no code can write a local folder named "s3a:" by accident
        os.fspath(run)
    with pytest.raises(ValueError):
        Folder("")


def test_write_read_list_and_remove(root, request):
    table = root / "csets"
    assert not table.exists() and table.ls() == [] and not table.rm()
    table.write_text("_run.json", json.dumps({"job": "csets"}) + "\n")
    table.write_parquet("part-00000.parquet", pa.table({"n": [1, 2, 3]}))
    table.write_parquet("sub/part-00001.parquet", pa.table({"n": [4]}))
    (root / "csets2").write_bytes("keep.bin", b"\x00\x01")  # shares the prefix "csets"
    (root / "rejects" / "csets").write_text("no_text.jsonl", '{"source": "a"}\n')

    assert stored(root, request) == [
        "csets/_run.json",
        "csets/part-00000.parquet",
        "csets/sub/part-00001.parquet",
        "csets2/keep.bin",
        "rejects/csets/no_text.jsonl",
    ]
    assert table.exists() and table.isdir() and table.isfile("_run.json") and not table.isfile("nothing")
    assert table.ls() == ["_run.json", "part-00000.parquet", "sub"]
    assert table.ls("part-*.parquet") == ["part-00000.parquet"]
    assert table.ls("**/*.parquet") == ["part-00000.parquet", "sub/part-00001.parquet"]
    # the Parquet readers' rule: bookkeeping files (_run.json) are not rows
    assert [p.rsplit("/", 1)[-1] for p in table.files()] == ["part-00000.parquet", "part-00001.parquet"]
    assert sorted(table.read()["n"].to_pylist()) == [1, 2, 3, 4]
    assert json.loads(table.read_text("_run.json")) == {"job": "csets"}
    assert (root / "csets2").read_bytes("keep.bin") == b"\x00\x01"

    (root / "rejects" / "csets").append_text("no_text.jsonl", '{"source": "b"}\n')
    assert (root / "rejects" / "csets").read_text("no_text.jsonl").splitlines() == [
        '{"source": "a"}',
        '{"source": "b"}',
    ]

    assert table.rm() and not table.exists()
    assert stored(root, request) == ["csets2/keep.bin", "rejects/csets/no_text.jsonl"]
    assert root.rm("rejects/csets/no_text.jsonl") and stored(root, request) == ["csets2/keep.bin"]


def test_a_failed_write_publishes_nothing_and_a_rewrite_replaces_whole(root, request):
    reports = root / "report"
    reports.write_text("index.html", "old")
    with pytest.raises(RuntimeError):
        with reports.open("index.html", "w") as fh:
            fh.write("half of the new page")
            raise RuntimeError("the job died here")
    with pytest.raises(RuntimeError):
        with reports.open("table7.csv", "wb") as fh:
            fh.write(b"source,triples\n")
            raise RuntimeError("the job died here")
    assert reports.read_text("index.html") == "old"
    assert stored(root, request) == ["report/index.html"]  # no torn file, no temporary left over
    with reports.open("index.html", "w") as fh:
        fh.write("new ")
        fh.write("page")
    assert reports.read_text("index.html") == "new page"
    assert stored(root, request) == ["report/index.html"]
    with pytest.raises(ValueError, match="append_text"):
        with reports.open("index.html", "a"):
            pass


def test_parquet_dataset_reads_a_remote_table_and_local_specs_alike(root, tmp_path):
    (root / "scores").write_parquet("part-a.parquet", pa.table({"page_key": ["a"], "n": [1]}))
    (root / "scores").write_parquet("part-b.parquet", pa.table({"page_key": ["b"], "n": [2]}))
    (root / "scores").write_text("_run.json", "{}")
    ds = parquet_dataset([str(root / "scores")])  # the Spark form (s3a://) is accepted too
    assert sorted(ds.to_table()["page_key"].to_pylist()) == ["a", "b"]
    one = parquet_dataset(str(root / "scores" / "part-b.parquet")).to_table()
    assert one["n"].to_pylist() == [2]

    local = tmp_path / "more"
    local.mkdir()
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"page_key": ["c"], "n": [3]}), local / "part-c.parquet")
    both = parquet_dataset([str(root / "scores"), str(local)]).to_table()
    assert sorted(both["page_key"].to_pylist()) == ["a", "b", "c"]

    from udfs.runtime.inputs import InputError

    with pytest.raises(InputError, match="no such file or folder"):
        parquet_dataset([str(root / "nothing")]) if not root.is_local else parquet_dataset(
            [f"file://{root.url}/nothing"]
        )


def test_run_record_and_clear_outputs_go_through_the_folder(root, request):
    from udfs.runtime.job import Job, RunRecord

    record = RunRecord("csets", ["--output", str(root)])
    record.count("lines_read", 7)
    where = record.write(root / "csets")
    assert str(where) == str(root / "csets" / "_run.json")
    assert json.loads((root / "csets").read_text("_run.json"))["counters"] == {"lines_read": 7}

    class Csets(Job):
        name = table = "csets"

    job = Csets.__new__(Csets)  # the layout only: no command line to parse
    job.args = type("Args", (), {"output": str(root)})()
    assert job.table_dir == root / "csets" and job.rejects_dir == root / "rejects" / "csets"
    job.rejects_dir.write_text("part-0.jsonl", "{}\n")
    (root / "samples").write_text("_run.json", "{}\n")
    job.clear_outputs()  # a rerun replaces its own outputs, remote ones too, and nothing else
    assert stored(root, request) == ["samples/_run.json"]


def test_local_state_dir_keeps_sqlite_on_a_real_disk(tmp_path, monkeypatch):
    assert local_state_dir(tmp_path / "run", "cache") == tmp_path / "run" / "cache"
    monkeypatch.setenv("LLM4SCHEMA_STATE_DIR", str(tmp_path / "state"))
    a = local_state_dir("s3a://bucket/run-1", "cache")
    b = local_state_dir("s3://bucket/run-2", "cache")
    assert a.parent.parent == b.parent.parent == tmp_path / "state" and a != b and a.name == "cache"
    assert local_state_dir("s3://bucket/run-1", "cache") == a  # s3 and s3a: one root, one cache
