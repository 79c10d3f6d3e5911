"""``serve://<app>/v1``: a Ray Serve application reached through its ingress deployment's handle,
not through Serve's HTTP proxy.

A process that runs in the Ray cluster where Serve runs (a Ray Data actor of
``jobs/evaluate.py``, a driver after ``ray.init(address=...)``) can call the application's
ingress replica directly: the request skips the proxy's HTTP parsing and its extra hop, which
on a small machine costs more CPU than the harness itself. The URL names the application
(``serve.run(..., name=<app>)``, ``[serving] app_name`` for the project's own service) and the
path the HTTP route would have, so ``serve://llm4schema-llm/v1`` stands wherever
``http://host:port/v1`` does: ``LLMClient`` (``ServeHandleTransport``), ``first_model`` and
``ServedTokenizer`` (``SyncClient``).

The contract with the application: its ingress deployment has a method
``handle_http(method, path, body)`` (``body``: the request's JSON bytes, None for a GET) that
answers ``(status, headers, body bytes)`` the same as the HTTP route at ``path`` would. The
embedded engine's ingress (``udfs.llm.serving``) and the benchmark's stub
(``testkit.stub_engine``) have it. Ray Serve LLM's OpenAI ingress (the ``vllm`` engine)
does not: its ``chat``/``models``/``tokenize`` methods take vLLM's request models and a Starlette
request and answer Starlette responses, so a caller would need vLLM installed. A request to an
application without ``handle_http`` is answered HTTP 501 with that reason, which the client does
not retry; reach such an application over HTTP.

Failures read as they do over HTTP: no answer (no Ray connection, an application that is not
running, a replica that died or raised, a full queue, no answer within the timeout) raises
``udfs.llm.transport.RequestFailed``, which the client retries; a status the ingress answered is
an ``HTTPAnswer`` with that status, as over HTTP. A process not
yet connected to Ray connects to ``$RAY_ADDRESS`` when it is set; otherwise it must call
``ray.init`` first (``jobs/evaluate.py`` does, with ``--ray-address``).

The handle is looked up on first use, in the process and event loop that use it (a handle does
not travel to a Ray actor), and again after a lookup failed, so an application deployed after
the first try is found by a retry.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import threading
from typing import Any, Mapping

from udfs.llm.transport import HTTPAnswer, RequestFailed

SCHEME = "serve://"
METHOD = "handle_http"


def is_serve_url(url: str) -> bool:
    return url.startswith(SCHEME)


def split_url(url: str) -> tuple[str, str]:
    """``serve://<app>/<path>`` -> (app, "/<path>"); a ValueError for another URL or no app."""
    if not is_serve_url(url):
        raise ValueError(f"not a serve:// URL: {url!r}")
    app, _, path = url[len(SCHEME) :].partition("/")
    if not app:
        raise ValueError(f"{url!r} names no Serve application (serve://<app>/v1)")
    return app, "/" + path


def _connect() -> None:
    import ray

    if ray.is_initialized():
        return
    address = os.environ.get("RAY_ADDRESS")
    if not address:
        raise RequestFailed(
            "NotConnected: serve:// needs this process in the Ray cluster where Serve runs "
            "(ray.init(address=...) first, --ray-address for the jobs, or $RAY_ADDRESS)"
        )
    try:
        ray.init(address=address, log_to_driver=False)
    except Exception as exc:  # noqa: BLE001 - any failure to join is "no answer"
        raise RequestFailed(f"NotConnected: cannot join the Ray cluster at {address}: {exc}") from None


def _lookup(app: str):
    """The ``handle_http`` method handle of ``app``'s ingress deployment, sending its requests
    over gRPC straight to a replica (``_by_reference=False``) rather than as Ray actor calls, which
    cost more CPU per request on both sides (docs/results/harness.md)."""
    from ray import serve

    _connect()
    try:
        handle = serve.get_app_handle(app)  # one per process, cached by Serve
    except Exception as exc:  # noqa: BLE001 - no Serve instance, no such app: not running
        raise RequestFailed(f"AppNotRunning: Serve application {app!r}: {type(exc).__name__}: {exc}") from None
    return handle.options(method_name=METHOD, _by_reference=False)


def _no_method(app: str) -> HTTPAnswer:
    msg = (
        f"Serve application {app!r} has no {METHOD}(method, path, body) on its ingress deployment; "
        "serve:// reaches the embedded engine's app (udfs.llm.serving) and the benchmark's stub only: "
        "reach this app over HTTP through Serve's proxy"
    )
    body = {"error": {"message": msg, "type": "not_implemented", "code": 501}}
    return HTTPAnswer(501, {"content-type": "application/json"}, json.dumps(body).encode())


def _answer(app: str, value: Any) -> HTTPAnswer:
    try:
        status, headers, body = value
        return HTTPAnswer(int(status), dict(headers or {}), bytes(body))
    except (TypeError, ValueError):
        raise RequestFailed(f"BadAnswer: {app!r}'s {METHOD} did not answer (status, headers, body)") from None


def _failure(app: str, exc: BaseException) -> HTTPAnswer:
    """What an exception from awaiting the handle means: an answer when the ingress lacks the
    method, else ``RequestFailed`` (raised)."""
    from ray.exceptions import RayTaskError

    cause = exc.cause if isinstance(exc, RayTaskError) else exc
    # Serve says so with a RayServeException ("Tried to call a method 'handle_http' that does not
    # exist"); an older one let the replica's AttributeError through.
    if f"'{METHOD}'" in str(cause) and (isinstance(cause, AttributeError) or "does not exist" in str(cause)):
        return _no_method(app)
    text = str(cause).strip().splitlines()
    raise RequestFailed(f"{type(cause).__name__}: {text[-1][:300]}" if text else type(cause).__name__) from None


class ServeHandleTransport:
    """``udfs.llm.transport.Transport`` over deployment handles: ``request("POST",
    "serve://<app>/v1/chat/completions", body)`` calls ``handle_http("POST",
    "/v1/chat/completions", body)`` on the app's ingress and awaits it, at most ``timeout_s``;
    no answer raises ``RequestFailed`` with the reason (its kind first: ``AppNotRunning``, ...)."""

    def __init__(self, *, timeout_s: float = 120.0):
        self.timeout_s = timeout_s
        self._methods: dict[str, Any] = {}

    async def request(self, method: str, url: str, body: bytes | None = None) -> HTTPAnswer:
        app, path = split_url(url)
        call = self._methods.get(app)
        if call is None:
            call = self._methods[app] = _lookup(app)
        response = call.remote(method, path, body)
        try:
            value = await asyncio.wait_for(_awaited(response), self.timeout_s)
        except asyncio.TimeoutError:
            response.cancel()
            raise RequestFailed(f"Timeout: no answer within {self.timeout_s:g} s") from None
        except asyncio.CancelledError:
            response.cancel()
            raise
        except Exception as exc:  # noqa: BLE001 - sorted by _failure
            return _failure(app, exc)
        return _answer(app, value)

    async def aclose(self) -> None:
        self._methods.clear()


async def _awaited(response):
    return await response


class SyncClient:
    """The blocking side, for ``first_model`` and ``ServedTokenizer``: ``get``/``post`` as
    httpx's, answering real ``httpx.Response`` objects (so their callers read a status, JSON and
    errors the same way) and raising ``httpx.ConnectError`` or ``httpx.TimeoutException`` where
    ``RequestFailed`` means no answer came. Usable from a thread with a running event loop too
    (the call then waits in a helper thread)."""

    _lock = threading.Lock()
    _methods: dict[str, Any] = {}  # one handle per app and process, shared by every SyncClient

    def __init__(self, timeout_s: float = 60.0):
        self.timeout_s = timeout_s

    def get(self, url: str, *, timeout: float | None = None, headers: Mapping[str, str] | None = None):
        return self.request("GET", url, None, timeout)

    def post(
        self, url: str, *, json: Any = None, timeout: float | None = None, headers: Mapping[str, str] | None = None
    ):
        import json as _json

        return self.request("POST", url, _json.dumps(json).encode(), timeout)

    def request(self, method: str, url: str, body: bytes | None, timeout: float | None = None):
        import httpx

        timeout_s = timeout or self.timeout_s
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            answer = self._call(method, url, body, timeout_s)
        else:  # a handle's blocking result() refuses to run on an event loop's thread
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                answer = pool.submit(self._call, method, url, body, timeout_s).result()
        if isinstance(answer, RequestFailed):
            kind = httpx.TimeoutException if str(answer).startswith("Timeout") else httpx.ConnectError
            raise kind(str(answer))
        return httpx.Response(
            answer.status, headers=dict(answer.headers), content=answer.body, request=httpx.Request(method, url)
        )

    def _call(self, method: str, url: str, body: bytes | None, timeout_s: float) -> HTTPAnswer | RequestFailed:
        from ray.exceptions import GetTimeoutError

        app, path = split_url(url)
        try:
            with self._lock:
                call = self._methods.get(app)
                if call is None:
                    call = self._methods[app] = _lookup(app)
            response = call.remote(method, path, body)
            try:
                value = response.result(timeout_s=timeout_s)
            except (GetTimeoutError, TimeoutError):
                response.cancel()
                return RequestFailed(f"Timeout: no answer within {timeout_s:g} s")
            except Exception as exc:  # noqa: BLE001 - sorted by _failure
                return _failure(app, exc)
            return _answer(app, value)
        except RequestFailed as exc:
            with self._lock:
                self._methods.pop(app, None)
            return exc

    def close(self) -> None:
        pass
