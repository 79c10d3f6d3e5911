"""``serve://<app>/v1`` (udfs/llm/serve_handle.py) against real Ray Serve applications: the
benchmark's stub as a Serve app in a process of its own (``python -m testkit.stub_engine --serve``), and
the suite's embedded model service; the client side runs in another process that joins the app's
Ray cluster, as a job's workers do. Both Ray processes are subprocesses: an in-process
``ray.init``/``ray.shutdown`` here would end the suite's model service. Every answer through a
handle is compared with the same request's answer over HTTP through Serve's proxy."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cluster.local.procs import free_port, stop
from tests.conftest import ROOT

# Runs in a process that joined the cluster: argv = Ray address, the proxy's /v1 URL, the app's
# serve:// URL, the model; prints one JSON line of what each way answered.
CLIENT = r"""
import json, sys, time
import ray

address, http, handle, model = sys.argv[1:5]
ray.init(address=address, log_to_driver=False, logging_level="ERROR")
from udfs.llm.chunking import ServedTokenizer
from udfs.llm.client import LLMClient, LLMError, first_model

MESSAGES = [{"role": "system", "content": "Answer with yes or no."},
            {"role": "user", "content": "Is Paris the capital of France?"}]


def verdict(url, model, **kw):
    client = LLMClient(url, model, **kw)
    try:
        v = client.verdict_sync(MESSAGES)
        return {"score": v.score, "answer": v.answer, "error": v.error, "attempts": v.completion.attempts}
    finally:
        client.close()


def tokens(url, text):
    tok = ServedTokenizer(url)
    try:
        return {"kind": tok.kind, "pieces": [b.hex() for b in tok.token_bytes(text)]}
    finally:
        tok.close()


# llama.cpp's logits differ in the last digits between a prompt evaluated afresh and one whose
# prefix is cached: the same prompt goes over HTTP first, so both compared answers are cached ones.
verdict(http, model)
out = {"handle": verdict(handle, model), "http": verdict(http, model),
       "unknown_handle": verdict(handle, "no-such-model"), "unknown_http": verdict(http, "no-such-model"),
       "no_app": verdict("serve://no-such-app/v1", model, max_retries=2, backoff_base_s=0.01),
       "first_model": first_model(handle, timeout_s=60), "first_model_http": first_model(http, timeout_s=60),
       "urls": [http, handle]}
try:
    first_model("serve://no-such-app/v1", timeout_s=10)
except LLMError as exc:
    out["first_model_no_app"] = str(exc)
text = "Schema.org markup: Café Müller, 4.5 stars, opens 2024-05-01."
out["tokens"], out["tokens_http"] = tokens(handle, text), tokens(http, text)
if "--bare" in sys.argv:
    # an app whose ingress has no handle_http: answered 501 with the reason, not retried
    from ray import serve

    @serve.deployment(ray_actor_options={"num_cpus": 0})
    class Bare:
        async def __call__(self, request):
            return "bare"

    serve.run(Bare.bind(), name="bare", route_prefix="/bare", blocking=False)
    for _ in range(120):
        if serve.status().applications["bare"].status == "RUNNING":
            break
        time.sleep(0.5)
    out["bare"] = verdict("serve://bare/v1", model)
    serve.delete("bare")
print(json.dumps(out))
"""


def ask(tmp_path: Path, address: str, http: str, handle: str, model: str, env: dict[str, str], *extra: str) -> dict:
    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    env = {**env, "PYTHONPATH": str(ROOT)}
    env.pop("RAY_ADDRESS", None)
    done = subprocess.run(
        [sys.executable, str(script), address, http, handle, model, *extra],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def stub_app():
    """The stub as the Serve app ``stub`` in its own process: (Ray address, proxy URL, join env)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "testkit.stub_engine", "--serve", "--port", str(port), "--app", "stub"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"},
    )
    try:
        deadline = time.monotonic() + 180
        line = ""
        while not line and time.monotonic() < deadline and proc.poll() is None:
            line = proc.stdout.readline().strip()
        assert line, f"the stub's Serve app did not start (exit {proc.poll()})"
        info = json.loads(line)
        env = {k: v for k, v in os.environ.items() if k != "RAY_AUTH_TOKEN"}  # the app's own token, by its path
        yield info["ray_address"], info["url"], {**env, **info["env"]}
    finally:
        stop([proc.pid], grace_s=30)
        proc.wait(timeout=60)


@pytest.fixture(scope="module")
def stub_answers(stub_app, tmp_path_factory):
    address, http, env = stub_app
    return ask(tmp_path_factory.mktemp("client"), address, http, "serve://stub/v1", "stub", env, "--bare")


def test_a_verdict_through_the_handle_is_the_proxys(stub_answers):
    got, want = stub_answers["handle"], stub_answers["http"]
    assert got["error"] is None and want["error"] is None
    assert got["score"] == want["score"] and got["answer"] == want["answer"]


def test_an_unknown_model_is_the_same_error_as_over_http(stub_answers):
    handle, http = stub_answers["unknown_handle"]["error"], stub_answers["unknown_http"]["error"]
    assert "'no-such-model' is not served at serve://stub/v1" in handle
    # the same message but for the URL it names
    assert handle.replace("serve://stub/v1", "URL") == http.replace(stub_answers["urls"][0], "URL")


def test_an_app_that_is_not_running_fails_after_the_retries(stub_answers):
    no_app = stub_answers["no_app"]
    assert no_app["score"] is None and no_app["attempts"] == 3
    assert no_app["error"].startswith("gave up after 3 attempts: AppNotRunning")
    assert "no-such-app" in no_app["error"]
    assert (
        "cannot be read" in stub_answers["first_model_no_app"] and "AppNotRunning" in stub_answers["first_model_no_app"]
    )


def test_first_model_and_the_tokenizer_through_the_handle(stub_answers):
    assert stub_answers["first_model"] == stub_answers["first_model_http"] == "stub"
    assert stub_answers["tokens"] == stub_answers["tokens_http"]
    assert stub_answers["tokens"]["kind"] == "served:llama.cpp"
    text = "Schema.org markup: Café Müller, 4.5 stars, opens 2024-05-01."
    assert b"".join(bytes.fromhex(p) for p in stub_answers["tokens"]["pieces"]).decode() == text


def test_an_app_without_the_handle_method_is_a_clear_error_not_retried(stub_answers):
    bare = stub_answers["bare"]
    assert bare["attempts"] == 1 and bare["score"] is None, bare
    assert bare["error"].startswith("HTTP 501") and "handle_http" in bare["error"]


def test_the_evaluate_job_asks_through_handles(stub_app, tmp_path):
    """``jobs/evaluate.py --base-url serve://stub/v1 --ray-address ...``: the driver lists the model
    and detects the tokenizer through the handle, the worker asks every verdict through it (the
    stub counts each one it answered), and every page is scored without a failed verdict."""
    import httpx

    from testkit.synthetic_pages import write_pages
    from udfs.runtime.io import Folder

    address, http, env = stub_app
    pages = write_pages(tmp_path, 3)
    before = httpx.get(http[: -len("/v1")] + "/stats").json()["counts"].get("verdict", 0)
    out = tmp_path / "out"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "jobs" / "evaluate.py"),
            "--input",
            str(pages),
            "--output",
            str(out),
            "--base-url",
            "serve://stub/v1",
            "--ray-address",
            address,
            "--limit",
            "0",
            # one yes/no request per verdict, none repeated: the stub's count is the job's
            "--executor",
            "local",
            "--factuality-questions",
            "plain",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={k: v for k, v in env.items() if k != "RAY_ADDRESS"},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    answered = httpx.get(http[: -len("/v1")] + "/stats").json()["counts"].get("verdict", 0) - before
    scores = Folder(out / "scores").read(columns=["page_key", "verdict_requests"])
    assert len(set(scores.column("page_key").to_pylist())) == 3
    assert answered > 0 and answered == sum(scores.column("verdict_requests").to_pylist())
    triples = Folder(out / "triples").read(columns=["factual_error"]).column("factual_error").to_pylist()
    assert not [e for e in triples if e and not e.startswith("not judged")]
    record = json.loads((out / "scores" / "_run.json").read_text())
    assert record["evaluation"]["base_url"] == "serve://stub/v1"
    assert record["evaluation"]["tokenizer"] == "served:llama.cpp"


@pytest.mark.model
def test_the_embedded_service_through_its_handle(service, tmp_path):
    """The embedded engine's ingress (udfs/llm/serving/apps.py) answers through ``handle_http`` what its
    HTTP routes answer: the model listing, a verdict's score, the tokenizer."""
    import ray

    from udfs.llm.serving.config import load_serving_conf

    app = load_serving_conf().serving.app_name
    got = ask(
        tmp_path,
        ray.get_runtime_context().gcs_address,
        service,
        f"serve://{app}/v1",
        "qwen2.5-coder-1.5b",
        dict(os.environ),
    )
    assert got["first_model"] == got["first_model_http"] == "qwen2.5-coder-1.5b"
    assert got["handle"]["error"] is None and got["handle"]["score"] == got["http"]["score"]
    assert got["unknown_handle"]["error"].replace(f"serve://{app}/v1", "URL") == got["unknown_http"]["error"].replace(
        service, "URL"
    )
    assert got["tokens"] == got["tokens_http"] and got["tokens"]["kind"] == "served:llama.cpp"
    assert got["no_app"]["error"].startswith("gave up after 3 attempts: AppNotRunning")
