"""Prompt tokens the factuality agent makes the engine process per page: the shared-prefix layout
(instructions + page text first, the claim last) against the paper's one-call-per-triple layout
(the claim before the text), side by side on the same page and claims, against a running service.

    python -m udfs.llm.serving start            # or any OpenAI-compatible endpoint with prefix caching
    .venv/bin/python experiments/factuality_prefix/factuality_prefix.py --pages OUT/pages [--claims 6] [--url URL]

Prints, per layout: requests, prompt tokens sent, tokens served from the engine's prefix cache,
tokens processed (sent - cached), and seconds per verdict. No request cache, so every call is
really made; the paper's layout runs first so its prompts find no prefix of the other layout.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from udfs.agents import verdicts as agents
from udfs.llm.client import LLMClient
from udfs.runtime.config import load_config
from udfs.schemaorg.markup import parse_markup


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", required=True, help="a pages/ table (Parquet folder)")
    ap.add_argument("--url", default="http://127.0.0.1:8000/v1")
    ap.add_argument("--claims", type=int, default=6, help="distinct claims of the page's human markup")
    ap.add_argument("--page-url", default="", help="which page (default: the shortest non-empty text)")
    a = ap.parse_args()
    import pyarrow.parquet as pq

    rows = [r for r in pq.read_table(a.pages).to_pylist() if r.get("status") == "ok" and (r.get("text") or "").strip()]
    page = (
        next(r for r in rows if r["page_url"] == a.page_url) if a.page_url else min(rows, key=lambda r: len(r["text"]))
    )
    claims = list(dict.fromkeys(c for c in agents.claims_of(parse_markup(page["human_markup"])) if c))[: a.claims]
    client = LLMClient(a.url, timeout_s=900)
    conf = load_config().judge
    print(f"page {page['page_url']}: {len(page['text'])} chars of text, {len(claims)} claims")
    results = {}
    for layout in ("paper", "shared_prefix"):
        t0 = time.monotonic()
        judged = client.run(
            agents.judge_factuality(
                client,
                [page["text"]],
                claims,
                layout=layout,
                strategy=conf.strategy,
                threshold=conf.factuality_threshold,
                early_exit=False,
                gate=0.0,
            )
        )
        wall = time.monotonic() - t0
        sent = sum(j.prompt_tokens for j in judged)
        cached = sum(j.cached_prompt_tokens for j in judged)
        results[layout] = {
            "requests": sum(j.requests for j in judged),
            "prompt_tokens": sent,
            "cached_prompt_tokens": cached,
            "processed_prompt_tokens": sent - cached,
            "s_per_verdict": round(wall / max(1, len(claims)), 2),
            "scores": [round(j.score, 3) if j.score is not None else None for j in judged],
        }
        print(layout, json.dumps(results[layout]))
    p, s = results["paper"]["processed_prompt_tokens"], results["shared_prefix"]["processed_prompt_tokens"]
    print(f"processed prompt tokens per page: paper layout {p}, shared prefix {s} ({s / p:.2f}x)" if p else "")
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
