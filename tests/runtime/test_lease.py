"""The output lease and the writability check (udfs/runtime/lease.py), through a real job.

The job is ``evaluate`` without a model (validity only, ``--executor local``: about a second on
the demo's three pages). Tests run as root, for whom a mode of 0o500 does not stop a write: an
unwritable place is a regular file where a folder is expected, or a folder made immutable
(``chattr +i``, which stops root too; skipped where the filesystem has no such attribute)."""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import subprocess
import sys
import textwrap
import uuid

import pyarrow.parquet as pq
import pytest

from tests.conftest import ROOT, demo_pages_table
from udfs.runtime.errors import OutputError, UserError
from udfs.runtime.io import Folder
from udfs.runtime.lease import (
    LEASES,
    LeaseError,
    acquire,
    check_writable,
    lock_file,
    process_started,
)

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


@pytest.fixture
def pages(tmp_path):
    """The demo's pages/ table, outside the output roots of the tests."""
    folder = tmp_path / "in" / "pages"
    folder.mkdir(parents=True)
    pq.write_table(demo_pages_table(), folder / "part-0.parquet")
    return folder


def exit_status(job) -> int:
    """What ``job.main()`` ends with: its return value, or SystemExit's code."""
    try:
        return job.main()
    except SystemExit as exc:
        return exc.code


def evaluate(pages, out) -> int:
    """``jobs/evaluate.py`` on ``pages`` into ``out``: its exit status."""
    from jobs.evaluate import EvaluateJob

    return exit_status(EvaluateJob(["--input", str(pages), "--output", str(out), *EVALUATE_WITHOUT_MODEL]))


def error_lines(err: str, prog: str = "evaluate.py") -> list[str]:
    assert "Traceback" not in err
    return [line for line in err.splitlines() if line.startswith(f"{prog}: error:")]


@pytest.fixture
def holder(tmp_path):
    """Start another process that leases tables under a root and sleeps: ``holder(root, tables)``
    returns its Popen once the lease is taken; each is killed at the end."""
    procs = []

    def start(root, tables, job="evaluate"):
        code = textwrap.dedent(
            f"""
            import sys, time
            from udfs.runtime.lease import acquire
            acquire({str(root)!r}, {tables!r}, job={job!r})
            print("held", flush=True)
            time.sleep(120)
            """
        )
        p = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True)
        procs.append(p)
        assert p.stdout.readline().strip() == "held"
        return p

    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


# ---- the lease through the job ---------------------------------------------------------------------


def test_a_second_run_on_the_root_is_refused_naming_the_holder_and_writes_nothing(pages, tmp_path, holder, capsys):
    out = tmp_path / "out"
    other = holder(out, ["scores"])
    assert evaluate(pages, out) == 2
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1, lines
    line = lines[0]
    lock = lock_file(str(out), "scores")
    held = json.loads(lock.read_text())
    assert f"scores/ under {out} is leased by another evaluate run" in line
    assert f"host {socket.gethostname()}, pid {other.pid}, started {held['started_at']}" in line
    assert str(lock) in line and "wait for it to end or give another --output" in line
    # nothing written: no table, no rejects, no lease of the refused run
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == [LEASES, f"{LEASES}/scores.lock"]
    assert json.loads(lock.read_text()) == held  # the holder's lease is untouched


def test_a_lease_whose_process_is_gone_is_taken_over_with_a_warning(pages, tmp_path, holder, caplog):
    out = tmp_path / "out"
    other = holder(out, ["scores", "rejects/evaluate"])
    other.kill()
    other.wait()
    with caplog.at_level(logging.WARNING, logger="llm4schema"):
        assert evaluate(pages, out) == 0
    stale = [r.getMessage() for r in caplog.records if "is stale" in r.getMessage()]
    assert len(stale) == 2, stale
    assert all(f"pid {other.pid}" in m and "its process is gone: taken over" in m for m in stale)
    assert len(pq.read_table(out / "scores").to_pylist()) == 2  # the run did its work
    assert not (out / LEASES).exists()  # and gave its lease back


def test_the_pipelines_other_jobs_share_the_root(pages, tmp_path, holder):
    out = tmp_path / "out"
    holder(out, ["report", "rejects/report"], job="report")  # a report running on the same root
    assert evaluate(pages, out) == 0
    assert lock_file(str(out), "report").exists() and not lock_file(str(out), "scores").exists()


def test_the_lease_is_given_back_however_the_run_ends(tmp_path):
    """The report job with its work replaced by a failure: a user's error (exit 2) or a bug."""
    from jobs.report import ReportJob

    class Failing(ReportJob):
        error: Exception = UserError("bad input, here, do this")

        def run(self):
            assert lock_file(self.output_root, "report").exists()
            assert lock_file(self.output_root, "rejects/report").exists()
            raise self.error

    out = tmp_path / "out"
    argv = ["--input", str(tmp_path), "--output", str(out)]
    assert exit_status(Failing(argv)) == 2 and not (out / LEASES).exists()
    Failing.error = RuntimeError("a bug")
    assert exit_status(Failing(argv)) == 1 and not (out / LEASES).exists()


# ---- the lease's own rules -------------------------------------------------------------------------


def test_the_lock_file_says_who_holds_it_and_the_settings_hash_can_be_recorded(tmp_path):
    lease = acquire(tmp_path, ["scores", "markups"], job="evaluate", settings_hash="a" * 64)
    held = json.loads(lock_file(str(tmp_path), "scores").read_text())
    assert held["host"] == socket.gethostname() and held["pid"] == os.getpid() and held["job"] == "evaluate"
    assert held["pid_started"] == process_started(os.getpid()) and held["started_at"].endswith("+00:00")
    assert held["settings_hash"] == "a" * 64
    lease.update(settings_hash="b" * 64)
    assert json.loads(lock_file(str(tmp_path), "markups").read_text())["settings_hash"] == "b" * 64
    with pytest.raises(
        LeaseError, match=re.escape(f"pid {os.getpid()}, started {held['started_at']}, settings bbbbbbbbbbbb")
    ):
        acquire(tmp_path, ["rejects/evaluate", "scores"], job="evaluate")
    assert not lock_file(str(tmp_path), "rejects/evaluate").exists()  # all or none
    lease.release()
    assert not (tmp_path / LEASES).exists()


def test_a_reused_pid_is_not_taken_for_the_holder(tmp_path):
    """A lease whose pid now belongs to a process started later is stale: this process's pid with
    another start time."""
    lock = lock_file(str(tmp_path), "scores")
    stale = {"host": socket.gethostname(), "pid": os.getpid(), "pid_started": "1", "job": "evaluate", "token": "t"}
    lock.write_text("", json.dumps(stale))
    acquire(tmp_path, ["scores"], job="evaluate").release()
    lock.write_text("", json.dumps({**stale, "host": "another-host", "pid": dead_pid()}))
    with pytest.raises(LeaseError, match="host another-host, .*if that run is gone, remove the lease file"):
        acquire(tmp_path, ["scores"], job="evaluate")  # another host: this process cannot tell, so it refuses


# ---- an object store ---------------------------------------------------------------------------------


@pytest.fixture
def memory_root():
    import fsspec

    root = f"memory://lease-{uuid.uuid4().hex[:8]}/out"
    yield root
    fs = fsspec.filesystem("memory")
    if fs.exists(root):
        fs.rm(root, recursive=True)


def test_on_an_object_store_the_lease_is_a_conditional_create(memory_root, caplog):
    lease = acquire(memory_root, ["scores"], job="evaluate")
    lock = lock_file(memory_root, "scores")
    assert json.loads(lock.read_text())["token"] == lease.holder["token"]
    with pytest.raises(
        LeaseError, match=f"scores/ under {memory_root} is leased by another evaluate run .*pid {os.getpid()}"
    ):
        acquire(memory_root, ["scores"], job="evaluate")
    lease.release()
    assert not lock.exists()
    # a stale lease on the store (its process gone) is taken over too
    lock.write_text("", json.dumps({"host": socket.gethostname(), "pid": dead_pid(), "job": "evaluate", "token": "t"}))
    with caplog.at_level(logging.WARNING, logger="llm4schema"):
        acquire(memory_root, ["scores"], job="evaluate").release()
    assert any("is stale" in r.getMessage() for r in caplog.records)


def test_a_job_on_an_object_store_root_is_refused_while_another_run_holds_it(pages, memory_root, capsys):
    lease = acquire(memory_root, ["triples"], job="evaluate")  # this process: alive
    try:
        assert evaluate(pages, memory_root) == 2
        (line,) = error_lines(capsys.readouterr().err)
        assert f"triples/ under {memory_root} is leased by another evaluate run" in line
        assert not Folder(memory_root).exists("scores")
    finally:
        lease.release()


def test_a_store_without_exclusive_create_refuses_to_lease():
    import fsspec
    from fsspec.implementations.memory import MemoryFileSystem

    class NoExclusive(MemoryFileSystem):
        protocol = "noexcl"

        def _open(self, path, mode="rb", **kwargs):
            if "x" in mode:
                raise ValueError(f"mode {mode!r} not supported")
            return super()._open(path, mode, **kwargs)

    fsspec.register_implementation("noexcl", NoExclusive, clobber=True)
    with pytest.raises(LeaseError, match="offers no exclusive create, so a run cannot lease its tables there"):
        acquire("noexcl://b/out", ["scores"], job="evaluate")


# ---- writability -------------------------------------------------------------------------------------


def test_an_output_root_that_is_a_file_is_one_line_naming_it(pages, tmp_path, capsys):
    out = tmp_path / "out"
    out.write_text("not a folder")
    assert evaluate(pages, out) == 2
    (line,) = error_lines(capsys.readouterr().err)
    assert line == (
        f"evaluate.py: error: cannot write to {out}: Not a directory: a file is there; "
        "give an --output this user can write to, or fix that folder"
    )


def test_a_table_folder_that_cannot_be_written_is_refused_before_any_work(pages, tmp_path, capsys):
    out = tmp_path / "out"
    (out / "rejects").mkdir(parents=True)
    (out / "rejects" / "evaluate").write_text("a file where the rejects folder goes")
    assert evaluate(pages, out) == 2
    (line,) = error_lines(capsys.readouterr().err)
    assert f"cannot write to {out / 'rejects' / 'evaluate'}: Not a directory" in line
    # refused before any work: no table, no cache, and the lease given back
    assert sorted(p.name for p in out.iterdir()) == ["rejects"]


def test_an_immutable_output_folder_is_one_line_with_the_os_reason(pages, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    if subprocess.run(["chattr", "+i", str(out)], capture_output=True).returncode != 0:
        pytest.skip("no immutable attribute on this filesystem")
    try:
        assert evaluate(pages, out) == 2
    finally:
        subprocess.run(["chattr", "-i", str(out)], check=True)
    (line,) = error_lines(capsys.readouterr().err)
    assert line.startswith(f"evaluate.py: error: cannot write to {out}: Operation not permitted")
    assert list(out.iterdir()) == []


def test_the_check_leaves_no_file_and_no_folder_it_made(tmp_path, memory_root):
    check_writable(tmp_path / "a" / "b")
    assert list(tmp_path.iterdir()) == []
    check_writable(memory_root)
    assert Folder(memory_root).ls("*") == []
    with pytest.raises(OutputError, match="cannot write to /proc/llm4schema: No such file or directory"):
        check_writable("/proc/llm4schema")


# ---- a write that fails mid-run ----------------------------------------------------------------------
# A file-size limit (RLIMIT_FSIZE, set in a child process only) stands for a full disk: Python
# ignores SIGXFSZ, so a write past the limit fails with EFBIG ("File too large"), and SQLite's
# with "disk I/O error".


def limited(nbytes: int):
    import resource

    def set_limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))

    return set_limit


def test_a_request_cache_that_cannot_be_written_is_named(tmp_path):
    """Answers put past the limit are kept for the run and said once; flush names the file."""
    path = tmp_path / "cache" / "llm.sqlite"
    code = textwrap.dedent(
        f"""
        import json, logging, resource
        from udfs.llm.client import RequestCache
        from udfs.runtime.errors import OutputError
        logging.basicConfig(level=logging.WARNING, format="%(message)s")
        cache = RequestCache({str(path)!r})
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))
        cache.FLUSH_ROWS = 8
        for i in range(64):
            cache.put(f"k{{i}}", "m", "request", json.dumps({{"answer": "x" * 4000, "i": i}}))
        assert cache.get("k63")["i"] == 63  # an answer not written is still the run's
        try:
            cache.flush()
        except OutputError as exc:
            print(exc)
        """
    )
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == (
        f"the request cache {path} cannot be written: disk I/O error (SQLITE_IOERR_WRITE); free space on its disk, "
        "raise the file-size limit (ulimit -f) or fix its permissions, or give --cache elsewhere"
    )
    assert p.stderr.count(str(path)) == 1  # the warning line, once


def test_a_part_that_cannot_be_written_is_named_and_not_counted_as_done(tmp_path):
    from udfs.evaluation.parts import PartWriter, committed

    root, digest = tmp_path / "out", "a" * 64
    code = textwrap.dedent(
        f"""
        import os, resource
        from udfs.evaluation.parts import PartWriter
        from udfs.runtime.errors import OutputError
        def page(key, text):
            return {{t: [{{"page_key": key, "markup": text}}] for t in ("markups", "triples", "scores")}}
        writer = PartWriter({str(root)!r}, {digest!r}, "w1", 1000)
        writer.add("p1", page("p1", "small"))
        writer.flush()
        resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))
        writer.add("p2", page("p2", os.urandom(30000).hex()))
        try:
            writer.flush()
        except OutputError as exc:
            print(exc)
        """
    )
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == (
        f"cannot write {root / 'markups' / 'part-aaaaaaaaaaaa-w1-00001.parquet'}: File too large; free space there or "
        "raise the file-size limit (ulimit -f), then run again: it resumes from the parts committed so far"
    )
    found = committed(Folder(root), digest)
    assert found.pages == {"p1"} and found.leftovers == []  # the failed part left nothing behind
    assert sorted(p.name for p in root.rglob("*") if p.is_file()) == [
        *["part-aaaaaaaaaaaa-w1-00000.json"],
        *["part-aaaaaaaaaaaa-w1-00000.parquet"] * 3,
    ]
    writer = PartWriter(root, digest, "w2", 1000)  # the next run writes the page again
    writer.add("p2", {t: [{"page_key": "p2"}] for t in ("markups", "triples", "scores")})
    writer.flush()
    assert committed(Folder(root), digest).pages == {"p1", "p2"}


def test_an_evaluation_whose_cache_cannot_be_written_stops_naming_it_and_the_next_run_resumes(pages, tmp_path):
    out = tmp_path / "out"
    argv = [sys.executable, "jobs/evaluate.py", "--input", str(pages), "--output", str(out), *EVALUATE_WITHOUT_MODEL]
    # 20 kB: the rejects, run record and log fit; SQLite's 32 kB shared-memory index does not
    p = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, preexec_fn=limited(20000))
    assert p.returncode == 2, p.stderr
    (line,) = error_lines(p.stderr)
    cache = out / "cache" / "llm.sqlite"
    assert line.startswith(f"evaluate.py: error: the request cache {cache} cannot be opened: disk I/O error")
    record = json.loads((out / "scores" / "_run.json").read_text())
    assert record["status"].startswith(f"failed: the request cache {cache} cannot be opened")
    assert not list(out.glob("*/part-*")) and not (out / LEASES).exists()
    p = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert len(pq.read_table(out / "scores").to_pylist()) == 2
    assert json.loads((out / "scores" / "_run.json").read_text())["counters"]["evaluated"] == 2


def test_on_s3_the_lease_is_a_conditional_put(s3_server):
    """S3 (a local moto server): s3fs's exclusive mode is a put with ``If-None-Match: *``, which
    the store refuses when the key exists."""
    root = f"s3://{s3_server}/{uuid.uuid4().hex[:12]}"
    lease = acquire(root, ["scores"], job="evaluate")
    with pytest.raises(LeaseError, match=f"scores/ under s3a://{s3_server}/.* is leased by another evaluate run"):
        acquire(root, ["scores"], job="evaluate")
    lease.release()
    acquire(root, ["scores"], job="evaluate").release()
    assert not lock_file(root, "scores").exists()


def test_a_lock_file_that_holds_no_lease_is_named_not_taken(tmp_path):
    lock = lock_file(str(tmp_path), "scores")
    lock.write_text("", "")
    with pytest.raises(LeaseError, match=re.escape(f"{lock} is there but holds no lease this version can read")):
        acquire(tmp_path, ["scores"], job="evaluate")
    assert lock.read_text() == ""
