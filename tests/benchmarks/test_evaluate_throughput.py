"""benchmarks/evaluate_throughput.py at a tiny size: the stub engine (``testkit.stub_engine``)
answers the real client in both engines' shapes, copies of a page (``testkit.synthetic_pages``)
share no claim, and the benchmark's run reconciles (every verdict the job recorded is one the stub
answered, every page is scored, files per table within the bound). No timing is asserted."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from testkit import synthetic_pages
from testkit.stub_engine import running_stub

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "evaluate_throughput.py"


def test_the_stub_answers_the_clients_requests_in_both_engines_shapes():
    import httpx

    from udfs.agents.generation import GENERATION_SCHEMA
    from udfs.llm.chunking import ServedTokenizer
    from udfs.llm.client import LLMClient

    text = "Copy 7.\nThe Owl Music Parlor, 497 Rogers Ave — Brooklyn, NY.\n\n  Doors 19:30 ünd später."
    with running_stub() as stub:
        client = LLMClient(stub.url, max_concurrency=8)
        try:
            v = client.verdict_sync([{"role": "user", "content": f"<<<PAGE_TEXT\n{text}\nPAGE_TEXT>>>\n\nIs it?"}])
            assert v.error is None and v.answer in ("yes", "no") and 0 < v.score < 1
            again = client.verdict_sync([{"role": "user", "content": f"<<<PAGE_TEXT\n{text}\nPAGE_TEXT>>>\n\nIs it?"}])
            assert again.score == v.score  # deterministic
            assert again.completion.cached_prompt_tokens > 0  # the shared prefix came before
            prompt = (
                "Target types: MusicEvent\n\nProperties usable on MusicEvent (inherited ones included): "
                f"description, location, name, startDate\n\n<<<PAGE_TEXT\n{text}\nPAGE_TEXT>>>"
            )
            g = client.chat_sync([{"role": "user", "content": prompt}], json_schema=GENERATION_SCHEMA)
            assert g.error is None and g.parsed["@type"] == "MusicEvent" and "name" in g.parsed
        finally:
            client.close()
        tok = ServedTokenizer(stub.url)
        try:
            assert b"".join(tok.token_bytes(text)) == text.encode()
        finally:
            tok.close()
        root = stub.url[: -len("/v1")]
        vllm = httpx.post(f"{root}/tokenize", json={"prompt": text, "return_token_strs": True}).json()
        assert "".join(vllm["token_strs"]) == text and vllm["count"] == len(vllm["tokens"])
        chat = httpx.post(f"{root}/tokenize", json={"messages": [{"role": "user", "content": text}]}).json()
        assert chat["count"] > vllm["count"] and chat["max_model_len"] > 0
        assert stub.engine.counts["verdict"] == 2 and stub.engine.counts["generation"] == 1


def _leaves(doc, key=""):
    if isinstance(doc, dict):
        return {leaf for k, v in doc.items() if k not in ("@context", "@type") for leaf in _leaves(v, k)}
    if isinstance(doc, list):
        return {leaf for v in doc for leaf in _leaves(v, key)}
    return {(key, json.dumps(doc))}


def test_copies_of_a_page_share_no_claim():
    base = synthetic_pages.base_pages()
    for page in base:
        a, b = synthetic_pages.synthetic_pages(2, [page])
        assert a["page_url"] != b["page_url"] and a["text"] != b["text"]
        shared = _leaves(json.loads(a["human_markup"])) & _leaves(json.loads(b["human_markup"]))
        # only empty values stay the same (null: no claim)
        assert all(v == "null" for _, v in shared), (page["page_url"], shared)


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    work = tmp_path_factory.mktemp("throughput")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--work", str(work), "--json", str(work / "runs.json")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return json.loads((work / "runs.json").read_text())


def test_quick_run_reconciles(quick):
    (run,) = quick["runs"]
    assert run["status"] == "ok", run["log_tail"]
    assert run["pages"] == 20
    # every page scored, one scores row per page and source (human, one generated markup)
    assert run["pages_scored"] == 20 and run["score_rows"] == 40
    assert run["counters"]["evaluated"] == 20 and run["counters"]["failed"] == 0
    # no two copies ask the same request, so the cache answers none: every verdict the scores
    # record is one the stub answered, and one generation per page
    assert run["verdict_errors"] == 0, run["log_tail"]
    assert run["verdicts"] > 0 and run["verdicts"] == run["verdicts_asked"]
    assert run["generations"] == 20
    assert run["cpu_s"] > 0 and run["peak_rss_mb"] > 0
    assert quick["findings"]["cpu_s_per_verdict"] > 0


def test_quick_run_files_within_the_bound(quick):
    (run,) = quick["runs"]
    job_help = subprocess.run(
        [sys.executable, str(ROOT / "jobs" / "evaluate.py"), "--help"], capture_output=True, text=True, cwd=ROOT
    ).stdout
    if "--max-in-flight" not in set(re.findall(r"(--[a-z][a-z0-9-]+)", job_help)):
        pytest.xfail("jobs/evaluate.py writes one part per page until issue 16's streaming job lands")
    assert all(n <= run["file_bound"] for n in run["files"].values()), run["files"]
