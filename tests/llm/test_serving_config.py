"""The model service's configuration (``udfs.llm.serving.config``): the shipped files load into typed,
frozen dataclasses; a fault in a file is a ConfigError naming the file, the section and the key; every key
is declared once, without a default, with its meaning (``config_reference``)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from udfs.llm.serving.apps import vllm_llm_config_kwargs
from udfs.llm.serving.config import (
    DEFAULT_SERVING_CONF,
    EmbeddedModelConf,
    ServingConf,
    ServingConfig,
    VllmConf,
    config_reference,
    load_serving_conf,
    with_vllm_env,
)
from udfs.runtime.config import ConfigError

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "conf").glob("serving*.toml"))
CONSENSUS = ROOT / "conf" / "serving-consensus.toml"


def edited(tmp_path: Path, old: str, new: str, source: Path = DEFAULT_SERVING_CONF) -> Path:
    """The shipped file with its one occurrence of ``old`` replaced by ``new``."""
    text = source.read_text()
    assert text.count(old) == 1, old
    path = tmp_path / source.name
    path.write_text(text.replace(old, new))
    return path


def error(path: Path, **kw) -> str:
    with pytest.raises(ConfigError) as exc:
        load_serving_conf(path, **kw)
    return str(exc.value)


# ---- the shipped files ------------------------------------------------------------------------------


def test_there_are_three_shipped_files():
    assert [p.name for p in SHIPPED] == ["serving-consensus.toml", "serving-gpu.toml", "serving.toml"]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_each_shipped_file_loads_whole_and_typed(path):
    conf = load_serving_conf(path)
    assert isinstance(conf, ServingConfig) and conf.path == str(path)
    raw = tomllib.loads(path.read_text())
    assert set(raw) == {"serving", conf.serving.engine} | ({"embedded", "vllm"} & set(raw))
    # every key of the file is a field of the same value
    assert dataclasses.asdict(conf.serving) == raw["serving"]
    if conf.vllm is not None:
        assert {k: getattr(conf.vllm, k) for k in raw["vllm"]} == raw["vllm"]
        assert isinstance(conf.vllm.upscale_delay_s, float)
    if conf.embedded is not None:
        shared = {k: v for k, v in raw["embedded"].items() if k != "models"}
        listed = raw["embedded"].get("models", [{}])
        assert [{k: getattr(m, k) for k in {**shared, **t}} for m, t in zip(conf.embedded.models, listed)] == [
            {**shared, **t} for t in listed
        ]
    with pytest.raises(dataclasses.FrozenInstanceError):
        conf.serving.port = 1


def test_the_default_file_is_conf_serving_toml_and_has_both_engines():
    conf = load_serving_conf()
    assert conf.path == str(ROOT / "conf" / "serving.toml")
    assert conf.serving.engine == "embedded" and conf.vllm is not None
    (model,) = conf.embedded.models
    assert (model.model_id, model.n_ctx) == ("qwen2.5-coder-1.5b", 8192)
    assert (conf.vllm.device, conf.vllm.max_model_len, conf.vllm.max_num_seqs) == ("cpu", 2048, 16)


def test_overrides_replace_keys_and_are_checked_like_the_file():
    conf = load_serving_conf(overrides={"serving": {"port": 8011}, "embedded": {"n_ctx": 2048}})
    assert conf.serving.port == 8011 and conf.embedded.models[0].n_ctx == 2048
    err = error(DEFAULT_SERVING_CONF, overrides={"serving": {"port": "8011"}})
    assert err == f"{DEFAULT_SERVING_CONF}: [serving] port must be an integer, not str '8011'"
    # an engine whose section the file does not have
    err = error(CONSENSUS, overrides={"serving": {"engine": "vllm"}})
    assert err == f"{CONSENSUS}: missing section [vllm] ([serving] engine is 'vllm')"


def test_a_file_without_the_other_engine_says_so_when_that_section_is_asked_for():
    conf = load_serving_conf(CONSENSUS)
    with pytest.raises(ConfigError, match=r"serving-consensus.toml: no \[vllm\] section"):
        vllm_llm_config_kwargs(conf)


def test_more_replica_environment_is_added_not_replaced():
    conf = with_vllm_env(load_serving_conf(), VLLM_CACHE_ROOT="/tmp/x")
    assert conf.vllm.env["VLLM_CACHE_ROOT"] == "/tmp/x" and conf.vllm.env["HF_HUB_OFFLINE"] == "1"
    assert vllm_llm_config_kwargs(conf)["runtime_env"]["env_vars"]["VLLM_CACHE_ROOT"] == "/tmp/x"
    assert "VLLM_CACHE_ROOT" not in load_serving_conf().vllm.env


# ---- a bad file names the file, the section and the key -----------------------------------------------


def test_an_unknown_key_names_file_section_and_key(tmp_path):
    path = edited(tmp_path, "ray_num_cpus = 2\n", "ray_num_cpus = 2\nray_num_gpus = 1\n")
    assert error(path) == f"{path}: [serving] has unknown key ray_num_gpus (did you mean ray_num_cpus?)"
    path = edited(tmp_path, "max_num_seqs = 16\n", "max_num_seqs = 16\nmax_num_seq = 8\n")
    assert error(path) == f"{path}: [vllm] has unknown key max_num_seq (did you mean max_num_seqs?)"
    path = edited(tmp_path, "n_threads = 2\n", "n_threads = 2\nthreads = 2\n")
    assert error(path).startswith(f"{path}: [embedded] has unknown key threads (known: ")
    path = edited(
        tmp_path, 'model_id = "qwen2.5-coder-0.5b"\n', 'model_id = "qwen2.5-coder-0.5b"\nctx = 9\n', CONSENSUS
    )
    assert error(path).startswith(f"{path}: [[embedded.models]] #2 has unknown key ctx (known: ")


def test_a_mistyped_value_names_file_section_and_key(tmp_path):
    path = edited(tmp_path, "port = 8000", 'port = "8000"')
    assert error(path) == f"{path}: [serving] port must be an integer, not str '8000'"
    path = edited(tmp_path, "enable_prefix_caching = true", "enable_prefix_caching = 1")
    assert error(path) == f"{path}: [vllm] enable_prefix_caching must be a boolean, not int 1"
    path = edited(tmp_path, 'VLLM_CPU_KVCACHE_SPACE = "2"', "VLLM_CPU_KVCACHE_SPACE = 2")
    assert error(path) == f"{path}: [vllm] env.VLLM_CPU_KVCACHE_SPACE must be a string, not int 2"
    path = edited(tmp_path, "n_ctx = 8192", "n_ctx = 8192.0")
    assert error(path) == f"{path}: [embedded] n_ctx must be an integer, not float 8192.0"
    # a key a model overrides is checked in that model's table
    path = edited(
        tmp_path, 'model_id = "qwen2.5-coder-0.5b"\n', 'model_id = "qwen2.5-coder-0.5b"\nn_ctx = "2k"\n', CONSENSUS
    )
    assert error(path) == (
        f"{path}: [[embedded.models]] #2 (with the keys of [embedded]) n_ctx must be an integer, not str '2k'"
    )


def test_a_value_outside_its_choices_or_replicas_out_of_order_name_the_key(tmp_path):
    path = edited(tmp_path, 'device = "cpu"', 'device = "tpu"')
    assert error(path) == f"{path}: [vllm] device must be one of 'cpu', 'gpu', not 'tpu'"
    path = edited(tmp_path, 'engine = "embedded"', 'engine = "llamacpp"')
    assert error(path) == f"{path}: [serving] engine must be one of 'embedded', 'vllm', not 'llamacpp'"
    path = edited(
        tmp_path,
        "min_replicas = 1\nmax_replicas = 1\ntarget_ongoing_requests = 8",
        "min_replicas = 3\nmax_replicas = 2\ntarget_ongoing_requests = 8",
    )
    assert error(path) == (
        f"{path}: [vllm] min_replicas, max_replicas: need 1 <= max_replicas and min_replicas <= max_replicas, got 3..2"
    )


def test_a_missing_section_or_key_names_file_section_and_key(tmp_path):
    path = edited(tmp_path, "[serving]\n", "[service]\n")
    assert error(path) == f"{path}: unknown section [service] (sections: serving, embedded, vllm)"
    path = tmp_path / "no-serving.toml"
    path.write_text("[embedded]" + DEFAULT_SERVING_CONF.read_text().split("\n[embedded]", 1)[1])
    assert error(path) == f"{path}: missing section [serving]"
    path = tmp_path / "no-embedded.toml"
    text = DEFAULT_SERVING_CONF.read_text()
    path.write_text(text[: text.index("[embedded]")] + text[text.index("[vllm]") :])
    assert error(path) == f"{path}: missing section [embedded] ([serving] engine is 'embedded')"
    path = edited(tmp_path, "max_model_len = 2048\n", "")
    assert error(path) == f"{path}: [vllm] is missing key max_model_len"
    path = edited(
        tmp_path,
        "upscale_delay_s = 30\ndownscale_delay_s = 600\nmax_ongoing_requests = 16",
        "max_ongoing_requests = 16",
    )
    assert error(path) == f"{path}: [embedded] is missing keys upscale_delay_s, downscale_delay_s"
    path = edited(tmp_path, "ray_num_cpus = 2\n", "", ROOT / "conf" / "serving-gpu.toml")
    assert error(path) == f"{path}: [serving] is missing key ray_num_cpus"
    path = edited(tmp_path, "[vllm.env]\n", "[vllm.environment]\n")
    assert error(path).startswith(f"{path}: [vllm] has unknown key environment")
    path = edited(tmp_path, 'model = "qwen2.5-coder-0.5b-instruct-q4_k_m"\n', "", CONSENSUS)
    assert error(path) == f"{path}: [[embedded.models]] #2 is missing key model (each model names its own)"


def test_the_command_line_turns_a_bad_file_into_one_line_and_status_2(tmp_path):
    path = edited(tmp_path, "port = 8000", 'port = "8000"')
    run = subprocess.run(
        [sys.executable, "-m", "udfs.llm.serving", "status", "--config", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.strip() == (
        f"python -m udfs.llm.serving: error: {path}: [serving] port must be an integer, not str '8000'"
    )


# ---- every key declared once, without a default, with its meaning ----------------------------------------


def test_no_key_has_a_default_and_every_key_says_what_it_means():
    for cls in (ServingConf, EmbeddedModelConf, VllmConf):
        for f in dataclasses.fields(cls):
            assert f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING, (cls, f.name)
            assert f.metadata.get("doc", "").strip(), (cls, f.name)


def test_the_reference_lists_every_key_of_the_files():
    rows = config_reference()
    keys = [(r.section, r.key) for r in rows]
    assert len(keys) == len(set(keys))
    assert all(r.doc and r.type for r in rows)
    types = {(r.section, r.key): r.type for r in rows}
    assert types["serving", "port"] == "integer" and types["vllm", "env"] == "table of str"
    assert types["vllm", "upscale_delay_s"] == "number" and types["vllm", "enable_prefix_caching"] == "boolean"
    assert {(r.key, r.choices) for r in rows if r.choices} == {
        ("engine", ("embedded", "vllm")),
        ("device", ("cpu", "gpu")),
    }
    # required everywhere except the keys a [[embedded.models]] table may leave to [embedded]
    assert {(r.section, r.key) for r in rows if not r.required} == {("embedded", "models")} | {
        ("embedded.models", k) for s, k in keys if s == "embedded.models" and k not in ("model", "model_id")
    }
    for path in SHIPPED:
        raw = tomllib.loads(path.read_text())
        for section, table in raw.items():
            for key in table:
                assert (section, key) in keys, (path.name, section, key)
            for model in table.get("models", []) if section == "embedded" else []:
                assert {("embedded.models", k) for k in model} <= set(keys)
