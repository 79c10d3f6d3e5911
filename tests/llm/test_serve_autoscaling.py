"""A backlog scales Serve replicas with the GPU application's own settings.

``conf/serving-gpu.toml`` autoscales vLLM replicas on queue length (``target_ongoing_requests``
per replica). This test gives the benchmark's stub deployment (``testkit.stub_engine``, a
harness stub answering after 200 ms, not a model) exactly the deployment options the vLLM
application gets from that file (``udfs.llm.serving.apps.vllm_llm_config_kwargs``: request limits and
autoscaling), with two changes only so that it runs on a small machine in a minute: at most 2
replicas and a 1 s upscale delay. It then keeps twice the target outstanding, as a corpus run
does, and reads Serve's own status until the deployment runs a second replica.

Ray and Serve run in a subprocess: an in-process ``ray.init``/``ray.shutdown`` would end the
suite's shared model service.
"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import asyncio, json, sys, tempfile, time
import ray
from ray import serve
from testkit.stub_engine import serve_deployment
from udfs.llm.serving.apps import vllm_llm_config_kwargs
from udfs.llm.serving.config import load_serving_conf

conf = load_serving_conf(sys.argv[1] + "/conf/serving-gpu.toml",
                         overrides={"vllm": {"max_replicas": 2, "upscale_delay_s": 1}})
dc = vllm_llm_config_kwargs(conf)["deployment_config"]
target = dc["autoscaling_config"]["target_ongoing_requests"]
ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
         _temp_dir=tempfile.mkdtemp(prefix="ray", dir="/tmp"),
         runtime_env={"env_vars": {"PYTHONPATH": sys.argv[1]}})
serve.start()
serve.run(serve_deployment(200, deployment_config=dc), name="stub", route_prefix=None)
handle = serve.get_app_handle("stub").options(method_name="handle_http")
body = json.dumps({"model": "stub", "max_tokens": 1, "logprobs": True, "top_logprobs": 20,
                   "messages": [{"role": "user", "content": "Is the sky blue? Answer yes or no."}]}).encode()

def replicas():
    dep = serve.status().applications["stub"].deployments["StubEngine"]
    return dep.replica_states.get("RUNNING", 0)

async def main():
    seen = [replicas()]
    answers = []
    stop = asyncio.Event()

    async def client():
        while not stop.is_set():
            status, _, _ = await handle.remote("POST", "/v1/chat/completions", body)
            answers.append(status)

    tasks = [asyncio.create_task(client()) for _ in range(2 * target)]
    t0 = time.monotonic()
    scaled_at = None
    while time.monotonic() - t0 < 90:
        await asyncio.sleep(1)
        seen.append(await asyncio.to_thread(replicas))
        if seen[-1] >= 2:
            scaled_at = time.monotonic() - t0
            break
    stop.set()
    await asyncio.gather(*tasks)
    return {"target": target, "outstanding": 2 * target, "config": dc, "replicas_seen": seen,
            "scaled_after_s": scaled_at, "answers": len(answers), "ok": answers.count(200)}

result = asyncio.run(main())
with open(sys.argv[2], "w") as f:
    json.dump(result, f)
serve.shutdown()
ray.shutdown()
"""


def test_a_backlog_scales_the_gpu_apps_replicas(tmp_path):
    script = tmp_path / "autoscale.py"
    script.write_text(SCRIPT)
    found = tmp_path / "result.json"
    out = subprocess.run(
        [sys.executable, str(script), str(ROOT), str(found)], capture_output=True, text=True, timeout=240
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(found.read_text())
    auto = result["config"]["autoscaling_config"]
    # the GPU file's settings reached the deployment, only the two named changes made
    assert (auto["min_replicas"], auto["max_replicas"], auto["upscale_delay_s"]) == (1, 2, 1.0)
    assert auto["target_ongoing_requests"] == result["target"] > 1
    assert result["replicas_seen"][0] == 1, result
    assert result["scaled_after_s"] is not None and max(result["replicas_seen"]) == 2, result
    # the backlog was answered, not shed: every request got the stub's 200
    assert result["answers"] > 0 and result["ok"] == result["answers"], result
