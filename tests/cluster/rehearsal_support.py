"""What tests/cluster/test_rehearsal.py and tests/jobs/test_faults.py share: the inputs, one single-process C-sets
baseline per session, page tables of real demo pages, and the readers that compare runs."""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tests.conftest import DATA, ROOT, WDC_SAMPLE

# Five files, five read tasks: the 10k-quad WDC sample and the demo corpus's quads (two of its
# parts are empty gzip files, which the job lists in rejects/).
CSETS_INPUTS = [str(WDC_SAMPLE), str(DATA / "demo" / "quads")]
CSETS_JOB = ROOT / "jobs" / "csets.py"
EVALUATE_JOB = ROOT / "jobs" / "evaluate.py"
SAMPLES = DATA / "html" / "extruct-samples"
# The shortest real pages of the bundled extruct samples that carry JSON-LD and text.
SHORT_PAGES = ["schema.org/CreativeWork.001.html", "songkick/elysianfields_1.html", "songkick/tovestyrke.html"]

_baseline: dict[str, Path] = {}


def csets_single_process(spark) -> Path:
    """The C-sets job in this process on the session's local Spark (``local[2]``), once per session."""
    if "csets" not in _baseline:
        from jobs.csets import CsetsJob

        out = Path(tempfile.mkdtemp(prefix="csets-local-"))
        assert CsetsJob(["--input", *CSETS_INPUTS, "--output", str(out)]).main() == 0
        _baseline["csets"] = out
    return _baseline["csets"]


def csets_rows(out: Path) -> list[dict]:
    """The csets/ table, every column, in cset_id order (row order of Parquet parts is not a contract)."""
    rows = pq.read_table(out / "csets").to_pylist()
    return sorted(rows, key=lambda r: r["cset_id"])


def rejects_rows(out: Path, job: str = "csets") -> list[dict]:
    rows = pq.read_table(out / "rejects" / job).to_pylist()
    return sorted(rows, key=lambda r: (r["source"], r["position"] or 0, r["reason"]))


def run_record(out: Path, table: str = "csets") -> dict:
    return json.loads((out / table / "_run.json").read_text())


# Counters that describe the data; the rest (times, hosts, the Spark master) describe the run.
def data_counters(record: dict) -> dict:
    return {k: v for k, v in record["counters"].items()}


def make_pages(folder: Path, rels: list[str]) -> Path:
    """A pages/ table of real demo pages, built with the pages job's own extraction, each page's
    first typed root entity (``FIRST_TYPED_ROOT_ONLY``, as the rehearsal's figures were made)."""
    from udfs.corpus.html import PageConfig, process_html
    from udfs.corpus.main_entity import FIRST_TYPED_ROOT_ONLY
    from udfs.runtime.config import load_config

    rows = []
    cfg = PageConfig.of(load_config().pages)
    for rel in rels:
        out = process_html((SAMPLES / rel).read_bytes(), "text/html", None, cfg, main_entity=FIRST_TYPED_ROOT_ONLY)
        assert out["status"] == "ok" and out["text"].strip(), rel
        rows.append(
            {
                "page_url": f"http://extruct-samples.example/{rel}",
                "status": out["status"],
                "text": out["text"],
                "human_markup": out["human_markup"],
                "root_types": out["root_types"],
            }
        )
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / "part-0.parquet")
    return folder


def evaluate_args(pages: Path, out: Path, limit: int, max_claims: int, *extra: str) -> list[str]:
    """Human markup only, a bounded number of claims per agent, one question each (factuality's
    plain, compliance's ranged: one request per verdict, none asked twice, so the request cache's
    count is the job's):
    the model work per page stays small on 2 cores while every stage still calls the model."""
    return [
        "--input",
        str(pages),
        "--output",
        str(out),
        "--limit",
        str(limit),
        "--order",
        "shortest",
        "--no-generation",
        "--max-claims",
        str(max_claims),
        "--context-window",
        "2048",
        "--factuality-questions",
        "plain",
        "--compliance-questions",
        "ranged",
        "--timeout-s",
        "600",
        *extra,
    ]


def parts(folder: Path) -> list[dict]:
    files = sorted(folder.glob("part-*.parquet"))
    return pq.read_table(files).to_pylist() if files else []


def triple_key(t: dict) -> tuple:
    return (t["page_key"], t["source"], t["subject"], t["property"], t["value"], t["entity_type"])


def cache_rows(path: Path) -> dict[str, dict]:
    """The request cache: key -> the request and the answer's text and first-token logprobs."""
    if not path.exists():
        return {}
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        rows = con.execute("SELECT key, request, response FROM responses").fetchall()
    finally:
        con.close()
    out = {}
    for key, request, response in rows:
        body = json.loads(response)
        choice = body["choices"][0]
        out[key] = {
            "request": json.loads(request),
            "text": choice["message"]["content"],
            "logprobs": (choice.get("logprobs") or {}).get("content"),
        }
    return out


def cache_count(path: Path) -> int:
    if not path.exists():
        return 0
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
        try:
            return con.execute("SELECT count(*) FROM responses").fetchone()[0]
        finally:
            con.close()
    except sqlite3.OperationalError:  # created but no table yet
        return 0
