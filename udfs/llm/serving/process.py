"""The model service as a process: deploy the application and wait until it answers (``run_app``,
``wait_ready``), and the service's life as a command: ``start`` (onto an existing Ray cluster, or in a
background host process that owns a local Ray instance), ``stop``, ``status``, with the state file
(``serving-state.json`` beside the model cache: url, pid or cluster, log) that lets ``stop`` end exactly
what ``start`` began.
"""

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from udfs.llm.serving.apps import build_app
from udfs.llm.serving.config import ServingConfig, base_url
from udfs.runtime.paths import PROJECT_ROOT


def run_app(conf: ServingConfig, *, wait_s: float = 600) -> str:
    """Deploy the application on the Ray cluster this process is connected to; returns the base URL."""
    from ray import serve

    serve.start(http_options={"host": conf.serving.host, "port": conf.serving.port})
    serve.run(build_app(conf), name=conf.serving.app_name, route_prefix="/", blocking=False)
    url = base_url(conf)
    wait_ready(url, wait_s)
    return url


def wait_ready(url: str, wait_s: float = 600) -> dict[str, Any]:
    import httpx

    deadline = time.monotonic() + wait_s
    last: Exception | str = "not tried"
    while time.monotonic() < deadline:
        try:
            resp = httpx.get(f"{url}/models", timeout=10)
            if resp.status_code == 200 and resp.json().get("data"):
                return resp.json()
            last = f"HTTP {resp.status_code}: {resp.text[:200]}"
        except Exception as exc:  # noqa: BLE001 - any failure means "not yet"
            last = exc
        time.sleep(1)
    raise TimeoutError(f"{url} not ready after {wait_s:.0f} s: {last}")


def _state_file() -> Path:
    from udfs.llm.model_files import cache_dir

    return cache_dir().parent / "serving-state.json"


def _read_state() -> dict[str, Any]:
    path = _state_file()
    return json.loads(path.read_text()) if path.exists() else {}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def start(conf: ServingConfig, conf_path: str | Path) -> str:
    """Deploy the application. With [serving] ray_address, onto that cluster (Serve keeps it after
    this command exits); otherwise in a background host process that owns a local Ray instance,
    so that `stop` ends exactly what `start` began and nobody else's Ray."""
    url = base_url(conf)
    state = _read_state()
    if state.get("pid") and _alive(state["pid"]):
        raise RuntimeError(f"already running (pid {state['pid']}) at {state.get('url')}; stop it first")
    _state_file().parent.mkdir(parents=True, exist_ok=True)
    if conf.serving.ray_address:
        import ray

        ray.init(address=conf.serving.ray_address, log_to_driver=False)
        run_app(conf)
        _state_file().write_text(
            json.dumps({"url": url, "ray_address": conf.serving.ray_address, "app": conf.serving.app_name})
        )
        return url
    log_path = _state_file().with_name("serving.log")
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "udfs.llm.serving",
                "_host",
                "--config",
                str(conf_path),
                "--engine",
                conf.serving.engine,
                "--port",
                str(conf.serving.port),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=str(PROJECT_ROOT),
            env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
        )
    _state_file().write_text(json.dumps({"url": url, "pid": proc.pid, "log": str(log_path)}))
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log_path.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"the service exited with {proc.returncode}; {log_path} ends:\n{tail}")
        try:
            wait_ready(url, 5)
            return url
        except TimeoutError:
            pass
    raise TimeoutError(f"{url} not ready after 900 s; see {log_path}")


def host(conf: ServingConfig) -> None:
    """The background process of `start`: a local Ray instance and the app, until SIGTERM."""
    import signal

    import ray
    from ray import serve

    # Ray starts workers at niceness 15; on a node shared with Spark or anything else the model
    # replica would then get a fraction of its CPUs.
    os.environ.setdefault("RAY_worker_niceness", "0")
    ray.init(
        num_cpus=conf.serving.ray_num_cpus,
        include_dashboard=False,
        runtime_env={"env_vars": {"PYTHONPATH": str(PROJECT_ROOT)}},
    )
    url = run_app(conf)
    print(f"serving {conf.serving.engine} at {url}", flush=True)
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    while not stopping.wait(1):
        pass
    serve.shutdown()
    ray.shutdown()


def stop(conf: ServingConfig) -> str:
    state = _read_state()
    if state.get("ray_address"):
        import ray
        from ray import serve

        ray.init(address=state["ray_address"], log_to_driver=False)
        serve.delete(state.get("app", conf.serving.app_name))
        ray.shutdown()
        _state_file().unlink(missing_ok=True)
        return f"deleted {state.get('app')} from {state['ray_address']}"
    pid = state.get("pid")
    if not pid or not _alive(pid):
        _state_file().unlink(missing_ok=True)
        return "not running"
    os.kill(pid, 15)
    deadline = time.monotonic() + 90
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    if _alive(pid):
        os.kill(pid, 9)
    _state_file().unlink(missing_ok=True)
    return ""  # stopped as asked: nothing to say (the pid meant nothing to a reader)


def status(conf: ServingConfig) -> dict[str, Any]:
    import httpx

    url = base_url(conf)
    try:
        resp = httpx.get(f"{url}/models", timeout=10)
        return {"url": url, "http": resp.status_code, "models": resp.json().get("data", [])}
    except Exception as exc:  # noqa: BLE001
        return {"url": url, "error": f"{type(exc).__name__}: {exc}"}
