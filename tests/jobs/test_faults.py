"""Fault injection on the local clusters (cluster/local/), loopback only, every wait bounded:

* an executor JVM killed in the middle of the C-sets job on the standalone cluster;
* the Serve model replica killed while jobs/evaluate.py runs on the two Ray nodes;
* a corrupt gzip file among good N-Quads files (with and without --ignore-corrupt-files);
* the evaluation driver killed with SIGKILL and restarted.

Each test adds a row to the fault table (what was injected, what survived, rows lost);
``FAULTS_REPORT=path.json`` writes it (benchmarks/faults.py runs this module and prints it).
"""
import json
import os
import shutil
import signal
from pathlib import Path

import pytest

from cluster.local.procs import alive, descendants, cmdline, wait_for
from tests.conftest import DATA
from tests.cluster.rehearsal_support import (CSETS_INPUTS, CSETS_JOB, EVALUATE_JOB, SHORT_PAGES, cache_count, csets_rows,
                                     csets_single_process, evaluate_args, make_pages, parts, rejects_rows,
                                     run_record, triple_key)

pytestmark = pytest.mark.slow
REPORT: list[dict] = []


@pytest.fixture(scope="module", autouse=True)
def fault_table():
    yield REPORT
    path = os.environ.get("FAULTS_REPORT")
    if path:
        Path(path).write_text(json.dumps(REPORT, indent=2) + "\n")


def report(fault: str, injected: str, survived: str, expected: int, got: int, unit: str) -> None:
    REPORT.append({"fault": fault, "injected": injected, "survived": survived, "unit": unit,
                   "expected": expected, "out": got, "lost": expected - got})


# ---- Spark ------------------------------------------------------------------------------------


def test_executor_killed_mid_job_the_csets_job_finishes_with_the_same_table(spark, spark_standalone, tmp_path):
    local = csets_single_process(spark)
    out = tmp_path / "killed"
    # DEBUG: the step lines ("write csets ...") this test waits for are debug output.
    proc = spark_standalone.submit(CSETS_JOB, "--input", *CSETS_INPUTS, "--output", str(out),
                                   "--spark-conf", "spark.sql.shuffle.partitions=4", "--log-level", "DEBUG")
    log = proc.log_path
    # The first pass is done: both executors hold cached entity rows and shuffle files the rest of
    # the job needs, and the csets write is running.
    wait_for(lambda: proc.poll() is not None or "write csets ..." in log.read_text(errors="replace"),
             600, "the csets job's write step")
    assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
    executors = spark_standalone.executors()
    assert len(executors) == 2, executors
    worker, victim = executors[0]
    os.kill(victim, signal.SIGKILL)
    assert proc.wait(timeout=900) == 0, log.read_text(errors="replace")[-4000:]
    driver_log = log.read_text(errors="replace")
    assert "Lost executor" in driver_log  # the driver saw the executor go and rescheduled its work

    counters, expected = run_record(out)["counters"], run_record(local)["counters"]
    assert counters["reconciles"] is True and counters == expected
    rows, want = csets_rows(out), csets_rows(local)
    assert rows == want
    assert rejects_rows(out) == rejects_rows(local)
    lost = len({r["cset_id"] for r in want} - {r["cset_id"] for r in rows})
    report("Spark executor killed", f"SIGKILL to the executor JVM of worker-{worker} during the csets write",
           f"job exit 0; lines {counters['lines_read']:,} = quads + rejected + skipped; table equal to local[2]",
           len(want), len(want) - lost, "C-set rows")


# ---- corrupt input ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def quads_with_a_corrupt_file(tmp_path_factory):
    """The demo corpus's N-Quads parts and one file that is not gzip at all under a .nq.gz name."""
    good = tmp_path_factory.mktemp("good")
    for f in sorted((DATA / "demo" / "quads").glob("part-*.nq.gz")):
        shutil.copy(f, good)
    mixed = tmp_path_factory.mktemp("mixed")
    for f in good.iterdir():
        shutil.copy(f, mixed)
    # A real file of the corpus with its gzip header destroyed: the bytes of a download gone wrong.
    broken = bytearray((DATA / "demo" / "quads" / "part-00000.nq.gz").read_bytes())
    broken[:10] = b"<html>oops"
    (mixed / "part-99999.nq.gz").write_bytes(bytes(broken))
    return good, mixed, mixed / "part-99999.nq.gz"


def test_corrupt_gzip_is_rejected_with_its_reason_and_the_others_processed(spark, quads_with_a_corrupt_file, tmp_path):
    from jobs.csets import CsetsJob

    good, mixed, corrupt = quads_with_a_corrupt_file
    assert CsetsJob(["--input", str(good), "--output", str(tmp_path / "good")]).main() == 0
    assert CsetsJob(["--input", str(mixed), "--output", str(tmp_path / "mixed"), "--ignore-corrupt-files"]).main() == 0
    rejects = rejects_rows(tmp_path / "mixed")
    corrupt_rows = [r for r in rejects if r["source"].endswith(corrupt.name)]
    assert len(corrupt_rows) == 1 and corrupt_rows[0]["reason"].startswith("corrupt gzip (")
    # the good files give exactly the table they give alone
    assert csets_rows(tmp_path / "mixed") == csets_rows(tmp_path / "good")
    counters = run_record(tmp_path / "mixed")["counters"]
    alone = run_record(tmp_path / "good")["counters"]
    assert counters["reconciles"] is True and counters["lines_read"] == alone["lines_read"]
    assert counters["files_without_lines"] == alone["files_without_lines"] + 1
    n = len(csets_rows(tmp_path / "good"))
    report("corrupt gzip (--ignore-corrupt-files)",
           f"{corrupt.name}: gzip header overwritten, among {len(list(good.iterdir()))} good parts",
           f"reject row: {corrupt_rows[0]['reason']!r}; other files processed",
           n, len(csets_rows(tmp_path / "mixed")), "C-set rows")


def test_corrupt_gzip_without_the_flag_stops_the_job_naming_the_file(spark, quads_with_a_corrupt_file, tmp_path):
    from jobs.csets import CsetsJob

    _, mixed, corrupt = quads_with_a_corrupt_file
    with pytest.raises(Exception, match=rf"(?s)cannot read \S*{corrupt.name}: corrupt gzip .*Not in GZIP format") as err:
        CsetsJob(["--input", str(mixed), "--output", str(tmp_path / "strict")]).main()
    assert not (tmp_path / "strict" / "csets" / "_run.json").exists()  # no run record claims success
    reason = next(line for line in str(err.value).splitlines() if "cannot read" in line)
    reason = reason[reason.index("cannot read"):].replace(str(corrupt.parent) + "/", "").strip()
    report("corrupt gzip (no flag)", corrupt.name, f"job fails, no run record: {reason[:120]}", 0, 0,
           "rows (nothing written)")


def test_truncated_gzip_is_reported(spark, tmp_path):
    from jobs.csets import CsetsJob

    data = (DATA / "demo" / "quads" / "part-00000.nq.gz").read_bytes()
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "part-truncated.nq.gz").write_bytes(data[: len(data) // 2])
    assert CsetsJob(["--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"),
                     "--ignore-corrupt-files"]).main() == 0
    assert run_record(tmp_path / "out")["counters"]["lines_read"] > 0  # what came before the damage
    [rej] = [r for r in rejects_rows(tmp_path / "out") if r["source"].endswith("part-truncated.nq.gz")]
    assert rej["reason"].startswith("truncated gzip")
    assert run_record(tmp_path / "out")["counters"]["files_damaged"] == 1


# ---- Ray Serve / evaluation ------------------------------------------------------------------


def _account(out: Path, n_pages: int) -> tuple[list[dict], list[dict]]:
    """Every page has its scores row and every triple its row, once; every claim the agents took up
    has its verdict (the others carry "not judged: over max_claims"), none an error."""
    scores, triples = parts(out / "scores"), parts(out / "triples")
    assert sorted(s["page_key"] for s in scores) == sorted({s["page_key"] for s in scores})
    assert len(scores) == n_pages and all(s["status"] == "ok" for s in scores), scores
    assert len({triple_key(t) for t in triples}) == len(triples)
    for s in scores:
        rows = [t for t in triples if t["page_key"] == s["page_key"]]
        assert len(rows) == s["n_triples"] > 0
        errors = [t[c] for t in rows for c in ("factual_error", "compliant_error")
                  if t[c] and not t[c].startswith("not judged")]
        assert errors == [], errors
        assert any(t["factual"] is not None for t in rows)
        assert s["n_valid"] == sum(bool(t["valid"]) for t in rows)
    return scores, triples


@pytest.fixture(scope="module")
def three_pages(tmp_path_factory):
    return make_pages(tmp_path_factory.mktemp("fault-pages") / "pages", SHORT_PAGES)


@pytest.mark.model
def test_serve_replica_killed_during_evaluation_loses_no_page_or_triple(ray_nodes, three_pages, tmp_path):
    out = tmp_path / "out"
    cache = out / "cache" / "llm.sqlite"
    before = ray_nodes.replicas()
    assert len(before) == 1
    proc = ray_nodes.start_job(EVALUATE_JOB, *evaluate_args(three_pages, out, 2, 2, "--executor", "ray"))
    # The first verdict is answered: the page is mid-way, its second claim's request sent together
    # with the first (the client runs them concurrently) sits in the replica that is killed.
    wait_for(lambda: proc.poll() is not None or cache_count(cache) >= 1, 600, "the first model answer")
    assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
    os.kill(before[0][1], signal.SIGKILL)
    _, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err.decode()[-4000:]

    counters = run_record(out, "scores")["counters"]
    assert counters["evaluated"] == 2 and counters["failed"] == 0
    scores, triples = _account(out, 2)
    after = wait_for(ray_nodes.replicas, 300, "a replacement replica")
    assert len(after) == 1 and after[0][1] != before[0][1]  # Serve replaced the replica
    report("Serve replica killed",
           "SIGKILL to the model replica process after the first answer of page 1 of 2 (its second request in flight)",
           f"job exit 0, {counters['evaluated']} pages ok, no verdict error; replica replaced on node {after[0][0]}",
           sum(s["n_triples"] for s in scores), len(triples), "triple rows")


def _evaluate_workers(ray_nodes) -> list[int]:
    return [p for n in ray_nodes.nodes for p in descendants(n.pid) if "EvaluatePages" in cmdline(p) and alive(p)]


@pytest.mark.model
def test_evaluation_killed_and_restarted_resumes_without_redoing_finished_pages(ray_nodes, three_pages, tmp_path):
    out = tmp_path / "out"
    cache = out / "cache" / "llm.sqlite"
    args = evaluate_args(three_pages, out, 3, 2, "--executor", "ray")
    proc = ray_nodes.start_job(EVALUATE_JOB, *args)

    def second_page_answered() -> bool:
        # one page scored and the next one part-way: it has answers, and (two claims) asks again
        if proc.poll() is not None:
            return True
        scored = parts(out / "scores")
        return len(scored) == 1 and cache_count(cache) > scored[0]["verdict_requests"]

    wait_for(second_page_answered, 900, "a scored page and the next one's first answer", poll_s=0.1)
    assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # Ray ends the dead driver's page actor; only then is the output at rest.
    wait_for(lambda: not _evaluate_workers(ray_nodes), 120, "the killed run's page actor to end")
    finished = {p.name: p.stat().st_mtime_ns for p in (out / "scores").glob("part-*.parquet")}
    answers_before = cache_count(cache)
    assert len(finished) == 1

    done = ray_nodes.run_job(EVALUATE_JOB, *args)
    assert done.returncode == 0, done.stderr[-4000:]
    counters = run_record(out, "scores")["counters"]
    assert counters["already_scored"] == len(finished)
    assert counters["evaluated"] == 3 - len(finished) and counters["failed"] == 0
    scores, triples = _account(out, 3)
    # finished pages were not redone: their parts are the ones written before the kill
    assert {n: (out / "scores" / n).stat().st_mtime_ns for n in finished} == finished
    # every distinct request was answered once and stored once; the restart asked only what the
    # unfinished pages still needed (answers of the page in flight at the kill came from the cache)
    answers_after = cache_count(cache)
    redone = [s for s in scores if f"part-{s['page_key']}.parquet" not in finished]
    asked_by_finished = sum(s["verdict_requests"] for s in scores if f"part-{s['page_key']}.parquet" in finished)
    reused = answers_before - asked_by_finished
    assert reused >= 1
    assert answers_after <= sum(s["verdict_requests"] for s in scores)
    assert answers_after - answers_before <= sum(s["verdict_requests"] for s in redone) - reused
    report("evaluation driver killed and restarted",
           f"SIGKILL to jobs/evaluate.py after {len(finished)} of 3 pages, then the same command again",
           f"resumed: {counters['already_scored']} page(s) skipped, {counters['evaluated']} evaluated; "
           f"{reused} answer(s) of the page in flight reused from the cache, "
           f"{answers_after - answers_before} new; no duplicate rows, finished parts untouched",
           sum(s["n_triples"] for s in scores), len(triples), "triple rows")
