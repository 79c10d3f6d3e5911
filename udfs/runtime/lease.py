"""A job's lease on the tables it writes, and the check that it can write them, before any work.

The lease
---------
Every table a job writes under its output root (``Job.outputs``, else ``Job.table``, and its
rejects folder ``rejects/<job>``) has a lock file under the root, taken before the job writes
anything (``Job.preflight``) and removed when the run ends, whatever way it ended
(``Job.release``)::

    <output>/_leases/scores.lock            # one per table
    <output>/_leases/rejects/evaluate.lock  # and one for the job's rejects folder

A lock is per table, not per root: the pipeline's jobs share one root, each writing its own
tables, while two runs that would write one table (two ``evaluate`` runs, or ``pages`` and
``import_pset``, which both write ``pages/``) cannot interleave. The lock folder starts with
``_``, so Parquet readers and ``Folder.files`` skip it, and it lies outside every table folder,
which a rerun removes (``Job.clear_outputs``).

A lock file is JSON: ``host``, ``pid``, ``pid_started`` (the process's start time, from
``/proc/<pid>/stat`` on Linux, so that a reused pid is not taken for the run), ``job``,
``started_at``, ``settings_hash`` and a random ``token``. The settings hash taken at start is
the hash of the job's settings as given (the run record's ``config``); a job that computes its
own later (``evaluate``: the hash of everything that changes an answer) records it with
:meth:`Lease.update`.

Taking it: on a local disk the file is written whole under a temporary name and hard-linked to the
lock's name (``os.link`` creates the name atomically and fails when it exists, on NFS too, so a
reader never sees a half-written lock); where the filesystem has no hard links it is created
with ``O_CREAT|O_EXCL``. When the name exists:

- the holder is alive, or on another host (where this process cannot tell): :class:`LeaseError`
  (a ``UserError``: one line, exit status 2) naming the holder (host, pid, start time, job) and
  the lock file, and what to do;
- the holder ran on this host and its process is gone (``os.kill(pid, 0)`` says no such
  process, or the pid now belongs to a process started later): the lease is stale; it is moved
  aside, checked to be the one judged stale (else put back and refused), and taken, with a
  warning line naming the dead holder.

An object store (``s3://``, ``gs://``, ``memory://``...) has no hard links and no O_EXCL: the lock
is created with fsspec's exclusive mode (``fs.open(path, "xb")``: a conditional put,
``If-None-Match: *`` on S3 through s3fs; checked by the store itself) and read back, so that a
store that took the ``x`` mode but wrote over another lock is caught too. A filesystem that refuses
the ``x`` mode cannot hold a lease: the job refuses to run there (``LeaseError`` saying so) rather
than share the root unguarded. A stale lease on a store is removed after reading it again (the
window between the two is not atomic; two runs taking over the same stale lease at once still
meet at the conditional create, where one of them is refused).

The writability check
---------------------
Before any work, :func:`check_writable` writes and removes a small file in the output root and in
each table folder the job writes, creating the folders as the job would (a folder this check
created is removed again, so a refused run leaves nothing behind). A folder it cannot write is an
:class:`~udfs.runtime.errors.OutputError` naming the path and the OS's reason (its ``strerror``).
"""

from __future__ import annotations

import datetime as dt
import errno
import hashlib
import json
import logging
import os
import socket
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from udfs.runtime.errors import OutputError, UserError
from udfs.runtime.io import Folder

log = logging.getLogger("llm4schema")

LEASES = "_leases"
PROBE_PREFIX = ".llm4schema-write-test"


class LeaseError(UserError):
    """A table of this job is leased by another run (or the store cannot hold a lease)."""


# ---- processes ------------------------------------------------------------------------------------


def _stat(pid: int) -> list[str]:
    """``/proc/<pid>/stat`` from its third field (the state) on; [] where it cannot be read."""
    try:
        stat = Path(f"/proc/{int(pid)}/stat").read_text()
    except (OSError, ValueError):
        return []
    return stat.rpartition(")")[2].split()  # the command name, in parentheses, may hold spaces


def process_started(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot, ``/proc/<pid>/stat`` field 22),
    which tells a process from a later one given the same pid; None where it cannot be read (not
    Linux, no such process)."""
    fields = _stat(pid)
    return fields[19] if len(fields) > 19 else None


def process_alive(pid: int, started: str | None = None) -> bool:
    """Whether process ``pid`` of this host runs (a zombie, ended but not yet reaped, does not),
    and is the one that started at ``started`` (:func:`process_started`) when that is given and
    can be read."""
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: alive
    fields = _stat(pid)
    if fields[:1] == ["Z"]:
        return False
    now = fields[19] if len(fields) > 19 else None
    return not (started and now and now != started)


def holder_alive(holder: dict[str, Any]) -> bool | None:
    """Whether the run that wrote ``holder`` (a lock's content) still runs: None where this
    process cannot tell (it ran on another host)."""
    if holder.get("host") != socket.gethostname():
        return None
    try:
        return process_alive(int(holder["pid"]), holder.get("pid_started"))
    except (KeyError, TypeError, ValueError):
        return None


def settings_digest(settings: Any) -> str:
    """sha256 of ``settings`` as sorted JSON (a run record's ``config``)."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()


# ---- the lease ------------------------------------------------------------------------------------


@dataclass
class Lease:
    """The lock files one run holds (module docstring) and what they say about it."""

    root: Folder
    holder: dict[str, Any]
    files: list[Folder] = field(default_factory=list)

    def update(self, **facts: Any) -> None:
        """Record ``facts`` (``settings_hash=...``) in every lock file this run holds."""
        self.holder.update(facts)
        for lock in self.files:
            if _read_holder(lock).get("token") == self.holder["token"]:
                lock.write_text("", _dump(self.holder))

    def release(self) -> None:
        """Remove the lock files this run still holds (one another run took over is left as it
        is) and the lock folders left empty; a failure is a warning line, never an error that
        would hide how the run ended."""
        for lock in self.files:
            try:
                if _read_holder(lock).get("token") == self.holder["token"]:
                    lock.rm()
            except OSError as exc:
                log.warning("could not remove the lease %s: %s", lock, exc.strerror or exc)
        self.files = []
        if self.root.is_local:
            base = (self.root / LEASES).local_path
            for d in sorted((p for p in base.rglob("*") if p.is_dir()), reverse=True) + [base]:
                try:
                    d.rmdir()
                except OSError:
                    pass  # not empty (another job's lease), or already gone


def _dump(holder: dict[str, Any]) -> str:
    return json.dumps(holder, indent=1) + "\n"


def _read_holder(lock: Folder) -> dict[str, Any]:
    """A lock's content; {} when it is gone or unreadable."""
    try:
        data = json.loads(lock.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def lock_file(root: str | Folder, table: str) -> Folder:
    """The lock file of ``table`` (``scores``, ``rejects/evaluate``) under output root ``root``."""
    return Folder.of(root) / LEASES / f"{table}.lock"


def acquire(root: str | Folder, tables: list[str], *, job: str, settings_hash: str = "") -> Lease:
    """Lease ``tables`` (names under ``root``: ``scores``, ``rejects/evaluate``) for this process,
    all or none. Raises :class:`LeaseError` when one is held by a live run (or by a run on another
    host), or when ``root``'s store cannot hold a lease; :class:`OutputError` when the lock cannot
    be written. A stale lease (its process gone) is taken over with a warning."""
    root = Folder.of(root)
    pid = os.getpid()
    lease = Lease(
        root,
        {
            "host": socket.gethostname(),
            "pid": pid,
            "pid_started": process_started(pid),
            "job": job,
            "started_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "settings_hash": settings_hash,
            "token": uuid.uuid4().hex,
        },
    )
    try:
        for table in sorted(set(tables)):
            lock = lock_file(root, table)
            _take(root, table, lock, lease.holder)
            lease.files.append(lock)
    except BaseException:
        lease.release()
        raise
    return lease


def _take(root: Folder, table: str, lock: Folder, holder: dict[str, Any]) -> None:
    text = _dump(holder)
    for _ in range(5):
        try:
            _create(lock, text)
            return
        except FileExistsError:
            other = _read_holder(lock)
            if not other:  # released meanwhile, or being written (the O_EXCL path): a moment later
                time.sleep(0.2)
                if not _read_holder(lock) and lock.exists():
                    raise LeaseError(
                        f"{lock} is there but holds no lease this version can read: if no run writes {table}/ "
                        f"under {root}, remove that file"
                    ) from None
                continue
            if holder_alive(other) is False:
                if _take_over(lock, other):
                    log.warning(
                        "%s: the lease of %s by %s (host %s, pid %s, started %s) is stale, its process is gone: "
                        "taken over",
                        lock,
                        table,
                        other.get("job"),
                        other.get("host"),
                        other.get("pid"),
                        other.get("started_at"),
                    )
                continue
            raise LeaseError(held_message(root, table, lock, other)) from None
    raise LeaseError(f"{lock}: could not take the lease of {table} (it keeps changing hands); try again")


def held_message(root: Folder, table: str, lock: Folder, other: dict[str, Any]) -> str:
    """The one line of a refusal: who holds ``table`` and what to do."""
    gone = (
        "if that run is gone, remove the lease file"
        if other.get("host") != socket.gethostname()
        else "if that process is not a run of this job, remove the lease file"
    )
    digest = str(other.get("settings_hash") or "")[:12]
    return (
        f"{table}/ under {root} is leased by "
        f"another {other.get('job', '?')} run (host {other.get('host', '?')}, pid {other.get('pid', '?')}, "
        f"started {other.get('started_at', '?')}{', settings ' + digest if digest else ''}; lease file {lock}): "
        f"wait for it to end or give another --output; {gone}"
    )


def _create(lock: Folder, text: str) -> None:
    """Create ``lock`` holding ``text`` unless it exists (FileExistsError); atomically."""
    if lock.is_local:
        return _create_local(lock.local_path, text)
    try:
        with lock.fs.open(lock.path, "xb") as fh:
            fh.write(text.encode())
    except (ValueError, NotImplementedError, TypeError) as exc:
        raise LeaseError(
            f"{lock}: this store ({type(lock.fs).__name__}) offers no exclusive create, so a run cannot lease "
            f"its tables there ({exc}); give a local --output, or one on a store that does (S3, memory)"
        ) from None
    except FileExistsError:
        raise
    except OSError as exc:
        raise OutputError(f"cannot write the lease {lock}: {exc.strerror or exc}; check the output's permissions")
    lock._fresh(lock.path)
    if _read_holder(lock).get("token") != json.loads(text)["token"]:
        raise FileExistsError(str(lock))  # the store wrote over another lock: theirs stands


def _create_local(path: Path, text: str) -> None:
    tmp = path.parent / f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    for _ in range(3):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(text)
            break
        except FileNotFoundError:
            continue  # the lock folder was removed meanwhile by a run releasing its lease
        except OSError as exc:
            raise OutputError(
                f"cannot write the lease {path}: {exc.strerror or exc}; give an --output this user can write"
            ) from None
    try:
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise
        except OSError:  # no hard links on this filesystem: an exclusive create instead
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            with os.fdopen(fd, "w") as fh:
                fh.write(text)
    finally:
        tmp.unlink(missing_ok=True)


def _take_over(lock: Folder, stale: dict[str, Any]) -> bool:
    """Remove ``lock``, judged ``stale``, unless it changed hands meanwhile; whether it was removed."""
    if not lock.is_local:
        if _read_holder(lock).get("token") != stale.get("token"):
            return False
        lock.rm()
        return True
    path = lock.local_path
    aside = path.with_name(f".{path.name}.stale.{uuid.uuid4().hex[:8]}")
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return False  # another run took it over first
    moved = _read_holder(Folder(aside))
    try:
        if moved.get("token") != stale.get("token"):  # a live lease taken meanwhile: put it back
            try:
                os.link(aside, path)
            except OSError:
                pass  # yet another run holds the name now: that one stands
            return False
        return True
    finally:
        aside.unlink(missing_ok=True)


# ---- writability ----------------------------------------------------------------------------------


def check_writable(folder: str | Folder) -> None:
    """Write and remove a small file in ``folder``, creating it (and its parents) as a job would;
    the folders this created are removed again. Raises :class:`OutputError` naming the folder and
    the OS's reason when it cannot be written."""
    folder = Folder.of(folder)
    probe = f"{PROBE_PREFIX}-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    if not folder.is_local:
        try:
            folder.write_bytes(probe, b"x")
            folder.rm(probe)
        except OSError as exc:
            raise _unwritable(folder, exc) from None
        return
    path = folder.local_path
    created = [p for p in [path, *path.parents] if not os.path.lexists(p)]
    try:
        if os.path.lexists(path) and not path.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR) + ": a file is there", str(path))
        path.mkdir(parents=True, exist_ok=True)
        fd = os.open(path / probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        try:
            os.write(fd, b"x")
        finally:
            os.close(fd)
        os.unlink(path / probe)
    except OSError as exc:
        raise _unwritable(folder, exc) from None
    finally:
        for p in created:  # deepest first
            try:
                p.rmdir()
            except OSError:
                pass


def _unwritable(folder: Folder, exc: OSError) -> OutputError:
    where = str(exc.filename or "")
    # the folder itself, or the probe file in it, says nothing the folder's name does not
    where = None if where in ("", str(folder)) or os.path.basename(where).startswith(PROBE_PREFIX) else where
    reason = exc.strerror or str(exc) or type(exc).__name__
    return OutputError(
        f"cannot write to {folder}: {reason}{f' ({where})' if where else ''}; "
        "give an --output this user can write to, or fix that folder"
    )


# ---- a job's outputs ------------------------------------------------------------------------------


def job_tables(job) -> list[str]:
    """The names under the output root that ``job`` (a ``udfs.runtime.job.Job``) writes: its
    tables and its rejects folder."""
    return [*(job.outputs or (job.table,)), f"rejects/{job.name}"]


def take_output_lease(job) -> Lease:
    """``Job.preflight``'s output step: the root writable, the job's tables leased
    (:func:`acquire`, the settings hash of ``job.record["config"]``), each table folder writable.
    All or nothing: on a refusal the lease is given back and the folders this created removed."""
    root = job.output_root
    check_writable(root)
    made = root.is_local and not os.path.lexists(root.local_path)
    config = job.record.data.get("config")
    try:
        lease = acquire(root, job_tables(job), job=job.name, settings_hash=settings_digest(config) if config else "")
        try:
            for table in job_tables(job):
                check_writable(root / table)
        except BaseException:
            lease.release()
            raise
    except BaseException:
        if made:  # a refused run leaves no folder behind
            try:
                root.local_path.rmdir()
            except OSError:
                pass
        raise
    return lease
