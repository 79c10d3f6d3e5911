"""A Spark standalone cluster on the loopback: one master and N workers (pyspark's own
``spark-class``), each worker with its own small executor JVM, and ``spark-submit`` against it.

    python -m cluster.local.spark_standalone [--workers 2] -- jobs/csets.py --input data/wdc --output /tmp/out

starts the cluster, submits the job with the rest of the command line, prints where the logs are
and stops everything it started. From Python::

    with SparkStandalone(workers=2) as cluster:
        cluster.submit("jobs/csets.py", "--input", ..., "--output", ...)
        cluster.executors()   # [(worker index, executor JVM pid), ...] for fault injection

Everything binds to 127.0.0.1 on ports the OS picks (the master's is read from its log), and all
state (work dirs, local dirs, logs) lives in one folder of our own; stopping ends exactly the
processes started here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from cluster.local.procs import LocalCluster, cmdline, descendants, split_at_dashes, stop, wait_for
from udfs.runtime.cli import ArgumentParser

ROOT = Path(__file__).resolve().parents[2]
EXECUTOR_MAIN = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


class SparkStandalone(LocalCluster):
    def __init__(
        self,
        workers: int = 2,
        cores: int = 1,
        memory: str = "1g",
        executor_memory: str = "512m",
        base_dir: str | Path | None = None,
        start_timeout_s: float = 120,
    ):
        self.n_workers, self.cores, self.memory = workers, cores, memory
        self.executor_memory = executor_memory
        self._own_dir = base_dir is None
        self.base = Path(base_dir or tempfile.mkdtemp(prefix="spark-standalone-"))
        self.start_timeout_s = start_timeout_s
        self.master: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []
        self.url = ""
        self._seen_executors: set[int] = set()

    # ---- processes -----------------------------------------------------------------------------
    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                "SPARK_HOME": str(spark_home()),
                "SPARK_LOCAL_IP": "127.0.0.1",  # bind to the loopback only
                "SPARK_LOCAL_HOSTNAME": "127.0.0.1",
                "SPARK_LOCAL_DIRS": str(self.base / "local"),
                "SPARK_CONF_DIR": str(self.base / "conf"),  # nobody else's spark-defaults / log4j
                "SPARK_LOG_DIR": str(self.base / "logs"),
                "PYSPARK_PYTHON": sys.executable,
                "PYSPARK_DRIVER_PYTHON": sys.executable,
                "PYTHONPATH": str(ROOT),
            }
        )
        env.pop("PYSPARK_GATEWAY_PORT", None)
        env.pop("PYSPARK_GATEWAY_SECRET", None)
        return env

    def _daemon(self, name: str, cls: str, *args: str) -> tuple[subprocess.Popen, Path]:
        log = self.base / "logs" / f"{name}.log"
        with open(log, "ab") as fh:
            # spark-class execs the JVM, so the pid we hold is the daemon itself
            proc = subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), cls, *args],
                env=self.env(),
                stdout=fh,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=str(self.base),
            )
        return proc, log

    def start(self) -> "SparkStandalone":
        for d in ("local", "conf", "logs", "work"):
            (self.base / d).mkdir(parents=True, exist_ok=True)
        self.master, mlog = self._daemon(
            "master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", "0", "--webui-port", "0"
        )

        def master_url():
            if self.master.poll() is not None:
                raise RuntimeError(f"master exited with {self.master.returncode}:\n{mlog.read_text()[-3000:]}")
            m = re.search(r"Starting Spark master at (spark://\S+)", mlog.read_text(errors="replace"))
            return m.group(1) if m else None

        self.url = wait_for(master_url, self.start_timeout_s, "Spark master start")
        for i in range(self.n_workers):
            proc, _ = self._daemon(
                f"worker-{i}",
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--webui-port",
                "0",
                "--cores",
                str(self.cores),
                "--memory",
                self.memory,
                "--work-dir",
                str(self.base / "work" / f"worker-{i}"),
                self.url,
            )
            self.workers.append(proc)
        wait_for(
            lambda: mlog.read_text(errors="replace").count("Registering worker") >= self.n_workers,
            self.start_timeout_s,
            f"{self.n_workers} workers registered with {self.url}",
        )
        return self

    def close(self) -> None:
        pids = [p.pid for p in self.workers + ([self.master] if self.master else [])]
        # executors are the workers' children; a worker ends its own, these are the stragglers
        extra = [d for p in pids for d in descendants(p)] + sorted(self._seen_executors)
        stop(pids + extra)
        for p in self.workers + ([self.master] if self.master else []):
            p.wait(timeout=30)
        if self._own_dir:
            shutil.rmtree(self.base, ignore_errors=True)

    # ---- jobs ----------------------------------------------------------------------------------
    def submit_command(self, script: str | Path, *args: str, conf: dict[str, str] | None = None) -> list[str]:
        settings = {
            "spark.executor.memory": self.executor_memory,
            "spark.executor.cores": str(self.cores),
            "spark.cores.max": str(self.cores * self.n_workers),
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.driver.memory": "1g",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "4",
            "spark.pyspark.python": sys.executable,
            "spark.executorEnv.PYTHONPATH": str(ROOT),
            "spark.local.dir": str(self.base / "local"),
            **(conf or {}),
        }
        cmd = [str(spark_home() / "bin" / "spark-submit"), "--master", self.url]
        for k, v in settings.items():
            cmd += ["--conf", f"{k}={v}"]
        return cmd + [str(script), *args]

    def submit(self, script: str | Path, *args: str, conf: dict[str, str] | None = None, **popen) -> subprocess.Popen:
        """Start ``spark-submit`` (the driver runs here, in client mode) and return the process; its
        output goes to ``logs/submit-N.log`` unless ``stdout``/``stderr`` say otherwise."""
        n = len(list((self.base / "logs").glob("submit-*.log")))
        log = open(self.base / "logs" / f"submit-{n}.log", "wb")
        popen.setdefault("stdout", log)
        popen.setdefault("stderr", subprocess.STDOUT)
        proc = subprocess.Popen(
            self.submit_command(script, *args, conf=conf),
            env=self.env(),
            cwd=str(ROOT),
            stdin=subprocess.DEVNULL,
            **popen,
        )
        proc.log_path = Path(log.name)  # type: ignore[attr-defined]
        log.close()
        return proc

    def run(
        self, script: str | Path, *args: str, conf: dict[str, str] | None = None, timeout_s: float = 600
    ) -> subprocess.CompletedProcess:
        proc = self.submit(script, *args, conf=conf)
        try:
            proc.wait(timeout=timeout_s)
        finally:
            if proc.poll() is None:
                stop([proc.pid])
        out = proc.log_path.read_text(errors="replace")
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, "")

    # ---- fault injection -----------------------------------------------------------------------
    def executors(self) -> list[tuple[int, int]]:
        """(worker index, pid) of every live executor JVM the workers launched."""
        out = []
        for i, w in enumerate(self.workers):
            for pid in descendants(w.pid):
                if EXECUTOR_MAIN in cmdline(pid):
                    out.append((i, pid))
                    self._seen_executors.add(pid)
        return out

    def executor_logs(self, app_id: str = "app-*") -> list[Path]:
        """The executors' stderr files (``work/worker-i/<app>/N/stderr``), where they log their tasks."""
        return sorted((self.base / "work").glob(f"worker-*/{app_id}/*/stderr"))

    @staticmethod
    def app_id(driver_log: str) -> str:
        m = re.search(r"Connected to Spark cluster with app ID (app-[\w-]+)", driver_log)
        if not m:
            raise ValueError("no application id in the driver log")
        return m.group(1)


def main(argv: list[str] | None = None) -> int:
    own, job = split_at_dashes(argv)
    p = ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--cores", type=int, default=1, help="cores per worker (and per executor)")
    p.add_argument("--memory", default="1g", help="memory per worker")
    p.add_argument("--keep", action="store_true", help="keep the cluster folder (logs, work dirs)")
    a = p.parse_args(own)
    if not job:
        p.error("give the job after --, e.g. -- jobs/csets.py --input data/wdc --output /tmp/out")
    base = tempfile.mkdtemp(prefix="spark-standalone-") if a.keep else None
    with SparkStandalone(workers=a.workers, cores=a.cores, memory=a.memory, base_dir=base) as cluster:
        print(f"master {cluster.url}, {a.workers} workers; logs in {cluster.base / 'logs'}", flush=True)
        proc = cluster.submit(job[0], *job[1:], stdout=None, stderr=None)
        rc = proc.wait()
    print(f"spark-submit exited with {rc}" + (f"; cluster folder kept: {base}" if base else ""), flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
