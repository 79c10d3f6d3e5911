"""The LLM client against a real OpenAI-compatible endpoint: llama.cpp's own HTTP server with the
embedded model (no Ray here; tests/llm/test_serving.py drives the same client through Ray Serve).

Failure paths use real failures (a closed port, a timeout shorter than the answer, an answer cut
by max_tokens) or a transport that fails the first attempts and then forwards to the real server.
"""

import json

import pytest

from udfs.llm.client import LLMClient, MalformedOutput, parse_json_output, verdict_from_logprobs
from udfs.llm.transport import AiohttpTransport, HTTPAnswer, RequestFailed

pytestmark = pytest.mark.model

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "birth_year": {"type": "integer"}},
    "required": ["name", "birth_year"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def endpoint():
    import xllamacpp

    from udfs.llm.model_files import model_path

    params = xllamacpp.CommonParams()
    params.model.path = str(model_path())
    params.n_ctx = 2048
    params.cpuparams.n_threads = 2
    params.cpuparams_batch.n_threads = 2
    params.warmup = False
    params.verbosity = -1
    server = xllamacpp.Server(params)
    yield server.listening_address.rstrip("/") + "/v1"
    del server


def ask(text):
    return [{"role": "user", "content": text}]


def test_chat_many_keeps_order_with_accounting(endpoint):
    client = LLMClient(endpoint, max_concurrency=2)
    numbers = [3, 20]
    out = client.run(
        client.chat_many(
            [{"messages": ask(f"What is {n} + 1? Reply with the number only."), "max_tokens": 4} for n in numbers]
        )
    )
    assert [c.error for c in out] == [None, None]
    assert [str(n + 1) in c.text for n, c in zip(numbers, out)] == [True, True]
    for c in out:
        assert c.prompt_tokens > 5 and 1 <= c.completion_tokens <= 4
        assert c.latency_s > 0 and c.attempts == 1 and not c.from_cache
    assert client.model  # resolved from /v1/models
    assert client.stats.requests == 2
    assert client.stats.prompt_tokens == sum(c.prompt_tokens for c in out)
    client.close()


def test_json_schema_output_is_parsed_strictly(endpoint):
    client = LLMClient(endpoint)
    c = client.chat_sync(
        ask("Ada Lovelace, born 1815. Give her name and birth year as JSON."), json_schema=PERSON, max_tokens=30
    )
    assert c.ok, (c.error, c.text)
    assert c.parsed["birth_year"] == 1815 and "Lovelace" in c.parsed["name"]
    client.close()


def test_output_cut_by_max_tokens_is_a_clear_error(endpoint):
    client = LLMClient(endpoint)
    c = client.chat_sync(
        ask("Ada Lovelace was born in 1815. Extract her name and birth year as JSON."), json_schema=PERSON, max_tokens=4
    )
    assert not c.ok
    assert c.finish_reason == "length"
    assert "malformed model output: not JSON" in c.error
    client.close()


def test_parse_json_output_reasons():
    assert parse_json_output('```json\n{"name": "x", "birth_year": 1}\n```', PERSON)["name"] == "x"
    with pytest.raises(MalformedOutput, match="empty output"):
        parse_json_output("  ", PERSON)
    with pytest.raises(MalformedOutput, match="not JSON"):
        parse_json_output('{"name": "x"} trailing words', PERSON)
    with pytest.raises(MalformedOutput, match="at birth_year: 'ten' is not of type 'integer'"):
        parse_json_output('{"name": "x", "birth_year": "ten"}', PERSON)
    with pytest.raises(MalformedOutput, match="'birth_year' is a required property"):
        parse_json_output('{"name": "x"}', PERSON)
    with pytest.raises(MalformedOutput, match="unterminated code fence"):
        parse_json_output('```json\n{"name": "x"}', PERSON)


def test_verdict_score_from_first_token_logprobs():
    import math

    lp = [
        {
            "token": "Yes",
            "logprob": math.log(0.6),
            "top_logprobs": [
                {"token": "Yes", "logprob": math.log(0.6)},
                {"token": " yes", "logprob": math.log(0.1)},
                {"token": "No", "logprob": math.log(0.3)},
                {"token": "Maybe", "logprob": math.log(0.2)},
            ],
        }
    ]
    score, p_yes, p_no = verdict_from_logprobs(lp)
    assert score == pytest.approx(0.7 / 1.0) and p_yes == pytest.approx(0.7) and p_no == pytest.approx(0.3)
    assert verdict_from_logprobs([{"token": "Maybe", "logprob": 0.0, "top_logprobs": []}])[0] is None
    assert verdict_from_logprobs(None)[0] is None


def test_cache_hits_on_rerun(endpoint, tmp_path):
    prompts = [ask("Name the colour of the sky on a clear day in one word.")]
    first = LLMClient(endpoint, cache_path=tmp_path / "cache.sqlite")
    done = first.run(first.chat_many([{"messages": m, "max_tokens": 3} for m in prompts]))
    assert all(c.ok and not c.from_cache for c in done)
    first.close()
    again = LLMClient(endpoint, cache_path=tmp_path / "cache.sqlite")
    redone = again.run(again.chat_many([{"messages": m, "max_tokens": 3} for m in prompts]))
    assert [c.text for c in redone] == [c.text for c in done]
    assert all(c.from_cache for c in redone)
    assert again.stats.http_requests == 0 and again.stats.cache_hits == 1
    # A different parameter is a different request.
    other = again.chat_sync(prompts[0], max_tokens=2)
    assert not other.from_cache and again.stats.http_requests == 1
    again.close()


class FlakyTransport:
    """Fails the first chat requests as listed (an exception: no answer; a (status, headers): that
    answer), then forwards to the real server through the default transport."""

    def __init__(self, failures):
        self.failures = list(failures)
        self.real = AiohttpTransport()
        self.seen = 0

    async def request(self, method, url, body=None):
        if url.endswith("/chat/completions"):
            self.seen += 1
            if self.failures:
                failure = self.failures.pop(0)
                if isinstance(failure, Exception):
                    raise failure
                status, headers = failure
                return HTTPAnswer(status, headers, json.dumps({"error": {"message": "busy"}}).encode())
        return await self.real.request(method, url, body)

    async def aclose(self):
        await self.real.aclose()


def test_retries_connection_errors_429_and_5xx(endpoint):
    transport = FlakyTransport(
        [(503, {}), RequestFailed("ConnectError: refused"), (429, {"Retry-After": "0"}), RequestFailed("Timeout: slow")]
    )
    client = LLMClient(endpoint, transport=transport, backoff_base_s=0.01, seed=1)
    c = client.chat_sync(ask("Say OK."), max_tokens=2)
    assert c.ok, c.error
    assert c.attempts == 5 and transport.seen == 5 and client.stats.retries == 4
    client.close()


def test_client_errors_are_not_retried(endpoint):
    transport = FlakyTransport([(400, {})])
    client = LLMClient(endpoint, transport=transport, backoff_base_s=0.01)
    c = client.chat_sync(ask("Say OK."), max_tokens=2)
    assert c.error == "HTTP 400: busy" and c.attempts == 1 and transport.seen == 1
    client.close()


def test_gives_up_with_the_reason():
    # Nothing listens on port 9 of the loopback: every attempt is a real connection error.
    client = LLMClient("http://127.0.0.1:9/v1", model="m", max_retries=2, backoff_base_s=0.01)
    c = client.chat_sync(ask("hello"))
    assert c.error.startswith("gave up after 3 attempts: ConnectError")
    assert client.stats.failures == 1
    client.close()


def test_per_request_timeout(endpoint):
    client = LLMClient(endpoint, timeout_s=0.05, max_retries=1, backoff_base_s=0.01)
    c = client.chat_sync(ask("Write a poem about anvils."), max_tokens=24)
    assert not c.ok and "Timeout" in c.error and c.attempts == 2
    client.close()
