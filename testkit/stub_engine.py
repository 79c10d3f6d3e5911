"""A stub OpenAI-compatible engine for measuring the evaluation harness: a test harness, never a model.

    .venv/bin/python -m testkit.stub_engine --port 8011 --latency-ms 200

It answers what ``jobs/evaluate.py`` asks of a model service, over real HTTP on 127.0.0.1, with
deterministic text derived from the request (the same request always gets the same answer) after
a fixed latency (``asyncio.sleep``, so any number of requests wait at once, as on an engine whose
batch is never full). Its answers carry no information about the page: throughput figures measured
against it are the harness's (client, agents, tables, Ray), never a model's, and its verdicts and
markups must not be read as results.

* ``GET /v1/models``: one model, ``stub``.
* ``POST /v1/chat/completions``:
  - a choice-constrained yes/no verdict (``structured_outputs.choice``, or ``max_tokens`` 1 with
    ``logprobs``): "yes" or "no" from a hash of the messages, with ``logprobs.content[0]
    .top_logprobs`` holding both words, as ``udfs.llm.client.verdict_from_logprobs`` reads them;
  - a JSON-schema request (``response_format.json_schema``): for the generation schema, a small
    JSON-LD object of the first target type the prompt names, with two to four of the properties
    it lists and values cut from the fenced page text; for a schema with a required ``value``
    (correction), that object;
  - anything else: a short deterministic sentence.
  Usage is a rough count (four characters a token) with ``prompt_tokens_details.cached_tokens``
  as a prefix cache would report it: everything before the last paragraph of the last message,
  once that prefix has been seen.
* ``POST /tokenize``: llama.cpp's shape (``{"content", "with_pieces"}`` ->
  ``{"tokens": [{"id", "piece"}]}``, pieces that concatenate to the text) and vLLM's
  (``{"prompt"}`` or ``{"messages"}``, optional ``return_token_strs`` -> ``{"tokens": [ids],
  "token_strs", "count", "max_model_len"}``); the pieces are short runs of characters.
* ``GET /health``; ``GET /stats``: the requests answered by kind, and when the first and the last
  verdict were answered (the stub's monotonic clock), so a benchmark reads the rate the harness
  drove from the stub's side.

``StubEngine`` is the answering logic without a server; ``running_stub()`` serves it from a
thread of this process (tests); ``serve_deployment()`` wraps it as a Ray Serve deployment that
answers both behind Serve's HTTP proxy and through its handle (``handle_http``, what
``serve://<app>/v1`` calls: ``udfs.llm.serve_handle``); ``benchmarks/evaluate_throughput.py``
measures Serve's overhead both ways with it.

    .venv/bin/python -m testkit.stub_engine --serve --app stub --latency-ms 0   # a Ray Serve app
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import re
import threading
import time
import zlib
from collections import OrderedDict
from typing import Any, Iterator

from udfs.runtime.cli import ArgumentParser
from udfs.schemaorg.namespace import SCHEMA_CONTEXT_URL

MODEL = "stub"
MAX_MODEL_LEN = 8192
PREFIXES_KEPT = 50_000
PAGE_OPEN, PAGE_CLOSE = "<<<PAGE_TEXT", "PAGE_TEXT>>>"
# Each piece is a run of up to four characters after optional spaces, so the pieces of a text
# always concatenate back to it (what chunking checks), and their count is close to a real BPE's.
_PIECES = re.compile(r"\s*\S{1,4}|\s+", re.S)
_WORDS = re.compile(r"\w+", re.U)
YES_P, NO_P = 0.9, 0.1


def _hash(text: str) -> int:
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


class StubEngine:
    """Answers requests as ``(status, body)``; ``latency_s`` is waited in ``handle`` only."""

    def __init__(self, latency_s: float = 0.0):
        self.latency_s = latency_s
        self.counts: dict[str, int] = {}
        self.first_verdict: float | None = None
        self.last_verdict: float | None = None
        self._prefixes: OrderedDict[int, None] = OrderedDict()

    # ---- the HTTP surface ------------------------------------------------------------------------
    async def handle(self, method: str, path: str, raw: bytes) -> tuple[int, Any]:
        """One request: its body's JSON answered after the latency (chat completions only)."""
        if method == "GET":
            if path == "/v1/models":
                return 200, {
                    "object": "list",
                    "data": [{"id": MODEL, "object": "model", "owned_by": "stub", "max_model_len": MAX_MODEL_LEN}],
                }
            if path == "/health":
                return 200, {"status": "ok"}
            if path == "/stats":
                return 200, self.stats()
            return 404, _error(404, f"no route GET {path}")
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            return 400, _error(400, "the request body is not valid JSON")
        if not isinstance(body, dict):
            return 400, _error(400, "the request body must be a JSON object")
        if path == "/v1/chat/completions":
            if self.latency_s:
                await asyncio.sleep(self.latency_s)
            return self.chat(body)
        if path == "/tokenize":
            return self.tokenize(body)
        return 404, _error(404, f"no route POST {path}")

    def stats(self) -> dict[str, Any]:
        return {
            "counts": dict(self.counts),
            "first_verdict": self.first_verdict,
            "last_verdict": self.last_verdict,
            "now": time.monotonic(),
        }

    def _count(self, kind: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1

    # ---- chat completions ------------------------------------------------------------------------
    def chat(self, body: dict[str, Any]) -> tuple[int, Any]:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return 400, _error(400, "'messages' must be a non-empty list")
        contents = [str(m.get("content") or "") for m in messages if isinstance(m, dict)]
        h = _hash("\0".join(contents))
        choice = (body.get("structured_outputs") or {}).get("choice")
        fmt = body.get("response_format") or {}
        logprobs = None
        if choice or (body.get("max_tokens") == 1 and body.get("logprobs")):
            self._count("verdict")
            now = time.monotonic()
            self.first_verdict = self.first_verdict or now
            self.last_verdict = now
            yes = h % 3 != 0  # two claims in three pass, whatever they say
            text = "yes" if yes else "no"
            p = YES_P if yes else NO_P
            top = [
                {"token": "yes", "logprob": math.log(p), "bytes": None},
                {"token": "no", "logprob": math.log(1 - p), "bytes": None},
            ]
            top.sort(key=lambda t: -t["logprob"])
            logprobs = {
                "content": [
                    {
                        "token": text,
                        "logprob": top[0]["logprob"],
                        "bytes": None,
                        "top_logprobs": top[: int(body.get("top_logprobs") or 2)],
                    }
                ]
            }
        elif fmt.get("type") == "json_schema":
            schema = (fmt.get("json_schema") or {}).get("schema") or {}
            if "value" in (schema.get("required") or []):
                self._count("correction")
                text = json.dumps({"value": _page_words(contents[-1], h, 3) or None})
            else:
                self._count("generation")
                text = json.dumps(_markup(contents[-1], h), ensure_ascii=False)
        else:
            self._count("chat")
            text = f"stub answer {h % 10_000}"
        prompt = sum(_tokens(c) for c in contents) + 4 * len(contents)
        out = _tokens(text)
        return 200, {
            "id": f"stub-{h:08x}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model") or MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "logprobs": logprobs,
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": out,
                "total_tokens": prompt + out,
                "prompt_tokens_details": {"cached_tokens": self._cached(contents)},
            },
        }

    def _cached(self, contents: list[str]) -> int:
        """Tokens a prefix cache would have served: all but the last paragraph of the last
        message, when the same prefix came before."""
        last = contents[-1]
        cut = last.rfind("\n\n")
        prefix = contents[:-1] + [last[:cut] if cut > 0 else ""]
        key = _hash("\0".join(prefix))
        if key in self._prefixes:
            self._prefixes.move_to_end(key)
            return sum(_tokens(c) for c in prefix if c)
        self._prefixes[key] = None
        if len(self._prefixes) > PREFIXES_KEPT:
            self._prefixes.popitem(last=False)
        return 0

    # ---- tokenizer -------------------------------------------------------------------------------
    def tokenize(self, body: dict[str, Any]) -> tuple[int, Any]:
        self._count("tokenize")
        if "content" in body:  # llama.cpp
            if not isinstance(body["content"], str):
                return 400, _error(400, "'content' must be a string")
            pieces = _PIECES.findall(body["content"])
            if body.get("with_pieces"):
                return 200, {"tokens": [{"id": _hash(p) % 100_000, "piece": p} for p in pieces]}
            return 200, {"tokens": [_hash(p) % 100_000 for p in pieces]}
        if "prompt" in body:  # vLLM, completions form
            text = body["prompt"]
        elif "messages" in body:  # vLLM, chat form: the contents as a chat template would join them
            text = "".join(f"<|{m.get('role')}|>{m.get('content') or ''}" for m in body["messages"])
        else:
            return 400, _error(400, "give 'content' (llama.cpp), 'prompt' or 'messages' (vLLM)")
        if not isinstance(text, str):
            return 400, _error(400, "'prompt' must be a string")
        pieces = _PIECES.findall(text)
        out: dict[str, Any] = {
            "tokens": [_hash(p) % 100_000 for p in pieces],
            "count": len(pieces),
            "max_model_len": MAX_MODEL_LEN,
        }
        if body.get("return_token_strs"):
            out["token_strs"] = pieces
        return 200, out


def _error(status: int, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": status}}


def _page_words(prompt: str, h: int, n: int) -> str:
    """``n`` consecutive words of the fenced page text, from a place the hash picks."""
    start, end = prompt.find(PAGE_OPEN), prompt.rfind(PAGE_CLOSE)
    page = prompt[start + len(PAGE_OPEN) : end] if 0 <= start < end else prompt
    words = _WORDS.findall(page)
    if not words:
        return ""
    i = h % max(1, len(words) - n + 1)
    return " ".join(words[i : i + n])


def _markup(prompt: str, h: int) -> dict[str, Any]:
    """A JSON-LD object of the first target type the generation prompt names, with ``name``,
    ``description`` when the type has them, and one or two of its other properties."""
    types = re.search(r"Target types: ([^\n]+)", prompt)
    kind = (types.group(1).split(",")[0].strip() if types else "") or "Thing"
    listed = re.search(r"\(inherited ones included\): ([^\n]+)", prompt)
    props = [p.strip() for p in listed.group(1).split(",")] if listed else []
    chosen = [p for p in ("name", "description") if p in props]
    others = sorted(p for p in props if p not in chosen and p.isidentifier())
    for k in range(1 + h % 2):
        if others:
            chosen.append(others[(h >> (8 * k)) % len(others)])
    doc: dict[str, Any] = {"@context": SCHEMA_CONTEXT_URL, "@type": kind}
    for k, p in enumerate(dict.fromkeys(chosen)):
        # the prompt's hash makes each value its own, so no two pages share a claim
        doc[p] = f"{_page_words(prompt, h >> k, 12 if p == 'description' else 3) or p} {h:08x}"
    return doc


# ---- serving it ----------------------------------------------------------------------------------


def make_app(engine: StubEngine):
    """The aiohttp application answering every route with ``engine``."""
    from aiohttp import web

    async def route(request: web.Request) -> web.Response:
        status, body = await engine.handle(request.method, request.path, await request.read())
        return web.Response(body=json.dumps(body).encode(), status=status, content_type="application/json")

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_route("*", "/{tail:.*}", route)
    return app


class RunningStub:
    """A stub served from a thread of this process; ``url`` is its ``/v1`` base URL."""

    def __init__(self, engine: StubEngine, host: str, port: int):
        self.engine, self.host, self.port = engine, host, port
        self.url = f"http://{host}:{port}/v1"


@contextlib.contextmanager
def running_stub(latency_ms: float = 0.0, host: str = "127.0.0.1", port: int = 0) -> Iterator[RunningStub]:
    """Serve a ``StubEngine`` on ``host``:``port`` (0: a free port) from a daemon thread with its
    own event loop, for as long as the ``with`` block runs."""
    from aiohttp import web

    engine = StubEngine(latency_ms / 1000)
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    box: dict[str, Any] = {}

    async def start() -> None:
        runner = web.AppRunner(make_app(engine), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, host, port, backlog=4096)
        await site.start()
        box["runner"] = runner
        box["port"] = runner.addresses[0][1]

    def serve() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(start())
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = exc
        ready.set()
        if "error" not in box:
            loop.run_forever()

    thread = threading.Thread(target=serve, name="stub-engine", daemon=True)
    thread.start()
    ready.wait(30)
    if "error" in box or "port" not in box:
        raise RuntimeError(f"the stub engine did not start: {box.get('error', 'timed out')}")
    try:
        yield RunningStub(engine, host, box["port"])
    finally:
        asyncio.run_coroutine_threadsafe(box["runner"].cleanup(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()


def serve_deployment(
    latency_ms: float = 0.0, max_ongoing_requests: int = 4096, deployment_config: dict[str, Any] | None = None
):
    """A Ray Serve application answering like the stub, behind Serve's HTTP proxy: one replica,
    no CPU reserved (on a small machine the job's workers still schedule), every request a plain
    Starlette request handed to a ``StubEngine``. ``deployment_config``: Serve deployment options
    instead (replicas or autoscaling, request limits), e.g. the vLLM app's from
    ``udfs.llm.serving.apps.vllm_llm_config_kwargs``."""
    from ray import serve
    from starlette.requests import Request
    from starlette.responses import Response

    # Serve's own throughput settings for a replica whose code is async and cheap: the code runs
    # on the replica's event loop (not handed to a thread per request), and no access-log line
    # per request. Both the proxy's and the handles' requests meet the same replica.
    @serve.deployment(
        name="StubEngine",
        max_ongoing_requests=max_ongoing_requests,
        max_queued_requests=-1,
        logging_config={"enable_access_log": False},
        ray_actor_options={
            "num_cpus": 0,
            "runtime_env": {"env_vars": {"RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD": "0"}},
        },
    )
    class StubDeployment:
        def __init__(self, latency_ms: float):
            self.engine = StubEngine(latency_ms / 1000)

        async def __call__(self, request: Request) -> Response:
            status, body = await self.engine.handle(request.method, request.url.path, await request.body())
            return Response(json.dumps(body), status_code=status, media_type="application/json")

        async def handle_http(self, method: str, path: str, body: bytes | None) -> tuple[int, dict, bytes]:
            """The same answer through a deployment handle (``serve://``, ``udfs.llm.serve_handle``)."""
            status, answer = await self.engine.handle(method, path, body or b"")
            return status, {"content-type": "application/json"}, json.dumps(answer).encode()

    return StubDeployment.options(**(deployment_config or {"num_replicas": 1})).bind(latency_ms)


def serve_app(host: str, port: int, latency_ms: float, app: str) -> None:
    """The stub as the Serve application ``app`` on a Ray instance of this process (its own temp
    folder, so no other Ray on the machine is disturbed), Serve's HTTP proxy on ``host``:``port``,
    until SIGTERM. The first line printed is JSON: the Ray address a process joins to reach it
    through handles, the environment it joins with (Ray's token), the proxy's ``/v1`` URL and
    the ``serve://`` URL."""
    import logging
    import os
    import secrets
    import shutil
    import signal
    import tempfile

    here = os.path.dirname(os.path.abspath(__file__))
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # Ray's socket paths must stay short
    # Ray's ports listen on every interface: a process joins with a token of this instance's own
    # (not ~/.ray/auth_token, which other clusters may use), named in the printed "env".
    token = os.path.join(temp, "auth_token")
    with open(os.open(token, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as fh:
        fh.write(secrets.token_hex(32))
    join_env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": token}
    os.environ.update(join_env)
    os.environ.pop("RAY_AUTH_TOKEN", None)
    import ray
    from ray import serve

    ray.init(
        address="local",
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.WARNING,
        _temp_dir=temp,
        runtime_env={"env_vars": {"PYTHONPATH": f"{os.path.dirname(here)}:{here}"}},
    )
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    try:
        serve.start(http_options={"host": host, "port": port})
        serve.run(serve_deployment(latency_ms), name=app, route_prefix="/", blocking=False)
        print(
            json.dumps(
                {
                    "ray_address": ray.get_runtime_context().gcs_address,
                    "url": f"http://{host}:{port}/v1",
                    "serve_url": f"serve://{app}/v1",
                    "env": join_env,
                }
            ),
            flush=True,
        )
        while not stopping.wait(0.5):
            pass
    finally:
        with contextlib.suppress(Exception):
            serve.shutdown()
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1", help="address to listen on")
    ap.add_argument("--port", type=int, default=8011, help="port to listen on")
    ap.add_argument("--latency-ms", type=float, default=0.0, help="wait before each chat completion")
    ap.add_argument(
        "--serve",
        action="store_true",
        help="serve it as a Ray Serve application on a Ray instance of this process (proxy on --port, "
        "handles at serve://APP/v1); the first line printed says how to reach it",
    )
    ap.add_argument("--app", default="stub", help="the Serve application's name (with --serve)")
    args = ap.parse_args(argv)
    if args.serve:
        serve_app(args.host, args.port, args.latency_ms, args.app)
        return 0
    from aiohttp import web

    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    engine = StubEngine(args.latency_ms / 1000)
    print(f"stub engine (not a model) on http://{args.host}:{args.port}/v1, latency {args.latency_ms:g} ms", flush=True)
    web.run_app(make_app(engine), host=args.host, port=args.port, access_log=None, print=None, backlog=4096)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
