"""One contract, every engine the project supports, driven through the same client and agents:

* ``embedded``: the Ray Serve app with llama.cpp (``udfs.llm.serving``, conftest's ``service``);
* ``keyed``: a plain OpenAI-compatible server that requires an API key: llama.cpp's own HTTP
  server (through xllamacpp, the 0.5B GGUF), in a process of its own;
* ``vllm``: Ray Serve LLM (``LLMConfig`` / ``build_openai_app``, the shape of
  conf/serving-gpu.toml) around vLLM's CPU build and the 0.5B model, started from the vLLM venv
  (``LLM4SCHEMA_VLLM_PYTHON``, set by ``make test-vllm``) by ``cluster/vllm_cpu.py --hold``.
  Marked ``vllm``: the main suite deselects it, ``make test-vllm`` runs it; without the vLLM
  venv it fails when ``LLM4SCHEMA_REQUIRE_VLLM=1`` (CI), else it is skipped.

Each engine starts once per session. What the session measured (start-up seconds, peak resident
memory of the service's process tree, seconds per verdict) is written to
``out/engine-contract.json``, one entry per engine, for the README's figures.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pyarrow.parquet as pq
import pytest

from cluster.local.procs import cmdline, descendants, free_port
from tests.conftest import DATA, ROOT, SERVED_MODEL_ID, demo_pages_table
from udfs.llm.chunking import ServedTokenizer, chunk_text, token_strs_to_bytes
from udfs.llm.client import LLMClient, LLMError, first_model

FIGURES = ROOT / "out" / "engine-contract.json"
SMALL_GGUF = "qwen2.5-coder-0.5b-instruct-q4_k_m"
KEY = "sk-llm4schema-contract-0123456789"
N_CTX = 2048
PRODUCT_PAGE = DATA / "html" / "extruct-samples" / "schema.org" / "product.html"
# Questions with a known answer (three true, three false), asked one at a time for seconds per verdict.
# Chosen so that even the 0.5B coder model, whose bfloat16 logits on vLLM's CPU build resolve a
# yes/no log-odds only to about 0.1, answers each with a margin far above that step: true ones
# score 0.75-0.9 and false ones 0.35-0.5 there (nearer facts such as "Is Berlin the capital of
# Spain?" score within one step of their negations and flip between machines).
FACTS = [
    ("Is Python a programming language?", True),
    ("Is JavaScript a programming language?", True),
    ("Is Paris a city in France?", True),
    ("Is Python a kind of cheese?", False),
    ("Is a banana a programming language?", False),
    ("Is HTML a database?", False),
]
SYSTEM = {"role": "system", "content": "Answer the question with yes or no."}


@dataclass
class Engine:
    name: str
    url: str  # the /v1 URL
    model: str
    api_key: str | None
    tokenizer_kind: str
    # structured_outputs.choice is honoured (llama.cpp's own server ignores the field)
    constrains_choice: bool
    figures: dict = field(default_factory=dict)

    def client(self, model: str | None = None, **kw) -> LLMClient:
        return LLMClient(self.url, model or self.model, api_key=self.api_key, timeout_s=600, **kw)


class PeakRss:
    """Samples the resident memory of a process tree every half second; ``peak`` in bytes."""

    def __init__(self, pids: Callable[[], list[int]]):
        self.pids, self.peak = pids, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            total = 0
            for pid in self.pids():
                try:
                    rss = Path(f"/proc/{pid}/statm").read_text().split()[1]
                except (OSError, IndexError):
                    continue
                total += int(rss) * os.sysconf("SC_PAGE_SIZE")
            self.peak = max(self.peak, total)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


@pytest.fixture(scope="session")
def figures():
    """Per-engine figures of this session, merged into out/engine-contract.json at its end (the main
    suite and the vLLM run are two sessions of one ``make test``)."""
    found: dict[str, dict] = {}
    yield found
    if found:
        FIGURES.parent.mkdir(parents=True, exist_ok=True)
        old = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
        FIGURES.write_text(json.dumps({**old, **found}, indent=2, sort_keys=True) + "\n")


@pytest.fixture(scope="session")
def embedded_engine(request, figures):
    def replicas() -> list[int]:
        # the Serve replicas below this process: where the model lives (not the other tests' Ray
        # workers, not pytest itself)
        return [p for p in descendants(os.getpid()) if "ServeReplica" in cmdline(p)]

    rss = PeakRss(replicas)
    url = request.getfixturevalue("service")
    eng = Engine(
        "embedded",
        url,
        SERVED_MODEL_ID,
        None,
        "served:llama.cpp",
        True,
        figures=figures.setdefault("embedded", {"model": SERVED_MODEL_ID}),
    )
    # the suite's service started once, for whichever test asked first: its own start time
    eng.figures["start_s"] = getattr(request.config, "service_start_s", None)
    yield eng
    eng.figures["peak_rss_gb"] = round(rss.stop() / 2**30, 2)


KEYED_SERVER = r"""
import sys, xllamacpp
from udfs.llm.model_files import model_path
p = xllamacpp.CommonParams()
p.model.path = str(model_path(sys.argv[1]))
p.n_ctx, p.port = int(sys.argv[2]), int(sys.argv[3])
p.cpuparams.n_threads = p.cpuparams_batch.n_threads = 2
p.api_keys = [sys.stdin.readline().strip()]
p.model_alias = {sys.argv[4]}
p.warmup, p.verbosity = False, -1
server = xllamacpp.Server(p)
print(server.listening_address, flush=True)
sys.stdin.read()  # serve until the test closes stdin
"""


@pytest.fixture(scope="session")
def keyed_engine(figures):
    """llama.cpp's own OpenAI-compatible server, requiring KEY (sent on stdin, never on a command line)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", KEYED_SERVER, SMALL_GGUF, str(N_CTX), str(free_port()), "qwen05"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    rss = PeakRss(lambda: [proc.pid])
    try:
        proc.stdin.write(KEY + "\n")
        proc.stdin.flush()
        url = proc.stdout.readline().strip().rstrip("/")
        assert url.startswith("http://"), f"the keyed server did not start (exit {proc.poll()})"
        eng = Engine(
            "keyed",
            url + "/v1",
            "qwen05",
            KEY,
            "served:llama.cpp",
            False,
            figures=figures.setdefault("keyed", {"model": SMALL_GGUF}),
        )
        eng.figures["start_s"] = round(time.monotonic() - t0, 1)
        yield eng
    finally:
        proc.stdin.close()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if "eng" in locals():
            eng.figures["peak_rss_gb"] = round(rss.stop() / 2**30, 2)


@pytest.fixture(scope="session")
def vllm_engine(figures, tmp_path_factory):
    """Ray Serve LLM with vLLM (conf/serving.toml [vllm]), started once from the vLLM venv."""
    py = os.environ.get("LLM4SCHEMA_VLLM_PYTHON", "")
    if not py or not Path(py).is_file():
        why = f"no vLLM venv (LLM4SCHEMA_VLLM_PYTHON={py!r}); make test-vllm builds one"
        if os.environ.get("LLM4SCHEMA_REQUIRE_VLLM") == "1":
            pytest.fail(why)
        pytest.skip(why)
    from udfs.llm.serving.config import load_serving_conf

    conf = load_serving_conf().vllm
    log = tmp_path_factory.mktemp("vllm") / "service.log"
    t0 = time.monotonic()
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [py, str(ROOT / "cluster" / "vllm_cpu.py"), "--hold", "--port", str(free_port())],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            cwd=ROOT,
            start_new_session=True,
            env={**os.environ, "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0"},
        )
    rss = PeakRss(lambda: [proc.pid, *descendants(proc.pid)])
    try:
        line = proc.stdout.readline()
        if not line.startswith("{"):
            proc.wait(60)
            pytest.fail(
                f"the vLLM service exited ({proc.returncode}); {log} ends:\n" + log.read_text(errors="replace")[-3000:]
            )
        ready = json.loads(line)
        eng = Engine(
            "vllm",
            ready["url"],
            conf.model_id,
            None,
            "served:vllm",
            True,
            figures=figures.setdefault("vllm", {"model": conf.model_id}),
        )
        eng.figures["start_s"] = round(time.monotonic() - t0, 1)
        yield eng
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the group this fixture started
            proc.wait()
        if "eng" in locals():
            eng.figures["peak_rss_gb"] = round(rss.stop() / 2**30, 2)


ENGINES = [
    pytest.param("embedded", marks=pytest.mark.model),
    pytest.param("keyed", marks=pytest.mark.model),
    pytest.param("vllm", marks=[pytest.mark.vllm, pytest.mark.slow]),
]


@pytest.fixture(params=ENGINES)
def engine(request) -> Engine:
    return request.getfixturevalue(f"{request.param}_engine")


def ask(text):
    return [{"role": "user", "content": text}]


# ---- the contract --------------------------------------------------------------------------------


def test_models_lists_the_served_model(engine):
    assert first_model(engine.url, timeout_s=30, api_key=engine.api_key) == engine.model
    client = engine.client(model=None)
    c = client.chat_sync(ask("What is the capital of France? One word."), max_tokens=4)
    assert c.ok, c.error
    assert "Paris" in c.text and client.model == engine.model
    client.close()


def test_chat_answers_with_a_json_schema(engine):
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "birth_year": {"type": "integer"}},
        "required": ["name", "birth_year"],
        "additionalProperties": False,
    }
    client = engine.client()
    c = client.chat_sync(
        ask("Ada Lovelace, born 1815. Give her name and birth year as JSON."), json_schema=schema, max_tokens=40
    )
    assert c.ok, c.error
    assert c.parsed["birth_year"] == 1815 and "Lovelace" in c.parsed["name"]
    client.close()


def test_yes_no_verdicts_from_logprobs(engine):
    client = engine.client()
    verdicts = [client.verdict_sync([SYSTEM, *ask(q)]) for q, _ in FACTS]
    for v in verdicts:
        assert v.error is None and 0.0 <= v.score <= 1.0 and v.answer in ("yes", "no")
        assert v.p_yes + v.p_no > 0
        if engine.constrains_choice:
            assert v.completion.text in ("yes", "no")  # the choice constraint held
    true = [v.score for v, (_, fact) in zip(verdicts, FACTS) if fact]
    false = [v.score for v, (_, fact) in zip(verdicts, FACTS) if not fact]
    # even the 0.5B model ranks every one of these facts above every false one
    assert min(true) > max(false), (true, false)
    engine.figures["s_per_verdict"] = round(sum(v.completion.latency_s for v in verdicts) / len(verdicts), 2)
    client.close()


def test_served_tokenizer_chunks_a_page(engine):
    import html2text

    text = html2text.HTML2Text().handle(PRODUCT_PAGE.read_text()) + "\nCafé – 東京 😀 naïve"
    tok = ServedTokenizer(engine.url, api_key=engine.api_key, model=engine.model)
    assert tok.kind == engine.tokenizer_kind
    pieces = tok.token_bytes(text)
    assert b"".join(pieces) == text.encode()
    # the served tokenizer counts what the engine counts: the text alone is most of a chat prompt
    client = engine.client()
    c = client.chat_sync(ask(text), max_tokens=1)
    assert c.ok, c.error
    assert len(pieces) < c.prompt_tokens <= len(pieces) + 40
    chunks = chunk_text(text, tok, context_window=len(pieces) // 2 + 300, output_tokens=100, prompt_tokens=200)
    assert len(chunks) > 1 and chunks[0].text and chunks[-1].end_char == len(text)
    tok.close()
    client.close()


def test_prompt_prefix_is_reused(engine):
    page = (
        "ACME Executive Anvil. Sleeker than ACME's Classic Anvil, the Executive Anvil is perfect for "
        "the business traveler looking for something to drop from a height. "
    ) * 12
    client = engine.client()
    answers = [
        client.chat_sync([SYSTEM, *ask(f"Page:\n{page}\nQuestion: {q}")], max_tokens=1)
        for q in ("Is it an anvil?", "Is it for business travelers?")
    ]
    assert all(c.ok for c in answers), [c.error for c in answers]
    # the engine reports the shared page as cached prompt tokens on the second request
    assert answers[1].cached_prompt_tokens >= answers[1].prompt_tokens // 2
    assert client.stats.cached_prompt_tokens >= answers[1].cached_prompt_tokens
    client.close()


def test_an_unknown_model_is_a_clear_error(engine):
    client = engine.client(model="no-such-model")
    c = client.chat_sync(ask("Say OK."), max_tokens=2)
    assert not c.ok and "no-such-model" in c.error
    assert "not served" in c.error or "HTTP 404" in c.error
    assert client.stats.failures == 1
    client.close()


def test_a_prompt_over_the_context_window_fails_alone(engine):
    """One request over the context window is a clear error; the batch around it loses nothing."""
    client = engine.client()
    long = "anvil " * (N_CTX + 500)
    got = client.run(
        client.verdict_many(
            [
                {"messages": [SYSTEM, *ask(q)]}
                for q in ("Is Paris in France?", f"{long}\nIs this about anvils?", "Is Rome in Italy?")
            ]
        )
    )
    assert len(got) == 3 and got[0].error is None and got[2].error is None
    err = got[1].error
    assert err.startswith("HTTP 400") and ("context" in err or "length" in err), err
    assert got[1].completion.attempts == 1  # a 400 is not retried
    client.close()


# ---- hosted endpoints: the key goes out as a bearer token and nowhere else ------------------------


@pytest.mark.model
def test_the_key_is_required_and_read_from_the_environment(keyed_engine, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LLMError, match="refused the request .HTTP 401.*--api-key or OPENAI_API_KEY"):
        first_model(keyed_engine.url, timeout_s=30)
    anonymous = LLMClient(keyed_engine.url, keyed_engine.model)
    c = anonymous.chat_sync(ask("Say OK."), max_tokens=2)
    assert c.error.startswith("HTTP 401") and KEY not in c.error
    anonymous.close()
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert first_model(keyed_engine.url, timeout_s=30) == keyed_engine.model
    client = LLMClient(keyed_engine.url, keyed_engine.model)
    assert client.chat_sync(ask("Say OK."), max_tokens=2).ok
    assert ServedTokenizer(keyed_engine.url).kind == "served:llama.cpp"
    client.close()


@pytest.mark.model
def test_agents_bench_with_api_key_writes_the_key_nowhere(keyed_engine, examples_ground_truth, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", keyed_engine.url)  # no --base-url: the environment's endpoint
    out = tmp_path / "out"
    run = subprocess.run(
        [
            sys.executable,
            "jobs/agents_bench.py",
            "run",
            "--input",
            str(examples_ground_truth),
            "--output",
            str(out),
            "--limit",
            "2",
            "--seed",
            "7",
            "--api-key",
            KEY,
            "--log-level",
            "DEBUG",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert KEY not in run.stdout and KEY not in run.stderr
    written = [p for p in out.rglob("*") if p.is_file()]
    assert written and not [p for p in written if KEY.encode() in p.read_bytes()]
    record = json.loads(next(out.rglob("results/*/_run.json")).read_text())
    assert record["argv"][record["argv"].index("--api-key") + 1] == "<redacted>"
    assert record["config"]["api_key"] == "<redacted>"
    verdicts = pq.read_table(next(out.rglob("results/*/verdicts"))).to_pylist()
    assert verdicts and all(v["model"] == keyed_engine.model for v in verdicts)


def test_an_endpoint_without_tokenize_falls_back_to_tiktoken():
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class NoTokenize(BaseHTTPRequestHandler):  # an endpoint with no /tokenize (a hosted API)
        def do_POST(self):
            self.send_error(404)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), NoTokenize)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        tok = ServedTokenizer(f"http://127.0.0.1:{server.server_port}/v1")
        text = "Café – 東京 😀 " * 50
        assert tok.kind == "local:tiktoken:cl100k_base"
        assert b"".join(tok.token_bytes(text)) == text.encode()
    finally:
        server.shutdown()


def test_vocabulary_strings_map_back_to_bytes():
    # byte-level BPE (Qwen, Llama 3): "Ġ" is the space byte, "Ã©" the two bytes of "é"
    assert token_strs_to_bytes(["Caf", "Ã©", "Ġis", "Ġopen"], "Café is open") == [
        b"Caf",
        "é".encode(),
        b" is",
        b" open",
    ]
    # a character split across tokens: bytes that are not text on their own
    assert token_strs_to_bytes(["æ", "Ŀ", "±"], "東") == [b"\xe6", b"\x9d", b"\xb1"]
    # SentencePiece: "▁" is a space, <0xNN> a raw byte
    assert token_strs_to_bytes(["▁hello", "<0xE2>", "<0x9C>", "<0x93>"], " hello✓") == [
        b" hello",
        b"\xe2",
        b"\x9c",
        b"\x93",
    ]
    with pytest.raises(ValueError, match="do not spell the text"):
        token_strs_to_bytes(["Hello"], "Goodbye")


# ---- whole jobs on the engine ---------------------------------------------------------------------


@pytest.fixture(scope="session")
def examples_ground_truth(tmp_path_factory) -> Path:
    """The agents benchmark's ground truth built from five real schema.org examples."""
    from tests.conftest import SCHEMAORG

    handful = ("#eg-0382", "#eg-0285", "#eg-0135", "#eg-0015", "#eg-0100")
    blocks = (SCHEMAORG / "schemaorg-all-examples.txt").read_text(encoding="utf-8").split("TYPES:")[1:]
    folder = tmp_path_factory.mktemp("gt")
    (folder / "examples.txt").write_text("".join("TYPES:" + b for b in blocks if b.split()[0] in handful))
    run = subprocess.run(
        [
            sys.executable,
            "jobs/agents_bench.py",
            "build",
            "--input",
            str(folder / "examples.txt"),
            "--output",
            str(folder),
            "--seed",
            "7",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return folder / "agents_bench" / "ground_truth"


@pytest.fixture(scope="session")
def demo_pages(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("pages") / "pages"
    folder.mkdir()
    pq.write_table(demo_pages_table(), folder / "part-0.parquet")
    return folder


JOB_ENGINES = [
    pytest.param("embedded", marks=pytest.mark.model),
    pytest.param("vllm", marks=[pytest.mark.vllm, pytest.mark.slow]),
]


@pytest.mark.parametrize("name", JOB_ENGINES)
def test_evaluate_and_agents_bench_run_whole_on_the_engine(name, request, demo_pages, examples_ground_truth, tmp_path):
    """jobs/evaluate.py --limit 1 and jobs/agents_bench.py run --limit 6, through their command
    lines: the tables have the schemas the code declares (the same on every engine) and every
    claim has a verdict or the reason it has none."""
    from udfs.agents_bench.runner import VERDICTS_SCHEMA
    from udfs.evaluation.evaluator import SCORES_SCHEMA, TRIPLES_SCHEMA

    eng: Engine = request.getfixturevalue(f"{name}_engine")
    out = tmp_path / "out"
    evaluate = subprocess.run(
        [
            sys.executable,
            "jobs/evaluate.py",
            "--input",
            str(demo_pages),
            "--output",
            str(out),
            "--base-url",
            eng.url,
            "--limit",
            "1",
            "--order",
            "shortest",
            "--no-generation",
            "--max-claims",
            "3",
            "--context-window",
            str(N_CTX),
            "--executor",
            "local",
            "--timeout-s",
            "900",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert evaluate.returncode == 0, evaluate.stderr[-3000:]
    # the run record says which tokenizer chunked the pages: the engine's own /tokenize, each shape
    record = json.loads((out / "scores" / "_run.json").read_text())
    assert record["evaluation"]["tokenizer"] == {"embedded": "served:llama.cpp", "vllm": "served:vllm"}[name]
    scores = pq.read_table(out / "scores")
    triples = pq.read_table(out / "triples")
    assert scores.schema.remove_metadata().equals(SCORES_SCHEMA) and len(scores) == 1
    assert triples.schema.remove_metadata().equals(TRIPLES_SCHEMA) and len(triples) > 0
    for t in triples.to_pylist():
        if t["value_kind"] == "entity":
            continue  # a link between two nodes is not a claim: never judged
        if t["valid"]:
            assert t["factual_score"] is not None or t["factual_error"], t
        if t["factual"]:
            assert t["compliant_score"] is not None or t["compliant_error"], t
    assert {t["model"] for t in triples.to_pylist() if t["factual_score"] is not None} <= {eng.model}

    bench = subprocess.run(
        [
            sys.executable,
            "jobs/agents_bench.py",
            "run",
            "--input",
            str(examples_ground_truth),
            "--output",
            str(out),
            "--base-url",
            eng.url,
            "--limit",
            "6",
            "--seed",
            "7",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert bench.returncode == 0, bench.stderr[-3000:]
    results = next((out / "agents_bench" / "results").iterdir())
    verdicts = pq.read_table(results / "verdicts")
    assert verdicts.schema.remove_metadata().equals(VERDICTS_SCHEMA)
    rows = verdicts.to_pylist()
    assert len(rows) >= 6
    assert all(r["score"] is not None or r.get("error") for r in rows)
    assert {r["model"] for r in rows} == {eng.model}
