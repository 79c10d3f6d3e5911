"""Fault injection on the local clusters (cluster/local/), loopback only, every wait bounded:

* an executor JVM killed in the middle of the C-sets job on the standalone cluster;
* the Serve model replica killed while jobs/evaluate.py runs on the two Ray nodes;
* a corrupt gzip file among good N-Quads files (with and without --ignore-corrupt-files);
* the evaluation driver killed with SIGKILL and restarted;
* hostile inputs (issue 22), one row per class: a damaged later gzip member, a line over the
  bound, valid N-Quads lines once rejected, a symlinked input folder with a loop (C-sets); a WARC
  cut inside a gzip member (N-Quads extraction); a record inflating past its bound (WARC index);
  index entries outside --warc-base (absolute path, file:// and http:// URLs, a symlink out);
  quadratic inputs (the predicate table, many JSON-LD roots, validity over many entities: work at
  n and 4n counted in operations); bad files among good ones on a command line.

Each test adds a row to the fault table (what was injected, what survived, rows lost);
``FAULTS_REPORT=path.json`` writes it (benchmarks/faults.py runs this module and prints it).
"""

import json
import os
import re
import shutil
import signal
from pathlib import Path

import pytest

from cluster.local.procs import alive, cmdline, descendants, wait_for
from tests.cluster.rehearsal_support import (
    CSETS_INPUTS,
    CSETS_JOB,
    EVALUATE_JOB,
    SHORT_PAGES,
    cache_count,
    csets_rows,
    csets_single_process,
    evaluate_args,
    make_pages,
    parts,
    rejects_rows,
    run_record,
    triple_key,
)
from tests.conftest import DATA, gzip_member_offsets

pytestmark = pytest.mark.slow
REPORT: list[dict] = []


@pytest.fixture(scope="module", autouse=True)
def fault_table():
    yield REPORT
    path = os.environ.get("FAULTS_REPORT")
    if path:
        Path(path).write_text(json.dumps(REPORT, indent=2) + "\n")


def report(fault: str, injected: str, survived: str, expected: int, got: int, unit: str) -> None:
    REPORT.append(
        {
            "fault": fault,
            "injected": injected,
            "survived": survived,
            "unit": unit,
            "expected": expected,
            "out": got,
            "lost": expected - got,
        }
    )


# ---- Spark ------------------------------------------------------------------------------------


def test_executor_killed_mid_job_the_csets_job_finishes_with_the_same_table(spark, spark_standalone, tmp_path):
    local = csets_single_process(spark)
    out = tmp_path / "killed"
    # DEBUG: the step lines ("write csets ...") this test waits for are debug output.
    proc = spark_standalone.submit(
        CSETS_JOB,
        "--input",
        *CSETS_INPUTS,
        "--output",
        str(out),
        "--spark-conf",
        "spark.sql.shuffle.partitions=4",
        "--log-level",
        "DEBUG",
    )
    log = proc.log_path
    # The first pass is done: both executors hold cached entity rows and shuffle files the rest of
    # the job needs, and the csets write is running.
    wait_for(
        lambda: proc.poll() is not None or "write csets ..." in log.read_text(errors="replace"),
        600,
        "the csets job's write step",
    )
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
    report(
        "Spark executor killed",
        f"SIGKILL to the executor JVM of worker-{worker} during the csets write",
        f"job exit 0; lines {counters['lines_read']:,} = quads + rejected + skipped; table equal to local[2]",
        len(want),
        len(want) - lost,
        "C-set rows",
    )


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
    report(
        "corrupt gzip (--ignore-corrupt-files)",
        f"{corrupt.name}: gzip header overwritten, among {len(list(good.iterdir()))} good parts",
        f"reject row: {corrupt_rows[0]['reason']!r}; other files processed",
        n,
        len(csets_rows(tmp_path / "mixed")),
        "C-set rows",
    )


def test_corrupt_gzip_without_the_flag_stops_the_job_naming_the_file(
    spark, quads_with_a_corrupt_file, tmp_path, capsys
):
    from jobs.csets import CsetsJob

    _, mixed, corrupt = quads_with_a_corrupt_file
    with pytest.raises(SystemExit) as stop:
        CsetsJob(["--input", str(mixed), "--output", str(tmp_path / "strict")]).main()
    # a user error (issue 64): exit 2, one line naming the file, the run record saying it failed
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and len(err) == 1 and "Traceback" not in err[0], err
    assert re.search(rf"cannot read \S*{corrupt.name}: corrupt gzip .*Not in GZIP format", err[0]), err
    record = json.loads((tmp_path / "strict" / "csets" / "_run.json").read_text())
    assert record["status"].startswith("failed: cannot read")  # no run record claims success
    reason = err[0]
    reason = reason[reason.index("cannot read") :].replace(str(corrupt.parent) + "/", "").strip()
    report(
        "corrupt gzip (no flag)",
        corrupt.name,
        f"job fails, no run record: {reason[:120]}",
        0,
        0,
        "rows (nothing written)",
    )


def test_truncated_gzip_is_reported(spark, tmp_path):
    from jobs.csets import CsetsJob

    data = (DATA / "demo" / "quads" / "part-00000.nq.gz").read_bytes()
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "part-truncated.nq.gz").write_bytes(data[: len(data) // 2])
    assert (
        CsetsJob(["--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--ignore-corrupt-files"]).main()
        == 0
    )
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
        errors = [
            t[c]
            for t in rows
            for c in ("factual_error", "compliant_error")
            if t[c] and not t[c].startswith("not judged")
        ]
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
    report(
        "Serve replica killed",
        "SIGKILL to the model replica process after the first answer of page 1 of 2 (its second request in flight)",
        f"job exit 0, {counters['evaluated']} pages ok, no verdict error; replica replaced on node {after[0][0]}",
        sum(s["n_triples"] for s in scores),
        len(triples),
        "triple rows",
    )


def _evaluate_workers(ray_nodes) -> list[int]:
    return [p for n in ray_nodes.nodes for p in descendants(n.pid) if "EvaluatePages" in cmdline(p) and alive(p)]


@pytest.mark.model
def test_evaluation_killed_and_restarted_resumes_without_redoing_finished_pages(ray_nodes, three_pages, tmp_path):
    out = tmp_path / "out"
    cache = out / "cache" / "llm.sqlite"
    # one page per part, so a part's marker (scores/_committed/<part>.json) is one finished page
    args = evaluate_args(three_pages, out, 3, 2, "--executor", "ray", "--part-pages", "1")
    proc = ray_nodes.start_job(EVALUATE_JOB, *args)
    markers = out / "scores" / "_committed"

    def committed_pages() -> dict[str, list[str]]:
        return {m.stem: json.loads(m.read_text())["pages"] for m in markers.glob("*.json")}

    def second_page_answered() -> bool:
        # one page committed and the next one part-way: it has answers, and (two claims) asks again
        if proc.poll() is not None:
            return True
        done = committed_pages()
        if len(done) != 1:
            return False
        scored = [s for s in parts(out / "scores") if s["page_key"] in next(iter(done.values()))]
        return len(scored) == 1 and cache_count(cache) > scored[0]["verdict_requests"]

    wait_for(second_page_answered, 900, "a scored page and the next one's first answer", poll_s=0.1)
    assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # Ray ends the dead driver's page actor; only then is the output at rest.
    wait_for(lambda: not _evaluate_workers(ray_nodes), 120, "the killed run's page actor to end")
    done_before = committed_pages()
    finished = {f"{name}.parquet": (out / "scores" / f"{name}.parquet").stat().st_mtime_ns for name in done_before}
    finished_pages = {k for keys in done_before.values() for k in keys}
    answers_before = cache_count(cache)
    assert len(finished) == 1 and len(finished_pages) == 1

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
    redone = [s for s in scores if s["page_key"] not in finished_pages]
    asked_by_finished = sum(s["verdict_requests"] for s in scores if s["page_key"] in finished_pages)
    reused = answers_before - asked_by_finished
    assert reused >= 1
    assert answers_after <= sum(s["verdict_requests"] for s in scores)
    assert answers_after - answers_before <= sum(s["verdict_requests"] for s in redone) - reused
    report(
        "evaluation driver killed and restarted",
        f"SIGKILL to jobs/evaluate.py after {len(finished)} of 3 pages, then the same command again",
        f"resumed: {counters['already_scored']} page(s) skipped, {counters['evaluated']} evaluated; "
        f"{reused} answer(s) of the page in flight reused from the cache, "
        f"{answers_after - answers_before} new; no duplicate rows, finished parts untouched",
        sum(s["n_triples"] for s in scores),
        len(triples),
        "triple rows",
    )


# ---- hostile inputs (issue 22): one row per class ----------------------------------------------


def test_hostile_csets_inputs_lose_nothing_silently(spark, tmp_path):
    """One C-sets run over a folder holding a file whose second gzip member is damaged, a file with
    an 8 MiB line under a 1 MiB bound, valid lines the scanner once rejected, and a symlinked
    sub-folder (with a symlink loop): every file is in the run record with the lines it gave, and
    every loss is a reject row with its reason."""
    import gzip

    import pyarrow.parquet as pq

    from jobs.csets import CsetsJob
    from tests.conftest import WDC_SAMPLE
    from udfs.corpus import nquads as N

    lines = WDC_SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)
    d, elsewhere = tmp_path / "in", tmp_path / "elsewhere"
    d.mkdir()
    elsewhere.mkdir()
    first, second = gzip.compress("".join(lines[:600]).encode()), gzip.compress("".join(lines[600:1000]).encode())
    (d / "member2.nq.gz").write_bytes(first + b"\x1f\x00" + second[2:])
    long_line = (
        '<http://a.example/x> <http://schema.org/description> "' + "\u00e9" * (4 << 20) + '" <http://a.example/> .'
    )
    (d / "long.nq.gz").write_bytes(
        gzip.compress(("".join(lines[1000:1050]) + long_line + "\n" + "".join(lines[1050:1100])).encode())
    )
    valid = [
        '<http://a.example/x> <http://schema.org/name> "r\ufffdsum\ufffd" <http://a.example/>   .',
        '<http://a.example/x> <http://schema.org/description> "d" <http://a.example/> . # a comment',
        '<http://a.example/x> <http://schema.org/alternateName> "n" <http://a.example/> .#tight',
    ]
    (d / "valid.nq").write_text("\r\n".join(valid) + "\r\n", encoding="utf-8")
    (elsewhere / "linked.nq.gz").write_bytes(gzip.compress("".join(lines[1100:1200]).encode()))
    (d / "sub").symlink_to(elsewhere, target_is_directory=True)
    (elsewhere / "loop").symlink_to(d, target_is_directory=True)
    out = tmp_path / "out"
    assert (
        CsetsJob(
            [
                "--input",
                str(d),
                "--output",
                str(out),
                "--ignore-corrupt-files",
                "--max-line-bytes",
                str(1 << 20),
                "--reject-raw-chars",
                "200",
            ]
        ).main()
        == 0
    )
    record = run_record(out)
    c = record["counters"]
    assert c["reconciles"] is True
    read = {Path(r["source"]).name: r for r in record["inputs"]["read"]}
    rejects = pq.read_table(out / "rejects" / "csets").to_pylist()
    by_file = {}
    for r in rejects:
        by_file.setdefault(Path(r["source"]).name, []).append(r)

    [damage] = by_file["member2.nq.gz"]
    assert damage["reason"].startswith("corrupt gzip (ZipException: bytes after gzip member 1")
    assert read["member2.nq.gz"]["lines"] == 600 and read["member2.nq.gz"]["damaged"] == damage["reason"]
    report(
        "damaged later gzip member (C-sets)",
        "member2.nq.gz: the 2nd gzip member's magic broken after 600 lines (the JDK's reader took it for "
        "the end of the file: exit 0, no reject)",
        f"reject row {damage['reason']!r}; the file's 600 lines in inputs.read; without the flag the job fails "
        "naming the file",
        600,
        read["member2.nq.gz"]["lines"],
        "lines before the damage",
    )

    [long] = by_file["long.nq.gz"]
    assert long["reason"] == f"{N.REASON_TOO_LONG} (1,048,576 bytes)" and long["raw"] == long_line[:200]
    report(
        "line over max_line_bytes (C-sets)",
        f"long.nq.gz: one {len(long_line.encode()) >> 20} MiB line among 100 (bound 1 MiB; a 400 MB line "
        "ran the JVM out of heap)",
        "reject row with the line's first 200 characters; the 100 others parsed",
        101,
        read["long.nq.gz"]["lines"],
        "lines",
    )

    assert "valid.nq" not in by_file and read["valid.nq"]["lines"] == 3
    report(
        "valid N-Quads lines once rejected (C-sets)",
        "valid.nq: a literal holding U+FFFD, a comment after the final '.', '.#' without a space, CRLF",
        "all 3 parsed as quads, no reject",
        3,
        3 - len(by_file.get("valid.nq", [])),
        "quads",
    )

    skipped = {Path(s["path"]).name: s["reason"] for s in record["inputs"]["skipped"]}
    assert read["linked.nq.gz"]["lines"] == 100 and skipped["loop"].startswith("symlink loop")
    report(
        "symlinked input folder with a loop (C-sets)",
        "sub/ a symlink to another folder, holding a symlink back to the input folder",
        f"read through the link; the loop skipped in inputs.skipped: {skipped['loop'].replace(str(d), 'in/')!r}",
        100,
        read["linked.nq.gz"]["lines"],
        "lines",
    )


def test_a_warc_cut_inside_a_gzip_member_is_a_reject_row(tmp_path):
    from udfs.corpus.quads import extract_file, reconciles

    demo = DATA / "demo" / "extruct-samples.warc.gz"
    data = demo.read_bytes()
    starts = gzip_member_offsets(data)
    cut = tmp_path / "cut.warc.gz"
    cut.write_bytes(data[: (starts[30] + starts[31]) // 2])
    limits = {
        "max_html_bytes": 5_000_000,
        "max_record_bytes": 10_000_000,
        "max_markup_chars": 1_000_000,
        "max_markup_nodes": 200_000,
        "reject_raw_chars": 200,
        "time_limit_s": 30.0,
    }
    items = list(extract_file(0, str(cut), str(tmp_path / "out"), **limits))
    counts = items[-1][1]
    [end] = [r for kind, r in items if kind == "reject" and r["reason"].startswith(str(cut))]
    assert end["position"] == starts[30] and counts["file_errors"] == 1 and reconciles(counts)
    report(
        "WARC cut inside a gzip member (N-Quads extraction)",
        "the demo WARC (58 records) cut in the middle of its 31st gzip member (warcio stopped there without a word)",
        f"reject row at position {end['position']}: "
        f"{end['reason'].replace(str(tmp_path) + '/', '')[:110]}...; the 30 records before it extracted",
        30,
        counts["records"],
        "records before the damage",
    )


def test_a_record_inflating_past_its_bound_costs_the_bound(tmp_path):
    import tracemalloc
    import zlib

    from udfs.corpus.warc import scan_warc

    one = (DATA / "warc" / "cc-main-2024-22-one-page.warc.gz").read_bytes()
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    bomb = b"".join(z.compress(bytes(1 << 20)) for _ in range(256)) + z.flush()  # 256 MiB of zeros
    f = tmp_path / "bomb.warc.gz"
    f.write_bytes(one + bomb + one)
    bound = 1 << 20
    tracemalloc.start()
    try:
        items = list(scan_warc(str(f), max_record_bytes=bound, raw_chars=200))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    rows = [r for kind, r in items if kind == "row"]
    [rej] = [r for kind, r in items if kind == "reject"]
    assert rej["position"] == len(one) and "over max_record_bytes" in rej["reason"] and peak < 8 * bound
    report(
        "WARC record inflating past max_record_bytes (WARC index)",
        f"a {len(bomb) >> 10} kB gzip member inflating to 256 MiB between two real records (bound 1 MiB; a "
        "1 MiB record read whole took a worker to 2.2 GB)",
        f"reject row with its first bytes; streamed: peak Python memory {peak / (1 << 20):.1f} MiB; "
        "the next record indexed",
        2,
        len(rows),
        "index rows",
    )


def test_index_entries_outside_the_warc_base_are_refused_unread(tmp_path):
    from tests.conftest import trap_server
    from udfs.corpus import fetch
    from udfs.corpus import html as P
    from udfs.corpus import warc as W
    from udfs.runtime.config import load_config

    base, outside = tmp_path / "base", tmp_path / "outside"
    (base / "crawl").mkdir(parents=True)
    outside.mkdir()
    secret = outside / "secret.warc.gz"
    secret.write_bytes(b"TOP-SECRET " * 100)
    (base / "crawl" / "escape.warc.gz").symlink_to(secret)
    cfg = P.PageConfig.of(load_config().pages)
    bound = load_config().pages.max_record_bytes
    with trap_server(b"TOP-SECRET", "application/octet-stream") as trap:
        names = {
            "absolute path": str(secret),
            "file:// URL": f"file://{secret}",
            "http:// URL": f"{trap.url}/secret.warc.gz",
            "symlink out": "crawl/escape.warc.gz",
        }
        outs = {
            k: fetch.fetch_page(
                {
                    "slot": 0,
                    "candidate_rank": 0,
                    "page_url": "http://x.example/",
                    "types": None,
                    "warc_filename": n,
                    "warc_record_offset": 0,
                    "warc_record_length": 40,
                    "fetch_status": 200,
                    "content_mime_type": "text/html",
                },
                str(base),
                cfg,
                bound,
            )
            for k, n in names.items()
        }
        requests = list(trap.seen)
    refused = [
        k
        for k, o in outs.items()
        if o["status"] == P.NOT_FOUND
        and o["reason"].startswith("refused:")
        and W.ROOT_RULE in o["reason"]
        and "TOP-SEC" not in repr(o)
    ]
    assert refused == list(names) and requests == []
    report(
        "WARC index entries outside --warc-base (pages)",
        "warc_filename an absolute path, a file:// URL, an http:// URL (a loopback server), a symlink inside "
        "the base leading out (all were read; a local file's first bytes appeared in a reason)",
        "not_found rows 'refused: ...' naming the rule; the server got no request, no byte of the file in any column",
        len(names),
        len(refused),
        "refused rows",
    )


def test_quadratic_inputs_grow_linearly(spark):
    """The three quadratic classes at n and 4n, work counted (probes; executed bytecodes), not timed."""
    import json as _json

    from tests.schemaorg.test_markup_bounds import S, operations
    from udfs.agents.validity import agent
    from udfs.corpus import html as P
    from udfs.corpus import scanner as jvm
    from udfs.runtime.config import load_config

    scan = jvm.attach(spark)

    def probes(n):
        return scan.termTableProbes("\n".join(f"<http://x.example/{i:08d}/a-shared-ending-of-16>" for i in range(n)))

    small, large = probes(5_000), probes(20_000)
    assert large <= 5 * small
    report(
        "many predicates of one length and ending (C-sets predicate table)",
        "5,000 then 20,000 distinct predicates sharing length and last 16 bytes (30k took 42.6 s in the table)",
        f"table probes {small:,} -> {large:,} ({large / small:.1f}x for 4x)",
        20_000,
        20_000,
        "predicates",
    )

    cfg = P.PageConfig.of(load_config().pages, time_limit_s=30.0)

    def roots(n):
        data = {
            "@context": "https://schema.org",
            "@graph": [{"@type": "Thing", "@id": S(f"http://x.example/{i}"), "name": "a"} for i in range(n)],
        }
        blocks = [P.JsonLdBlock(0, _json.dumps(data), data)]
        return lambda: P.read_markups(blocks, ["NoSuchType"], cfg)

    roots(5)()
    small, large = operations(roots(300)), operations(roots(1200))
    assert large <= 5 * small
    report(
        "many JSON-LD roots in one block (pages markup reading)",
        "one block of 300 then 1,200 root entities (250k roots ran past 600 s, outside the time limit)",
        f"bytecodes {small:,} -> {large:,} ({large / small:.1f}x for 4x); markup reading under time_limit_s, "
        "a block over max_markup_nodes refused unread",
        1200,
        1200,
        "roots",
    )

    a = agent("compiled", False, load_config().validity.vocab, "paper")

    def entities(n):
        data = {
            "@context": "https://schema.org",
            "@graph": [
                {
                    "@type": ["Product", "Place", S(f"NoSuchType{i % 7}")],
                    "@id": S(f"http://x.example/{i}"),
                    "latitude": "1.0",
                    "sku": S(f"s{i}"),
                }
                for i in range(n)
            ],
        }
        return lambda: a.validate(data)

    entities(5)()
    small, large = operations(entities(100)), operations(entities(400))
    assert large <= 5 * small
    report(
        "validity over many entities (paper mode, the costliest)",
        "100 then 400 multi-typed entities with an undefined type (50k entities took 51 s; this shape grew 6.8x "
        "for 4x before the cut-off causes stopped at the first pass without progress)",
        f"bytecodes {small:,} -> {large:,} ({large / small:.1f}x for 4x)",
        400,
        400,
        "entities",
    )


def test_a_command_goes_on_past_bad_files(tmp_path):
    import subprocess
    import sys

    book = {"@context": "https://schema.org", "@type": "Book", "name": "The Fenced Book", "numberOfPages": 12}
    good, bad, missing = tmp_path / "good.jsonld", tmp_path / "bad.jsonld", tmp_path / "missing.jsonld"
    good.write_text(json.dumps(book))
    bad.write_bytes(b"\xff\xfe<html>not json</html>")
    res = subprocess.run(
        [sys.executable, "-m", "udfs.agents.validity", str(good), str(bad), str(missing), str(good)],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=300,
    )
    errors = [ln for ln in res.stderr.splitlines() if ": error: " in ln]
    rows = [json.loads(ln) for ln in res.stdout.splitlines()]
    triples = [r for r in rows if r.get("file") == str(good) and "error" not in r]
    assert res.returncode == 1 and "Traceback" not in res.stderr and len(errors) == 2, res.stderr
    report(
        "bad files on a command line (validity CLI)",
        "a file not UTF-8 nor JSON and a missing file between two good ones (a traceback stopped the files after them)",
        "one 'error:' line each, no traceback, exit 1 at the end; the good files read",
        4,
        len(triples),
        "triples",
    )
