"""Every boundary of every job, tried as a user gets it wrong (issue 64, "Done when"): one table,
a row per job and class of fault, each run as a user runs it (``python jobs/<job>.py ...`` from the
project root, a process of its own).

A row is the input (the command line and what is under its output root), the exit status, the one
message line, and what was written. Every row asserts:

* exit status 2, and no traceback on stderr;
* exactly one stderr line holding ``error:``, the last one, ``<job>.py: error: ...``, holding the
  row's key words (the flag or key named, the path, the holder...);
* what was written under the output root (``<tmp>/out``, where each row also puts what it sets up):

  - ``nothing``: every file and folder there as it was, byte for byte, and no other line on stderr
    (refused by the job's checks before any work: no log, no run record, no lease left);
  - ``a failed record``: the run stopped after its checks, before any unit of work, and wrote at
    most its log (``logs/``) and its run record with ``status`` "failed: <the message>": no table,
    no rejects, no ``next:`` hint;
  - ``nothing done``: the run was given units and none succeeded: its tables and rejects say why
    each failed, its record's status is "failed: no ... succeeded", no ``next:`` hint;
  - ``kept``: an earlier run's outputs under the root are as they were (only ``logs/`` may grow).

  A row whose point is the next run (a clean resume) runs it too and checks that it does its work.

The classes: settings (a bad value in a ``--config`` TOML file, or on the command line), input (a
table that breaks its contract, a path that is not there), output (a lease another run holds, a
place that cannot be written), nothing done, the model service, and the report's settings hashes.
``named`` says whether issue 64 names the case; every class has rows it does not name.

The tables the rows read are built by the contract tests' builders (tests/runtime/test_contracts.py),
the report's runs by tests/report/test_runs_apart.py's. Rows marked ``[spark]`` (ids ending in
``-spark``) start a Spark session: the runs given units, and one defect's; every other row stops
before one. A row that shows a defect is xfail(strict) with what happens, so that it stays in
sight. ``BOUNDARIES_REPORT=path.json`` writes the table (job, class, input, exit status, message).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import DATA, PSET_DATA, ROOT, demo_pages_table
from tests.evaluation.test_evaluate_parts import stub_server
from tests.report.test_runs_apart import HASH_A, HASH_B, run_folder
from tests.runtime.test_contracts import csets, csv, ground_truth, pages, samples, scores
from tests.runtime.test_lease import EVALUATE_WITHOUT_MODEL
from udfs.runtime.lease import lock_file, process_started

pytestmark = pytest.mark.slow

TMP = "TMP"  # tmp_path in a row's key words
NOTHING, FAILED, NOTHING_DONE, KEPT = "nothing", "a failed record", "nothing done", "kept"
REPORT: list[dict] = []


@pytest.fixture(scope="module", autouse=True)
def boundary_table():
    yield REPORT
    path = os.environ.get("BOUNDARIES_REPORT")
    if path:
        Path(path).write_text(json.dumps(REPORT, indent=2) + "\n")


# ---- what a row runs on ---------------------------------------------------------------------------


@dataclass
class Ctx:
    """One row's world: its temporary folder (the output root is ``out``, inputs go under ``in``),
    a live process to hold leases, a port where no service listens, and the stub model service."""

    tmp: Path
    pid: int
    port: int
    stub_url: str

    @property
    def out(self) -> Path:
        return self.tmp / "out"

    @property
    def closed_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def file(self, name: str, text: str) -> Path:
        path = self.tmp / "in" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def lease(self, table: str, job: str, host: str | None = None) -> Path:
        """A lock file as udfs/runtime/lease.py writes one, held by the live process (or by a
        process on ``host``)."""
        path = lock_file(str(self.out), table).local_path
        path.parent.mkdir(parents=True, exist_ok=True)
        holder = {
            "host": host or socket.gethostname(),
            "pid": self.pid,
            "pid_started": process_started(self.pid),
            "job": job,
            "started_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "settings_hash": "",
            "token": uuid.uuid4().hex,
        }
        path.write_text(json.dumps(holder, indent=1) + "\n")
        return path


def out(c: Ctx) -> list[str]:
    return ["--output", str(c.out)]


# A run of each job whose inputs meet their contracts: what a row changes is one boundary.
def evaluate_pages(c: Ctx) -> list[str]:
    folder = c.tmp / "in" / "pages"
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(demo_pages_table(), folder / "part-0.parquet")
    return ["--input", str(folder), *out(c)]


def good_ground_truth(c: Ctx) -> list[str]:
    """agents_bench run on a ground truth that meets its contract (one item)."""
    argv = ground_truth(c.tmp)  # the builder's labels are text: it breaks the contract
    path = c.tmp / "gt" / "factuality.parquet"
    table = pq.read_table(path)
    pq.write_table(table.set_column(table.schema.get_field_index("label"), "label", pa.array([True])), path)
    return argv


GOOD: dict[str, Callable[[Ctx], list[str]]] = {
    "csets": lambda c: ["--input", str(DATA / "demo" / "quads"), *out(c)],
    "sample": lambda c: csets(c.tmp),
    "warc_index": lambda c: ["--input", str(DATA / "warc"), "--warc-base", str(DATA / "warc"), *out(c)],
    "extract_quads": lambda c: ["--input", str(DATA / "demo" / "extruct-samples.warc.gz"), *out(c)],
    "pages": lambda c: samples(c.tmp),
    "import_pset": lambda c: ["--input", str(PSET_DATA / "pset-history.bundle"), *out(c)],
    "evaluate": lambda c: [*evaluate_pages(c), *EVALUATE_WITHOUT_MODEL],
    "report": lambda c: scores(c.tmp),
    "agents_bench": lambda c: [
        "build",
        "--input",
        str(DATA / "schemaorg-30.0" / "schemaorg-all-examples.txt"),
        *out(c),
    ],
}
# The table each job's lease row finds held: its own (``Job.table``, or its first output).
TABLE = {
    "csets": "csets",
    "sample": "samples",
    "warc_index": "warc_index",
    "extract_quads": "quads",
    "pages": "pages",
    "import_pset": "pages",
    "evaluate": "scores",
    "report": "report",
    "agents_bench": "agents_bench",
}


def good(job: str, *extra: str) -> Callable[[Ctx], list[str]]:
    return lambda c: [*GOOD[job](c), *extra]


def with_config(job: str, toml: str) -> Callable[[Ctx], list[str]]:
    """The job's good run with ``--config`` a file of the user's holding ``toml``."""
    return lambda c: [*GOOD[job](c), "--config", str(c.file("my.toml", toml))]


def leased(job: str, holder_job: str | None = None, host: str | None = None) -> Callable[[Ctx], list[str]]:
    def make(c: Ctx) -> list[str]:
        c.lease(TABLE[job], holder_job or job, host)
        return GOOD[job](c)

    return make


def root_is_a_file(job: str) -> Callable[[Ctx], list[str]]:
    def make(c: Ctx) -> list[str]:
        argv = GOOD[job](c)
        c.out.write_text("a file where the output root goes\n")
        return argv

    return make


def occupied(job: str, table: str) -> Callable[[Ctx], list[str]]:
    """``table`` (a folder under the root the job writes) is a regular file."""

    def make(c: Ctx) -> list[str]:
        argv = GOOD[job](c)
        (c.out / table).parent.mkdir(parents=True, exist_ok=True)
        (c.out / table).write_text("a file where a table folder goes\n")
        return argv

    return make


def under_a_file(job: str) -> Callable[[Ctx], list[str]]:
    """An output root below a path that is a regular file."""

    def make(c: Ctx) -> list[str]:
        argv = GOOD[job](c)
        c.out.mkdir()
        (c.out / "file").write_text("not a folder\n")
        return [
            *argv[: argv.index("--output")],
            "--output",
            str(c.out / "file" / "root"),
            *argv[argv.index("--output") + 2 :],
        ]

    return make


def missing_input(job: str, *before: str) -> Callable[[Ctx], list[str]]:
    def make(c: Ctx) -> list[str]:
        argv = GOOD[job](c)
        i = argv.index("--input")
        return [*before, *argv[:i], "--input", str(c.tmp / "in" / "missing"), *argv[i + 2 :]]

    return make


# ---- the rows --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    job: str
    cls: str  # settings, input, output, nothing done, service, report
    case: str  # the input, as the table says it
    argv: Callable[[Ctx], list[str]]  # the command line after jobs/<job>.py (it may set up the root)
    says: tuple[str, ...]  # key words of the one line (TMP: the row's temporary folder)
    written: str = NOTHING
    named: bool = True  # issue 64 names the case
    spark: bool = False
    then: Callable[[Ctx], None] | None = None  # the next run, where the row's point is that it resumes
    defect: str = ""  # a row that shows a defect: xfail(strict) with what happens


def malformed_quads(c: Ctx) -> list[str]:
    nq = c.file("bad.nq", "not a quad\n<a> <b> .\n<http://x> <http://y> z <http://g> .\n")
    return ["--input", str(nq), *out(c)]


def unreadable_warcs(c: Ctx) -> list[str]:
    """The sample's one row is in the index, its WARC file is not under --warc-base."""
    (c.tmp / "in" / "warcs").mkdir(parents=True)
    return [*samples(c.tmp), "--warc-base", str(c.tmp / "in" / "warcs")]


def calibration(threshold: str) -> Callable[[Ctx], list[str]]:
    def make(c: Ctx) -> list[str]:
        shipped = (ROOT / "conf" / "calibration.json").read_text()
        assert '"threshold": 0.282352' in shipped
        path = c.file("calibration.json", shipped.replace('"threshold": 0.282352', f'"threshold": {threshold}'))
        return [*GOOD["evaluate"](c), "--calibration", str(path)]

    return make


def calibration_path(kind: str) -> Callable[[Ctx], list[str]]:
    def make(c: Ctx) -> list[str]:
        path = c.tmp / "in" / "calibration"
        if kind == "folder":
            path.mkdir(parents=True)
        elif kind == "not json":
            c.file("calibration", '{"version": 1, "entries": [')
        return [*GOOD["evaluate"](c), "--calibration", str(path)]

    return make


def evaluate_at(url: Callable[[Ctx], str]) -> Callable[[Ctx], list[str]]:
    """evaluate generating and judging (it needs the service) one page."""
    return lambda c: [*evaluate_pages(c), "--base-url", url(c), "--executor", "local", "--limit", "1"]


def resumes_with_the_service(c: Ctx) -> None:
    """The same run with the service up does its work: the failed record stands in no one's way."""
    proc = job_run("evaluate", evaluate_at(lambda c: c.stub_url)(c))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads((c.out / "scores" / "_run.json").read_text())["status"] == "ok"
    assert pq.read_table(c.out / "scores").num_rows >= 2  # the page's human and generated markup


def earlier_run_then_closed(c: Ctx) -> list[str]:
    """A complete run (the stub service) on the root; then the same command while the service is down."""
    proc = job_run("evaluate", evaluate_at(lambda c: c.stub_url)(c))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return evaluate_at(lambda c: c.closed_url)(c)


def the_earlier_run_is_reported(c: Ctx) -> None:
    proc = job_run("report", ["--input", str(c.out / "scores"), *out(c)])
    assert proc.returncode == 0, proc.stderr[-2000:]


def earlier_sample(c: Ctx) -> list[str]:
    """A root holding an earlier sample (its table and record), then sample given a path not there."""
    (c.out / "samples").mkdir(parents=True)
    pq.write_table(
        pa.table({"feature": ["n_instances"], "page_url": ["http://a"]}), c.out / "samples" / "part-0.parquet"
    )
    (c.out / "samples" / "_run.json").write_text(json.dumps({"job": "sample", "status": "ok"}) + "\n")
    return missing_input("sample")(c)


def two_settings(c: Ctx) -> list[str]:
    a = run_folder(c.tmp / "a", HASH_A, 0.3, 3)
    b = run_folder(c.tmp / "b", HASH_B, 0.7, 2)
    return ["--input", str(a), str(b), *out(c)]


def record_not_json(c: Ctx) -> list[str]:
    a = run_folder(c.tmp / "a", HASH_A, 0.3, 3)
    (a / "_run.json").write_text('{"job": "evaluate", "evaluation": {"settings_ha')  # a write cut short
    return ["--input", str(a), *out(c)]


def samples_csv_without_page_url(c: Ctx) -> list[str]:
    argv = samples(c.tmp)
    (c.tmp / "samples" / "part-0.parquet").unlink()
    csv(c.tmp / "samples" / "rows.csv", "url,feature\nhttp://a,n_instances\n")
    return argv


def gt_label_text(c: Ctx) -> list[str]:
    return [*ground_truth(c.tmp), "--base-url", c.closed_url]


LEASE_WORDS = ("is leased by another", "wait for it to end or give another --output")
UNWRITABLE = ("cannot write to TMP/out", "Not a directory")

NOT_NAMED = {"named": False}

# fmt: off
# Row(job, class, the input, its command line, key words of the message, what was written, ...)
ROWS: list[Row] = [
    # ---- csets
    Row("csets", "settings", "--config: [csets] top = nan", with_config("csets", "[csets]\ntop = nan\n"), ("top", "nan")),
    Row("csets", "settings", "--max-line-bytes 0 (range >= 1)", good("csets", "--max-line-bytes", "0"), ("--max-line-bytes", "0")),
    Row("csets", "settings", "--config: a file that is not TOML", with_config("csets", "[csets\ntop = 3\n"), ("TMP/in/my.toml", "TOML"), **NOT_NAMED),
    Row("csets", "input", "--input: a path that is not there", missing_input("csets"), ("--input", "TMP/in/missing"), NOTHING, **NOT_NAMED),
    Row("csets", "output", "csets/ leased by a live csets run", leased("csets"), ("csets/", *LEASE_WORDS)),
    Row("csets", "output", "--output: a regular file", root_is_a_file("csets"), UNWRITABLE),
    Row("csets", "nothing done", "[spark] --input: a file of malformed lines only", malformed_quads,
        ("none of 3 lines succeeded", "rejected"), NOTHING_DONE, spark=True, **NOT_NAMED),
    # ---- sample
    Row("sample", "settings", '--config: [sample] strata = "3" (a string)', with_config("sample", '[sample]\nstrata = "3"\n'), ("strata", "3")),
    Row("sample", "settings", "--per-stratum 0 (range >= 1)", good("sample", "--per-stratum", "0"), ("--per-stratum", "0")),
    Row("sample", "input", "csets/ without n_instances", lambda c: csets(c.tmp, n_instances=None),
        ("TMP/csets/part-0.parquet", "n_instances", "int64")),
    Row("sample", "input", "csets/ n_instances as string", lambda c: csets(c.tmp, n_instances=["3", "4"]),
        ("TMP/csets/part-0.parquet", "n_instances", "string", "int64")),
    Row("sample", "input", "--input not there, on a root holding an earlier sample", earlier_sample,
        ("TMP/in/missing",), NOTHING, **NOT_NAMED),
    Row("sample", "output", "samples/ leased by a live sample run", leased("sample"), ("samples/", *LEASE_WORDS)),
    Row("sample", "output", "samples/: a regular file", occupied("sample", "samples"),
        ("cannot write to TMP/out/samples", "Not a directory"), **NOT_NAMED),
    # ---- warc_index
    Row("warc_index", "settings", "--config: [warc_index] max_record_bytes = 0",
        with_config("warc_index", "[warc_index]\nmax_record_bytes = 0\n"), ("max_record_bytes", "0")),
    Row("warc_index", "settings", "--reject-raw-chars=-5", good("warc_index", "--reject-raw-chars=-5"), ("--reject-raw-chars", "-5")),
    Row("warc_index", "input", "--input: a path that is not there", missing_input("warc_index"), ("--input", "TMP/in/missing"), NOTHING,
        **NOT_NAMED),
    Row("warc_index", "output", "warc_index/ leased by a run on another host", leased("warc_index", host="other-host.example"),
        ("warc_index/", "host other-host.example", "if that run is gone, remove the lease file"), **NOT_NAMED),
    Row("warc_index", "output", "--output below a regular file", under_a_file("warc_index"),
        ("cannot write to TMP/out/file/root", "Not a directory"), **NOT_NAMED),
    # ---- extract_quads
    Row("extract_quads", "settings", "--config: [extract_quads] time_limit_s = inf",
        with_config("extract_quads", "[extract_quads]\ntime_limit_s = inf\n"), ("time_limit_s", "inf")),
    Row("extract_quads", "settings", "--max-html-bytes 1e3 (not an integer)", good("extract_quads", "--max-html-bytes", "1e3"),
        ("--max-html-bytes", "1e3")),
    Row("extract_quads", "input", "--input: a path that is not there", missing_input("extract_quads"), ("--input", "TMP/in/missing"),
        NOTHING, **NOT_NAMED),
    Row("extract_quads", "output", "quads/ leased by a live extract_quads run", leased("extract_quads"), ("quads/", *LEASE_WORDS)),
    Row("extract_quads", "output", "rejects/extract_quads: a regular file", occupied("extract_quads", "rejects/extract_quads"),
        ("cannot write to TMP/out/rejects/extract_quads", "Not a directory"), **NOT_NAMED),
    # ---- pages
    Row("pages", "settings", "--config: [pages] replacments = 2 (a typo)", with_config("pages", "[pages]\nreplacments = 2\n"),
        ("replacments", "replacements")),
    Row("pages", "settings", "--replacements=-1", good("pages", "--replacements=-1"), ("--replacements", "-1"), **NOT_NAMED),
    Row("pages", "input", "samples/ without page_url", lambda c: samples(c.tmp, page_url=None),
        ("TMP/samples/part-0.parquet", "page_url", "string")),
    Row("pages", "input", "samples/ page_url as int64", lambda c: samples(c.tmp, page_url=[7]),
        ("TMP/samples/part-0.parquet", "page_url", "int64", "string")),
    Row("pages", "input", "a samples CSV without page_url", samples_csv_without_page_url, ("TMP/samples/rows.csv", "page_url"),
        **NOT_NAMED),
    Row("pages", "output", "pages/ leased by a live pages run", leased("pages"), ("pages/", *LEASE_WORDS)),
    Row("pages", "output", "--output: a regular file", root_is_a_file("pages"), UNWRITABLE),
    Row("pages", "nothing done", "[spark] every row fetch_error (its WARC file not under --warc-base)", unreadable_warcs,
        ("none of 1 input rows succeeded", "WARC file not found"), NOTHING_DONE, spark=True),
    # ---- import_pset
    Row("import_pset", "settings", '--config: [import_pset] text = "papers" (not a choice)',
        with_config("import_pset", '[import_pset]\ntext = "papers"\n'), ("text", "papers"), **NOT_NAMED),
    Row("import_pset", "settings", "--per-stratum=-1", good("import_pset", "--per-stratum=-1"), ("--per-stratum", "-1")),
    Row("import_pset", "input", "--input: a bundle that is not there", missing_input("import_pset"), ("TMP/in/missing",), NOTHING,
        **NOT_NAMED),
    Row("import_pset", "output", "pages/ leased by a live pages run", leased("import_pset", holder_job="pages"),
        ("pages/", "leased by another pages run"), **NOT_NAMED),
    Row("import_pset", "output", "--output: a regular file", root_is_a_file("import_pset"), UNWRITABLE),
    # ---- evaluate
    Row("evaluate", "settings", "--calibration: a threshold of NaN", calibration("NaN"), ("TMP/in/calibration.json", "threshold", "NaN")),
    Row("evaluate", "settings", '--calibration: a threshold of "0.3"', calibration('"0.3"'),
        ("TMP/in/calibration.json", "threshold", "0.3")),
    Row("evaluate", "settings", "--factuality-threshold 1.7", good("evaluate", "--factuality-threshold", "1.7"),
        ("--factuality-threshold", "1.7")),
    Row("evaluate", "settings", "--calibration: a path that is not there", calibration_path("missing"), ("TMP/in/calibration", "not found")),
    Row("evaluate", "settings", "--calibration: not JSON", calibration_path("not json"), ("TMP/in/calibration", "not JSON")),
    Row("evaluate", "settings", "--calibration: a folder", calibration_path("folder"), ("TMP/in/calibration",), **NOT_NAMED),
    Row("evaluate", "input", "pages/ without text", lambda c: [*pages(c.tmp, text=None), *EVALUATE_WITHOUT_MODEL],
        ("TMP/pages/part-0.parquet", "text", "string")),
    Row("evaluate", "output", "scores/ leased by a live evaluate run", leased("evaluate"), ("scores/", *LEASE_WORDS)),
    Row("evaluate", "output", "scores/: a regular file", occupied("evaluate", "scores"), ("cannot write to TMP/out/scores", "Not a directory")),
    Row("evaluate", "service", "--base-url: a port where no service listens; then the service up", evaluate_at(lambda c: c.closed_url),
        ("127.0.0.1", "/v1/models", "Connection refused"), KEPT, then=resumes_with_the_service),
    Row("evaluate", "service", "a complete run, then the same command with the service down", earlier_run_then_closed,
        ("/v1/models", "Connection refused"), KEPT, then=the_earlier_run_is_reported, **NOT_NAMED),
    # ---- report
    Row("report", "settings", "--config: [report] group_interval_width = 0 (range (0, 1])",
        with_config("report", "[report]\ngroup_interval_width = 0\n"), ("group_interval_width", "0")),
    Row("report", "settings", "--group-interval-width nan", good("report", "--group-interval-width", "nan"),
        ("--group-interval-width", "nan")),
    Row("report", "input", "scores/ without n_factual", lambda c: scores(c.tmp, n_factual=None),
        ("TMP/scores/part-0.parquet", "n_factual", "int64"), **NOT_NAMED),
    Row("report", "report", "scores of two settings hashes", two_settings,
        (HASH_A[:12], HASH_B[:12], "TMP/a/scores", "TMP/b/scores", "--compare-settings"), KEPT),
    Row("report", "report", "a scores folder whose _run.json is cut short (not JSON)", record_not_json,
        ("TMP/a/scores/_run.json", "not JSON"), KEPT, **NOT_NAMED),
    Row("report", "output", "report/ leased by a live report run", leased("report"), ("report/", *LEASE_WORDS)),
    Row("report", "output", "--output: a regular file", root_is_a_file("report"), UNWRITABLE),
    # ---- agents_bench
    Row("agents_bench", "settings", "--config: [agents_bench] fit_fraction = 1.0 (range (0, 1))",
        with_config("agents_bench", "[agents_bench]\nfit_fraction = 1.0\n"), ("fit_fraction", "1")),
    Row("agents_bench", "settings", "--distant-max 2 (range [-1, 1])", good("agents_bench", "--distant-max", "2"),
        ("--distant-max", "2"), **NOT_NAMED),
    Row("agents_bench", "input", "run: a ground truth whose label is text", gt_label_text,
        ("TMP/gt/factuality.parquet", "label", "bool"), **NOT_NAMED),
    Row("agents_bench", "input", "build: an examples file that is not there", missing_input("agents_bench"), ("TMP/in/missing",), NOTHING,
        **NOT_NAMED),
    Row("agents_bench", "service", "run: --base-url a port where no service listens",
        lambda c: [*good_ground_truth(c), "--base-url", c.closed_url], ("127.0.0.1", "/v1/models", "Connection refused"), KEPT,
        **NOT_NAMED),
    Row("agents_bench", "output", "agents_bench/ leased by a live agents_bench run", leased("agents_bench"),
        ("agents_bench/", *LEASE_WORDS)),
    Row("agents_bench", "output", "--output: a regular file", root_is_a_file("agents_bench"), UNWRITABLE),
]
# fmt: on


# ---- running a row ---------------------------------------------------------------------------------


def job_run(job: str, argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python jobs/<job>.py ARGV`` from the project root, as a user runs it (``env`` added to
    this environment, less what would change the run: the debug switch, a service's URL or key)."""
    keep = {k: v for k, v in os.environ.items() if k not in ("LLM4SCHEMA_DEBUG", "OPENAI_BASE_URL", "OPENAI_API_KEY")}
    env = {**keep, **(env or {})}
    return subprocess.run(
        [sys.executable, f"jobs/{job}.py", *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )


def listing(root: Path) -> dict[str, str]:
    """Every file and folder at or under ``root`` (relative names) with its content's sha256."""
    if not os.path.lexists(root):
        return {}
    if not root.is_dir():
        return {".": hashlib.sha256(root.read_bytes()).hexdigest()}
    return {
        p.relative_to(root).as_posix(): ("folder" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(root.rglob("*"))
    }


def check_written(row: Row, before: dict[str, str], after: dict[str, str], message: str, said: str, root: Path) -> None:
    added = sorted(after.keys() - before.keys())
    changed = sorted(k for k in before.keys() & after.keys() if before[k] != after[k])
    removed = sorted(before.keys() - after.keys())
    if row.written == NOTHING:
        assert (added, changed, removed) == ([], [], []), "refused before any work: nothing written"
        return
    if row.written == KEPT:  # the job's log may grow: every run appends to it
        changed = [k for k in changed if not k.startswith("logs/")]
        assert (changed, removed) == ([], []), "the earlier run's outputs are kept"
        assert all(k == "logs" or k.startswith("logs/") for k in added), added
        return
    assert (changed, removed) == ([], []), "the run changed nothing that was there"
    assert "next:" not in said, "no next: hint after a failed run"
    records = [k for k in added if k.endswith("/_run.json")]
    if row.written == FAILED:  # at most its log and a record saying it failed: no table, no rejects
        assert len(records) <= 1, added
        for record in records:
            assert json.loads((root / record).read_text())["status"] == f"failed: {message}"
        folders = {r.rpartition("/")[0] for r in records}
        rest = [k for k in added if not (k == "logs" or k.startswith("logs/") or k in records)]
        assert all(any(f == k or f.startswith(k + "/") for f in folders) for k in rest), f"only the record: {added}"
    else:  # nothing done: its tables say why each unit failed
        assert len(records) == 1, added
        status = json.loads((root / records[0]).read_text())["status"]
        assert status.startswith("failed: no ") and status.endswith(" succeeded"), status
        assert any(k.endswith(".parquet") for k in added), added


@pytest.fixture
def ctx(tmp_path, stub):
    holder = subprocess.Popen(["sleep", "600"])
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, never listening: a connection is refused
    try:
        yield Ctx(tmp_path, holder.pid, closed.getsockname()[1], stub.url)
    finally:
        closed.close()
        holder.kill()
        holder.wait()


@pytest.fixture(scope="module")
def stub():
    with stub_server() as s:
        yield s


def row_id(row: Row) -> str:
    """``<job>-<class>-<the case's words>``, ``[spark]`` rows ending in ``-spark``."""
    words = re.findall(r"[a-z0-9_]+", row.case.replace("[spark]", "").lower())
    return "-".join([row.job, row.cls.replace(" ", "_"), *words[:8]]) + ("-spark" if row.spark else "")


def param(row: Row):
    marks = [pytest.mark.xfail(strict=True, reason=row.defect)] if row.defect else []
    return pytest.param(row, id=row_id(row), marks=marks)


@pytest.mark.parametrize("row", [param(r) for r in ROWS])
def test_a_boundary_is_one_line_and_exit_2_and_writes_what_its_class_allows(row: Row, ctx: Ctx):
    argv = row.argv(ctx)
    before = listing(ctx.out)
    proc = job_run(row.job, argv)
    said = proc.stdout + proc.stderr
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    REPORT.append(
        {
            "job": row.job,
            "class": row.cls,
            "input": row.case,
            "named": row.named,
            "exit": proc.returncode,
            "message": " | ".join(x for x in lines if "error:" in x).replace(str(ctx.tmp), TMP),
            "written": row.written,
            "defect": row.defect,
        }
    )
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 2, proc.stderr[-3000:]
    errors = [x for x in lines if "error:" in x]
    assert len(errors) == 1 and errors[0] == lines[-1], lines[-5:]
    prefix = f"{row.job}.py: error: "
    assert errors[0].startswith(prefix), errors[0]
    for word in row.says:
        assert word.replace(TMP, str(ctx.tmp)) in errors[0], (word, errors[0])
    if row.written == NOTHING:
        assert lines == errors, "refused by its checks: the one line and nothing else"
    check_written(row, before, listing(ctx.out), errors[0][len(prefix) :], said, ctx.out)
    if row.then:
        row.then(ctx)


def test_debug_adds_the_traceback_to_the_one_line(ctx: Ctx):
    """``--debug``, or LLM4SCHEMA_DEBUG=1: the same refusal, its traceback before the one line."""
    argv = leased("evaluate")(ctx)
    for extra, env in ((["--debug"], {}), ([], {"LLM4SCHEMA_DEBUG": "1"})):
        proc = job_run("evaluate", [*argv, *extra], env)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and "Traceback" in proc.stderr and "LeaseError" in proc.stderr, proc.stderr
        assert lines[-1].startswith("evaluate.py: error: scores/ under "), lines[-1]
