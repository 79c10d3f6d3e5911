"""One evaluation run over a pages table: what ``jobs/evaluate.py`` calls once its flags are read.

:func:`evaluate_pages` keys the run by its settings hash (``udfs.evaluation.parts``), keeps what an
earlier run with the same settings committed (and refuses an output of other settings), plans
the pages (``udfs.evaluation.plan``), hands units of pages to the workers (this process, or Ray
Data actors: ``udfs.evaluation.runner``), writes the rejects of the pages that could not be
evaluated, and records the counters, which reconcile (input rows = not ok + no text + duplicates + pages
holding a judged page's HTML under another URL + over the limit + already scored + evaluated + failed; with stored markups, each row of the markups
table is accounted for per source, :func:`count_markups`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
from dataclasses import dataclass
from typing import Any, Callable

from udfs.evaluation.evaluator import EvalConfig
from udfs.evaluation.parts import SettingsMismatch, committed, remove_leftovers, settings_hash, write_rejects
from udfs.evaluation.plan import SAME_HTML, plan_pages
from udfs.runtime.errors import Refused
from udfs.runtime.io import Folder, local_state_dir
from udfs.runtime.progress import Progress
from udfs.runtime.rejects import FIXED_RAW_CHARS, reject_row

log = logging.getLogger("llm4schema.evaluate")
TABLES = ("markups", "triples", "scores")
# Progress shows these per second beside their totals.
RATES = ("answers", "verdicts", "prompt_tokens")


class RunRefused(Refused):
    """The output holds results of other settings (give another output, or overwrite)."""


@dataclass(frozen=True)
class RunOptions:
    """How one run is carried out, not what it answers (none of it is in the settings hash): which
    pages (``limit``, ``order``), where the work goes (``executor``, ``workers``, ``ray_run``),
    how it is cut and committed (``part_pages``, ``part_rows``), the model requests (``base_url``,
    ``api_key``, ``timeout_s``, ``max_in_flight``, the request cache ``cache``; "": under the
    output root) and whether earlier results are dropped (``overwrite``)."""

    limit: int
    order: str
    executor: str
    workers: int
    part_pages: int
    part_rows: int
    base_url: str
    api_key: str
    timeout_s: float
    max_in_flight: int
    cache: str
    overwrite: bool


def evaluate_pages(
    root: Folder,
    rejects: Folder,
    record,
    cfg: EvalConfig,
    scan,
    found_markups,
    opts: RunOptions,
    *,
    markups_table: str = "",
    ray_run: Callable[..., list[dict]] | None = None,
    on_settings: Callable[[str], None] | None = None,
) -> dict[str, int]:
    """Evaluate the planned pages of ``scan`` (``udfs.evaluation.plan.scan_pages``) under ``root``
    with ``cfg``; ``found_markups``: the stored markups joined to the pages (``udfs.evaluation.
    stored.join_markups``; None: none), read from ``markups_table``. ``record``: the job's run
    record, which gets the evaluation's settings (the judge's block among them), the plan's and the
    workers' counters; ``ray_run(units, ctor, progress)``: the Ray executor (``opts.executor`` "ray");
    ``on_settings(hash)``: told the run's settings hash once it is known.
    Returns the counters. Raises :class:`RunRefused` when ``root`` holds results of other settings."""
    digest = record_settings(record, cfg, found_markups, opts)
    if on_settings is not None:  # the output lease names the run's settings hash (udfs.runtime.lease)
        on_settings(digest)
    found = resume(root, rejects, digest, opts.overwrite)
    lookup = None if found_markups is None else stored_lookup(root, rejects, record, found_markups, markups_table)
    with record.time("plan_select"):
        plan = plan_pages(
            None,
            limit=opts.limit,
            order=opts.order,
            done=found.pages,
            scan=scan,
            only=found_markups.pages if found_markups else None,
        )
    record["inputs"]["rows_per_file"] = {f.url: f.rows for f in plan.files}
    c = dict(plan.counters)
    # Nothing to generate from or check against: a reject with its reason, not a page of "no"s.
    write_rejects(rejects, "no_text.parquet", [reject_row(u, None, "page has no text") for u, _ in plan.no_text])
    # rows whose key names no single page (a page_id of several pages, a page of several texts)
    write_rejects(rejects, "duplicate_keys.parquet", plan.rejects)
    # a page that holds a judged page's HTML and markup under another URL: a row pointing to it
    # (same_page_as in its raw), so that it is judged and counted once
    write_rejects(rejects, "same_html.parquet", same_html_rows(plan))
    n = plan.todo.num_rows
    log.info(
        "%d pages to evaluate (%d already scored) against %s, sources %s, settings %s",
        n,
        c["already_scored"],
        opts.base_url,
        cfg.sources,
        digest[:12],
    )
    summary = run_units(root, record, cfg, plan, digest, lookup, opts, ray_run)
    failed = [f for s in summary for f in s["failed"]]
    c["evaluated"] = sum(s["evaluated"] for s in summary)
    c["failed"] = len(failed)
    c["parts_written"] = sum(len(s["parts"]) for s in summary)
    # this run's failures (a later run tries those pages again and writes its own)
    write_rejects(
        rejects,
        "failed.parquet",
        [reject_row(u, None, reason, k, raw_chars=FIXED_RAW_CHARS) for k, u, reason in failed],
    )
    if found_markups is not None:
        count_markups(record, found_markups, plan, found.pages, {k for k, _, _ in failed}, c)
    for k, v in c.items():
        record.count(k, v)
    log.info("counters: %s", c)
    return c


def same_html_rows(plan) -> list[dict[str, Any]]:
    """The plan's pages left out for holding a judged page's HTML (``Plan.same_html``) as rows of
    the rejects contract: the input file and row, the reason naming the judged page, and as raw
    the page's URL and key, ``html_sha256`` and ``same_page_as`` (the judged page's key) and
    ``same_page_url``, in JSON."""
    return [
        reject_row(
            plan.files[r["file"]].url,
            r["row"],
            SAME_HTML.format(key=r["same_page_as"], url=r["same_page_url"]),
            json.dumps({k: v for k, v in r.items() if k not in ("file", "row")}, ensure_ascii=False),
            raw_chars=FIXED_RAW_CHARS,
        )
        for r in plan.same_html
    ]


def record_settings(record, cfg: EvalConfig, found_markups, opts: RunOptions) -> str:
    """The run record's ``evaluation``: the settings (the judge's block among them), the settings
    hash and what it covered, the tokenizer; returns the hash. The stored markups' content is part
    of the settings: a resumed run with another table is refused."""
    extra = {"stored_markups": found_markups.digest} if found_markups else None
    digest, hashed = settings_hash(cfg, extra=extra)
    record["evaluation"] = {
        "base_url": opts.base_url,
        **dataclasses.asdict(dataclasses.replace(cfg, judge=None)),
        "judge": cfg.judge.to_record(),
        "settings_hash": digest,
        "hashed_files": hashed["files"],
        "hashed_prompts": hashed["prompts"],
        "tokenizer": tokenizer_kind(opts.base_url, opts.api_key),
    }
    return digest


def resume(root: Folder, rejects: Folder, digest: str, overwrite: bool):
    """What ``root`` committed under ``digest`` (``udfs.evaluation.parts.committed``), its leftovers
    removed; ``overwrite``: the earlier tables and rejects dropped first. Raises :class:`RunRefused`
    where ``root`` holds results of other settings."""
    if overwrite:
        for d in [*(root / t for t in TABLES), rejects]:
            d.rm()
    try:
        found = committed(root, digest)
    except SettingsMismatch as exc:
        raise RunRefused(str(exc)) from None
    remove_leftovers(root, found)
    return found


def stored_lookup(root: Folder, rejects: Folder, record, found_markups, markups_table: str) -> Folder:
    """The stored markups' lookup table copied beside the parts, where every worker reads it (a
    remote root too; ``_`` hides it from readers), their rejects written and the run record's
    ``markups`` block; returns the lookup's location."""
    lookup = root / "scores" / "_stored" / f"markups-{found_markups.digest[:16]}.parquet"
    with open(found_markups.lookup, "rb") as src, lookup.open("", "wb") as dst:
        shutil.copyfileobj(src, dst)
    write_rejects(rejects, "markups.parquet", found_markups.rejects)
    record["markups"] = {
        "table": markups_table,
        "files": found_markups.files,
        "key": found_markups.key,
        "content_hash": found_markups.digest,
        "lookup": lookup.url,
        "byte_order_marks": found_markups.byte_order_marks,
    }
    return lookup


def run_units(root: Folder, record, cfg: EvalConfig, plan, digest: str, lookup, opts: RunOptions, ray_run) -> list:
    """The plan's pages cut into units and evaluated by the workers (this process, or Ray actors
    through ``ray_run``), with progress; returns each unit's summary (evaluated, failed, parts)."""
    from udfs.evaluation.runner import run_local

    n = plan.todo.num_rows
    # SQLite needs a real disk: under a remote root the cache is a local folder (local_state_dir)
    cache = opts.cache or str(local_state_dir(root, "cache") / "llm.sqlite")
    client_kwargs = {"timeout_s": opts.timeout_s, **({"api_key": opts.api_key} if opts.api_key else {})}
    ctor = dict(
        output=root.url,
        files=[f.url for f in plan.files],
        digest=digest,
        base_url=opts.base_url,
        cfg=cfg,
        cache_path=cache,
        client_kwargs=client_kwargs,
        max_in_flight=opts.max_in_flight,
        part_rows=opts.part_rows,
        stored=lookup.url if lookup is not None else None,
    )
    # A run smaller than workers x part_pages is split evenly, with the same mix of pages in
    # each unit, so that every worker has pages until the end.
    spread = opts.executor != "local" and n < opts.workers * opts.part_pages
    units = list(plan.units(max(1, -(-n // opts.workers)) if spread else opts.part_pages, spread=spread))
    if not units:
        return []
    with record.time("evaluate"), Progress("evaluate", n, "pages", rates=RATES) as progress:
        return run_local(units, ctor, progress) if opts.executor == "local" else ray_run(units, ctor, progress)


def count_markups(record, found_markups, plan, already: set[str], failed: set[str], c: dict[str, Any]) -> None:
    """Where each row of the markups table went, per source and in all (the run record's
    ``markups.per_source`` and ``markup_rows_*`` counters): read = judged + rejected + over the
    limit + already scored + failed."""
    from udfs.evaluation.stored import tally

    evaluated = set(plan.todo["page_key"].to_pylist()) - failed
    per_source = tally(found_markups, evaluated=evaluated, failed=failed, already=already)
    total = {k: sum(v[k] for v in per_source.values()) for k in next(iter(per_source.values()), {})}
    for k in ("read", "judged", "rejected", "over_limit", "already_scored", "failed"):
        c[f"markup_rows_{k}"] = total.get(k, 0)
    record["markups"]["per_source"] = per_source
    record["markups"]["reconciles"] = all(
        v["read"] == sum(v[k] for k in ("judged", "rejected", "over_limit", "already_scored", "failed"))
        for v in per_source.values()
    )


def tokenizer_kind(url: str, api_key: str) -> str:
    """Which tokenizer chunks the pages: the endpoint's /tokenize (llama.cpp's or vLLM's shape), or
    a local one where the endpoint has none (the workers detect the same way)."""
    from udfs.llm.chunking import ServedTokenizer

    tok = ServedTokenizer(url, api_key=api_key or None)
    try:
        return tok.kind
    except Exception as exc:  # noqa: BLE001 - the record says so; the workers' own chunking then fails the page
        return f"unknown: {type(exc).__name__}: {str(exc)[:200]}"
    finally:
        tok.close()
