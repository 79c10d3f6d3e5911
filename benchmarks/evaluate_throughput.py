"""Harness throughput of the evaluation job against a stub engine: how fast ``jobs/evaluate.py``
can feed a model service, what its driver holds, how many files it writes, and what a million
pages cost in harness CPU.

    .venv/bin/python benchmarks/evaluate_throughput.py                    # 1k, 10k, 100k pages (minutes)
    .venv/bin/python benchmarks/evaluate_throughput.py --sizes 1000,10000 --no-serve
    .venv/bin/python benchmarks/evaluate_throughput.py --quick            # 20 pages, 0 ms, no Serve (CI)

The engine is ``testkit.stub_engine`` (a harness stub, never a model: deterministic answers
after a fixed latency) in its own process on 127.0.0.1, so every figure here is the harness's:
the job's client, agents, tables and Ray, not a model's. The pages are the demo's pages with text
and human markup (the extruct samples, through the pages job's own extraction) replicated under
new URLs; each copy's text starts with its copy number and each literal of its markup is changed
the way its kind allows (text gets the copy number, a URL a fragment, a number or a date an
offset), so no two copies ask the same request and the request cache answers nothing: the stub
sees every verdict the job asks for (``testkit.synthetic_pages``).

Each run starts the job as a subprocess (``--executor``, ``--workers``, ``--max-in-flight`` where
the job takes it) with a fresh output root and watches it through /proc: the driver's peak RSS
(VmHWM) and the CPU seconds of the job and every process below it (Ray's own included, the stub
excluded). Verdicts/s is the stub's count over the time from its first to its last verdict (the
job's start-up excluded); wall and pages/s include everything. A run past ``--budget-s`` is
stopped, and its rate is what the stub saw until then.

The table: at 0 ms latency for each size; at ``--latency-ms`` with ``--in-flight`` requests
allowed (``--latency-pages`` pages); the same two through Ray Serve to the stub as a Serve
deployment, once through Serve's HTTP proxy and once through deployment handles (``--base-url
serve://stub/v1``, the job joining the benchmark's Ray instance with ``--ray-address``: its
workers call the stub's ``handle_http`` without the proxy), each with Serve's overhead per
verdict (the difference of the inverse rates against the bare stub's run of the same latency).
In a handle run the job's Ray workers are processes of the benchmark's Ray instance: their CPU is
the job's, Ray's own processes (GCS, raylet, Serve's controller and replica) the engine's. Then the
driver's peak RSS at the two largest sizes and their ratio, files per table against the bound
pages / 10,000 + workers, and the harness's CPU per verdict while verdicts flow (the job tree's
CPU from the stub's first verdict to its last, over the 0 ms runs; start-up excluded), which
``benchmarks/capacity.py`` keeps as ``HARNESS_CPU_MS_PER_REQUEST``, and per million pages. Before
the runs, a load generator measures each engine alone (``--ceiling``), so a rate the engine
itself caps is told apart from one the harness does; through Serve, both the proxy and a
handle (``serve.get_app_handle`` from this process).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator

from cluster.local.procs import descendants, free_port, stop
from testkit.synthetic_pages import write_pages
from udfs.runtime.cli import ArgumentParser

ROOT = Path(__file__).resolve().parent.parent

JOB = ROOT / "jobs" / "evaluate.py"
TABLES = ("markups", "triples", "scores")
CLK = os.sysconf("SC_CLK_TCK")


# ---- engines -------------------------------------------------------------------------------------


def _get_json(url: str, timeout_s: float = 5.0) -> dict[str, Any]:
    import httpx

    return httpx.get(url, timeout=timeout_s).json()


def _wait_up(url: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            _get_json(f"{url}/health")
            _get_json(f"{url}/v1/models")
            return
        except Exception as exc:  # noqa: BLE001 - still starting
            last = exc
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {timeout_s:.0f} s: {last}")


@contextlib.contextmanager
def stub_process(latency_ms: float) -> Iterator[tuple[str, list[int]]]:
    """``testkit.stub_engine`` in its own process; yields its root URL (no ``/v1``) and pid."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "testkit.stub_engine", "--port", str(port), "--latency-ms", str(latency_ms)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_up(url)
        yield url, [proc.pid]
    finally:
        stop([proc.pid], grace_s=5)
        proc.wait()


@contextlib.contextmanager
def serve_stub(latency_ms: float) -> Iterator[tuple[str, list[int]]]:
    """The stub as the Ray Serve application ``stub`` (HTTP proxy and handles), on a Ray instance
    of this process (a proxy run's job starts its own; a handle run's joins this one at
    ``ray.get_runtime_context().gcs_address``); yields the proxy's root URL and the Ray processes."""
    import logging

    import ray
    from ray import serve

    from testkit.stub_engine import serve_deployment

    port = free_port()
    ray.init(
        address="local",
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.WARNING,
        runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}},
    )
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        serve.run(serve_deployment(latency_ms), name="stub", route_prefix="/", blocking=False)
        url = f"http://127.0.0.1:{port}"
        _wait_up(url, timeout_s=120)
        yield url, descendants(os.getpid())
    finally:
        with contextlib.suppress(Exception):
            serve.shutdown()
        ray.shutdown()


_PAGE = "Copy 0.\n" + " ".join(f"word{i % 97}" for i in range(600))


def _verdict_body(i: int) -> bytes:
    """A verdict request of a page's size, the ``i``-th fact."""
    return json.dumps(
        {
            "model": "stub",
            "max_tokens": 1,
            "logprobs": True,
            "top_logprobs": 20,
            "structured_outputs": {"choice": ["yes", "no"]},
            "messages": [
                {"role": "system", "content": "Judge the fact against the page text."},
                {"role": "user", "content": f"<<<PAGE_TEXT\n{_PAGE}\nPAGE_TEXT>>>\n\nFact {i}?"},
            ],
        }
    ).encode()


def engine_ceiling(url: str, pids: list[int], n: int, concurrency: int) -> dict[str, float]:
    """What the engine alone answers: ``n`` verdict requests of a page's size from a load
    generator in this process, ``concurrency`` at a time (the generator shares the machine),
    through the client's own transport: aiohttp for ``http://host:port``, the app's deployment
    handle for ``serve://<app>`` (``udfs.llm.serve_handle``; the handle's router then runs in this
    process, so its CPU is the generator's, not the engine's)."""
    import asyncio

    from udfs.llm.serve_handle import ServeHandleTransport, is_serve_url
    from udfs.llm.transport import AiohttpTransport

    async def go() -> None:
        transport = ServeHandleTransport() if is_serve_url(url) else AiohttpTransport(max_connections=concurrency)
        sem = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            async with sem:
                answer = await transport.request("POST", f"{url}/v1/chat/completions", _verdict_body(i))
                if answer.status != 200:
                    raise RuntimeError(f"{url} answered HTTP {answer.status}")

        try:
            await asyncio.gather(*(one(i) for i in range(n)))
        finally:
            await transport.aclose()

    before = cpu_ticks(pids)
    t0 = time.monotonic()
    asyncio.run(go())
    wall = time.monotonic() - t0
    after = cpu_ticks(pids)
    engine_cpu = sum(after[p] - before[p] for p in after if p in before) / CLK
    return {"requests_per_s": n / wall, "engine_cpu_ms_per_request": 1000 * engine_cpu / n}


# ---- one job run ---------------------------------------------------------------------------------


def cpu_ticks(pids: list[int]) -> dict[int, int]:
    """utime + stime of each live process of ``pids``, in clock ticks."""
    out = {}
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # after the command: state ppid ... utime (12th) stime (13th) of the remaining fields
        out[pid] = int(stat[11]) + int(stat[12])
    return out


class Watch:
    """The job's process tree through /proc: the driver's peak RSS and every process's CPU seconds
    (the last value read before it exited; a process that lived less than a poll is missed)."""

    def __init__(self, pid: int, poll_s: float = 0.25, also: Callable[[], list[int]] | None = None):
        # also: more processes of the job that are not below it (its Ray workers in a cluster it joined)
        self.pid, self.poll_s, self.also = pid, poll_s, also
        self.cpu_ticks: dict[int, int] = {}
        self.peak_rss_kb = 0
        self.pids: set[int] = set()
        self.series: list[tuple[float, float]] = []  # (time.monotonic(), CPU seconds so far)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "Watch":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.poll_s)

    def sample(self) -> None:
        pids = [self.pid, *descendants(self.pid), *(self.also() if self.also else [])]
        self.pids.update(pids)
        for pid, ticks in cpu_ticks(pids).items():
            self.cpu_ticks[pid] = max(self.cpu_ticks.get(pid, 0), ticks)
        self.series.append((time.monotonic(), self.cpu_s))
        try:
            status = Path(f"/proc/{self.pid}/status").read_text()
            hwm = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
            if hwm:
                self.peak_rss_kb = max(self.peak_rss_kb, int(hwm.group(1)))
        except OSError:
            pass

    @property
    def cpu_s(self) -> float:
        return sum(self.cpu_ticks.values()) / CLK

    def cpu_at(self, t: float) -> float:
        """CPU seconds of the tree at monotonic time ``t`` (the first sample at or after it)."""
        return next((cpu for when, cpu in self.series if when >= t), self.series[-1][1] if self.series else 0.0)


@dataclass
class Run:
    label: str
    engine: str  # "stub", "serve" (Serve's HTTP proxy) or "serve-handle" (serve://, no proxy)
    pages: int
    latency_ms: float
    in_flight: int
    executor: str
    workers: int
    limit: int = 0  # the job's --limit (0: every page)
    cache: str = ""  # the job's --cache (a rerun that shares it is answered from it)
    rc: int | None = None
    status: str = "ok"
    wall_s: float = 0.0
    verdicts: int = 0  # answered by the engine
    generations: int = 0
    verdict_window_s: float = 0.0
    verdicts_asked: int = 0  # sum of scores.verdict_requests
    verdict_errors: int = 0  # triples whose factuality or compliance verdict failed
    pages_scored: int = 0
    score_rows: int = 0
    cpu_s: float = 0.0
    engine_cpu_s: float = 0.0  # the stub's process, or Serve's (proxy, replica, Ray's own)
    steady_cpu_s: float = 0.0  # the job's CPU from the engine's first verdict to its last
    peak_rss_mb: float = 0.0
    files: dict[str, int] = field(default_factory=dict)
    counters: dict[str, Any] = field(default_factory=dict)
    log_tail: str = ""

    @property
    def verdicts_per_s(self) -> float:
        return self.verdicts / self.verdict_window_s if self.verdict_window_s > 0 else 0.0

    @property
    def pages_per_s(self) -> float:
        return self.pages_scored / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def file_bound(self) -> int:
        return self.pages // 10_000 + self.workers

    def as_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "verdicts_per_s": self.verdicts_per_s,
            "pages_per_s": self.pages_per_s,
            "file_bound": self.file_bound,
        }


def job_flags() -> set[str]:
    """The long flags ``jobs/evaluate.py --help`` lists (the benchmark passes only those it takes)."""
    out = subprocess.run([sys.executable, str(JOB), "--help"], capture_output=True, text=True, cwd=ROOT)
    return set(re.findall(r"(--[a-z][a-z0-9-]+)", out.stdout))


def run_job(
    run: Run,
    pages: Path,
    engine_url: str,
    engine_pids: list[int],
    work: Path,
    flags: set[str],
    budget_s: float,
    ray_address: str = "",
) -> Run:
    """One job run against the engine at ``engine_url`` (served by ``engine_pids``), watched;
    fills ``run``. With ``ray_address`` (this process's Ray instance, where the stub is a Serve
    app) the job joins it and asks through handles, ``serve://stub/v1``."""
    out = work / f"out-{run.label}"
    shutil.rmtree(out, ignore_errors=True)
    base_url = "serve://stub/v1" if ray_address else f"{engine_url}/v1"
    cmd = [
        sys.executable,
        str(JOB),
        "--input",
        str(pages),
        "--output",
        str(out),
        "--base-url",
        base_url,
        "--limit",
        str(run.limit),
        "--executor",
        run.executor,
        "--workers",
        str(run.workers),
    ]
    if ray_address:
        cmd += ["--ray-address", ray_address]
    if run.cache:
        cmd += ["--cache", run.cache]
    if "--max-in-flight" in flags:
        cmd += ["--max-in-flight", str(run.in_flight)]
    # The harness is measured with one yes/no request per verdict (the stub answers them all), so
    # its figures stay comparable whatever judge the evaluation's default asks for.
    if "--factuality-questions" in flags:
        cmd += ["--factuality-questions", "plain"]
    # (after ray.init here, os.environ holds Ray's token mode, which a joining job needs too)
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONUNBUFFERED"] = "1"
    before = _get_json(f"{engine_url}/stats")
    engine_before = cpu_ticks(engine_pids)
    log_path = work / f"log-{run.label}.txt"
    t0 = time.monotonic()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env, start_new_session=True)
        engine_set = set(engine_pids)
        also = (lambda: [p for p in descendants(os.getpid()) if p not in engine_set]) if ray_address else None
        with Watch(proc.pid, also=also) as watch:
            try:
                run.rc = proc.wait(timeout=budget_s)
            except subprocess.TimeoutExpired:
                run.status = f"stopped at {budget_s:.0f} s"
                after = _get_json(f"{engine_url}/stats")
                watch.sample()
                stop([proc.pid], grace_s=20)
                run.rc = proc.wait()
            else:
                after = _get_json(f"{engine_url}/stats")
            watch.sample()
    run.wall_s = time.monotonic() - t0
    engine_after = cpu_ticks(engine_pids)
    run.engine_cpu_s = sum(engine_after[p] - engine_before[p] for p in engine_after if p in engine_before) / CLK
    # whatever the job left behind (a stopped run's Ray processes) goes with it
    stop([p for p in watch.pids if p != proc.pid and p not in engine_set], grace_s=5)
    run.cpu_s = watch.cpu_s
    run.peak_rss_mb = watch.peak_rss_kb / 1024
    count = lambda s, k: s["counts"].get(k, 0)  # noqa: E731
    run.verdicts = count(after, "verdict") - count(before, "verdict")
    run.generations = count(after, "generation") - count(before, "generation")
    first = after["first_verdict"] if before["first_verdict"] is None else None
    # a stub shared by several runs: the window starts at this run's first verdict, which the
    # stub does not know; the job's own wall time bounds it
    if first is not None and after["last_verdict"] is not None:
        run.verdict_window_s = after["last_verdict"] - first
        # CLOCK_MONOTONIC is one clock for every process of the machine: the stub's times are ours
        run.steady_cpu_s = watch.cpu_at(after["last_verdict"]) - watch.cpu_at(first)
    else:
        run.verdict_window_s = run.wall_s
        run.steady_cpu_s = run.cpu_s
    if run.rc != 0 and run.status == "ok":
        run.status = f"exit {run.rc}"
    _read_outputs(run, out)
    run.log_tail = log_path.read_text(errors="replace")[-3000:]
    return run


def _read_outputs(run: Run, out: Path) -> None:
    from udfs.runtime.io import Folder

    root = Folder(out)
    run.files = {t: len((root / t).files((".parquet",))) for t in TABLES}
    if run.files.get("scores"):
        scores = (root / "scores").read(columns=["page_key", "verdict_requests"])
        run.score_rows = scores.num_rows
        run.pages_scored = len(set(scores.column("page_key").to_pylist()))
        run.verdicts_asked = int(sum(v or 0 for v in scores.column("verdict_requests").to_pylist()))
    if run.files.get("triples"):
        import pyarrow.compute as pc

        t = (root / "triples").read(columns=["factual_error", "compliant_error"])
        for col in t.columns:
            failed = pc.and_(pc.is_valid(col), pc.invert(pc.starts_with(col.fill_null(""), "not judged")))
            run.verdict_errors += int(pc.sum(failed).as_py() or 0)
    if (root / "scores").isfile("_run.json"):
        run.counters = json.loads((root / "scores").read_text("_run.json")).get("counters", {})


# ---- the benchmark -------------------------------------------------------------------------------


def fresh_stub_run(run: Run, pages: Path, work: Path, flags: set[str], budget_s: float) -> Run:
    """A run against its own stub process (so the stub's first verdict is this run's)."""
    with stub_process(run.latency_ms) as (url, pids):
        return run_job(run, pages, url, pids, work, flags, budget_s)


def fresh_serve_run(run: Run, pages: Path, work: Path, flags: set[str], budget_s: float) -> Run:
    """A run against its own Serve instance: through the proxy, or (``serve-handle``) through handles."""
    import ray

    with serve_stub(run.latency_ms) as (url, pids):
        address = ray.get_runtime_context().gcs_address if run.engine == "serve-handle" else ""
        return run_job(run, pages, url, pids, work, flags, budget_s, ray_address=address)


def _ms(seconds: float, n: int) -> float:
    return 1000 * seconds / n if n else float("nan")


ENGINES = {"stub": "stub", "serve": "Serve proxy + stub", "serve-handle": "Serve handle + stub"}


def table(runs: list[Run]) -> str:
    lines = [
        "| engine | pages | latency ms | in flight | executor x workers | wall s | verdicts | verdicts/s "
        "| pages/s | job CPU s | job CPU ms/verdict (steady) | engine CPU ms/verdict | driver peak RSS MB "
        "| files/table (max) | bound | verdict errors | status |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        lines.append(
            f"| {ENGINES[r.engine]} | {r.pages:,} | {r.latency_ms:g} "
            f"| {r.in_flight} | {r.executor} x {r.workers} | {r.wall_s:.1f} | {r.verdicts:,} | {r.verdicts_per_s:,.0f} "
            f"| {r.pages_per_s:,.1f} | {r.cpu_s:.1f} | {_ms(r.steady_cpu_s, r.verdicts):.2f} "
            f"| {_ms(r.engine_cpu_s, r.verdicts):.2f} | {r.peak_rss_mb:,.0f} "
            f"| {max(r.files.values()) if r.files else 0:,} | {r.file_bound:,} | {r.verdict_errors:,} | {r.status} |"
        )
    return "\n".join(lines)


def findings(runs: list[Run]) -> dict[str, Any]:
    """The issue's figures from the runs: the driver's RSS at the two largest sizes, Serve's
    overhead per verdict, the harness's CPU per verdict and per page, files against the bound."""
    out: dict[str, Any] = {}
    direct0 = sorted(
        (r for r in runs if r.engine == "stub" and r.latency_ms == 0 and r.verdicts), key=lambda r: r.pages
    )
    if len(direct0) >= 2:
        a, b = direct0[-2], direct0[-1]
        out["rss_pages"] = [a.pages, b.pages]
        out["rss_mb"] = [a.peak_rss_mb, b.peak_rss_mb]
        out["rss_ratio"] = b.peak_rss_mb / a.peak_rss_mb if a.peak_rss_mb else None
    # CPU per verdict while verdicts flow (start-up and the end excluded), over every 0 ms run
    if direct0:
        out["cpu_s_per_verdict"] = sum(r.steady_cpu_s for r in direct0) / sum(r.verdicts for r in direct0)
        out["cpu_basis"] = "from the first verdict to the last, 0 ms runs"
    done = [r for r in direct0 if r.pages_scored and r.verdicts_asked]
    if "cpu_s_per_verdict" in out and done:
        out["verdicts_per_page"] = sum(r.verdicts_asked for r in done) / sum(r.pages_scored for r in done)
        out["cpu_s_per_page"] = out["cpu_s_per_verdict"] * out["verdicts_per_page"]
        out["cpu_hours_per_million_pages"] = out["cpu_s_per_page"] * 1e6 / 3600
    for lat in sorted({r.latency_ms for r in runs}):
        d = [r for r in runs if r.engine == "stub" and r.latency_ms == lat and r.verdicts]
        for kind, key in (("serve", "serve"), ("serve-handle", "serve_handle")):
            s = [r for r in runs if r.engine == kind and r.latency_ms == lat and r.verdicts]
            if d and s:
                srv = s[0]
                drc = next((x for x in d if x.pages == srv.pages), d[0])
                out[f"{key}_{lat:g}ms"] = {
                    "ms_per_verdict": 1000 * (1 / srv.verdicts_per_s - 1 / drc.verdicts_per_s),
                    "cpu_ms_per_verdict": _ms(srv.engine_cpu_s, srv.verdicts) - _ms(drc.engine_cpu_s, drc.verdicts),
                    "job_cpu_ms_per_verdict": _ms(srv.steady_cpu_s, srv.verdicts) - _ms(drc.steady_cpu_s, drc.verdicts),
                }
    by_label = {r.label: r for r in runs}
    for r in runs:
        first = by_label.get(r.label.removesuffix("-cached")) if r.label.endswith("-cached") else None
        if first is not None and first.verdicts_asked and r.verdicts_asked:
            out.setdefault("cached_rerun", []).append(
                {
                    "pages": r.pages,
                    "verdicts_asked": [first.verdicts_asked, r.verdicts_asked],
                    "engine_verdicts": [first.verdicts, r.verdicts],
                    "wall_s": [first.wall_s, r.wall_s],
                    "job_cpu_ms_per_verdict": [_ms(first.cpu_s, first.verdicts_asked), _ms(r.cpu_s, r.verdicts_asked)],
                }
            )
    # a stopped run's files count too: the bound holds at every moment, not only at the end
    out["files_within_bound"] = all(max(r.files.values() or [0]) <= r.file_bound for r in runs)
    return out


def report(f: dict[str, Any]) -> str:
    """The findings as lines under the table."""
    lines = []
    if f.get("rss_ratio"):
        (a, b), (ma, mb) = f["rss_pages"], f["rss_mb"]
        lines.append(
            f"driver peak RSS: {ma:,.0f} MB at {a:,} pages, {mb:,.0f} MB at {b:,} pages ({f['rss_ratio']:.2f}x)"
        )
    for c in f.get("cached_rerun", []):
        (a, b), (wa, wb) = c["job_cpu_ms_per_verdict"], c["wall_s"]
        lines.append(
            f"cached rerun, {c['pages']:,} pages: {c['verdicts_asked'][1]:,} verdicts asked, {c['engine_verdicts'][1]:,} "
            f"reached the engine; job CPU {a:.2f} -> {b:.2f} ms per verdict asked ({b / a:.2f}x), "
            f"wall {wa:.1f} -> {wb:.1f} s ({wb / wa:.2f}x)"
        )
    for k, v in f.items():
        if k.startswith("serve_"):
            way, lat = (
                ("handles", k[len("serve_handle_") :])
                if k.startswith("serve_handle_")
                else ("proxy", k[len("serve_") :])
            )
            lines.append(
                f"Serve's {way} at {lat}: {v['ms_per_verdict']:+.2f} ms per verdict of wall time, "
                f"{v['cpu_ms_per_verdict']:+.2f} engine-side and {v['job_cpu_ms_per_verdict']:+.2f} job-side "
                "CPU-ms per verdict beyond the bare stub's"
            )
    if "cpu_s_per_verdict" in f:
        line = f"harness CPU: {1000 * f['cpu_s_per_verdict']:.2f} ms per verdict ({f['cpu_basis']})"
        if "cpu_s_per_page" in f:
            line += (
                f"; {f['verdicts_per_page']:.1f} verdicts per page here, {1000 * f['cpu_s_per_page']:.0f} ms per page, "
                f"{f['cpu_hours_per_million_pages']:,.1f} CPU-hours per million such pages"
            )
        lines.append(line)
    for name, c in (f.get("engine_alone") or {}).items():
        lines.append(
            f"{name} alone (load generator, no harness): {c['requests_per_s']:,.0f} verdicts/s, "
            f"{c['engine_cpu_ms_per_request']:.2f} engine CPU-ms per verdict"
        )
    lines.append(f"files per table within pages/10,000 + workers: {'yes' if f['files_within_bound'] else 'no'}")
    return "\n".join(lines)


def arguments(argv: list[str] | None) -> tuple[argparse.Namespace, list[int]]:
    """The flags (``--quick`` setting its own) and the page counts of the 0 ms runs; a usage error
    for a bad ``--sizes``."""
    ap = ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000", help="page counts of the 0 ms runs, comma-separated")
    ap.add_argument("--latency-ms", type=float, default=200.0, help="the stub's latency of the loaded runs")
    ap.add_argument("--latency-pages", type=int, default=1000, help="pages of the loaded and the Serve runs")
    ap.add_argument("--in-flight", type=int, default=256, help="--max-in-flight of the job (where it takes it)")
    ap.add_argument("--executor", choices=["ray", "local"], default="ray", help="the job's --executor")
    ap.add_argument("--workers", type=int, default=2, help="the job's --workers")
    ap.add_argument(
        "--serve",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also measure through Ray Serve (its HTTP proxy, and handles: serve://)",
    )
    ap.add_argument(
        "--ceiling",
        type=int,
        default=5000,
        help="verdict requests of a load generator that measure each engine alone first (0: none)",
    )
    ap.add_argument("--budget-s", type=float, default=240.0, help="a run longer than this is stopped")
    ap.add_argument("--work", default="", help="folder for pages, outputs and logs (default: a temporary one)")
    ap.add_argument("--json", default="", help="also write every run's figures to this JSON file")
    ap.add_argument(
        "--limit",
        type=int,
        default=0,
        help="the 0 ms runs evaluate this many pages of their input (the job's --limit; 0: all): the "
        "driver's memory with --limit against the input's size",
    )
    ap.add_argument(
        "--cached-rerun",
        action="store_true",
        help="run each 0 ms run again over the same pages with the first run's request cache (every "
        "answer a cache hit): the cost of a cache hit against a request",
    )
    ap.add_argument("--text-chars", type=int, default=0, help="pad every page's text to this length (0: as is)")
    ap.add_argument("--quick", action="store_true", help="20 pages at 0 ms only, no Serve, executor local (CI)")
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes, args.latency_pages, args.serve, args.executor, args.workers = "20", 0, False, "local", 1
        args.ceiling = 0
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--sizes takes page counts separated by commas, not {args.sizes!r}")
    if not sizes or min(sizes) <= 0:
        ap.error("--sizes needs at least one positive page count")
    return args, sizes


def plan_runs(args: argparse.Namespace, sizes: list[int], work: Path) -> list[tuple[Run, Path]]:
    """The runs in order, each with its pages (written under ``work``): the 0 ms runs (and their
    cached reruns), the loaded run, and the Serve runs (proxy and handles, 0 ms and loaded)."""
    plan: list[tuple[Run, Path]] = []
    for n in sizes:
        plan.append(
            (
                Run(f"stub-0ms-{n}", "stub", n, 0.0, args.in_flight, args.executor, args.workers, limit=args.limit),
                write_pages(work, n, args.text_chars),
            )
        )
        if args.cached_rerun:
            first, pages = plan[-1]
            first.cache = str(work / f"cache-{first.label}.sqlite")
            Path(first.cache).unlink(missing_ok=True)
            plan.append((replace(first, label=f"{first.label}-cached"), pages))
    if args.latency_pages:
        lp = write_pages(work, args.latency_pages)
        plan.append(
            (
                Run(
                    f"stub-{args.latency_ms:g}ms-{args.latency_pages}",
                    "stub",
                    args.latency_pages,
                    args.latency_ms,
                    args.in_flight,
                    args.executor,
                    args.workers,
                ),
                lp,
            )
        )
        if args.serve:
            for lat in (0.0, args.latency_ms):
                for kind in ("serve", "serve-handle"):
                    plan.append(
                        (
                            Run(
                                f"{kind}-{lat:g}ms-{args.latency_pages}",
                                kind,
                                args.latency_pages,
                                lat,
                                args.in_flight,
                                args.executor,
                                args.workers,
                            ),
                            lp,
                        )
                    )
    return plan


def engine_ceilings(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """Each engine alone under a load generator (``--ceiling`` requests; none at 0): the bare
    stub, and with ``--serve`` the stub behind Serve's proxy and its handles."""
    ceilings: dict[str, dict[str, float]] = {}
    if not args.ceiling:
        return ceilings

    def measured(name: str, c: dict[str, float]) -> None:
        ceilings[name] = c
        print(
            f"  {name} alone, {args.in_flight} in flight from a load generator: {c['requests_per_s']:,.0f} "
            f"verdicts/s, {c['engine_cpu_ms_per_request']:.2f} engine CPU-ms each",
            flush=True,
        )

    with stub_process(0.0) as (url, pids):
        measured("stub", engine_ceiling(url, pids, args.ceiling, args.in_flight))
    if args.serve:
        with serve_stub(0.0) as (url, pids):
            measured("Serve proxy + stub", engine_ceiling(url, pids, args.ceiling, args.in_flight))
            measured("Serve handle + stub", engine_ceiling("serve://stub", pids, args.ceiling, args.in_flight))
    return ceilings


def run_plan(plan: list[tuple[Run, Path]], work: Path, flags: set[str], budget_s: float) -> list[Run]:
    """Every run of ``plan`` against a fresh engine, each reported on a line as it ends (with its
    log's tail when it failed)."""
    runs: list[Run] = []
    for run, pages in plan:
        runner = fresh_serve_run if run.engine.startswith("serve") else fresh_stub_run
        runner(run, pages, work, flags, budget_s)
        runs.append(run)
        print(
            f"  {run.label}: {run.status}, {run.wall_s:.1f} s, {run.verdicts:,} verdicts at {run.verdicts_per_s:,.0f}/s,"
            f" {run.pages_scored:,} pages, CPU {run.cpu_s:.1f} s, peak RSS {run.peak_rss_mb:,.0f} MB",
            flush=True,
        )
        if run.status != "ok" and "stopped" not in run.status:
            print("    " + run.log_tail[-1500:].replace("\n", "\n    "), flush=True)
    return runs


def main(argv: list[str] | None = None) -> int:
    args, sizes = arguments(argv)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="evaluate-throughput-"))
    work.mkdir(parents=True, exist_ok=True)
    flags = job_flags()
    plan = plan_runs(args, sizes, work)
    load = os.getloadavg()
    print(
        f"jobs/evaluate.py against testkit.stub_engine; work folder {work}; load {load[0]:.2f}; "
        f"{os.cpu_count()} CPUs; job flags: {'--max-in-flight' if '--max-in-flight' in flags else 'no --max-in-flight'}",
        flush=True,
    )
    ceilings = engine_ceilings(args)
    runs = run_plan(plan, work, flags, args.budget_s)
    print()
    print(table(runs))
    f = findings(runs)
    f["engine_alone"] = ceilings
    print()
    print(report(f))
    if args.json:
        Path(args.json).write_text(
            json.dumps({"load": load, "runs": [r.as_dict() for r in runs], "findings": f}, indent=2, default=str)
        )
    if not args.work and not args.json:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
