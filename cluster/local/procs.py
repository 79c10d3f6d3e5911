"""Processes of the local clusters, found through /proc (Linux) from the ids we started, never by
name across the machine: other people's JVMs and Ray nodes may run on the same host."""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
from pathlib import Path


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the OS picks it; another process may still take it
    before the caller binds it). The one copy: cluster, tests and benchmarks import it from here."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command in parentheses may hold spaces; the fields after the last ')' do not
    return int(stat.rsplit(")", 1)[1].split()[1])


def descendants(root: int) -> list[int]:
    """Every live process below ``root`` (children, grandchildren, ...)."""
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            ppid = parent(int(entry))
            if ppid is not None:
                kids.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for child in kids.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie is dead for our purpose
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def stop(pids: list[int], grace_s: float = 15.0) -> None:
    """SIGTERM the given processes, SIGKILL whatever is left after ``grace_s``."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace_s
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in pids:
        if alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + 5
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)


def wait_for(predicate, timeout_s: float, what: str, poll_s: float = 0.2):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(poll_s)
    raise TimeoutError(f"{what}: not within {timeout_s:.0f} s")


def split_at_dashes(argv: list[str] | None) -> tuple[list[str], list[str]]:
    """``[own flags] -- job.py [job flags]`` -> (own flags, job command)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        return argv, []
    i = argv.index("--")
    return argv[:i], argv[i + 1 :]


class LocalCluster:
    """A set of processes started together and ended together: ``with Cluster(...) as c``.
    A start that fails half-way still ends what it had started."""

    def start(self) -> "LocalCluster":
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc) -> None:
        self.close()
