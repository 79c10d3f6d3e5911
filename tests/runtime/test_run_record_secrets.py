"""A run record never holds an endpoint's credentials (issue 64): the user, password and secret
query values of every URL in it are redacted, wherever the URL stands (argv, config, a block a
job adds), and other URLs and paths are kept as they are."""

import json

from udfs.runtime.job import RunRecord


def test_a_run_record_redacts_the_credentials_of_every_url(tmp_path):
    url = "http://bob:hunter2@models.example:8000/v1?token=abc123&model=qwen"
    record = RunRecord("evaluate", ["--base-url", url, f"--base-url={url}", "--output", "s3://bucket/out"])
    record["config"] = {"base_url": url, "output": "s3://bucket/out"}
    record["evaluation"] = {"base_url": url, "files": ["file:///data/pages/part-0.parquet"]}
    record.write(tmp_path)
    text = (tmp_path / "_run.json").read_text()
    assert "hunter2" not in text and "abc123" not in text and "bob" not in text, text
    data = json.loads(text)
    assert data["config"]["base_url"] == "http://<redacted>@models.example:8000/v1?token=<redacted>&model=qwen"
    assert data["argv"][2].startswith("--base-url=http://<redacted>@models.example:8000/")
    # what holds no secret stays as written
    assert data["config"]["output"] == "s3://bucket/out"
    assert data["evaluation"]["files"] == ["file:///data/pages/part-0.parquet"]
