"""A request identical to one in flight waits for that one's answer instead of going out again.

Against the stub engine (``testkit.stub_engine``, real HTTP on 127.0.0.1): the engine's own
count of the verdicts it answered is the reference, not the client's accounting."""

import asyncio

from testkit.stub_engine import running_stub
from udfs.llm.client import LLMClient
from udfs.llm.transport import AiohttpTransport, HTTPAnswer


def ask(text):
    return [{"role": "user", "content": f"<<<PAGE_TEXT\n{text}\nPAGE_TEXT>>>\n\nIs it stated?"}]


def test_identical_requests_in_flight_go_out_once_and_count_as_cache_hits():
    with running_stub(latency_ms=200) as stub:
        client = LLMClient(stub.url, max_concurrency=8)
        try:
            same, other = ask("The Owl Music Parlor, Brooklyn."), ask("Doors at 19:30.")
            out = client.run(client.verdict_many([{"messages": same}] * 5 + [{"messages": other}]))
        finally:
            client.close()
        assert stub.engine.counts["verdict"] == 2
    assert all(v.error is None for v in out)
    assert len({v.score for v in out[:5]}) == 1
    assert [v.completion.from_cache for v in out].count(True) == 4 and not out[5].completion.from_cache
    # every caller holds its own answer (chat() writes the parsed answer into it)
    assert len({id(v.completion) for v in out}) == 6
    assert (client.stats.requests, client.stats.cache_hits, client.stats.http_requests) == (6, 4, 2)
    fresh = [v.completion for v in out if not v.completion.from_cache]
    assert client.stats.prompt_tokens == sum(c.prompt_tokens for c in fresh)


class RefusingTransport:
    """Answers 400 to every chat request, after a while (so the duplicates arrive meanwhile)."""

    def __init__(self):
        self.real = AiohttpTransport()
        self.chats = 0

    async def request(self, method, url, body=None):
        if url.endswith("/chat/completions"):
            self.chats += 1
            await asyncio.sleep(0.2)
            return HTTPAnswer(400, {}, b'{"error": {"message": "bad request"}}')
        return await self.real.request(method, url, body)

    async def aclose(self):
        await self.real.aclose()


def test_a_failed_request_is_every_waiters_error_and_no_cache_hit():
    with running_stub() as stub:
        transport = RefusingTransport()
        client = LLMClient(stub.url, transport=transport)
        try:
            out = client.run(client.verdict_many([{"messages": ask("x")}] * 3))
        finally:
            client.close()
    assert transport.chats == 1
    assert [v.error for v in out] == ["HTTP 400: bad request"] * 3
    assert not any(v.completion.from_cache for v in out) and client.stats.failures == 3
