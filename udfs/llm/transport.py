"""How a request reaches a model service: one HTTP exchange, whatever carries it.

A ``Transport`` sends one POST (JSON bytes) or GET and answers an ``HTTPAnswer`` (status, headers,
body), or raises ``RequestFailed`` when no answer came (refused, reset, timed out, an app that is
not running): any HTTP status is an answer, and what to retry is the client's decision
(``udfs.llm.client``). Two carry it: ``AiohttpTransport`` over HTTP, the default, and
``udfs.llm.serve_handle.ServeHandleTransport`` through a Ray Serve app's deployment handle
(``serve://<app>/v1``). aiohttp rather than httpx because a worker keeps hundreds of requests in
flight, and httpx's connection pool rescans every waiting request on each hand-off
(``benchmarks/evaluate_throughput.py`` measures the harness's CPU per verdict).

Its own module so that both transports and the client share one answer and one failure without
importing each other.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any, Mapping, Protocol

import aiohttp


class RequestFailed(Exception):
    """No HTTP answer came (refused, reset, timed out): a failure worth retrying. The message is the
    reason a ``Completion`` reports, starting with its kind (``ConnectError``, ``Timeout``, ...)."""


@dataclass
class HTTPAnswer:
    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Transport(Protocol):
    """One HTTP exchange. ``body`` is JSON bytes for a POST, None for a GET. Raises
    ``RequestFailed`` when no answer came; any HTTP status is an answer."""

    async def request(self, method: str, url: str, body: bytes | None = None) -> HTTPAnswer: ...

    async def aclose(self) -> None: ...


class AiohttpTransport:
    """The default transport: one aiohttp session (created in the first event loop that uses it)
    with at most ``max_connections`` keep-alive connections, ``headers`` on every request and a
    per-request timeout."""

    def __init__(self, *, headers: Mapping[str, str] | None = None, timeout_s: float = 120.0, max_connections: int = 8):
        self.headers = {"Content-Type": "application/json", **(headers or {})}
        self.timeout_s = timeout_s
        self.max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.max_connections),
                timeout=aiohttp.ClientTimeout(total=self.timeout_s, connect=min(10.0, self.timeout_s)),
                headers=self.headers,
            )
        return self._session

    async def request(self, method: str, url: str, body: bytes | None = None) -> HTTPAnswer:
        try:
            async with self._open().request(method, url, data=body) as resp:
                return HTTPAnswer(resp.status, resp.headers, await resp.read())
        except asyncio.TimeoutError:
            raise RequestFailed(f"Timeout: no answer within {self.timeout_s:g} s") from None
        except aiohttp.ClientConnectorError as exc:
            raise RequestFailed(f"ConnectError: {exc}") from None
        except (aiohttp.ClientError, OSError) as exc:
            raise RequestFailed(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__) from None

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
