"""Capacity plan arithmetic: cluster size and hours for the WDC 2023-12 release and for evaluating
1 million pages with an 8B model on H100/H200-class GPUs.

    .venv/bin/python benchmarks/capacity.py                # the tables of docs/capacity.md (Markdown)
    .venv/bin/python benchmarks/capacity.py --update-doc   # write them into docs/capacity.md
    .venv/bin/python benchmarks/capacity.py --measure OUT  # the evaluation inputs of an evaluate run

No measurement runs here (``--measure`` reads a finished run): every input is a named constant
below with where it was measured or where it comes from, so a new measurement is one edit (the
C-sets figures especially: the lead updates CSETS_RUNS when the engine changes) and the tables
follow.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from udfs.runtime.paths import PROJECT_ROOT

# ---- measured on this project's 2-core machine -------------------------------------------------

# C-sets job (jobs/csets.py), docs/results/csets.md: benchmarks/csets_throughput.py (defaults:
# 2M quads in 8 files, scales 1,2,4, fastest of 3 runs: --repeats 3), then the same with
# --quads 64000000 --files 64 --scales 1 --repeats 1 and --quads 256000000 --files 256, on a quiet
# 2-core machine (2026-11-30: byte-level scan, (C-set, page) rows streamed into the pages pass,
# partitions sized to the input). (quads in the corpus, job wall seconds). Before this engine, on
# the same generator's corpus: 26.87 / 29.25 / 34.41 / 106.65 s for 2 / 4 / 8 / 64M (radix sorts),
# 27.50 / 33.62 / 39.32 / 140.28 s before those; earlier engines on 1/2/4M quads: 44.4 / 49.1 /
# 69.4 s (JVM scan, Spark SQL aggregates), 45.5 / 56.8 / 84.4 s (regex).
CSETS_RUNS = [(2_000_230, 21.07), (4_000_481, 21.58), (8_001_639, 26.12), (64_003_799, 63.57), (256_011_750, 219.17)]
CSETS_CORES = 2  # local[2]: the wall seconds above used both cores

# Pages job extraction (jobs/pages.py per page: one WARC record read, gunzip, warcio, then
# udfs.corpus.html.process_html with trafilatura and py3langid): benchmarks/pages_throughput.py
# --repeat 3, 75 HTML records of the bundled WARC files (real Common Crawl records and the extruct
# samples, 36 KB of HTML on average), CPU seconds of one process.
PAGES_PER_CPU_S = 24.9
PAGES_MEASURED_HTML_KB = 36.3

# Validity agent, compiled checker: shapes/README.md "Throughput" (485 real markups, 18.7 triples
# each; benchmarks/validity_throughput.py).
VALIDITY_MARKUPS_PER_CPU_S = 4_016

# Evaluation harness (jobs/evaluate.py's driver and workers: client, agents, validity, scores,
# tables, Ray; no model): benchmarks/evaluate_throughput.py against its stub engine, CPU seconds of
# the job's whole process tree per verdict from the stub's first verdict to its last over the 0 ms
# runs (start-up excluded), the demo pages replicated (docs/results/harness.md). Every model
# request (verdict or generation) is counted at this cost.
HARNESS_CPU_MS_PER_REQUEST = 0.61
HARNESS_MEASURED = (
    "the streaming job (256 requests in flight per worker), --executor ray, 2 workers, "
    "1k, 10k and 100k pages at 0 ms, 260,502 verdicts, quiet machine (load 0.9)"
)

# Evaluation (`make demo`'s pages, --limit 2, embedded model, the default judge: factuality plain
# claim extract-soft-all-near extract-other complies-ranged with the gate at 0.1 and early exit,
# `plain` asked first, compliance ranged, requests in the order of their text), a fresh model server
# and an empty request cache, at 7f2da5d, 2026-12-06 (docs/results/demo.md):
#     python jobs/evaluate.py --input $OUT/pages --output $OUT/run --limit 2
#     python benchmarks/capacity.py --measure $OUT/run    (``measure``)
# From the run's request cache, one row per request the engine served with its usage (their sums
# are the scores' verdict_* and generation_* columns): the requests that carry a page's judge text
# (factuality's and extract's questions, both markups'), and the compliance requests (no page
# text, so given for the two pages together). Text tokens are the served model's (/tokenize) of
# pages.judge_text (what the judge reads) and pages.text (what the generator reads). A text is read
# whole once per instruction prefix it follows: the factuality questions', extract's and, where it
# asks, extract's listing's (the requests whose uncached tokens exceed the text's: 3 and 3).
EVAL_MEASURED = [
    {
        "page": "songkick/elysianfields_1",
        "judge_text_tokens": 831,
        "gen_text_tokens": 211,
        "text_requests": (48, 46_145, 4_670),  # served, prompt tokens, uncached prompt tokens
        "text_reads": 3,
        "gen": (824, 123),  # generation: prompt, completion tokens
        "triples": (18, 7),  # human markup, generated markup
    },
    {
        "page": "schema.org/CreativeWork.001",
        "judge_text_tokens": 85,
        "gen_text_tokens": 85,
        "text_requests": (73, 16_733, 2_931),
        "text_reads": 3,
        "gen": (762, 65),
        "triples": (31, 5),
    },
]
EVAL_COMPLIANCE_MEASURED = (42, 8_520, 3_696)  # both pages: served, prompt, uncached prompt tokens
EVAL_CACHE_HITS_MEASURED = 28  # both pages: answers the request cache gave (no GPU work)
# The paper's layout (claim before the page text, no shared prefix), experiments/factuality_prefix
# in docs/results/serving.md: 1,468 prompt tokens processed against 439 with the shared prefix, same 6 claims.
PAPER_LAYOUT_TOKENS, SHARED_PREFIX_TOKENS = 1_468, 439

# ---- the workload ------------------------------------------------------------------------------

# WebDataCommons 2023-12 release (schema.org JSON-LD and more): the figures.
RELEASE_QUADS = 61.1e9
RELEASE_FILES = 8_897
RELEASE_GZIP_GB = 937
EVAL_PAGES = 1_000_000
CONTEXT_WINDOW = 8_192  # conf/pipeline.toml [evaluate] context_window
MAX_GEN_TOKENS = 1_024  # [evaluate] max_tokens

# ---- GPU throughput assumptions (public sources; see docs/capacity.md) --------------------------

# Prefill, compute-bound: Llama-3.1-8B needs 2 x 8.03e9 FLOPs per prompt token; H100 SXM and H200
# SXM both peak at 989.4 dense BF16 TFLOPS (same GH100 die). 40% model-FLOPs utilisation assumed.
MODEL_PARAMS = 8.03e9
PEAK_BF16_FLOPS = 989.4e12
PREFILL_MFU = 0.40
PREFILL_TOKENS_PER_S = PEAK_BF16_FLOPS * PREFILL_MFU / (2 * MODEL_PARAMS)
# Decode, memory-bound: MLPerf Inference v5.1, Llama-3.1-8B, one H100, vLLM 0.10.0, FP8 weights,
# Offline scenario: 5,777 tokens/s (Red Hat's submission). MLPerf counts generated tokens and the
# time includes each request's prefill, so this understates pure decode.
DECODE_TOKENS_PER_S = {"H100": 5_777.0}
# H200: same compute, 4.8 TB/s HBM3e against 3.35 TB/s: decode scaled by the bandwidth ratio.
DECODE_TOKENS_PER_S["H200"] = DECODE_TOKENS_PER_S["H100"] * 4.8 / 3.35
GPUS_PER_NODE = 8  # p5.48xlarge / HGX H100 and H200
# What one million pages should cost at most (issue 42): H200-hours, judge and generator included.
GOAL_H200_HOURS = 20
# Issue 42's targets for the judge, on the demo's pages: sent requests and uncached prompt tokens per triple.
TARGET_REQUESTS_PER_TRIPLE = 1.5
TARGET_UNCACHED_PER_TRIPLE = 60

# ---- scenarios (assumptions, not measurements) --------------------------------------------------
# Page text length in tokens: the measured pages are the two shortest of the demo; the demo's
# pages with text have a median of 720 and a mean of 1,020 cl100k tokens; Common Crawl pages with
# product or article markup are longer.
PAGE_TOKENS_SCENARIOS = [140, 1_000, 3_000, 6_000]
# Tokens of one generated markup: 94 on the two short pages; a real page's markup is longer.
GEN_OUTPUT_SCENARIO = {140: 94, 1_000: 400, 3_000: 700, 6_000: MAX_GEN_TOKENS}


# ---- arithmetic ---------------------------------------------------------------------------------


def linear_fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least squares y = a + b x."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    b = sum((x - mx) * (y - my) for x, y in points) / sxx
    return my - b * mx, b


def csets_model() -> dict:
    fixed_s, s_per_quad = linear_fit([(q, s) for q, s in CSETS_RUNS])
    core_s_per_quad = s_per_quad * CSETS_CORES
    return {"fixed_s": fixed_s, "core_s_per_quad": core_s_per_quad, "quads_per_core_s": 1 / core_s_per_quad}


def prompt_parts() -> dict:
    """The token model's parts, fitted over the measured pages together: requests per page (text
    questions, compliance questions), whole reads of the text per page, and per request the tokens
    besides the text (sent) and the uncached tokens besides the reads of the text (the tail: the
    question after the shared prefix)."""
    n = len(EVAL_MEASURED)
    asked = sum(m["text_requests"][0] for m in EVAL_MEASURED)
    text_in_requests = sum(m["text_requests"][0] * m["judge_text_tokens"] for m in EVAL_MEASURED)
    reads = sum(m["text_reads"] * m["judge_text_tokens"] for m in EVAL_MEASURED)
    c_asked, c_sent, c_uncached = EVAL_COMPLIANCE_MEASURED
    return {
        "text_requests": asked / n,
        "compliance_requests": c_asked / n,
        "text_reads": sum(m["text_reads"] for m in EVAL_MEASURED) / n,
        "text_fixed": (sum(m["text_requests"][1] for m in EVAL_MEASURED) - text_in_requests) / asked,
        "text_tail": (sum(m["text_requests"][2] for m in EVAL_MEASURED) - reads) / asked,
        "compliance_sent": c_sent / c_asked,
        "compliance_tail": c_uncached / c_asked,
        "gen_fixed": sum(m["gen"][0] - m["gen_text_tokens"] for m in EVAL_MEASURED) / n,
        "cache_hits": EVAL_CACHE_HITS_MEASURED / n,
    }


def measured_page(parts: dict, m: dict) -> dict:
    """The parts with one measured page's own request counts (compliance: the pages' mean)."""
    return dict(parts, text_requests=m["text_requests"][0], text_reads=m["text_reads"])


def judge_at_targets(parts: dict) -> dict:
    """The parts of a judge at issue 42's targets: ``TARGET_REQUESTS_PER_TRIPLE`` requests per
    triple, the text read once per page, and the tail at which the measured pages would cost
    ``TARGET_UNCACHED_PER_TRIPLE`` uncached prompt tokens per triple."""
    triples = sum(sum(m["triples"]) for m in EVAL_MEASURED)
    asked = TARGET_REQUESTS_PER_TRIPLE * triples
    reads = sum(m["judge_text_tokens"] for m in EVAL_MEASURED)
    return dict(
        parts,
        text_requests=asked / len(EVAL_MEASURED),
        compliance_requests=0.0,
        text_reads=1.0,
        text_tail=(TARGET_UNCACHED_PER_TRIPLE * triples - reads) / asked,
    )


def page_tokens(t: int, gen_out: int, parts: dict, shared_prefix: bool = True) -> dict:
    """Tokens one page of ``t`` text tokens costs the GPU: the judge's requests about both markups
    (a text longer than a chunk is judged chunk by chunk), one generation per chunk. With the shared
    prefix the engine processes the text once per read and every request's tail; without it
    (the paper's layout), every request whole."""
    chunks = max(1, math.ceil(t / (CONTEXT_WINDOW - MAX_GEN_TOKENS - parts["gen_fixed"])))
    v_text, v_comp = parts["text_requests"], parts["compliance_requests"]
    out = {"chunks": chunks}
    out["judge_prompt"] = v_text * (t + chunks * parts["text_fixed"]) + v_comp * parts["compliance_sent"]
    out["judge_uncached"] = (
        parts["text_reads"] * t + chunks * v_text * parts["text_tail"] + v_comp * parts["compliance_tail"]
        if shared_prefix
        else out["judge_prompt"]
    )
    out["gen_prompt"] = chunks * parts["gen_fixed"] + t
    out["prefill"] = out["judge_uncached"] + out["gen_prompt"]
    # a verdict's one output token comes out of its prefill step; decode is the generated markup
    out["decode"] = gen_out
    return out


def gpu_seconds(tok: dict, gpu: str) -> float:
    return tok["prefill"] / PREFILL_TOKENS_PER_S + tok["decode"] / DECODE_TOKENS_PER_S[gpu]


def fmt(x: float, digits: int = 0) -> str:
    return f"{x:,.{digits}f}"


def release_plan(cs: dict) -> dict:
    """The C-sets job over the full release at the marginal rate of ``cs`` (``csets_model``): its
    core-hours, the mean quads of one file (one task) and that task's core-seconds."""
    per_file_quads = RELEASE_QUADS / RELEASE_FILES
    return {
        "core_h": RELEASE_QUADS * cs["core_s_per_quad"] / 3600,
        "per_file_quads": per_file_quads,
        "per_task_s": per_file_quads * cs["core_s_per_quad"],
    }


def cpu_work(parts: dict) -> dict:
    """The CPU work around the model for ``EVAL_PAGES`` pages: the pages job's core-hours,
    validity's core-seconds (human and one model markup per page), the harness's model requests
    per page (every answer costs it, the request cache's too; one generation per page) and
    core-hours."""
    requests_per_page = parts["text_requests"] + parts["compliance_requests"] + parts["cache_hits"] + 1
    return {
        "pages_core_h": EVAL_PAGES / PAGES_PER_CPU_S / 3600,
        "validity_core_s": 2 * EVAL_PAGES / VALIDITY_MARKUPS_PER_CPU_S,
        "requests_per_page": requests_per_page,
        "harness_core_h": EVAL_PAGES * requests_per_page * HARNESS_CPU_MS_PER_REQUEST / 1000 / 3600,
    }


def goal_pages(parts: dict, t: int) -> dict[str, dict]:
    """The GPU's work per page of ``t`` text tokens for the goal's comparison: generation and the
    shipped judge (measured), the same with the text read once per page, generation with a judge
    at issue 42's targets, generation alone, the shipped judge alone."""
    gen_out = GEN_OUTPUT_SCENARIO[t]
    shipped = page_tokens(t, gen_out, parts)
    return {
        "shipped": shipped,
        "read_once": page_tokens(t, gen_out, dict(parts, text_reads=1.0)),
        "at_targets": page_tokens(t, gen_out, judge_at_targets(parts)),
        "gen_only": dict(shipped, prefill=shipped["gen_prompt"]),
        "judge_only": dict(shipped, prefill=shipped["judge_uncached"], decode=0),
    }


def h200_hours(tok: dict) -> float:
    """H200-hours for ``EVAL_PAGES`` pages of ``tok``'s work each."""
    return gpu_seconds(tok, "H200") * EVAL_PAGES / 3600


def csets_fit_section(cs: dict) -> list[str]:
    out = ["### C-sets job: cost against input size (measured)\n"]
    w = out.append
    w(
        f"Fit over the measured runs: wall = {cs['fixed_s']:.1f} s + {cs['core_s_per_quad'] * 1e6 / CSETS_CORES:.2f} s "
        f"per million quads on {CSETS_CORES} cores, i.e. {fmt(cs['quads_per_core_s'])} quads per core-second at the margin.\n"
    )
    w("| input | quads | wall s | core-s | core-s per M quads | wall vs 1x | fit wall s |")
    w("|---|---|---|---|---|---|---|")
    q1, s1 = CSETS_RUNS[0]
    for q, s in CSETS_RUNS:
        fit = cs["fixed_s"] + cs["core_s_per_quad"] / CSETS_CORES * q
        w(
            f"| {q / q1:.0f}x | {fmt(q)} | {s:.1f} | {s * CSETS_CORES:.1f} | {s * CSETS_CORES / (q / 1e6):.1f} | "
            f"{s / s1:.2f}x | {fit:.1f} |"
        )
    w("")
    return out


def csets_release_section(cs: dict) -> list[str]:
    plan = release_plan(cs)
    out = ["### C-sets job on the full 2023-12 release\n"]
    w = out.append
    w(
        f"{RELEASE_QUADS / 1e9:.1f} billion quads in {fmt(RELEASE_FILES)} gzip files ({fmt(RELEASE_GZIP_GB)} GB): "
        f"{fmt(plan['core_h'])} core-hours at the marginal rate; one file (one task) holds "
        f"{plan['per_file_quads'] / 1e6:.1f} M quads on average, about {plan['per_task_s'] / 60:.1f} core-minutes.\n"
    )
    w("| cores | executors (4 cores) | waves of tasks | hours | S3 read rate needed |")
    w("|---|---|---|---|---|")
    for cores in (128, 512, 1024, 2048, 4096, 8960):
        waves = math.ceil(RELEASE_FILES / cores)
        hours = (waves * plan["per_task_s"] + cs["fixed_s"]) / 3600
        w(
            f"| {fmt(cores)} | {fmt(cores // 4)} | {waves} | {hours:.1f} | {RELEASE_GZIP_GB * 8 / (hours * 3600):.1f} Gbit/s |"
        )
    w("")
    return out


def cpu_section(parts: dict) -> list[str]:
    cpu = cpu_work(parts)
    pages_core_h, validity_core_s, harness_core_h = cpu["pages_core_h"], cpu["validity_core_s"], cpu["harness_core_h"]
    out = ["### CPU work around the model, for 1 million pages\n"]
    w = out.append
    w("| step | rate (measured) | core-hours | on 64 cores |")
    w("|---|---|---|---|")
    w(
        f"| pages job: read record + extract | {PAGES_PER_CPU_S} pages/CPU-s | {pages_core_h:.1f} | {pages_core_h / 64 * 60:.0f} min |"
    )
    w(
        f"| validity, human + one model markup per page | {fmt(VALIDITY_MARKUPS_PER_CPU_S)} markups/CPU-s | "
        f"{validity_core_s / 3600:.2f} | {validity_core_s / 64:.0f} s |"
    )
    w(
        f"| evaluation harness, {cpu['requests_per_page']:.0f} model requests per page | {HARNESS_CPU_MS_PER_REQUEST} CPU-ms/request | "
        f"{harness_core_h:.1f} | {harness_core_h / 64 * 60:.0f} min |"
    )
    w("")
    w(f"The harness figure: {HARNESS_MEASURED} (benchmarks/evaluate_throughput.py); validity is part of it.\n")
    return out


def tokens_section(parts: dict) -> list[str]:
    out = ["### Evaluation: tokens per page\n"]
    w = out.append
    w(
        f"From the measured runs, per page: {parts['text_requests']:.1f} requests about the text (both markups' "
        f"factuality questions) and {parts['compliance_requests']:.1f} compliance requests (no text) that the engine "
        f"serves, {parts['cache_hits']:.0f} more answers from the request cache. A text request is the text and "
        f"{parts['text_fixed']:.0f} tokens of instructions, fences and question; the engine processes the text "
        f"whole {parts['text_reads']:.1f} times a page (once per instruction prefix) and otherwise a "
        f"{parts['text_tail']:.0f}-token tail per request; a compliance request is {parts['compliance_sent']:.0f} "
        f"tokens, {parts['compliance_tail']:.0f} of them not cached (the property's definition is shared only by "
        f"claims of one property). A generation request is {parts['gen_fixed']:.0f} tokens of instructions, "
        f"properties and example plus the text. The model against each measured page (its own request counts, "
        f"the compliance requests split evenly):\n"
    )
    w(
        "| page | judge text tokens | text requests | judge prompt measured / model | judge processed measured / model "
        "| generation prompt measured / model |"
    )
    w("|---|---|---|---|---|---|")
    c_asked, c_sent, c_uncached = EVAL_COMPLIANCE_MEASURED
    for m in EVAL_MEASURED:
        one = measured_page(parts, m)
        tok = page_tokens(m["judge_text_tokens"], m["gen"][1], one)
        gen = page_tokens(m["gen_text_tokens"], m["gen"][1], one)["gen_prompt"]
        asked, sent, uncached = m["text_requests"]
        w(
            f"| {m['page']} | {fmt(m['judge_text_tokens'])} | {asked} | "
            f"{fmt(sent + c_sent / len(EVAL_MEASURED))} / {fmt(tok['judge_prompt'])} | "
            f"{fmt(uncached + c_uncached / len(EVAL_MEASURED))} / {fmt(tok['judge_uncached'])} | "
            f"{fmt(m['gen'][0])} / {fmt(gen)} |"
        )
    w("")
    w(
        "| page text tokens | markup tokens generated | prompt tokens sent | processed (not cached) | cached share | generated tokens |"
    )
    w("|---|---|---|---|---|---|")
    for t in PAGE_TOKENS_SCENARIOS:
        tok = page_tokens(t, GEN_OUTPUT_SCENARIO[t], parts)
        sent = tok["judge_prompt"] + tok["gen_prompt"]
        w(
            f"| {fmt(t)} | {GEN_OUTPUT_SCENARIO[t]} | {fmt(sent)} | {fmt(tok['prefill'])} | "
            f"{1 - tok['prefill'] / sent:.0%} | {tok['decode']} |"
        )
    w("")
    return out


def gpu_section(parts: dict) -> list[str]:
    out = ["### Evaluation of 1 million pages with an 8B model\n"]
    w = out.append
    w(
        f"Assumed per GPU: prefill {fmt(PREFILL_TOKENS_PER_S)} tokens/s (H100 and H200); decode "
        f"{fmt(DECODE_TOKENS_PER_S['H100'])} tokens/s (H100), {fmt(DECODE_TOKENS_PER_S['H200'])} (H200).\n"
    )
    w(
        "| page text tokens | GPU | GPU-s per page | pages/hour/GPU | GPU-hours | 8-GPU nodes for 24 h | hours on one 8-GPU node | GPU-hours without prefix reuse |"
    )
    w("|---|---|---|---|---|---|---|---|")
    for t in PAGE_TOKENS_SCENARIOS:
        tok = page_tokens(t, GEN_OUTPUT_SCENARIO[t], parts)
        nocache_tok = page_tokens(t, GEN_OUTPUT_SCENARIO[t], parts, shared_prefix=False)
        for gpu in ("H100", "H200"):
            s = gpu_seconds(tok, gpu)
            gpu_h = s * EVAL_PAGES / 3600
            nocache = gpu_seconds(nocache_tok, gpu) * EVAL_PAGES / 3600
            w(
                f"| {fmt(t)} | {gpu} | {s:.3f} | {fmt(3600 / s)} | {fmt(gpu_h)} | "
                f"{math.ceil(gpu_h / 24 / GPUS_PER_NODE)} | {gpu_h / GPUS_PER_NODE:.1f} | {fmt(nocache)} |"
            )
    w("")
    return out


def goal_section(parts: dict, t_goal: int = 1_000) -> list[str]:
    budget_ms = GOAL_H200_HOURS * 3600 / EVAL_PAGES * 1000
    target = judge_at_targets(parts)
    page = goal_pages(parts, t_goal)
    out = [f"### Against the goal: {GOAL_H200_HOURS} H200-hours per million pages\n"]
    w = out.append
    w(
        f"The goal leaves {budget_ms:.0f} ms of one H200 per page. At {fmt(t_goal)}-token pages, with the assumed "
        f"rates (prefill {fmt(PREFILL_TOKENS_PER_S)}, decode {fmt(DECODE_TOKENS_PER_S['H200'])} tokens/s):\n"
    )
    w(
        "| the GPU's work per page | prefill tokens | generated tokens | H200-ms per page | H200-hours per million pages | against the goal |"
    )
    w("|---|---|---|---|---|---|")
    for what, tok in (
        ("generation and the shipped judge (measured)", page["shipped"]),
        ("the same, the text read once per page (one instruction prefix for every text question)", page["read_once"]),
        (
            f"generation and a judge at issue 42's targets ({TARGET_REQUESTS_PER_TRIPLE} requests and "
            f"{TARGET_UNCACHED_PER_TRIPLE} uncached prompt tokens per triple on the measured pages: "
            f"{target['text_tail']:.0f}-token tails, the text read once)",
            page["at_targets"],
        ),
        ("generation alone (no judge)", page["gen_only"]),
        ("the shipped judge alone", page["judge_only"]),
    ):
        ms = gpu_seconds(tok, "H200") * 1000
        w(
            f"| {what} | {fmt(tok['prefill'])} | {fmt(tok['decode'])} | {ms:.0f} | {fmt(ms * EVAL_PAGES / 3.6e6)} | "
            f"{ms / budget_ms:.1f}x |"
        )
    w("")
    return out + goal_conclusions(parts, page)


def goal_conclusions(parts: dict, page: dict[str, dict]) -> list[str]:
    """What the goal's table means (``page``: ``goal_pages``), the requests per second it takes,
    and the measured prefix reuse."""
    shipped = page["shipped"]
    h_shipped, h_target = h200_hours(shipped), h200_hours(page["at_targets"])
    h_gen, h_once = h200_hours(page["gen_only"]), h200_hours(page["read_once"])
    prefill_share = shipped["prefill"] / PREFILL_TOKENS_PER_S / gpu_seconds(shipped, "H200")
    per_page = parts["text_requests"] + parts["compliance_requests"] + 1
    return [
        f"Generation with the shipped judge needs {fmt(h_shipped)} H200-hours ({h_shipped / GOAL_H200_HOURS:.1f}x "
        f"the goal), {prefill_share:.0%} of it prefill. Reading the text once per page takes "
        f"{fmt(h_shipped - h_once)} off; a judge at issue 42's targets would bring the whole to {fmt(h_target)}, and "
        f"the generator alone costs {fmt(h_gen)} ({h_gen / GOAL_H200_HOURS:.1f}x): at the assumed rates the goal is "
        f"out of reach for an 8B generator whatever the judge costs. What would reach it: throughput "
        f"{h_target / GOAL_H200_HOURS:.1f}x the assumed rates with a judge at the targets (the rates are public "
        f"figures and an assumed 40% utilisation, not measured here: `vllm bench serve` on the GPU with the "
        f"FP8 weights is the first measurement to make), or a smaller model for either role (prefill cost is "
        f"proportional to the parameters: {MODEL_PARAMS / 1e9:.1f}B here).\n",
        f"Requests: {per_page:.0f} per page that the engine serves (verdicts of both markups and one generation per "
        f"chunk), "
        f"{fmt(per_page * EVAL_PAGES / 1e6, 1)} million for the million pages, "
        f"{fmt(per_page * EVAL_PAGES / (24 * 3600))} per second to finish in 24 hours.\n",
        f"Prefix reuse measured on the same claims (experiments/factuality_prefix): {fmt(SHARED_PREFIX_TOKENS)} prompt "
        f"tokens processed against {fmt(PAPER_LAYOUT_TOKENS)} in the paper's layout "
        f"({SHARED_PREFIX_TOKENS / PAPER_LAYOUT_TOKENS:.2f}x).",
    ]


def tables() -> str:
    """docs/capacity.md's generated block: one Markdown section per question, from the measured
    inputs and the cost model above."""
    cs, parts = csets_model(), prompt_parts()
    sections = (
        csets_fit_section(cs),
        csets_release_section(cs),
        cpu_section(parts),
        tokens_section(parts),
        gpu_section(parts),
        goal_section(parts),
    )
    return "\n".join(line for section in sections for line in section)


# ---- measuring an evaluate run -----------------------------------------------------------------


def _fenced(messages: list[dict]) -> str | None:
    """The page text a request carries: the last text between the page markers after the system
    message (which names the markers; few-shot examples come before the page), or None."""
    from udfs.agents.prompts import PAGE_CLOSE, PAGE_OPEN

    content = "\n".join(m["content"] for m in messages if m["role"] != "system")
    head, sep, rest = content.rpartition(PAGE_OPEN)
    return rest.partition(PAGE_CLOSE)[0].strip("\n") if sep else None


def _holds(page: str, text: str, width: int = 40) -> bool:
    """Whether most of ``text`` (a chunk of the page, or the generator's cut of it, which marks its
    cuts with "...") is in ``page``: more than half of its ``width``-character pieces are."""
    pieces = [text[i : i + width] for i in range(0, max(1, len(text) - width + 1), width // 2)]
    return sum(p in page for p in pieces) * 2 > len(pieces)


def measure(out: str | Path, count_tokens, prompts_dir: str | None = None) -> dict:
    """The inputs of the token model (``EVAL_MEASURED``, ``EVAL_COMPLIANCE_MEASURED``,
    ``EVAL_CACHE_HITS_MEASURED``) read off a finished ``jobs/evaluate.py`` run into ``out`` from an
    empty request cache: the cache holds one row per request the engine served, with its usage.

    A request is told apart by its system message: the generator's, compliance's (no page text) or
    another that fences a page text (the factuality and extract questions). A page-text request
    belongs to the page whose ``judge_text`` holds the text it fences (a generation request: whose
    ``text``); it read the text whole when its uncached tokens exceed the text's
    (``count_tokens``: the served model's tokenizer). Raises where a row belongs to no page or to
    several, or where the rows' sums are not the ``scores`` table's ``verdict_*`` and
    ``generation_*`` columns: the run then did not start from an empty cache, or shares it."""
    import json
    import sqlite3

    import pyarrow.parquet as pq

    from udfs.agents.prompts import load_prompt

    out = Path(out)
    run = json.loads((out / "scores" / "_run.json").read_text())
    scores = pq.read_table(out / "scores").to_pylist()
    urls = sorted({r["page_url"] for r in scores})
    pages: dict[str, dict] = {}
    for path in run["inputs"]["rows_per_file"]:
        for r in pq.read_table(path, columns=["page_url", "judge_text", "text"]).to_pylist():
            if r["page_url"] in urls:
                pages[r["page_url"]] = r
    if sorted(pages) != urls:
        raise ValueError(f"{out}: pages of the scores not in the run's input: {sorted(set(urls) - set(pages))}")
    system = {
        agent: load_prompt(f"{agent}_system", prompts_dir).splitlines()[0] for agent in ("generation", "compliance")
    }
    per = {
        u: {
            "page": u,
            "judge_text_tokens": count_tokens(pages[u]["judge_text"] or pages[u]["text"] or ""),
            "gen_text_tokens": count_tokens(pages[u]["text"] or ""),
            "text_requests": [0, 0, 0],
            "text_reads": 0,
            "gen": [0, 0],
            "triples": tuple(
                sum(r["n_triples"] for r in scores if r["page_url"] == u and (r["source"] == "human") == human)
                for human in (True, False)
            ),
        }
        for u in urls
    }
    compliance = [0, 0, 0]
    db = sqlite3.connect(f"file:{out / 'cache' / 'llm.sqlite'}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT request, response FROM responses").fetchall()
    finally:
        db.close()
    for request, response in rows:
        messages = json.loads(request)["messages"]
        usage = json.loads(response)["usage"]
        prompt = usage["prompt_tokens"]
        uncached = prompt - ((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
        if messages[0]["content"].startswith(system["compliance"]):
            compliance = [compliance[0] + 1, compliance[1] + prompt, compliance[2] + uncached]
            continue
        generation = messages[0]["content"].startswith(system["generation"])
        text = _fenced(messages)
        column = "text" if generation else "judge_text"
        owners = [u for u in urls if text and _holds(pages[u][column] or pages[u]["text"] or "", text)]
        if len(owners) != 1:
            raise ValueError(f"{out}: a request served belongs to {len(owners)} of the run's pages: {text!r:.80}")
        page = per[owners[0]]
        if generation:
            page["gen"] = [page["gen"][0] + prompt, page["gen"][1] + usage["completion_tokens"]]
            continue
        n, p, c = page["text_requests"]
        page["text_requests"] = [n + 1, p + prompt, c + uncached]
        page["text_reads"] += uncached > page["judge_text_tokens"]
    served = sum(p["text_requests"][0] for p in per.values()) + compliance[0]
    sums = {k: sum(r[k] or 0 for r in scores) for k in scores[0] if k.startswith(("verdict_", "generation_"))}
    got = {
        "verdict_requests": served,
        "verdict_prompt_tokens": sum(p["text_requests"][1] for p in per.values()) + compliance[1],
        "verdict_uncached_prompt_tokens": sum(p["text_requests"][2] for p in per.values()) + compliance[2],
        "generation_prompt_tokens": sum(p["gen"][0] for p in per.values()),
        "generation_completion_tokens": sum(p["gen"][1] for p in per.values()),
    }
    # verdict_requests counts every answer the verdicts used; the request cache gave verdict_cache_hits
    want = {k: sums[k] for k in ("verdict_prompt_tokens", "generation_prompt_tokens", "generation_completion_tokens")}
    want["verdict_requests"] = sums["verdict_requests"] - sums["verdict_cache_hits"]
    want["verdict_uncached_prompt_tokens"] = sums["verdict_prompt_tokens"] - sums["verdict_cached_prompt_tokens"]
    if got != want:
        raise ValueError(f"{out}: the request cache's rows {got} are not the scores' {want}")
    triples = sum(sum(p["triples"]) for p in per.values())
    return {
        "pages": [{k: tuple(v) if isinstance(v, list) else v for k, v in p.items()} for p in per.values()],
        "compliance": tuple(compliance),
        "cache_hits": sums["verdict_cache_hits"],
        "triples": triples,
        "sent_per_triple": served / triples,
        "uncached_per_triple": got["verdict_uncached_prompt_tokens"] / triples,
    }


DOC = PROJECT_ROOT / "docs" / "capacity.md"
BEGIN, END = "<!-- tables: benchmarks/capacity.py -->", "<!-- end of tables -->"


def update_doc(path: Path = DOC) -> None:
    """Replace the generated block of docs/capacity.md with the current tables."""
    text = path.read_text()
    head, sep, rest = text.partition(BEGIN)
    _, sep2, tail = rest.partition(END)
    if not (sep and sep2):
        raise SystemExit(f"{path}: markers {BEGIN!r} and {END!r} not found")
    path.write_text(f"{head}{BEGIN}\n{tables()}\n{END}{tail}")


def main(argv: list[str] | None = None) -> int:
    """``benchmarks/capacity.py``: print the tables, or write them into docs/capacity.md."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--update-doc", action="store_true", help=f"write the tables into {DOC} instead of printing them")
    ap.add_argument(
        "--measure",
        metavar="OUT",
        help="print the token model's measured inputs (EVAL_MEASURED and the rest) read off a finished "
        "jobs/evaluate.py run into OUT that started from an empty request cache; the served model's "
        "tokenizer counts the page texts",
    )
    ap.add_argument("--base-url", help="the served model for --measure (default: as jobs/evaluate.py resolves it)")
    args = ap.parse_args(argv)
    if args.measure:
        from pprint import pformat

        from udfs.llm.chunking import ServedTokenizer
        from udfs.llm.serving.config import client_base_url

        tokenizer = ServedTokenizer(client_base_url(args.base_url))
        got = measure(args.measure, lambda text: len(tokenizer.token_bytes(text)) if text else 0)
        print(f"# {args.measure}, tokens by {tokenizer.kind}")
        print(f"EVAL_MEASURED = {pformat(got['pages'], sort_dicts=False)}")
        print(f"EVAL_COMPLIANCE_MEASURED = {got['compliance']}")
        print(f"EVAL_CACHE_HITS_MEASURED = {got['cache_hits']}")
        print(
            f"# {got['triples']} triples: {got['sent_per_triple']:.2f} requests sent and "
            f"{got['uncached_per_triple']:.0f} uncached prompt tokens per triple"
        )
    elif args.update_doc:
        update_doc()
        print(f"updated {DOC}")
    else:
        print(tables())
    return 0
