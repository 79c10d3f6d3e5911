"""Serving benchmark: Ray Serve against the bare engine, and prefix reuse for yes/no questions.

1. The same short chat requests, through the client, against (a) the embedded Serve application
   and (b) the bare llama.cpp engine's own OpenAI-compatible HTTP server (same GGUF, same threads),
   in one run, alternating: requests/s, completion tokens/s, and the overhead ratio.
2. N yes/no questions about one page text (the page first, the question last) through Serve,
   with llama.cpp's prompt cache on (the page prefix is reused) and off (``cache_prompt: false``):
   wall time, and prompt tokens the engine actually processed.

    .venv/bin/python benchmarks/serving.py [--requests 8] [--questions 6] [--concurrency 1]

Both engines run on the same 2 cores; only one is busy at a time.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from cluster.local.procs import free_port
from udfs.llm.client import LLMClient
from udfs.runtime.cli import ArgumentParser

ROOT = Path(__file__).resolve().parent.parent

PAGE = ROOT / "data" / "html" / "extruct-samples" / "websites" / "microdata-with-description.html"
TOPICS = [
    "anvils",
    "recipes",
    "rivers",
    "violins",
    "bridges",
    "tea",
    "comets",
    "maps",
    "bees",
    "ferries",
    "clocks",
    "lighthouses",
]
QUESTIONS = [
    "Does the page describe a product?",
    "Does the page mention a price?",
    "Is the page about a recipe?",
    "Does the page name a brand?",
    "Does the page contain customer reviews?",
    "Is the page about a film?",
    "Does the page give a product rating?",
    "Is the page written in French?",
    "Does the page mention shipping?",
    "Is the page about a sports event?",
]


def page_text(chars: int) -> str:
    import html2text

    h = html2text.HTML2Text()
    h.ignore_links = True
    h.ignore_images = True
    return h.handle(PAGE.read_text(encoding="utf-8", errors="replace"))[:chars]


def run_chats(url: str, model: str | None, prompts: list[str], max_tokens: int, concurrency: int) -> dict:
    client = LLMClient(url, model, max_concurrency=concurrency, timeout_s=600)
    t0 = time.monotonic()
    out = client.run(
        client.chat_many(
            [
                {
                    "messages": [{"role": "user", "content": p}],
                    "max_tokens": max_tokens,
                    "extra": {"cache_prompt": False},
                }
                for p in prompts
            ]
        )
    )
    wall = time.monotonic() - t0
    client.close()
    errors = [c.error for c in out if c.error]
    if errors:
        raise RuntimeError(f"{len(errors)} requests failed, first: {errors[0]}")
    tokens = sum(c.completion_tokens for c in out)
    return {
        "wall_s": round(wall, 2),
        "requests_per_s": round(len(out) / wall, 3),
        "completion_tokens_per_s": round(tokens / wall, 2),
        "completion_tokens": tokens,
        "prompt_tokens": sum(c.prompt_tokens for c in out),
    }


def run_questions(url: str, model: str, page: str, questions: list[str], reuse: bool) -> dict:
    client = LLMClient(url, model, timeout_s=900)
    sys_msg = {"role": "system", "content": "Answer the question about the page with yes or no."}
    t0 = time.monotonic()
    verdicts = [
        client.verdict_sync(
            [sys_msg, {"role": "user", "content": f"Page:\n{page}\n\nQuestion: {q}"}], extra={"cache_prompt": reuse}
        )
        for q in questions
    ]
    wall = time.monotonic() - t0
    client.close()
    errors = [v.error for v in verdicts if v.error]
    if errors:
        raise RuntimeError(f"{len(errors)} verdicts failed, first: {errors[0]}")
    prompt = sum(v.completion.prompt_tokens for v in verdicts)
    cached = sum(v.completion.cached_prompt_tokens for v in verdicts)
    return {
        "wall_s": round(wall, 2),
        "s_per_question": round(wall / len(questions), 2),
        "prompt_tokens": prompt,
        "processed_prompt_tokens": prompt - cached,
        "answers": [v.answer for v in verdicts],
        "scores": [round(v.score, 3) for v in verdicts],
    }


def arguments(argv):
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds per target")
    parser.add_argument("--questions", type=int, default=6)
    parser.add_argument("--page-chars", type=int, default=2500)
    parser.add_argument("--json", help="also write the figures here")
    return parser.parse_args(argv)


def bare_engine(emb):
    """The bare llama.cpp engine of the embedded model ``emb`` (same GGUF, context, slots and
    threads as the Serve replica), and the seconds it took to start."""
    import xllamacpp

    from udfs.llm.model_files import model_path

    params = xllamacpp.CommonParams()
    params.model.path = str(model_path(emb.model))
    params.n_ctx = emb.n_ctx
    params.n_parallel = emb.n_parallel
    params.cpuparams.n_threads = emb.n_threads
    params.cpuparams_batch.n_threads = emb.n_threads
    params.warmup = False
    params.verbosity = -1
    t1 = time.monotonic()
    bare = xllamacpp.Server(params)
    return bare, time.monotonic() - t1


def compare_engines(args, serve_url: str, bare_url: str, model_id: str) -> dict:
    """Both engines warmed, then ``--rounds`` alternating rounds of the same chats on each: per
    engine its wall time, requests and completion tokens per second and its rounds, and the
    Serve / bare ratios."""
    # Warm both (first-request costs are not the steady state).
    run_chats(serve_url, model_id, ["Say hi."], 2, 1)
    run_chats(bare_url, None, ["Say hi."], 2, 1)
    rounds = {"serve": [], "bare": []}
    for r in range(args.rounds):
        prompts = [f"Write one sentence about {TOPICS[(i + r) % len(TOPICS)]}." for i in range(args.requests)]
        for name, url, model in (("serve", serve_url, model_id), ("bare", bare_url, None)):
            rounds[name].append(run_chats(url, model, prompts, args.max_tokens, args.concurrency))
    figures = {}
    for name, runs in rounds.items():
        wall = sum(x["wall_s"] for x in runs)
        n = args.requests * len(runs)
        tokens = sum(x["completion_tokens"] for x in runs)
        figures[name] = {
            "wall_s": round(wall, 2),
            "requests_per_s": round(n / wall, 3),
            "completion_tokens_per_s": round(tokens / wall, 2),
            "rounds": runs,
        }
    figures["serve_over_bare_time_ratio"] = round(figures["serve"]["wall_s"] / figures["bare"]["wall_s"], 3)
    figures["serve_over_bare_tokens_per_s_ratio"] = round(
        figures["serve"]["completion_tokens_per_s"] / figures["bare"]["completion_tokens_per_s"], 3
    )
    return figures


def prefix_reuse(args, serve_url: str, model_id: str) -> dict:
    """``--questions`` yes/no questions about one page through Serve with the prompt cache on,
    then off: both runs and the speedup."""
    page = page_text(args.page_chars)
    questions = (QUESTIONS * 10)[: args.questions]
    # With reuse first: llama.cpp keeps the last prompt in its slot even when cache_prompt is
    # off, so the other order would hand the reuse run a warm page for free.
    with_reuse = run_questions(serve_url, model_id, page, questions, reuse=True)
    without = run_questions(serve_url, model_id, page, questions, reuse=False)
    return {
        "n": len(questions),
        "page_chars": len(page),
        "without_prefix_reuse": without,
        "with_prefix_reuse": with_reuse,
        "speedup": round(without["wall_s"] / with_reuse["wall_s"], 2),
        "same_answers": without["answers"] == with_reuse["answers"],
    }


def print_summary(figures: dict) -> None:
    print(json.dumps(figures, indent=2))
    s, b = figures["serve"], figures["bare"]
    q = figures["yes_no_questions"]
    print(
        f"\nServe: {s['requests_per_s']} req/s, {s['completion_tokens_per_s']} tok/s | "
        f"bare engine: {b['requests_per_s']} req/s, {b['completion_tokens_per_s']} tok/s | "
        f"Serve/bare wall-time ratio {figures['serve_over_bare_time_ratio']}"
    )
    print(
        f"{q['n']} yes/no questions on one page ({q['page_chars']} chars): "
        f"{q['without_prefix_reuse']['wall_s']} s without prefix reuse "
        f"({q['without_prefix_reuse']['processed_prompt_tokens']} prompt tokens processed), "
        f"{q['with_prefix_reuse']['wall_s']} s with it "
        f"({q['with_prefix_reuse']['processed_prompt_tokens']} processed): x{q['speedup']}"
    )


def main(argv=None) -> int:
    args = arguments(argv)

    import ray
    from ray import serve

    from udfs.llm.serving.config import load_serving_conf
    from udfs.llm.serving.process import run_app

    conf = load_serving_conf(overrides={"serving": {"port": free_port()}, "embedded": {"n_ctx": 4096}})
    (emb,) = conf.engine_section("embedded").models
    # Ray starts workers at niceness 15; the bare engine runs at the driver's. On a shared machine
    # that alone halves the replica's CPU share, so both run at the same niceness here.
    os.environ.setdefault("RAY_worker_niceness", "0")
    t0 = time.monotonic()
    ray_temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        _temp_dir=ray_temp,
        runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}},
    )
    serve_url = run_app(conf, wait_s=600)
    serve_ready = time.monotonic() - t0
    bare, bare_ready = bare_engine(emb)
    bare_url = bare.listening_address.rstrip("/") + "/v1"

    figures: dict = {
        "serve_ready_s": round(serve_ready, 1),
        "bare_ready_s": round(bare_ready, 1),
        "requests": args.requests,
        "max_tokens": args.max_tokens,
        "concurrency": args.concurrency,
    }
    try:
        figures |= compare_engines(args, serve_url, bare_url, emb.model_id)
        del bare  # free its memory and threads before the long prompts
        figures["yes_no_questions"] = prefix_reuse(args, serve_url, emb.model_id)
    finally:
        serve.shutdown()
        ray.shutdown()
        shutil.rmtree(ray_temp, ignore_errors=True)

    print_summary(figures)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
