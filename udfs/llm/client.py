"""The one client every agent uses to reach a model: any OpenAI-compatible chat-completions endpoint.

* async, with a bound on requests in flight (``max_concurrency``);
* retries with exponential backoff and full jitter on connection errors, timeouts, 429 and 5xx
  (``Retry-After`` is honoured), a per-request timeout, and a clear failure reason when retries
  run out: a batch never loses a row, a failed request comes back as a ``Completion`` with
  ``error`` set;
* a persistent request cache (SQLite) keyed by (model, messages, parameters): a rerun or a
  resumed run never pays twice for the same request; and a request identical to one in flight
  waits for that one's answer instead of going out again (counted as a cache hit), so that
  duplicates asked at once (the same claim in two pages in flight) cost one request;
* a model the endpoint does not list is a clear error before any chat request is sent (some
  OpenAI-compatible servers, llama.cpp's own, answer whatever model is named);
* token and latency accounting on every ``Completion`` and summed in ``LLMClient.stats``;
* structured output: ``json_schema=`` sends a JSON-schema ``response_format`` and the answer is
  parsed strictly (``MalformedOutput`` says what is wrong); ``choices=`` sends vLLM's
  ``structured_outputs.choice`` (the embedded service understands it too);
* yes/no verdict scores from the first answer token's top logprobs:
  P(yes) / (P(yes) + P(no)), each summed over the spellings of the word ("Yes", " yes", ...).

A hosted endpoint's key (``api_key``, default ``$OPENAI_API_KEY``) goes out as an
``Authorization: Bearer`` header and nowhere else: not in the cache key, a ``Completion``, the
stats, an error message or a log line.

Plain Python: ``LLMClient(...).chat_sync(messages)``; async: ``await client.chat(messages)``.
Ray Data stages hold one client per actor (``jobs/evaluate.py``'s ``EvaluatePages``).

The HTTP layer is a ``udfs.llm.transport.Transport`` (``AiohttpTransport`` by default; a
``serve://<app>/v1`` base URL goes through the Serve app's deployment handle instead,
``udfs.llm.serve_handle.ServeHandleTransport``). Tests wrap the default transport to inject
failures.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import os
import random
import sqlite3
import threading
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Sequence

import httpx

from udfs.llm.transport import AiohttpTransport, RequestFailed, Transport
from udfs.runtime.errors import OutputError

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
# Parameters that change the answer, hence part of the cache key; anything else passed through
# ``extra`` is part of it too.
YES = "yes"
NO = "no"


class LLMError(RuntimeError):
    """A request that failed for good (after retries, or a 4xx that retrying cannot fix)."""


class MalformedOutput(ValueError):
    """The model answered, but not in the shape that was asked for."""

    def __init__(self, reason: str, text: str):
        super().__init__(f"malformed model output: {reason}; output starts {text[:200]!r}")
        self.reason = reason
        self.text = text


@dataclass
class Completion:
    text: str | None = None
    parsed: Any = None
    finish_reason: str | None = None
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    latency_s: float = 0.0
    attempts: int = 0
    from_cache: bool = False
    model: str | None = None
    logprobs: list[dict[str, Any]] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def as_row(self) -> dict[str, Any]:
        row = asdict(self)
        row.pop("logprobs")
        row["parsed"] = json.dumps(self.parsed) if self.parsed is not None else None
        return row


@dataclass
class Verdict:
    """A yes/no answer scored from the first answer token: ``score`` = P(yes) / (P(yes) + P(no))."""

    score: float | None
    answer: str | None
    p_yes: float
    p_no: float
    completion: Completion

    @property
    def error(self) -> str | None:
        return self.completion.error


@dataclass
class Stats:
    requests: int = 0
    http_requests: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    latency_s: float = 0.0

    def add(self, c: Completion) -> None:
        self.requests += 1
        self.cache_hits += c.from_cache
        self.failures += c.error is not None
        if not c.from_cache:
            self.prompt_tokens += c.prompt_tokens
            self.completion_tokens += c.completion_tokens
            self.cached_prompt_tokens += c.cached_prompt_tokens
            self.latency_s += c.latency_s


# --------------------------------------------------------------------------------------------
# strict parsing (pure functions, unit-tested on their own)


def parse_json_output(text: str | None, schema: dict[str, Any] | None = None) -> Any:
    """Parse a model's JSON answer strictly: the whole text (a ```json fence is allowed) must be one
    JSON value, and it must validate against ``schema`` when given."""
    if text is None or not text.strip():
        raise MalformedOutput("empty output", text or "")
    body = text.strip()
    if body.startswith("```"):
        lines = body.split("\n")
        if len(lines) < 2 or not lines[-1].strip().startswith("```"):
            raise MalformedOutput("unterminated code fence", text)
        body = "\n".join(lines[1:-1])
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        raise MalformedOutput(f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})", text) from None
    if schema is not None:
        import jsonschema

        try:
            jsonschema.validate(value, schema)
        except jsonschema.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
            raise MalformedOutput(f"does not match the schema at {where}: {exc.message}", text) from None
    return value


def first_token_mass(logprobs: list[dict[str, Any]] | None, words: Sequence[str]) -> dict[str, float]:
    """The probability of each of ``words`` in the first answer token's top logprobs: every
    spelling whose stripped, lower-cased form is the word (lower-cased) counts toward it."""
    mass = {w.lower(): 0.0 for w in words}
    if not logprobs:
        return mass
    first = logprobs[0]
    for cand in first.get("top_logprobs") or [first]:
        word = str(cand.get("token", "")).strip().lower()
        lp = cand.get("logprob")
        if word in mass and lp is not None and lp != -math.inf:
            mass[word] += math.exp(lp)
    return mass


def verdict_from_logprobs(logprobs: list[dict[str, Any]] | None) -> tuple[float | None, float, float]:
    """(score, P(yes), P(no)) from the first answer token's top logprobs (:func:`first_token_mass`).
    The score is None when neither word is among the top tokens: no evidence, not 0.5.
    """
    mass = first_token_mass(logprobs, (YES, NO))
    p_yes, p_no = mass[YES], mass[NO]
    if p_yes + p_no == 0:
        return None, 0.0, 0.0
    return p_yes / (p_yes + p_no), p_yes, p_no


# --------------------------------------------------------------------------------------------
# request cache


class RequestCache:
    """SQLite table of successful answers keyed by the sha256 of (model, messages, parameters).

    Only successes are stored, so a failed request is tried again on the next run. WAL mode lets
    several processes (Ray Data workers) share one file. Answers are written in batches (every
    ``FLUSH_ROWS`` answers or ``FLUSH_S`` seconds, and by ``flush``/``close``): a commit per answer
    holds SQLite's one write lock once per request, which serialises the workers sharing the file
    and costs a worker a tenth of its CPU. A killed process loses at most its unflushed answers,
    which a rerun asks again.

    A cache that cannot be read or written (no space left, a file-size limit, a permission
    changed: SQLite says only "disk I/O error") is an ``OutputError`` naming the file and SQLite's
    reason. Opening, reading and ``flush``/``close`` raise it; a batch written by ``put`` that
    fails keeps its answers (the request that got one still gets it), says so once in a warning
    line, and ``flush``/``close`` raise it when the batch still cannot be written, so that a run
    ends on it between its units of work instead of failing its pages one by one.
    """

    FLUSH_ROWS = 256
    FLUSH_S = 1.0

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[str, str | None, str, str, float]] = {}
        self._flushed = time.monotonic()
        self._failed = False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            # Each put commits while the event loop waits: with WAL's default FULL sync that is an
            # fsync per answer, which caps a worker's request rate at the disk's fsync rate. NORMAL
            # still keeps every commit across a killed process (only a power loss can drop the last
            # ones, which a rerun asks again).
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT, request TEXT,"
                " response TEXT, created REAL)"
            )
            self._db.commit()
        except (sqlite3.Error, OSError) as exc:
            raise self._error("cannot be opened", exc) from exc

    def _error(self, what: str, exc: Exception) -> OutputError:
        """The OutputError of ``exc``, met where the cache ``what`` (one line naming the file)."""
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        code = getattr(exc, "sqlite_errorname", None)
        return OutputError(
            f"the request cache {self.path} {what}: {reason}{f' ({code})' if code else ''}; free space on its "
            "disk, raise the file-size limit (ulimit -f) or fix its permissions, or give --cache elsewhere"
        )

    @staticmethod
    def encode(request: dict[str, Any]) -> str:
        """The request as the JSON text that is both sent and stored: keys sorted, so one request
        has one text and one key."""
        return json.dumps(request, sort_keys=True, ensure_ascii=False)

    @staticmethod
    def key(request_text: str) -> str:
        return hashlib.sha256(request_text.encode()).hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            pending = self._pending.get(key)
            try:
                row = (
                    (pending[3],)
                    if pending
                    else self._db.execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
                )
            except sqlite3.Error as exc:
                raise self._error("cannot be read", exc) from exc
        return json.loads(row[0]) if row else None

    def put(self, key: str, model: str | None, request_text: str, response_text: str) -> None:
        with self._lock:
            self._pending[key] = (key, model, request_text, response_text, time.time())
            if len(self._pending) < self.FLUSH_ROWS and time.monotonic() - self._flushed < self.FLUSH_S:
                return
            try:
                self._flush_locked()
            except OutputError as exc:  # raised again by flush and close (class docstring)
                self._flushed = time.monotonic()  # tried again a batch later, not at every answer
                if not self._failed:
                    logging.getLogger("llm4schema").warning("%s", exc)
                self._failed = True

    def flush(self) -> None:
        """Write the answers held since the last flush."""
        with self._lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        if self._pending:
            try:
                self._db.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?)", self._pending.values())
                self._db.commit()
            except sqlite3.Error as exc:
                try:
                    self._db.rollback()
                except sqlite3.Error:
                    pass  # the rollback's own failure says nothing more than the write's
                raise self._error("cannot be written", exc) from exc
            self._pending.clear()
            self._failed = False
        self._flushed = time.monotonic()

    def __len__(self) -> int:
        with self._lock:
            self._flush_locked()
            return self._db.execute("SELECT count(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            try:
                self._flush_locked()
            finally:
                self._db.close()


# --------------------------------------------------------------------------------------------
# the client


class LLMClient:
    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key: str | None = None,
        max_concurrency: int = 4,
        max_retries: int = 5,
        timeout_s: float = 120.0,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30.0,
        cache_path: str | Path | None = None,
        transport: Transport | None = None,
        seed: int | None = None,
        cache_scope: str = "",
    ):
        self.base_url = base_url.rstrip("/")
        self.model = model
        # A scope keys the request cache apart: the same request in another scope is asked again
        # (a repeated evaluation, ``--repeats``, judges afresh); "" is the cache every run shares.
        self.cache_scope = cache_scope
        self._headers = auth_headers(api_key)
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.timeout_s = timeout_s
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.cache = RequestCache(cache_path) if cache_path else None
        self._given_transport = transport
        self.stats = Stats()
        self._random = random.Random(seed)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._http: Transport | None = None
        self._sem: asyncio.Semaphore | None = None
        self._listing: asyncio.Lock | None = None
        # request key -> the answer of the identical request in flight (this loop's)
        self._in_flight: dict[str, asyncio.Future] = {}
        # model id -> why it cannot be asked here (None: listed, or the listing unreadable)
        self._model_checks: dict[str | None, str | None] = {}

    # The transport's session and the semaphore belong to one event loop; a new loop (asyncio.run
    # per Ray Data batch, say) gets new ones. The connections cover the requests in flight and
    # the model listings, which go out beside them.
    def _session(self) -> tuple[Transport, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._http = self._given_transport or self._default_transport()
            self._sem = asyncio.Semaphore(self.max_concurrency)
            self._listing = asyncio.Lock()
            self._in_flight = {}
            self._loop = loop
        return self._http, self._sem

    def _default_transport(self) -> Transport:
        if self.base_url.startswith("serve://"):  # a Serve app's ingress through its handle (udfs.llm.serve_handle)
            from udfs.llm.serve_handle import ServeHandleTransport

            return ServeHandleTransport(timeout_s=self.timeout_s)
        return AiohttpTransport(
            headers=self._headers, timeout_s=self.timeout_s, max_connections=self.max_concurrency + 2
        )

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None
            self._loop = None

    async def resolve_model(self) -> str:
        """The model named at construction, else the first one the endpoint lists."""
        if self.model:
            return self.model
        http, _ = self._session()
        # The first requests of a burst all arrive here before any listing has answered: one
        # listing each swamped the connection pool (its scheduling is quadratic in the requests
        # waiting) before a single chat went out, so they wait for one.
        async with self._listing:
            if self.model:
                return self.model
            resp = await http.request("GET", f"{self.base_url}/models")
            if resp.status != 200:
                raise LLMError(f"{self.base_url}/models answered HTTP {resp.status}: {_error_text(resp.body)}")
            data = resp.json().get("data") or []
            if not data:
                raise LLMError(f"{self.base_url}/models lists no model")
            self.model = data[0]["id"]
        return self.model

    def build_request(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        json_schema: dict[str, Any] | None = None,
        choices: Sequence[str] | None = None,
        logprobs: bool = False,
        top_logprobs: int | None = None,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        req: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if json_schema is not None:
            req["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": json_schema, "strict": True},
            }
        if choices is not None:
            req["structured_outputs"] = {"choice": list(choices)}
        if logprobs:
            req["logprobs"] = True
            if top_logprobs:
                req["top_logprobs"] = top_logprobs
        req.update(extra or {})
        return req

    async def chat(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        json_schema: dict[str, Any] | None = None,
        raise_errors: bool = False,
        **kwargs: Any,
    ) -> Completion:
        """One chat completion. Failures come back as ``Completion.error`` unless ``raise_errors``."""
        if self.model is None:
            try:
                await self.resolve_model()
            except Exception as exc:
                c = Completion(error=f"model listing failed: {type(exc).__name__}: {exc}")
                self.stats.add(c)
                if raise_errors:
                    raise LLMError(c.error) from exc
                return c
        req = self.build_request(messages, json_schema=json_schema, **kwargs)
        c = await self._send(req)
        if c.ok and json_schema is not None:
            try:
                c.parsed = parse_json_output(c.text, json_schema)
            except MalformedOutput as exc:
                c.error = str(exc)
        self.stats.add(c)
        if raise_errors and c.error:
            raise LLMError(c.error)
        return c

    async def verdict(
        self, messages: Sequence[dict[str, Any]], *, constrain: bool = True, top_logprobs: int = 20, **kwargs: Any
    ) -> Verdict:
        """Ask a yes/no question; score it from the first answer token's top logprobs."""
        c = await self.chat(
            messages,
            max_tokens=1,
            logprobs=True,
            top_logprobs=top_logprobs,
            choices=[YES, NO] if constrain else None,
            **kwargs,
        )
        if not c.ok:
            return Verdict(None, None, 0.0, 0.0, c)
        score, p_yes, p_no = verdict_from_logprobs(c.logprobs)
        if score is None:
            c.error = f"no yes/no token among the first token's top {top_logprobs} logprobs (answer {c.text!r})"
            return Verdict(None, None, 0.0, 0.0, c)
        # ``answer`` is the likelier word, what the model said; the agents decide with their own
        # threshold from [evaluate]/[agents_bench], never with this.
        return Verdict(score, YES if score >= 0.5 else NO, p_yes, p_no, c)

    async def chat_many(self, requests: Iterable[dict[str, Any]]) -> list[Completion]:
        """Many chats at once (each a dict of ``chat`` keyword arguments, ``messages`` included);
        results in input order, one per request."""
        return list(await asyncio.gather(*(self.chat(**r) for r in requests)))

    async def verdict_many(self, requests: Iterable[dict[str, Any]]) -> list[Verdict]:
        return list(await asyncio.gather(*(self.verdict(**r) for r in requests)))

    def _backoff(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(float(retry_after), self.backoff_max_s)
            except ValueError:
                pass
        return self._random.uniform(0, min(self.backoff_max_s, self.backoff_base_s * 2**attempt))

    async def _send(self, req: dict[str, Any]) -> Completion:
        text_out = RequestCache.encode(req)
        key = RequestCache.key(text_out if not self.cache_scope else f"{self.cache_scope}\x1f{text_out}")
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                c = self._completion(hit)
                c.from_cache = True
                return c
        self._session()
        while key in self._in_flight:
            try:
                first = await asyncio.shield(self._in_flight[key])
            except asyncio.CancelledError:
                if asyncio.current_task().cancelling():
                    raise
                continue  # the caller that sent it was cancelled, not this one: send it here
            # each caller gets its own copy: chat() and verdict() write the parsed answer into it
            return replace(first, from_cache=first.ok)
        answer = asyncio.get_running_loop().create_future()
        self._in_flight[key] = answer
        try:
            c = await self._request(req, text_out, key)
        except asyncio.CancelledError:
            answer.cancel()
            raise
        except BaseException as exc:
            answer.set_exception(exc)
            answer.exception()  # retrieved: an error nobody else waited for is not "never retrieved"
            raise
        finally:
            del self._in_flight[key]
        answer.set_result(replace(c))
        return c

    async def _request(self, req: dict[str, Any], text_out: str, key: str) -> Completion:
        """The request over the transport, with retries; its answer is cached when it succeeds."""
        http, sem = self._session()
        model = req.get("model")
        if model not in self._model_checks:
            self._model_checks[model] = await self._unlisted_model(http, model)
        if self._model_checks[model]:
            return Completion(error=self._model_checks[model], model=model)
        reason = "not sent"
        body_out = text_out.encode()
        t0 = time.monotonic()
        attempt = 0
        for attempt in range(1, self.max_retries + 2):
            retry_after = None
            async with sem:
                self.stats.http_requests += 1
                try:
                    resp = await http.request("POST", f"{self.base_url}/chat/completions", body_out)
                except RequestFailed as exc:
                    reason = str(exc)
                    resp = None
            if resp is not None:
                if resp.status == 200:
                    try:
                        body = resp.json()
                        c = self._completion(body)
                    except (ValueError, KeyError, IndexError, TypeError) as exc:
                        reason = f"unreadable response body ({type(exc).__name__}: {exc})"
                    else:
                        c.latency_s = time.monotonic() - t0
                        c.attempts = attempt
                        if self.cache is not None:
                            self.cache.put(key, req.get("model"), text_out, resp.body.decode())
                        return c
                else:
                    reason = f"HTTP {resp.status}: {_error_text(resp.body)}"
                    if resp.status not in RETRY_STATUS:
                        return Completion(
                            error=reason, attempts=attempt, latency_s=time.monotonic() - t0, model=req.get("model")
                        )
                    retry_after = resp.headers.get("Retry-After")
            if attempt <= self.max_retries:
                self.stats.retries += 1
                await asyncio.sleep(self._backoff(attempt - 1, retry_after))
        return Completion(
            error=f"gave up after {attempt} attempts: {reason}",
            attempts=attempt,
            latency_s=time.monotonic() - t0,
            model=req.get("model"),
        )

    async def _unlisted_model(self, http: Transport, model: str | None) -> str | None:
        """Why ``model`` cannot be asked at this endpoint: it is not among the ids ``/models`` lists.
        None when it is listed, or when the listing cannot be read (the chat request then says
        what is wrong)."""
        if not model:
            return None
        try:
            resp = await http.request("GET", f"{self.base_url}/models")
            ids = [m["id"] for m in resp.json().get("data") or []] if resp.status == 200 else []
        except (RequestFailed, ValueError, KeyError, TypeError, AttributeError):
            return None
        if ids and model not in ids:
            return f"model {model!r} is not served at {self.base_url}: /models lists {sorted(ids)}"
        return None

    @staticmethod
    def _completion(body: dict[str, Any]) -> Completion:
        choice = body["choices"][0]
        usage = body.get("usage") or {}
        details = usage.get("prompt_tokens_details") or {}
        lp = choice.get("logprobs") or {}
        return Completion(
            text=choice["message"].get("content"),
            finish_reason=choice.get("finish_reason"),
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            cached_prompt_tokens=int(details.get("cached_tokens") or 0),
            model=body.get("model"),
            logprobs=lp.get("content") if isinstance(lp, dict) else None,
        )

    # ---- plain Python

    def run(self, coro):
        """Run a coroutine of this client from synchronous code (one private event loop)."""
        if not hasattr(self, "_own_loop") or self._own_loop.is_closed():
            self._own_loop = asyncio.new_event_loop()
        return self._own_loop.run_until_complete(coro)

    def chat_sync(self, messages: Sequence[dict[str, Any]], **kwargs: Any) -> Completion:
        return self.run(self.chat(messages, **kwargs))

    def verdict_sync(self, messages: Sequence[dict[str, Any]], **kwargs: Any) -> Verdict:
        return self.run(self.verdict(messages, **kwargs))

    def close(self) -> None:
        if getattr(self, "_own_loop", None) and not self._own_loop.is_closed():
            self._own_loop.run_until_complete(self.aclose())
            self._own_loop.close()
        if self.cache is not None:
            self.cache.close()


def auth_headers(api_key: str | None = None) -> dict[str, str]:
    """The bearer header for ``api_key``, else (None or empty) for ``$OPENAI_API_KEY``; none when neither is set."""
    key = api_key or os.environ.get("OPENAI_API_KEY")
    return {"Authorization": f"Bearer {key}"} if key else {}


def first_model(base_url: str, *, timeout_s: float, api_key: str | None = None) -> str:
    """The id of the first model ``<base_url>/models`` lists (the service's default model).
    A service that cannot be reached or lists no model is an ``LLMError`` that says to start it;
    one that refuses the key (401/403) says so. ``api_key`` as for ``LLMClient``."""
    hint = "start the service (python -m udfs.llm.serving start)"
    get = httpx.get
    if base_url.startswith("serve://"):  # answers as httpx does (udfs.llm.serve_handle)
        from udfs.llm.serve_handle import SyncClient

        get = SyncClient().get
    try:
        resp = get(f"{base_url}/models", timeout=timeout_s, headers=auth_headers(api_key))
        resp.raise_for_status()
        data = resp.json().get("data") or []
    except httpx.HTTPStatusError as exc:
        if exc.response.status_code in (401, 403):
            raise LLMError(
                f"{base_url}/models refused the request (HTTP {exc.response.status_code}): "
                "give the endpoint's key with --api-key or OPENAI_API_KEY"
            ) from None
        raise LLMError(
            f"{base_url}/models cannot be read (HTTP {exc.response.status_code}: "
            f"{_error_message(exc.response)}): {hint}"
        ) from None
    except (httpx.HTTPError, ValueError) as exc:
        raise LLMError(f"{base_url}/models cannot be read ({type(exc).__name__}: {exc}): {hint}") from None
    if not data:
        raise LLMError(f"{base_url}/models lists no model: {hint}")
    return data[0]["id"]


def _error_message(resp: httpx.Response) -> str:
    return _error_text(resp.content)


def _error_text(body: bytes) -> str:
    """The message of an error answer: OpenAI's ``{"error": {"message": ...}}`` or the body itself."""
    try:
        value = json.loads(body)
        err = value.get("error", value) if isinstance(value, dict) else value
        msg = err.get("message", err) if isinstance(err, dict) else err
        return str(msg)[:500]
    except ValueError:
        return body.decode("utf-8", "replace")[:500]
