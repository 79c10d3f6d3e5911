"""The flags that say which model endpoint a job calls and where its answers are cached, one home
for every job that asks a model (``jobs/evaluate.py``, ``jobs/agents_bench.py``): none of them
changes an answer, so none is a setting of ``conf/pipeline.toml``."""

from __future__ import annotations

import argparse
import os


def add_endpoint_arguments(p, *, overwrite_help: str) -> None:
    """``--base-url``, ``--api-key``, ``--cache`` and ``--overwrite`` on parser (or group) ``p``."""
    p.add_argument(
        "--base-url",
        default="",
        help="OpenAI-compatible endpoint; default: $OPENAI_BASE_URL, else conf/serving.toml's; serve://APP/v1 "
        "calls the Ray Serve app APP through its deployment handle, without Serve's HTTP proxy",
    )
    p.add_argument(
        "--api-key",
        default="",
        help="bearer token for a hosted endpoint; default $OPENAI_API_KEY; never written to the run record or logs",
    )
    p.add_argument(
        "--cache",
        default="",
        help="request cache (SQLite); default <output>/cache/llm.sqlite, or for a remote --output "
        "(s3://...) a local folder: $LLM4SCHEMA_STATE_DIR or ~/.cache/llm4schema, one per root",
    )
    p.add_argument("--overwrite", action=argparse.BooleanOptionalAction, default=False, help=overwrite_help)


def api_key(args) -> str:
    """The endpoint's key: ``--api-key``, else ``$OPENAI_API_KEY``, else none ("")."""
    return args.api_key or os.environ.get("OPENAI_API_KEY") or ""
