"""spark-submit for a Spark job of this project on a standalone master, YARN or Kubernetes.

    python cluster/spark/submit.py standalone --master spark://head:7077 -- jobs/csets.py \\
        --input wdc-2023-12.paths --output s3a://my-bucket/llm4schema/2023-12
    python cluster/spark/submit.py yarn --python-env env.tar.gz --files wdc-2023-12.paths -- jobs/csets.py ...
    python cluster/spark/submit.py k8s --master k8s://https://api.example:6443 --image reg/llm4schema:0.1 -- jobs/csets.py ...
    add --dry-run to print the command instead of running it

What it adds to the job's own flags: every setting of cluster/spark/cluster-defaults.conf as a
``--conf`` (a ``--conf KEY=VALUE`` here wins), the hadoop-aws and spark-hadoop-cloud packages of
the Spark and Hadoop versions in this virtualenv (s3a:// and the S3A magic committer), and how the
executors find the project (code plus data/schemaorg-30.0, which udfs/ reads on executors):

* standalone: client deploy mode (Spark has no cluster mode for Python on a standalone master);
  the project and its venv at the same path on every node (a shared or identical checkout).
* yarn: cluster deploy mode; the project is shipped as an archive built here
  (``build/llm4schema-project.tar.gz``), the Python environment as a venv-pack/conda-pack archive
  (``--python-env``), or the nodes' python3.
* k8s: cluster deploy mode; the project lives in the image at /opt/llm4schema
  (cluster/spark/Dockerfile).

Local files the driver must read in cluster mode (a manifest of s3a:// paths) go with ``--files``
and are named by their base name in the job's flags.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shlex
import subprocess
import sys
import tarfile
from pathlib import Path

from udfs.runtime.cli import ArgumentParser

ROOT = Path(__file__).resolve().parents[2]
DEFAULTS = Path(__file__).resolve().parent / "cluster-defaults.conf"
SPARK_JOBS = ("csets", "sample", "warc_index", "pages", "extract_quads")
# What executors import and read: the library, the jobs, their configuration and the vocabulary.
PROJECT_PARTS = ("udfs", "jobs", "conf", "shapes", "data/schemaorg-30.0")
IMAGE_PROJECT_DIR = "/opt/llm4schema"


def read_conf(path: str | Path) -> dict[str, str]:
    """A spark-defaults style file: ``key value`` per line, ``#`` comments."""
    out: dict[str, str] = {}
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition(" ")
        if not value.strip():
            raise SystemExit(f"submit.py: error: {path}:{n}: {key!r} has no value")
        out[key] = value.strip()
    return out


def versions() -> dict[str, str]:
    """Spark, Scala and Hadoop versions of the pyspark in this virtualenv (from its jars)."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"

    def jar_version(prefix: str) -> str:
        found = sorted(glob.glob(str(jars / f"{prefix}-*.jar")))
        for f in found:
            m = re.fullmatch(rf"{re.escape(prefix)}-(\d+\.\d+\.\d+)\.jar", Path(f).name)
            if m:
                return m.group(1)
        raise SystemExit(
            f"submit.py: error: no {prefix}-<version>.jar in {jars}: cannot tell which package versions match"
        )

    scala = jar_version("scala-library")
    return {
        "spark": pyspark.__version__,
        "scala": ".".join(scala.split(".")[:2]),
        "hadoop": jar_version("hadoop-client-api"),
    }


def packages(v: dict[str, str]) -> list[str]:
    # hadoop-aws brings the AWS SDK bundle it was built with as a dependency.
    return [
        f"org.apache.hadoop:hadoop-aws:{v['hadoop']}",
        f"org.apache.spark:spark-hadoop-cloud_{v['scala']}:{v['spark']}",
    ]


def build_project_archive(target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        for part in PROJECT_PARTS:
            tar.add(
                ROOT / part,
                arcname=part,
                filter=lambda t: None if "__pycache__" in t.name or t.name.endswith(".pyc") else t,
            )
    os.replace(tmp, target)
    return target


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Everything after -- is the job file and its own flags.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("mode", choices=["standalone", "yarn", "k8s"])
    p.add_argument("--master", help="spark://HOST:7077 (standalone), k8s://https://API:PORT (k8s); yarn: 'yarn'")
    p.add_argument("--conf-file", default=str(DEFAULTS), help="spark-defaults style settings")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="overrides the conf file")
    p.add_argument("--files", action="append", default=[], help="local file the driver reads (cluster mode)")
    p.add_argument("--extra-packages", action="append", default=[], help="more Maven coordinates")
    p.add_argument("--spark-submit", help="spark-submit to run (default: this venv's, else PATH)")
    p.add_argument("--dry-run", action="store_true", help="print the command, run nothing, build nothing")
    g = p.add_argument_group("standalone")
    g.add_argument("--project-dir", default=str(ROOT), help="this project's folder on every node")
    g.add_argument("--python", help="Python of the executors (default: <project-dir>/.venv/bin/python)")
    g = p.add_argument_group("yarn")
    g.add_argument("--python-env", help="packed Python environment (venv-pack / conda-pack .tar.gz)")
    g.add_argument("--project-archive", default=str(ROOT / "build" / "llm4schema-project.tar.gz"))
    g.add_argument("--queue", help="YARN queue")
    g = p.add_argument_group("k8s")
    g.add_argument("--image", help="container image with the project at /opt/llm4schema")
    g.add_argument("--namespace", default="default")
    g.add_argument("--service-account", default="spark")
    g.add_argument("--upload-path", help="s3a:// folder through which --files reach the driver pod")
    if "--" not in argv:
        p.error("put -- before the job file: submit.py MODE [options] -- jobs/X.py [job flags]")
    cut = argv.index("--")
    args = p.parse_args(argv[:cut])
    rest = argv[cut + 1 :]
    if not rest:
        p.error("no job file after --")
    args.job, args.job_args = rest[0], rest[1:]
    name = Path(args.job).stem
    if name not in SPARK_JOBS:
        p.error(
            f"{args.job}: not a Spark job of this project ({', '.join(f'jobs/{j}.py' for j in SPARK_JOBS)}); "
            "jobs/evaluate.py runs on Ray (cluster/README.md)"
        )
    if not (ROOT / "jobs" / f"{name}.py").is_file():
        p.error(f"jobs/{name}.py does not exist")
    args.job_name = name
    if args.mode == "standalone" and not (args.master or "").startswith("spark://"):
        p.error("standalone needs --master spark://HOST:PORT")
    if args.mode == "k8s":
        if not (args.master or "").startswith("k8s://"):
            p.error("k8s needs --master k8s://https://API-SERVER:PORT")
        if not args.image:
            p.error("k8s needs --image (cluster/spark/Dockerfile builds one)")
        if args.files and not args.upload_path:
            p.error("k8s with --files needs --upload-path s3a://BUCKET/PATH (how files reach the driver pod)")
    if args.mode == "yarn" and args.master not in (None, "yarn"):
        p.error("yarn: --master is 'yarn' (the cluster comes from HADOOP_CONF_DIR)")
    for kv in args.conf:
        if "=" not in kv:
            p.error(f"--conf {kv!r}: expected KEY=VALUE")
    return args


def command(args: argparse.Namespace, v: dict[str, str] | None = None) -> list[str]:
    """The spark-submit argument list (plain data: what --dry-run prints)."""
    v = v or versions()
    conf = read_conf(args.conf_file)
    conf["spark.app.name"] = f"llm4schema-{args.job_name}"
    master, deploy = args.master, "cluster"
    archives: list[str] = []
    files = list(args.files)
    if args.mode == "standalone":
        deploy = "client"
        python = args.python or f"{args.project_dir}/.venv/bin/python"
        conf.update(
            {
                "spark.pyspark.python": python,
                "spark.pyspark.driver.python": python,
                "spark.executorEnv.PYTHONPATH": args.project_dir,
            }
        )
        job = f"{args.project_dir}/jobs/{args.job_name}.py"
    elif args.mode == "yarn":
        master = "yarn"
        archives.append(f"{args.project_archive}#llm4schema")
        conf.update(
            {
                "spark.yarn.appMasterEnv.PYTHONPATH": "./llm4schema",
                "spark.executorEnv.PYTHONPATH": "./llm4schema",
                # a rerun is idempotent: a second attempt would only hide the first failure
                "spark.yarn.maxAppAttempts": "1",
            }
        )
        if args.python_env:
            archives.append(f"{args.python_env}#environment")
            conf.update(
                {
                    "spark.pyspark.python": "./environment/bin/python",
                    "spark.yarn.appMasterEnv.PYSPARK_PYTHON": "./environment/bin/python",
                }
            )
        if args.queue:
            conf["spark.yarn.queue"] = args.queue
        job = str(ROOT / "jobs" / f"{args.job_name}.py")
    else:
        conf.update(
            {
                "spark.kubernetes.container.image": args.image,
                "spark.kubernetes.namespace": args.namespace,
                "spark.kubernetes.authenticate.driver.serviceAccountName": args.service_account,
                "spark.kubernetes.driverEnv.PYTHONPATH": IMAGE_PROJECT_DIR,
                "spark.executorEnv.PYTHONPATH": IMAGE_PROJECT_DIR,
                # the driver pod resolves --packages itself; its home is not writable
                "spark.jars.ivy": "/tmp/.ivy2",
            }
        )
        if args.upload_path:
            conf["spark.kubernetes.file.upload.path"] = args.upload_path
        job = f"local://{IMAGE_PROJECT_DIR}/jobs/{args.job_name}.py"
    for kv in args.conf:
        key, _, value = kv.partition("=")
        conf[key] = value
    submit = args.spark_submit or (
        str(ROOT / ".venv" / "bin" / "spark-submit")
        if (ROOT / ".venv" / "bin" / "spark-submit").exists()
        else "spark-submit"
    )
    cmd = [
        submit,
        "--master",
        master,
        "--deploy-mode",
        deploy,
        "--packages",
        ",".join(packages(v) + list(args.extra_packages)),
    ]
    if archives:
        cmd += ["--archives", ",".join(archives)]
    if files:
        cmd += ["--files", ",".join(files)]
    for key, value in conf.items():
        cmd += ["--conf", f"{key}={value}"]
    return cmd + [job, *args.job_args]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(list(sys.argv[1:] if argv is None else argv))
    cmd = command(args)
    if args.dry_run:
        print(shlex.join(cmd))
        return 0
    if args.mode == "yarn":
        if not os.environ.get("HADOOP_CONF_DIR") and not os.environ.get("YARN_CONF_DIR"):
            raise SystemExit("submit.py: error: yarn: set HADOOP_CONF_DIR to the cluster's Hadoop configuration folder")
        build_project_archive(Path(args.project_archive))
    print("+ " + shlex.join(cmd), file=sys.stderr, flush=True)
    return subprocess.call(cmd)


if __name__ == "__main__":
    sys.exit(main())
