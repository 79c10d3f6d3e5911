"""A two-node Ray cluster on the loopback (``ray start --head`` and ``ray start --address``), with
the Serve application of ``udfs/llm/serving/`` deployed onto it, for the multi-node rehearsal.

    python -m cluster.local.ray_nodes [--serve] -- jobs/evaluate.py --input OUT/pages --output OUT --limit 1

starts a head (``--head-cpus``, default 1) and a second node (``--node-cpus``, default 2, where the
model replica lands: it asks for ``[embedded] num_cpus`` = 2), deploys the Serve app when asked,
runs the given job with ``--ray-address`` and ``--base-url`` appended, and stops everything it
started. From Python::

    with RayNodes() as ray_cluster:
        url = ray_cluster.deploy_serve()          # the model service, on the second node
        ray_cluster.run_job("jobs/evaluate.py", "--input", ..., "--output", ...)
        ray_cluster.replicas()                    # [(node index, pid), ...] for fault injection

Every port is one the OS picked, every node has its own temp folder (short, for Ray's socket
paths), the Serve HTTP endpoint binds 127.0.0.1, Ray's own gRPC ports (which Ray binds on every
interface) need a token generated for this cluster, and stopping ends exactly the process trees of the two
``ray start --block`` commands started here (never ``ray stop``, which would end every Ray on the
machine).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from cluster.local.procs import LocalCluster, alive, cmdline, descendants, free_port, split_at_dashes, stop, wait_for
from udfs.runtime.cli import ArgumentParser

ROOT = Path(__file__).resolve().parents[2]
RAY = Path(sys.executable).with_name("ray")
REPLICA_TITLE = "ray::ServeReplica:"


class RayNodes(LocalCluster):
    def __init__(
        self, head_cpus: int = 1, node_cpus: int = 2, object_store_mb: int = 200, start_timeout_s: float = 180
    ):
        self.head_cpus, self.node_cpus = head_cpus, node_cpus
        self.object_store = object_store_mb * 1024 * 1024
        self.start_timeout_s = start_timeout_s
        self.base = Path(tempfile.mkdtemp(prefix="rn", dir="/tmp"))  # Ray's socket paths < 107 bytes
        self.token_path = self.base / "auth_token"
        fd = os.open(self.token_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, secrets.token_hex(32).encode())
        os.close(fd)
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"  # what we dial; Ray itself advertises the host IP
        self.nodes: list[subprocess.Popen] = []
        self.serve_url = ""

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                "PYTHONPATH": str(ROOT),
                "RAY_USAGE_STATS_ENABLED": "0",
                # Ray starts workers at niceness 15; on a shared machine the replica would crawl.
                "RAY_worker_niceness": "0",
                # Ray's gRPC ports listen on every interface and Ray advertises the host's address even
                # when given 127.0.0.1, so every process of this cluster, drivers included, proves itself
                # with a token of our own (not ~/.ray/auth_token, which other clusters may use).
                "RAY_AUTH_MODE": "token",
                "RAY_AUTH_TOKEN_PATH": str(self.token_path),
            }
        )
        # a driver environment (ray.init in this process) must not steer the cluster's processes elsewhere
        env.pop("RAY_ADDRESS", None)
        env.pop("RAY_AUTH_TOKEN", None)
        return env

    def _ports(self) -> list[str]:
        # Two nodes on one host: every fixed-default port would collide, so each node gets its own.
        return [
            "--node-manager-port",
            str(free_port()),
            "--object-manager-port",
            str(free_port()),
            "--dashboard-agent-listen-port",
            str(free_port()),
            "--dashboard-agent-grpc-port",
            str(free_port()),
            "--runtime-env-agent-port",
            str(free_port()),
            "--metrics-export-port",
            str(free_port()),
        ]

    def _node(self, name: str, args: list[str]) -> subprocess.Popen:
        log = open(self.base / f"{name}.log", "wb")
        proc = subprocess.Popen(
            [
                str(RAY),
                "start",
                "--block",
                "--object-store-memory",
                str(self.object_store),
                "--disable-usage-stats",
                *self._ports(),
                *args,
            ],
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=str(self.base),
        )
        log.close()
        self.nodes.append(proc)
        return proc

    def _nodes_alive(self) -> int:
        out = self.python(
            "import ray, json; ray.init(address=%r, logging_level='ERROR'); "
            "print(json.dumps(sum(n['Alive'] for n in ray.nodes())))" % self.address,
            timeout_s=120,
        )
        return int(out.strip().splitlines()[-1])

    def start(self) -> "RayNodes":
        self._node(
            "head",
            [
                "--head",
                "--port",
                str(self.port),
                "--num-cpus",
                str(self.head_cpus),
                "--include-dashboard",
                "false",
                "--ray-client-server-port",
                str(free_port()),
                "--temp-dir",
                str(self.base / "head"),
            ],
        )
        self._node("node1", ["--address", self.address, "--num-cpus", str(self.node_cpus)])
        wait_for(
            lambda: self._check_alive() and self._nodes_alive() == 2,
            self.start_timeout_s,
            f"2 Ray nodes alive at {self.address}",
            poll_s=2,
        )
        return self

    def _check_alive(self) -> bool:
        for p, name in zip(self.nodes, ("head", "node1")):
            if p.poll() is not None:
                raise RuntimeError(
                    f"ray node {name} exited with {p.returncode}:\n"
                    + (self.base / f"{name}.log").read_text(errors="replace")[-3000:]
                )
        return True

    def close(self) -> None:
        pids = [p.pid for p in self.nodes]
        tree = [d for p in pids for d in descendants(p)]
        # the worker node first, so it does not spend the grace period looking for its head
        stop(list(reversed(pids)) + tree, grace_s=20)
        for p in self.nodes:
            p.wait(timeout=30)
        shutil.rmtree(self.base, ignore_errors=True)

    # ---- drivers -------------------------------------------------------------------------------
    def python(self, code: str, timeout_s: float = 600) -> str:
        """Run a short driver program against the cluster; returns its stdout."""
        done = subprocess.run(
            [sys.executable, "-c", code],
            env=self.env(),
            cwd=str(ROOT),
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        if done.returncode != 0:
            raise RuntimeError(f"driver failed ({done.returncode}):\n{done.stderr[-3000:]}")
        return done.stdout

    def deploy_serve(self, overrides: dict | None = None, wait_s: float = 600) -> str:
        """Deploy the Serve app (conf/serving.toml with ``overrides``, ``ray_address`` = this cluster,
        HTTP on a free loopback port) and return its base URL. The app outlives the deploying driver."""
        conf = {"serving": {"ray_address": self.address, "host": "127.0.0.1", "port": free_port()}}
        for section, values in (overrides or {}).items():
            conf.setdefault(section, {}).update(values)
        code = (
            "import json, ray\n"
            "from udfs.llm.serving.config import load_serving_conf\n"
            "from udfs.llm.serving.process import run_app\n"
            f"conf = load_serving_conf(overrides=json.loads({json.dumps(json.dumps(conf))}))\n"
            "ray.init(address=conf.serving.ray_address, logging_level='ERROR', log_to_driver=False)\n"
            f"print(run_app(conf, wait_s={wait_s}))\n"
        )
        self.serve_url = self.python(code, timeout_s=wait_s + 60).strip().splitlines()[-1]
        return self.serve_url

    def job_command(self, script: str | Path, *args: str) -> list[str]:
        extra = ["--ray-address", self.address]
        if self.serve_url and "--base-url" not in args:
            extra += ["--base-url", self.serve_url]
        return [sys.executable, str(script), *args, *extra]

    def run_job(self, script: str | Path, *args: str, timeout_s: float = 900) -> subprocess.CompletedProcess:
        return subprocess.run(
            self.job_command(script, *args),
            env=self.env(),
            cwd=str(ROOT),
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )

    def start_job(self, script: str | Path, *args: str, **popen) -> subprocess.Popen:
        popen.setdefault("stdout", subprocess.DEVNULL)
        popen.setdefault("stderr", subprocess.PIPE)
        return subprocess.Popen(self.job_command(script, *args), env=self.env(), cwd=str(ROOT), **popen)

    # ---- fault injection -----------------------------------------------------------------------
    def replicas(self, deployment: str = "EmbeddedLLM") -> list[tuple[int, int]]:
        """(node index, pid) of the live Serve replica processes of ``deployment`` on our nodes."""
        out = []
        for i, node in enumerate(self.nodes):
            for pid in descendants(node.pid):
                title = cmdline(pid)
                if title.startswith(REPLICA_TITLE) and deployment in title and alive(pid):
                    out.append((i, pid))
        return out


def main(argv: list[str] | None = None) -> int:
    own, job = split_at_dashes(argv)
    p = ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--head-cpus", type=int, default=1)
    p.add_argument("--node-cpus", type=int, default=2)
    p.add_argument("--serve", action="store_true", help="deploy the Serve app (conf/serving.toml) first")
    p.add_argument("--n-ctx", type=int, default=0, help="override [embedded] n_ctx")
    a = p.parse_args(own)
    with RayNodes(head_cpus=a.head_cpus, node_cpus=a.node_cpus) as cluster:
        print(f"ray head {cluster.address} + 1 node; logs in {cluster.base}", flush=True)
        if a.serve:
            url = cluster.deploy_serve({"embedded": {"n_ctx": a.n_ctx}} if a.n_ctx else None)
            print(f"serve app at {url}; replicas (node, pid): {cluster.replicas()}", flush=True)
        if not job:
            return 0
        rc = subprocess.run(cluster.job_command(job[0], *job[1:]), env=cluster.env(), cwd=str(ROOT)).returncode
    print(f"job exited with {rc}", flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
