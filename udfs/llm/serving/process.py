"""The model service as a process: deploy the application and wait until it answers (``run_app``,
``wait_ready``), and the service's life as a command: ``start`` (onto an existing Ray cluster, or in a
background host process that owns a local Ray instance), ``stop``, ``status``.

``start`` keeps a state file beside the model cache (``~/.cache/llm4schema``, which several users
of a machine may share through ``$XDG_CACHE_HOME`` or ``$LLM4SCHEMA_MODEL_DIR``), keyed by the user
and the service: ``serving-state-u<uid>-<host>_<port>.json`` (and the host process's log
``serving-u<uid>-<host>_<port>.log``), so that two users, or one user's two services on two ports,
never read each other's state. It records the url, the host process's pid and start time
(``udfs.runtime.lease.process_started``) and the uid, or the Ray cluster and app; ``stop`` ends a
process only when all of these still match (a pid reused by another process, or a state file of
another user, is left alone), so it stops exactly what its ``start`` began. ``start`` refuses when
its own service still runs, or when something else already answers at the service's URL.
"""

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from udfs.llm.serving.apps import build_app
from udfs.llm.serving.config import ServingConfig, base_url
from udfs.runtime.lease import process_alive, process_started
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


def state_key(conf: ServingConfig) -> str:
    """What tells one user's service from another's: ``u<uid>-<host>_<port>``."""
    host = re.sub(r"[^A-Za-z0-9.-]+", "_", conf.serving.host)
    return f"u{os.getuid()}-{host}_{conf.serving.port}"


def state_file(conf: ServingConfig) -> Path:
    """The state file of ``conf``'s service for this user (module docstring)."""
    from udfs.llm.model_files import cache_dir

    return cache_dir().parent / f"serving-state-{state_key(conf)}.json"


def _read_state(conf: ServingConfig) -> dict[str, Any]:
    path = state_file(conf)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except ValueError:
        return {}  # a torn or foreign file: nothing this user's start recorded
    return data if isinstance(data, dict) else {}


def _ours(state: dict[str, Any]) -> str | None:
    """Why the host process ``state`` records is not one this user's ``start`` began and still runs
    (None: it is, and it runs)."""
    pid = state.get("pid")
    if not pid:
        return "no process recorded"
    if state.get("uid") != os.getuid():
        return f"pid {pid} was recorded for uid {state.get('uid')}, not this user's (uid {os.getuid()})"
    if not process_alive(pid):
        return f"pid {pid} is gone"
    if process_started(pid) != state.get("pid_started"):  # both None only where /proc is not
        return f"pid {pid} now belongs to another process"
    return None


def start(conf: ServingConfig, conf_path: str | Path) -> str:
    """Deploy the application. With [serving] ray_address, onto that cluster (Serve keeps it after
    this command exits); otherwise in a background host process that owns a local Ray instance,
    so that `stop` ends exactly what `start` began and nobody else's Ray."""
    url = base_url(conf)
    state = _read_state(conf)
    if state.get("pid") and _ours(state) is None:
        raise RuntimeError(f"already running (pid {state['pid']}) at {state.get('url')}; stop it first")
    if _answers(url):
        raise RuntimeError(
            f"a service already answers at {url}, not one this user's start began: "
            "give another --port, or stop it where it was started"
        )
    path = state_file(conf)
    path.parent.mkdir(parents=True, exist_ok=True)
    if conf.serving.ray_address:
        import ray

        ray.init(address=conf.serving.ray_address, log_to_driver=False)
        run_app(conf)
        path.write_text(
            json.dumps(
                {"url": url, "ray_address": conf.serving.ray_address, "app": conf.serving.app_name, "uid": os.getuid()}
            )
        )
        return url
    log_path = path.with_name(f"serving-{state_key(conf)}.log")
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
    path.write_text(
        json.dumps(
            {
                "url": url,
                "pid": proc.pid,
                "pid_started": process_started(proc.pid),
                "uid": os.getuid(),
                "config": str(Path(conf_path).resolve()),
                "log": str(log_path),
            }
        )
    )
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
    """End what this user's ``start`` of ``conf``'s service began (module docstring); what to tell
    the user ("" when it stopped as asked)."""
    path = state_file(conf)
    state = _read_state(conf)
    if state.get("ray_address"):
        import ray
        from ray import serve

        ray.init(address=state["ray_address"], log_to_driver=False)
        serve.delete(state.get("app", conf.serving.app_name))
        ray.shutdown()
        path.unlink(missing_ok=True)
        return f"deleted {state.get('app')} from {state['ray_address']}"
    why = _ours(state)
    if why is not None:
        path.unlink(missing_ok=True)
        return "not running" if not state.get("pid") else f"not running ({why}: left alone)"
    pid = state["pid"]
    os.kill(pid, 15)
    deadline = time.monotonic() + 90
    while _ours(state) is None and time.monotonic() < deadline:
        time.sleep(0.5)
    if _ours(state) is None:
        os.kill(pid, 9)
    path.unlink(missing_ok=True)
    return ""  # stopped as asked: nothing to say (the pid meant nothing to a reader)


def _answers(url: str) -> bool:
    """Whether an OpenAI-compatible service answers ``/models`` at ``url`` now."""
    import httpx

    try:
        return httpx.get(f"{url}/models", timeout=3).status_code == 200
    except httpx.HTTPError:
        return False


def status(conf: ServingConfig) -> dict[str, Any]:
    import httpx

    url = base_url(conf)
    try:
        resp = httpx.get(f"{url}/models", timeout=10)
        return {"url": url, "http": resp.status_code, "models": resp.json().get("data", [])}
    except Exception as exc:  # noqa: BLE001
        return {"url": url, "error": f"{type(exc).__name__}: {exc}"}
