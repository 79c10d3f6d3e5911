"""Shared fixtures: one local Spark session for the whole suite, paths to the bundled data."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from cluster.local.procs import free_port

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
WDC_SAMPLE = DATA / "wdc" / "wdc-2022-12-jsonld-part00044-first10k.nq"
SCHEMAORG = DATA / "schemaorg-30.0"
# The paper's own data (no licence, never in the project): beside the checkout, absent on a user's clone.
PSET_DATA = ROOT.parent / "shared" / "data" / "llm4schemaorg-pset"


@pytest.fixture(scope="session")
def pset():
    """The paper's ``data/WDC/Pset`` folder with its history (:func:`udfs.corpus.pset.open_pset` over
    ``../shared/data/llm4schemaorg-pset``: the bundle cloned once into the system temp dir, keyed by
    its sha256); skips where that folder is absent."""
    from udfs.corpus.pset import open_pset

    if not (PSET_DATA / "pset-history.bundle").is_file():
        pytest.skip(f"the paper's data is not at {PSET_DATA} (no licence: never bundled)")
    return open_pset(PSET_DATA)


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """A local Spark session shared by every test that needs one (starting the JVM costs ~5 s)."""
    from udfs.runtime.job import build_spark

    os.environ.setdefault("SPARK_LOG_LEVEL", "ERROR")
    session = build_spark(
        "tests",
        master="local[2]",
        extra=[
            "spark.sql.shuffle.partitions=4",
            "spark.ui.showConsoleProgress=false",
            f"spark.sql.warehouse.dir={tmp_path_factory.mktemp('warehouse')}",
        ],
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def wdc_sample() -> Path:
    return WDC_SAMPLE


SERVED_MODEL_ID = "qwen2.5-coder-1.5b"


@pytest.fixture(scope="session")
def service(request):
    """Base URL of the Ray Serve app with the embedded model, started once for the whole suite
    (each start costs ~15 s of model load and Ray start-up). The seconds it took to start are
    ``request.config.service_start_s`` (the engine figures of tests/llm/test_engine_contract.py)."""
    import ray
    from ray import serve

    from udfs.llm.serving.config import load_serving_conf
    from udfs.llm.serving.process import run_app

    # Ray's socket paths must stay under 107 bytes: a short folder, not pytest's long one.
    temp = Path(tempfile.mkdtemp(prefix="ray", dir="/tmp"))
    # Workers default to niceness 15, which starves the replica on a busy machine.
    env = pytest.MonkeyPatch()
    env.setenv("RAY_worker_niceness", "0")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _temp_dir=str(temp),
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}},
    )
    conf = load_serving_conf(
        overrides={"serving": {"port": free_port()}, "embedded": {"n_ctx": 2048, "model_id": SERVED_MODEL_ID}}
    )
    t0 = time.monotonic()
    try:
        url = run_app(conf, wait_s=300)
        request.config.service_start_s = round(time.monotonic() - t0, 1)
        yield url
    finally:
        serve.shutdown()
        ray.shutdown()
        env.undo()
        shutil.rmtree(temp, ignore_errors=True)


# ---- local multi-node rehearsal (cluster/local/): started once for the suite, only when a test asks


@pytest.fixture(scope="session")
def spark_standalone():
    """A Spark standalone master and two 1-core workers on the loopback (tests/cluster/test_rehearsal.py,
    tests/jobs/test_faults.py)."""
    from cluster.local.spark_standalone import SparkStandalone

    with SparkStandalone(workers=2, cores=1, memory="1g") as cluster:
        yield cluster


@pytest.fixture(scope="session")
def ray_nodes():
    """A Ray head and a second Ray node on this machine (dialled on 127.0.0.1, token-protected) with
    the Serve app (embedded model, n_ctx 2048, HTTP on loopback) deployed onto them; the replica
    lands on the second node."""
    from cluster.local.ray_nodes import RayNodes

    with RayNodes(head_cpus=1, node_cpus=2) as cluster:
        cluster.deploy_serve({"embedded": {"n_ctx": 2048, "model_id": SERVED_MODEL_ID}})
        yield cluster


# ---- a local S3-compatible server (moto) for output roots that are s3:// URLs


@pytest.fixture(scope="session")
def _moto_endpoint():
    """An S3-compatible server (moto's server mode) on 127.0.0.1, started once for the session."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request otherwise
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3_server(_moto_endpoint, monkeypatch):
    """The local S3-compatible server for one test, with one bucket: boto3, s3fs and the jobs
    reach it through AWS_ENDPOINT_URL_S3 and dummy keys, set for this test only (nothing here can
    reach AWS). Yields the bucket name."""
    import boto3
    import s3fs

    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", _moto_endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    for var in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(var, raising=False)
    s3fs.S3FileSystem.clear_instance_cache()  # a cached instance would not see this endpoint
    bucket = "llm4schema-tests"
    boto3.client("s3").create_bucket(Bucket=bucket)  # idempotent in us-east-1
    try:
        yield bucket
    finally:
        s3fs.S3FileSystem.clear_instance_cache()


@pytest.fixture
def s3_keys(s3_server):
    """The keys under a prefix of the test bucket, read with boto3 (not through the code under
    test): ``s3_keys("run/csets")`` lists every object below it, sorted."""
    import boto3

    client = boto3.client("s3")

    def keys(prefix: str) -> list[str]:
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=s3_server, Prefix=prefix.rstrip("/") + "/")
        return sorted(o["Key"] for p in pages for o in p.get("Contents", []))

    return keys


# Three real pages of the extruct samples, each placed in a stratum: two with text and human
# markup, one with none (a no-text reject, not a page of "no"s).
DEMO_PAGES = [
    ("schema.org/CreativeWork.001.html", "n_properties", "high"),
    ("songkick/elysianfields_1.html", "n_instances", "low"),
    ("misc/null_ld_mock.html", "n_instances", "medium"),
]


def demo_pages_table():
    """A pages/ table (pyarrow) of DEMO_PAGES, built with the pages job's own extraction, each page's
    first typed root entity (``FIRST_TYPED_ROOT_ONLY``: the figures tests compare with were made so)."""
    import pyarrow as pa

    from udfs.corpus.html import PageConfig, process_html
    from udfs.corpus.main_entity import FIRST_TYPED_ROOT_ONLY
    from udfs.runtime.config import load_config

    cfg = PageConfig.of(load_config().pages)
    rows = []
    for rel, feature, stratum in DEMO_PAGES:
        raw = (DATA / "html" / "extruct-samples" / rel).read_bytes()
        out = process_html(raw, "text/html", None, cfg, main_entity=FIRST_TYPED_ROOT_ONLY)
        rows.append(
            {
                "page_url": f"http://extruct-samples.example/{rel}",
                "feature": feature,
                "stratum": stratum,
                "selected": True,
                "status": out["status"],
                "text": out["text"],
                "judge_text": out["judge_text"],
                "human_markup": out["human_markup"],
                "root_types": out["root_types"],
            }
        )
    return pa.Table.from_pylist(rows)


@contextlib.contextmanager
def trap_server(body: bytes, content_type: str):
    """An HTTP server on 127.0.0.1 answering every GET, POST and HEAD with ``body``; ``.seen`` lists
    every request it received and ``.url`` is its address. A control request first shows that it
    does answer, so an empty ``seen`` later means nobody asked."""
    import http.server
    import threading

    import httpx

    class Recorder(http.server.BaseHTTPRequestHandler):
        def _record(self):
            self.server.seen.append(f"{self.command} {self.path}")
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_POST = do_HEAD = _record

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    server.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        assert httpx.get(f"{server.url}/control", timeout=5).status_code == 200
        assert server.seen == ["GET /control"]
        server.seen.clear()
        yield server
    finally:
        server.shutdown()
        server.server_close()


def gzip_member_offsets(data: bytes) -> list[int]:
    """The offsets of the gzip members of ``data``, found with zlib (independently of the code
    under test)."""
    import zlib

    starts, pos = [], 0
    while pos < len(data):
        starts.append(pos)
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        d.decompress(data[pos:])
        pos = len(data) - len(d.unused_data)
    return starts
