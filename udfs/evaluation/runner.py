"""The evaluation's workers: a unit of pages in, parts of the three tables out.

A unit (``udfs.evaluation.plan.Plan.units``) names the rows of the input to evaluate (file,
row number, page key). A ``UnitRunner`` reads exactly those rows (the big columns: text, human
markup, root types, the judge's text) from the Parquet files, local or remote, evaluates the
pages concurrently on one event loop (up to ``max_in_flight`` model requests per model: the
client's bound, so a GPU replica is handed many sequences while a CPU engine is not swamped;
pages at once: ``PAGE_REQUESTS``), hands each finished page to its ``PartWriter``
and commits the last part when the unit ends. A page that fails is that page's failure (its
reason comes back in the unit's summary), never the unit's.

``EvaluatePages`` is the same runner as a Ray Data ``map_batches`` callable (one unit per call),
reporting its progress to a ``Tally`` actor the driver polls; ``--executor local`` calls a
``UnitRunner`` in the driver's process.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import threading
import time
import uuid
from collections import Counter
from typing import Any, Callable

from udfs.evaluation.parts import PartWriter
from udfs.runtime.io import Folder

log = logging.getLogger("llm4schema.evaluate")

# The columns a page is evaluated from, each when the input has it (judge_text: the text the
# factuality agent judges against, when pages/ keeps one apart; generator: who wrote the human
# markup, carried to every row of the page; truncated: its WARC record is cut, judged under
# [pages] judge_truncated, carried to its scores rows).
PAGE_COLUMNS = ("page_url", "text", "human_markup", "root_types", "judge_text", "generator", "truncated")
# Model requests one page keeps busy, on average, while it is evaluated: a worker evaluates
# max_in_flight / PAGE_REQUESTS pages at once (at least one). The embedded CPU engine (4 in
# flight) then takes one page at a time, all its requests sharing the page's prefix in the
# engine's cache; a GPU worker (hundreds in flight) interleaves many pages to fill the batch.
PAGE_REQUESTS = 4
GC_THRESHOLDS = (20000, 50, 100)  # CPython's default: (700, 10, 10)
# Counts a worker reports per page (progress); "answers" (model answers received, cache hits
# included) also while a page is evaluated, every ANSWERS_S seconds: one page on the CPU model
# takes minutes, and a bar that says "0/6 pages" meanwhile does not say whether the run moves.
PROGRESS_COUNTS = ("pages", "failed", "verdicts", "prompt_tokens", "cache_hits", "triples", "answers")
ANSWERS_S = 5.0


def read_pages(files: list[str], pages: list[list]) -> list[dict[str, Any]]:
    """The input rows a unit names (``[file index, row number, page key]`` each), in the unit's
    order, as page dicts with ``page_key``; only the row groups holding them are read."""
    import bisect

    import pyarrow.parquet as pq

    by_file: dict[int, list[int]] = {}
    for f, row, _ in pages:
        by_file.setdefault(int(f), []).append(int(row))
    found: dict[tuple[int, int], dict[str, Any]] = {}
    for f, rows in by_file.items():
        with Folder(files[f]).open("", "rb") as fh:
            pf = pq.ParquetFile(fh)
            starts, n = [], 0
            for i in range(pf.metadata.num_row_groups):
                starts.append(n)
                n += pf.metadata.row_group(i).num_rows
            groups = sorted({bisect.bisect_right(starts, r) - 1 for r in rows})
            cols = [c for c in PAGE_COLUMNS if c in pf.schema_arrow.names]
            table = pf.read_row_groups(groups, columns=cols)
            offset, base = 0, {}
            for g in groups:
                base[g] = offset
                offset += pf.metadata.row_group(g).num_rows
            local = []
            for r in rows:
                g = bisect.bisect_right(starts, r) - 1
                local.append(base[g] + r - starts[g])
            for r, rec in zip(rows, table.take(local).to_pylist()):
                found[(f, r)] = rec
    out = []
    for f, row, key in pages:
        rec = dict(found[(int(f), int(row))])
        rec["page_key"] = key
        rec["text"] = rec.get("text") or ""
        rec["root_types"] = list(rec.get("root_types") or [])
        out.append(rec)
    return out


def _load_embedding_model(threads: int | None) -> None:
    from udfs.scores import matching

    matching.load_model(threads)
    gc.freeze()


class UnitRunner:
    """Evaluates units of pages and writes their parts (module docstring). ``stored``, when
    given, is the lookup file of a run's stored markups (``udfs.evaluation.stored``): each page
    gets its own. ``on_page`` is told of each finished page with a dict of ``PROGRESS_COUNTS``
    increments, and between pages of the answers received since (``{"answers": n}``)."""

    def __init__(
        self,
        *,
        output: str,
        files: list[str],
        digest: str,
        base_url: str,
        cfg,
        cache_path: str,
        client_kwargs: dict,
        max_in_flight: int,
        part_rows: int,
        stored: str | None = None,
        on_page: Callable[[dict[str, int]], None] | None = None,
    ):
        from udfs.evaluation.evaluator import HUMAN, PageEvaluator

        self.files = files
        self.stored = stored
        self.max_in_flight = max(1, int(max_in_flight))
        kw = {**client_kwargs, "max_concurrency": self.max_in_flight}
        self.evaluator = PageEvaluator(base_url, cfg, cache_path=cache_path, client_kwargs=kw)
        # A worker allocates a few dozen objects per request and keeps little: CPython's default
        # collector thresholds run a collection every few requests, and its full collections
        # rescan everything loaded (the models, the vocabulary): a large share of a worker's CPU
        # beside the requests themselves (docs/results/harness.md). What is loaded is
        # frozen out of the collector, and young collections run less often.
        gc.freeze()
        gc.set_threshold(*GC_THRESHOLDS)
        if HUMAN in cfg.sources and len(cfg.sources) > 1:
            # The embedding model of the BLINKG match loads beside the first pages' requests: at the
            # first page's scores it would stall every page in flight on the event loop, and in
            # this constructor it would keep the worker from taking pages meanwhile.
            threading.Thread(
                target=_load_embedding_model, args=(cfg.scores.embedding_threads,), name="embedding-model", daemon=True
            ).start()
        self.writer = PartWriter(output, digest, uuid.uuid4().hex[:10], part_rows)
        self.on_page = on_page or (lambda d: None)
        self._hits = 0
        self._answers = 0

    def run_unit(self, unit: dict[str, Any]) -> dict[str, Any]:
        """Evaluate one unit and commit its parts; the summary: unit id, pages evaluated, the
        failed pages ([page_key, page_url, reason]) and the parts written."""
        pages = read_pages(self.files, unit["pages"])
        if self.stored:  # the stored markups of this unit's pages only (udfs.evaluation.stored)
            from udfs.evaluation.stored import read_stored

            by_page = read_stored(self.stored, [p["page_key"] for p in pages])
            for p in pages:
                p["stored_markups"] = by_page.get(p["page_key"], {})
        first = len(self.writer.parts)
        failed: list[list[str]] = []
        # the default client's private loop, reused unit after unit (its connections stay open)
        self.evaluator.client(None).run(self._evaluate_all(pages, failed))
        self.writer.flush()
        for c in self.evaluator._clients.values():
            if c.cache is not None:
                c.cache.flush()
        return {
            "unit": unit["unit"],
            "evaluated": len(pages) - len(failed),
            "failed": failed,
            "parts": self.writer.parts[first:],
        }

    async def _evaluate_all(self, pages: list[dict[str, Any]], failed: list[list[str]]) -> None:
        gate = asyncio.Semaphore(-(-self.max_in_flight // PAGE_REQUESTS))

        async def one(page: dict[str, Any]) -> None:
            async with gate:
                try:
                    result = await self.evaluator.aevaluate(page)
                except Exception as exc:  # one page's failure is that page's reject, not the unit's end
                    log.exception("page %s failed", page["page_url"])
                    failed.append([page["page_key"], page["page_url"], f"{type(exc).__name__}: {str(exc)[:500]}"])
                    self.on_page(
                        {"pages": 1, "failed": 1, "cache_hits": self._cache_hits(), "answers": self._new_answers()}
                    )
                    return
                self.writer.add(page["page_key"], result)
                s = result["scores"]
                self.on_page(
                    {
                        "pages": 1,
                        "triples": len(result["triples"]),
                        "verdicts": sum(int(r.get("verdict_requests") or 0) for r in s),
                        "prompt_tokens": sum(
                            int(r.get("verdict_prompt_tokens") or 0) + int(r.get("generation_prompt_tokens") or 0)
                            for r in s
                        ),
                        "cache_hits": self._cache_hits(),
                        "answers": self._new_answers(),
                    }
                )

        async def answers() -> None:
            while True:
                await asyncio.sleep(ANSWERS_S)
                if n := self._new_answers():
                    self.on_page({"answers": n})

        ticker = asyncio.ensure_future(answers())
        try:
            await asyncio.gather(*(one(p) for p in pages))
        finally:
            ticker.cancel()

    def _cache_hits(self) -> int:
        total = sum(c.stats.cache_hits for c in self.evaluator._clients.values())
        delta, self._hits = total - self._hits, total
        return delta

    def _new_answers(self) -> int:
        total = sum(c.stats.requests for c in self.evaluator._clients.values())
        delta, self._answers = total - self._answers, total
        return delta

    def close(self) -> None:
        self.writer.flush()
        self.evaluator.close()


class Tally:
    """Progress counts the workers add and the driver takes (a Ray actor in the Ray executor)."""

    def __init__(self):
        self.counts: Counter = Counter()

    def add(self, counts: dict[str, int]) -> None:
        self.counts.update(counts)

    def take(self) -> dict[str, int]:
        out, self.counts = dict(self.counts), Counter()
        return out


class EvaluatePages:
    """Ray Data ``map_batches`` callable: each row of the batch is one unit (``{"unit": JSON}``);
    returns one summary row per unit (``{"summary": JSON}``, ``UnitRunner.run_unit``'s). Its
    progress goes to ``tally`` (a ``Tally`` actor handle) at most every ``report_s`` seconds."""

    def __init__(self, tally=None, report_s: float = 0.5, **runner: Any):
        self.tally, self.report_s = tally, report_s
        self.pending: Counter = Counter()
        self.sent = time.monotonic()
        self.runner = UnitRunner(**runner, on_page=self._note)

    def _note(self, counts: dict[str, int]) -> None:
        self.pending.update(counts)
        if time.monotonic() - self.sent >= self.report_s:
            self._send()

    def _send(self) -> None:
        if self.tally is not None and self.pending:
            self.tally.add.remote(dict(self.pending))
        self.pending = Counter()
        self.sent = time.monotonic()

    def __call__(self, batch: dict) -> dict:
        out = []
        for unit in batch["unit"]:
            out.append(json.dumps(self.runner.run_unit(json.loads(str(unit)))))
            self._send()
        return {"summary": out}


def run_local(units: list[dict[str, Any]], ctor: dict[str, Any], progress) -> list[dict[str, Any]]:
    """The units one after the other in this process (``--executor local``); their summaries."""
    runner = UnitRunner(**ctor, on_page=lambda d: progress.update(d.pop("pages", 0), **d))
    out = []
    try:
        for u in units:
            out.append(runner.run_unit(u))
            _unit_done(out[-1], len(out), len(units))
    finally:
        runner.close()
    return out


def run_ray(
    units: list[dict[str, Any]], ctor: dict[str, Any], progress, *, workers: int, poll_s: float = 1.0
) -> list[dict[str, Any]]:
    """The units on a pool of ``workers`` Ray actors (Ray Data, one unit per call, each actor one
    unit at a time) with Ray already initialised; progress polled from the ``Tally`` actor every
    ``poll_s`` seconds; the summaries as the units finish."""
    import ray

    from udfs.runtime.joblog import native_lines_to_log
    from udfs.runtime.progress import quiet_ray_data

    quiet_ray_data()
    # One unit is one Ray Data block, a whole part of pages: on a CPU engine it takes longer than
    # Ray Data's no-progress guard (30 minutes; 6 paper pages of 3 sources ended a run with
    # ExecutionTimeoutError), while the Tally shows the work going on. The guard is off.
    ctx = ray.data.DataContext.get_current()
    if hasattr(ctx, "execution_no_progress_timeout_s"):
        ctx.execution_no_progress_timeout_s = -1
    tally = ray.remote(num_cpus=0)(Tally).remote()
    items = [{"unit": json.dumps(u)} for u in units]
    ds = ray.data.from_items(items, override_num_blocks=len(items)).map_batches(
        EvaluatePages,
        fn_constructor_kwargs={**ctor, "tally": tally},
        batch_size=1,
        num_cpus=0,
        compute=ray.data.ActorPoolStrategy(size=max(1, min(workers, len(items))), max_tasks_in_flight_per_actor=1),
    )

    def take() -> None:
        counts = ray.get(tally.take.remote())
        if counts:
            progress.update(counts.pop("pages", 0), **counts)

    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(poll_s):
            take()

    out: list[dict[str, Any]] = []
    poller = threading.Thread(target=poll, name="evaluate-progress", daemon=True)
    poller.start()
    try:
        with native_lines_to_log():
            for batch in ds.iter_batches(batch_size=None, prefetch_batches=0, batch_format="numpy"):
                for s in batch["summary"]:
                    out.append(json.loads(str(s)))
                    _unit_done(out[-1], len(out), len(units))
    finally:
        stop.set()
        poller.join()
    take()
    # a worker's last counts may reach the tally after its unit's summary reached us
    finished = sum(s["evaluated"] + len(s["failed"]) for s in out)
    if progress.done < finished:
        progress.update(finished - progress.done)
    return out


def _unit_done(summary: dict[str, Any], i: int, n: int) -> None:
    log.info(
        "unit %d/%d: %d pages evaluated, %d failed, parts %s",
        i,
        n,
        summary["evaluated"],
        len(summary["failed"]),
        ", ".join(summary["parts"]) or "none",
    )


def init_ray(address: str = "") -> None:
    """Join the Ray cluster at ``address`` ("": start a local one) unless this process already has;
    the workers import the project from its checkout (the root on their PYTHONPATH)."""
    import logging

    import ray

    from udfs.runtime.joblog import adopt_library_logger
    from udfs.runtime.paths import PROJECT_ROOT

    if not ray.is_initialized():
        adopt_library_logger("ray")
        # Ray's start-up lines and notices (its token authentication, say) say nothing a
        # researcher acts on: without Ray's own handler they reach the job's logging, whose
        # console keeps a library's errors only (udfs.runtime.joblog.ConsoleFilter).
        ray.init(
            address=address or None,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
            logging_level=logging.WARNING,
            runtime_env={"env_vars": {"PYTHONPATH": str(PROJECT_ROOT)}},
        )
