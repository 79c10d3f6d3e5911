"""The Ray Serve application with the embedded engine, started once for the module, and the client
driven through it: real prompts, structured output, prefix reuse, the served tokenizer, errors,
and a replica killed in the middle of a batch."""

import asyncio

import pytest

from tests.conftest import DATA
from udfs.llm.chunking import ServedTokenizer, chunk_text
from udfs.llm.client import LLMClient
from udfs.llm.serving.apps import translate_request, vllm_llm_config_kwargs
from udfs.llm.serving.config import load_serving_conf

pytestmark = pytest.mark.model

PRODUCT_PAGE = DATA / "html" / "extruct-samples" / "schema.org" / "product.html"
MODEL_ID = "qwen2.5-coder-1.5b"


def ask(text):
    return [{"role": "user", "content": text}]


def page_text() -> str:
    import html2text

    h = html2text.HTML2Text()
    h.ignore_links = True
    h.ignore_images = True
    return h.handle(PRODUCT_PAGE.read_text())


def test_models_and_a_real_answer(service):
    import httpx

    listed = httpx.get(f"{service}/models").json()["data"]
    assert [m["id"] for m in listed] == [MODEL_ID]
    client = LLMClient(service)
    c = client.chat_sync(ask("What is the capital of France? One word."), max_tokens=4)
    assert c.ok, c.error
    assert "Paris" in c.text and c.model == MODEL_ID
    client.close()


def test_choice_constrained_verdict(service):
    client = LLMClient(service, MODEL_ID)
    v = client.verdict_sync(
        [{"role": "system", "content": "Answer with yes or no."}, *ask("Is Paris the capital of France?")]
    )
    assert v.error is None
    # structured_outputs.choice became a grammar: the answer is exactly one of the choices,
    # while the top logprobs still carry the unconstrained distribution.
    assert v.completion.text in ("yes", "no")
    assert v.score > 0.5 and v.answer == "yes"
    client.close()


def test_json_schema_through_serve(service):
    schema = {"type": "object", "properties": {"price": {"type": "number"}}, "required": ["price"]}
    client = LLMClient(service, MODEL_ID)
    c = client.chat_sync(
        [
            {"role": "system", "content": "Extract from the page."},
            *ask(f"Page:\n{page_text()}\nWhat is the sale price? JSON."),
        ],
        json_schema=schema,
        max_tokens=24,
    )
    assert c.ok, (c.error, c.text)
    assert c.parsed["price"] == pytest.approx(119.99)
    client.close()


def test_prompt_prefix_is_reused(service):
    client = LLMClient(service, MODEL_ID)
    prefix = [
        {"role": "system", "content": "Answer yes or no about the page."},
        {"role": "user", "content": f"Page:\n{page_text()}\nQuestion: "},
    ]
    first = client.chat_sync(
        prefix[:1] + [{"role": "user", "content": prefix[1]["content"] + "Is it an anvil?"}], max_tokens=1
    )
    second = client.chat_sync(
        prefix[:1] + [{"role": "user", "content": prefix[1]["content"] + "Is it on sale?"}], max_tokens=1
    )
    assert first.ok and second.ok
    assert second.cached_prompt_tokens >= 0.8 * second.prompt_tokens > 50
    client.close()


def test_served_tokenizer_chunks_the_page(service):
    text = page_text()
    tok = ServedTokenizer(service)
    tokens = tok.token_bytes(text)
    assert b"".join(tokens) == text.encode()
    chunks = chunk_text(text, tok, context_window=200, output_tokens=50, prompt_tokens=100)
    assert len(chunks) >= 2 and chunks[-1].end_char == len(text)
    for a, b in zip(chunks, chunks[1:]):
        assert a.n_tokens == 50 and a.end_token - b.start_token == 5
    tok.close()


def test_bad_requests_get_clear_errors(service):
    import httpx

    # the ingress refuses a model it does not serve; the client says so before sending anything
    resp = httpx.post(f"{service}/chat/completions", json={"model": "no-such-model", "messages": ask("hi")})
    assert resp.status_code == 404 and resp.json()["error"]["code"] == "model_not_found"
    client = LLMClient(service, "no-such-model", backoff_base_s=0.01)
    c = client.chat_sync(ask("hi"), max_tokens=2)
    assert c.attempts == 0 and "'no-such-model' is not served" in c.error and MODEL_ID in c.error
    client.model = MODEL_ID
    c = client.chat_sync(ask("hi"), max_tokens=2, extra={"guided_choice": ["yes", "no"]})
    assert c.attempts == 1 and "send structured_outputs instead" in c.error
    c = client.chat_sync(ask("hi"), max_tokens=2, extra={"stream": True})
    assert c.error == "HTTP 400: streaming is not supported by this service"
    client.close()


def replica_names():
    import ray

    return sorted(
        a["name"]
        for a in ray.util.list_named_actors(all_namespaces=True)
        if a["name"].startswith("SERVE_REPLICA::") and "EmbeddedLLM" in a["name"]
    )


def test_replica_killed_mid_batch_loses_no_row(service):
    import ray

    before = replica_names()
    assert len(before) == 1
    client = LLMClient(
        service, MODEL_ID, max_concurrency=2, max_retries=12, backoff_base_s=0.5, backoff_max_s=8, timeout_s=120
    )
    numbers = list(range(1, 7))
    reqs = [{"messages": ask(f"What is {n} + {n}? Reply with the number only."), "max_tokens": 4} for n in numbers]

    async def batch_with_a_kill():
        task = asyncio.create_task(client.chat_many(reqs))
        while client.stats.requests < 1:
            await asyncio.sleep(0.05)
        replica = ray.get_actor(before[0], namespace="serve")
        await asyncio.to_thread(ray.kill, replica, no_restart=True)
        return await task

    out = client.run(batch_with_a_kill())
    assert len(out) == len(numbers)
    assert [c.error for c in out] == [None] * len(numbers)
    assert all(str(2 * n) in c.text for n, c in zip(numbers, out))
    # Serve replaced the replica and the rows in flight at the kill were retried.
    after = replica_names()
    assert len(after) == 1 and after != before
    assert client.stats.retries >= 1
    client.close()


def test_translate_request_maps_vllm_fields():
    req = translate_request(
        {
            "messages": [{"role": "user", "content": "x"}],
            "structured_outputs": {"choice": ["yes", "no"]},
            "max_tokens": 9999,
        },
        512,
    )
    assert req["grammar"] == 'root ::= "yes" | "no"' and req["max_tokens"] == 512
    assert "structured_outputs" not in req
    req = translate_request(
        {"messages": [{"role": "user", "content": "x"}], "structured_outputs": {"json": {"type": "object"}}}, 512
    )
    assert req["response_format"]["json_schema"]["schema"] == {"type": "object"}
    with pytest.raises(ValueError, match="non-empty list of strings"):
        translate_request({"messages": [{"role": "user", "content": "x"}], "structured_outputs": {"choice": []}}, 8)
    with pytest.raises(ValueError, match="'messages' must be a non-empty array"):
        translate_request({"messages": "x"}, 8)


def test_vllm_config_from_conf():
    kwargs = vllm_llm_config_kwargs(load_serving_conf())
    assert kwargs["accelerator_config"] == {"kind": "cpu"}
    assert kwargs["engine_kwargs"]["enable_prefix_caching"] is True
    assert kwargs["engine_kwargs"]["structured_outputs_config"]["disable_any_whitespace"] is True
    assert kwargs["runtime_env"]["env_vars"]["VLLM_CPU_NUM_OF_RESERVED_CPU"] == "0"
    gpu = load_serving_conf(overrides={"vllm": {"device": "gpu", "accelerator_type": "H100", "max_replicas": 4}})
    kwargs = vllm_llm_config_kwargs(gpu)
    assert kwargs["accelerator_type"] == "H100" and "accelerator_config" not in kwargs
    assert kwargs["deployment_config"]["autoscaling_config"]["max_replicas"] == 4


# ---- the service's state file: one per user and service, and stop ends only what start began
# (no model: a sleeping process stands for the service's host process)


@pytest.fixture
def sleeper():
    """``sleeper()`` starts a process that sleeps (killed at the end if still there)."""
    import subprocess
    import sys

    procs = []

    def start():
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
        procs.append(p)
        return p

    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def state_of(p, **changes):
    import os

    from udfs.runtime.lease import process_started

    return {"url": "http://127.0.0.1:1/v1", "pid": p.pid, "pid_started": process_started(p.pid), "uid": os.getuid()} | (
        changes
    )


@pytest.fixture
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LLM4SCHEMA_MODEL_DIR", str(tmp_path / "models"))
    return tmp_path


def test_two_users_and_two_services_keep_their_own_state(state_dir, monkeypatch):
    import os

    from udfs.llm.serving.process import state_file

    a, b = (load_serving_conf(overrides={"serving": {"port": p}}) for p in (8011, 8012))
    mine = {state_file(a), state_file(b)}
    monkeypatch.setattr(os, "getuid", lambda: 4242)
    theirs = {state_file(a), state_file(b)}
    assert len(mine | theirs) == 4 and all(p.parent == state_dir for p in mine | theirs)
    assert state_file(a).name == "serving-state-u4242-127.0.0.1_8011.json"


def test_stop_leaves_alone_what_its_start_did_not_begin(state_dir, sleeper):
    import json
    import os

    from udfs.llm.serving.process import state_file, stop

    conf = load_serving_conf(overrides={"serving": {"port": 8013}})
    other = sleeper()
    # another user's service on the same port, in the shared folder: not this user's state
    theirs = state_file(conf).with_name(state_file(conf).name.replace(f"-u{os.getuid()}-", "-u4242-"))
    theirs.write_text(json.dumps(state_of(other, uid=4242)))
    assert stop(conf) == "not running"
    # this user's state naming a pid that now belongs to another process (same pid, later start)
    state_file(conf).write_text(json.dumps(state_of(other, pid_started="1")))
    assert stop(conf) == f"not running (pid {other.pid} now belongs to another process: left alone)"
    assert not state_file(conf).exists()
    # a state file holding another uid under this user's name
    state_file(conf).write_text(json.dumps(state_of(other, uid=4242)))
    assert "not this user's" in stop(conf)
    assert other.poll() is None and theirs.exists()  # alive, and the other user's state untouched
    # what this user's start began: stopped
    ours = sleeper()
    state_file(conf).write_text(json.dumps(state_of(ours)))
    assert stop(conf) == ""
    assert ours.wait(timeout=30) == -15 and other.poll() is None and not state_file(conf).exists()


def test_start_refuses_a_port_where_another_service_answers(state_dir, monkeypatch):
    import http.server
    import threading

    from udfs.llm.serving import process
    from udfs.llm.serving.process import start, state_file

    def no_launch(*args, **kwargs):
        raise AssertionError("start went on to launch a service")

    monkeypatch.setattr(process.subprocess, "Popen", no_launch)

    class Models(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"data": [{"id": "theirs"}]}')

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Models)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        conf = load_serving_conf(overrides={"serving": {"port": server.server_address[1]}})
        with pytest.raises(RuntimeError, match=r"a service already answers at http://127.0.0.1:\d+/v1, not one"):
            start(conf, "conf/serving.toml")
        assert not state_file(conf).exists()
    finally:
        server.shutdown()
