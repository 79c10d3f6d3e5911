"""The Ray Serve applications of the model service, built from a :class:`ServingConfig`.

* the embedded engine: one Serve deployment per model (its own replicas, CPUs and llama.cpp engine through
  ``xllamacpp``) behind one OpenAI-compatible ingress that routes by the request's ``model``;
* vLLM: Ray Serve LLM's ``LLMConfig`` (``vllm_llm_config_kwargs``, plain data) and ``build_openai_app``.

``build_app(conf)`` builds the one ``[serving] engine`` names; ``udfs.llm.serving.process`` deploys it.
"""

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from udfs.llm.serving.config import EmbeddedModelConf, ReplicasConf, ServingConfig
from udfs.runtime.paths import PROJECT_ROOT


def _autoscaling(section: ReplicasConf) -> dict[str, Any]:
    """Serve's replica options: a fixed count, or autoscaling between the two bounds (the loader has
    checked 1 <= max_replicas and min_replicas <= max_replicas)."""
    lo, hi = section.min_replicas, section.max_replicas
    if lo == hi:
        return {"num_replicas": lo}
    return {
        "autoscaling_config": {
            "min_replicas": lo,
            "max_replicas": hi,
            "target_ongoing_requests": section.target_ongoing_requests,
            "upscale_delay_s": section.upscale_delay_s,
            "downscale_delay_s": section.downscale_delay_s,
        }
    }


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


def _deployment_name(model_id: str) -> str:
    return "EmbeddedLLM-" + re.sub(r"[^A-Za-z0-9_.-]", "_", model_id)


def _openai_error(
    status: int,
    message: str,
    kind: str = "invalid_request_error",
    code: str | int | None = None,
    param: str | None = None,
) -> tuple[int, dict[str, Any]]:
    """OpenAI's error body; ``code`` is the HTTP status unless a named code says more."""
    return status, {
        "error": {"message": message, "type": kind, "param": param, "code": status if code is None else code}
    }


def _build_embedded_app(conf: ServingConfig):
    """One Serve deployment per model (its own replicas, CPUs and llama.cpp engine) behind one
    OpenAI-compatible ingress that routes each request by its ``model``."""
    models = conf.engine_section("embedded").models
    engine = _embedded_engine_class()
    deployments = {m.model_id: _engine_deployment(engine, m) for m in models}
    return _openai_ingress(models).bind(deployments)


def _embedded_engine_class() -> type:
    """The replica class of one model's llama.cpp engine (the engine's packages are imported in
    the replica, not here)."""

    class EmbeddedLLM:
        """One model's llama.cpp engine; answers (status, body) pairs the ingress sends on."""

        def __init__(self, settings: EmbeddedModelConf):
            import httpx
            import xllamacpp

            self.settings = settings
            self.model_id = settings.model_id
            params = xllamacpp.CommonParams()
            params.model.path = _resolve_gguf(settings.model)
            params.n_ctx = settings.n_ctx
            params.n_parallel = settings.n_parallel
            params.cpuparams.n_threads = settings.n_threads
            params.cpuparams_batch.n_threads = settings.n_threads
            params.warmup = False
            params.verbosity = -1
            self.server = xllamacpp.Server(params)
            # llama.cpp's own HTTP server (loopback, random port) serves /tokenize.
            self.engine_url = self.server.listening_address.rstrip("/")
            self.http = httpx.AsyncClient(timeout=60)
            self.n_ctx = params.n_ctx

        def info(self) -> dict[str, Any]:
            return {
                "id": self.model_id,
                "object": "model",
                "owned_by": "llm4schema-embedded",
                "max_model_len": self.n_ctx,
                "engine": "llama.cpp",
            }

        async def chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
            try:
                req = translate_request(body, self.settings.max_tokens_limit)
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

    return EmbeddedLLM


def _engine_deployment(engine: type, m: EmbeddedModelConf):
    """``engine``'s Serve deployment for model ``m``, bound to its settings: its replicas, CPUs,
    queue bounds and autoscaling."""
    from ray import serve

    return serve.deployment(
        engine,
        name=_deployment_name(m.model_id),
        ray_actor_options={
            "num_cpus": m.num_cpus,
            # The replica imports udfs/ whatever the worker's working directory.
            "runtime_env": {"env_vars": {"PYTHONPATH": str(PROJECT_ROOT)}},
        },
        max_ongoing_requests=m.max_ongoing_requests,
        max_queued_requests=m.max_queued_requests,
        health_check_period_s=10,
        **_autoscaling(m),
    ).bind(m)


class _EngineRouter:
    """The ingress's routing: each request to its model's deployment, as (status, JSON body),
    whether it came over HTTP or through a deployment handle."""

    def __init__(self, engines: dict[str, Any]):
        self.engines = engines  # model id -> DeploymentHandle, in configuration order
        self.default = next(iter(engines))
        self.listing: list[dict[str, Any]] | None = None

    async def call(self, model: Any, method: str, *args: Any) -> tuple[int, Any]:
        """Route to the model's deployment. A replica that died mid-request, or a full queue,
        is a 503, which clients retry while Serve recovers; an unknown model is OpenAI's 404."""
        from ray.exceptions import RayActorError
        from ray.serve.exceptions import BackPressureError

        if model in (None, ""):
            model = self.default
        if model not in self.engines:
            return _openai_error(
                404,
                f"The model {model!r} does not exist; /v1/models lists {sorted(self.engines)}",
                code="model_not_found",
                param="model",
            )
        try:
            return await getattr(self.engines[model], method).remote(*args)
        except (RayActorError, BackPressureError) as exc:
            return _openai_error(503, f"model {model!r} unavailable: {type(exc).__name__}", "service_unavailable")

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
            return await self.call(
                body.get("model"),
                "engine_post",
                "/tokenize",
                {"content": body["content"], "with_pieces": bool(body.get("with_pieces")), "add_special": False},
            )
        body = body if isinstance(body, dict) else {}
        return await self.call(body.get("model"), "engine_post", "/detokenize", {"tokens": body.get("tokens", [])})

    async def handle_http(self, method: str, path: str, body: bytes | None) -> tuple[int, dict, bytes]:
        """The HTTP routes' answer through a deployment handle, without Serve's proxy:
        ``serve://<app>/v1`` (``udfs.llm.serve_handle``)."""
        status, answer = await self.answer(method.upper(), path, body)
        return status, {"content-type": "application/json"}, json.dumps(answer).encode()


def _openai_ingress(models: list[EmbeddedModelConf]):
    """The ingress deployment: ``_EngineRouter`` behind FastAPI's OpenAI routes; it asks no CPU of
    its own and takes as many requests as the models together, and some."""
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse
    from ray import serve

    api = FastAPI(title="llm4schema embedded LLM")

    def _json_response(answer: tuple[int, Any]) -> JSONResponse:
        status, body = answer
        return JSONResponse(body, status_code=status)

    @serve.deployment(
        name="OpenAIIngress",
        # Routing only: on a small node the engines take every CPU and the ingress still schedules.
        ray_actor_options={"num_cpus": 0, "runtime_env": {"env_vars": {"PYTHONPATH": str(PROJECT_ROOT)}}},
        max_ongoing_requests=sum(m.max_ongoing_requests for m in models) + 16,
    )
    @serve.ingress(api)
    class OpenAIIngress(_EngineRouter):
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

    return OpenAIIngress


# --------------------------------------------------------------------------------------------
# vLLM engine


def vllm_llm_config_kwargs(conf: ServingConfig) -> dict[str, Any]:
    """The LLMConfig arguments for the [vllm] section (plain data, so it is testable without vLLM)."""
    v = conf.engine_section("vllm")
    source = str(Path(v.model_source).expanduser()) if v.model_source.startswith(("~", "/", ".")) else v.model_source
    engine_kwargs = {
        "max_model_len": v.max_model_len,
        "dtype": v.dtype,
        "enable_prefix_caching": v.enable_prefix_caching,
        # Without disable_any_whitespace a JSON schema lets the model pad whitespace up to max_tokens.
        "structured_outputs_config": {"backend": "xgrammar", "disable_any_whitespace": True},
        "tensor_parallel_size": v.tensor_parallel_size,
        "pipeline_parallel_size": v.pipeline_parallel_size,
        # Sequences one replica's engine batches at once.
        "max_num_seqs": v.max_num_seqs,
        # usage.prompt_tokens_details.cached_tokens in every answer: the prefix cache's hits,
        # which the client sums (the embedded engine reports them too).
        "enable_prompt_tokens_details": True,
    }
    kwargs: dict[str, Any] = {
        "model_loading_config": {"model_id": v.model_id, "model_source": source},
        "engine_kwargs": engine_kwargs,
        "deployment_config": {
            "max_ongoing_requests": v.max_ongoing_requests,
            "max_queued_requests": v.max_queued_requests,
            **_autoscaling(v),
        },
        "runtime_env": {"env_vars": {**v.env, "PYTHONPATH": str(PROJECT_ROOT)}},
        # /tokenize with Ray 2.60 and vLLM 0.32 (udfs/llm/vllm_compat.py)
        "callback_config": {"callback_class": "udfs.llm.vllm_compat.VllmCompat"},
        "log_engine_metrics": False,
    }
    if v.device == "cpu":
        kwargs["accelerator_config"] = {"kind": "cpu"}
        kwargs["runtime_env"]["env_vars"].setdefault("VLLM_CACHE_ROOT", str(Path.home() / ".cache" / "vllm"))
    elif v.accelerator_type:
        kwargs["accelerator_type"] = v.accelerator_type
    if "autoscaling_config" not in kwargs["deployment_config"]:
        n = kwargs["deployment_config"].pop("num_replicas")
        kwargs["deployment_config"]["autoscaling_config"] = {"min_replicas": n, "max_replicas": n}
    return kwargs


def _build_vllm_app(conf: ServingConfig):
    from ray.serve.llm import LLMConfig, build_openai_app

    llm_config = LLMConfig(**vllm_llm_config_kwargs(conf))
    # On a small CPU node the engine's placement group takes every CPU; an ingress that asks for
    # none still schedules.
    return build_openai_app(
        {"llm_configs": [llm_config], "ingress_deployment_config": {"ray_actor_options": {"num_cpus": 0}}}
    )


def build_app(conf: ServingConfig):
    """The application of ``[serving] engine``, ready for ``serve.run``."""
    if conf.serving.engine == "vllm":
        return _build_vllm_app(conf)
    return _build_embedded_app(conf)
