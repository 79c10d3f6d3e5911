"""One IO layer for what the jobs read and write: a :class:`Folder`, local or remote.

Every job writes under one output root, given as a local path or as a URL (``file://``,
``s3://``/``s3a://``, ``gs://``, ``hdfs://``, anything fsspec knows). A :class:`Folder` names a
place under that root (a table folder, a rejects folder, a report file) and does everything the
jobs do there through one fsspec filesystem, in the manner of datatrove's ``DataFolder``:

- ``folder / "part"`` joins without normalising: ``Path("s3a://bucket/run")`` would become
  ``s3a:/bucket/run``, which no filesystem reads; a Folder keeps the URL as it is;
- ``exists``, ``ls`` (glob), ``rm`` (recursive: a rerun replaces the job's own outputs, remote
  ones too), ``open``/``write_bytes``/``write_text``/``write_parquet`` and their readers;
- writes are atomic: a local file is written to a hidden temporary name in the same folder and
  renamed with ``os.replace``; an object-store file is written to a local temporary file and put in
  one request when the ``with`` block ends without an error, so a reader sees the old file or the
  new one, never a torn one, and a failed write publishes nothing;
- ``str(folder)`` is the form Spark wants (``s3a://`` for S3: Hadoop's connector), ``folder.url``
  the form fsspec wants (``s3://``); :func:`spark_url` and :func:`fsspec_url` convert.

Spark DataFrames keep ``df.write.parquet(str(folder))``: Spark has its own filesystem layer.
Everything written from Python (run records, plots, Parquet from pyarrow, JSON lines rejects)
goes through a Folder.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import tempfile
import uuid
from pathlib import Path
from typing import IO, Any, Iterator

# Spark reaches S3 through Hadoop's s3a connector; fsspec (s3fs) registers s3 (and accepts s3a).
_TO_SPARK = {"s3": "s3a", "s3n": "s3a"}
_TO_FSSPEC = {"s3a": "s3", "s3n": "s3"}
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def url_scheme(location: str) -> str | None:
    """The scheme of ``location`` (``s3a`` for ``s3a://b/k``), or None for a plain local path."""
    m = _SCHEME.match(str(location))
    return m.group(1).lower() if m else None


def _with_scheme(location: str, table: dict[str, str]) -> str:
    scheme = url_scheme(location)
    if scheme in table:
        return table[scheme] + location[len(scheme) :]
    return location


def spark_url(location: str) -> str:
    """The form Spark reads and writes: ``s3://``/``s3n://`` become ``s3a://``; others unchanged."""
    return _with_scheme(str(location), _TO_SPARK)


def fsspec_url(location: str) -> str:
    """The form fsspec reads and writes: ``s3a://``/``s3n://`` become ``s3://``; others unchanged."""
    return _with_scheme(str(location), _TO_FSSPEC)


class Folder:
    """A place under an output root, local or remote (see the module docstring).

    Built from a local path, a URL or another Folder. Joining with ``/`` gives a Folder for a
    subfolder or a file; the methods that take ``name`` act on ``self / name`` (``name=""``: on the
    folder itself). Local folders also work where a path is expected (``os.fspath``); a remote one
    raises TypeError there, so no code can quietly write a local folder named ``s3a:``.
    """

    def __init__(self, location: str | os.PathLike | "Folder", **storage_options: Any):
        if isinstance(location, Folder):
            storage_options = {**location._options, **storage_options}
            location = location._location
        loc = os.fspath(location) if isinstance(location, os.PathLike) else str(location)
        if not loc:
            raise ValueError("a Folder needs a path or URL, got an empty string")
        scheme = url_scheme(loc)
        if scheme is None:
            loc = str(Path(loc))  # a local path as given (relative stays relative), no trailing /
        elif loc.rstrip("/") != f"{scheme}:":
            loc = loc.rstrip("/") if not loc.endswith("://") else loc
        self._location = loc
        self._scheme = scheme
        self._options = dict(storage_options)
        self._fs = None

    @classmethod
    def of(cls, location: str | os.PathLike | "Folder") -> "Folder":
        return location if isinstance(location, Folder) else cls(location)

    # ---- naming ----------------------------------------------------------------------------------
    @property
    def is_local(self) -> bool:
        """True for a plain path or a ``file://`` URL: the files are on this machine's disk."""
        return self._scheme in (None, "file", "local")

    @property
    def url(self) -> str:
        """The fsspec form: an absolute local path, or the URL with ``s3://`` for S3."""
        if self._scheme is None:
            return os.path.abspath(self._location)
        return fsspec_url(self._location)

    @property
    def local_path(self) -> Path:
        """The folder on this machine's disk; TypeError for a remote folder."""
        if not self.is_local:
            raise TypeError(f"{self._location} is not on the local filesystem")
        if self._scheme is None:
            return Path(self._location)
        return Path(self._location.split("://", 1)[1])

    def __fspath__(self) -> str:
        return str(self.local_path)

    def __str__(self) -> str:
        """The form to hand to Spark (and to print): the local path as given, ``s3a://`` for S3."""
        return spark_url(self._location)

    def __repr__(self) -> str:
        return f"Folder({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Folder) and self.url == other.url

    def __hash__(self) -> int:
        return hash(self.url)

    def __truediv__(self, part: str | os.PathLike) -> "Folder":
        part = os.fspath(part).strip("/")
        if not part:
            return self
        if self._scheme is None:
            return Folder(os.path.join(self._location, part), **self._options)
        sep = "" if self._location.endswith("/") else "/"
        return Folder(self._location + sep + part, **self._options)

    @property
    def name(self) -> str:
        return self._location.rstrip("/").rsplit("/", 1)[-1]

    @property
    def parent(self) -> "Folder":
        if self._scheme is None:
            return Folder(str(Path(self._location).parent), **self._options)
        head = self._location.rstrip("/").rsplit("/", 1)[0]
        return Folder(head if not head.endswith(":/") else head + "/", **self._options)

    # ---- the filesystem --------------------------------------------------------------------------
    @property
    def fs(self):
        """The fsspec filesystem (built on first use; s3fs for ``s3://``/``s3a://``)."""
        if self._fs is None:
            import fsspec

            self._fs, _ = fsspec.core.url_to_fs(self.url, **self._options)
        return self._fs

    @property
    def path(self) -> str:
        """The path inside :attr:`fs` (``bucket/key`` for S3, an absolute path locally)."""
        if self.is_local:
            return os.path.abspath(self.local_path)
        return self.fs._strip_protocol(self.url).rstrip("/")

    def __getstate__(self) -> dict:
        # Sent to Spark executors and Ray actors: the filesystem object is rebuilt there.
        return {**self.__dict__, "_fs": None}

    def _at(self, name: str) -> "Folder":
        return self / name if name else self

    def _fresh(self, path: str) -> None:
        # Listings are cached by s3fs; Spark and other processes write behind its back.
        if not self.is_local:
            self.fs.invalidate_cache(path)

    def exists(self, name: str = "") -> bool:
        target = self._at(name)
        if target.is_local:
            return target.local_path.exists()
        target._fresh(target.path)
        return target.fs.exists(target.path)

    def isdir(self, name: str = "") -> bool:
        target = self._at(name)
        if target.is_local:
            return target.local_path.is_dir()
        target._fresh(target.path)
        return target.fs.isdir(target.path)

    def isfile(self, name: str = "") -> bool:
        target = self._at(name)
        if target.is_local:
            return target.local_path.is_file()
        target._fresh(target.path)
        return target.fs.isfile(target.path)

    def ls(self, pattern: str = "*") -> list[str]:
        """Names under this folder matching a glob (``*``, ``part-*.parquet``, ``**/*.parquet``),
        relative to the folder, sorted; [] when the folder does not exist."""
        if not self.exists():
            return []
        base = self.path.rstrip("/")
        self._fresh(base)
        found = self.fs.glob(f"{base}/{pattern.lstrip('/')}")
        out = []
        for p in found:
            p = p.rstrip("/")
            if not self.is_local:
                p = self.fs._strip_protocol(p)
            if p.startswith(base + "/"):
                out.append(p[len(base) + 1 :])
        return sorted(out)

    def files(self, suffixes: tuple[str, ...] | None = None) -> list[str]:
        """Every file below this folder (recursively) ending in one of ``suffixes``, as paths in
        :attr:`fs`, sorted; bookkeeping files and folders (``_``/``.`` prefixed: ``_run.json``,
        ``_SUCCESS``, temporary parts) are skipped, as Parquet readers skip them."""
        base = self.path.rstrip("/")
        self._fresh(base)
        out = []
        for p in self.fs.find(base):
            p = p if self.is_local else self.fs._strip_protocol(p)
            rel = p[len(base) + 1 :] if p.startswith(base + "/") else os.path.basename(p)
            if any(part.startswith(("_", ".")) for part in rel.split("/")):
                continue
            if suffixes is None or p.endswith(suffixes):
                out.append(p)
        return sorted(out)

    def makedirs(self) -> "Folder":
        """Create the folder locally; a no-op on object stores (a key needs no parent)."""
        if self.is_local:
            self.local_path.mkdir(parents=True, exist_ok=True)
        elif self._scheme not in ("s3", "s3a", "s3n", "gs", "gcs", "az", "abfs", "abfss", "memory"):
            self.fs.makedirs(self.path, exist_ok=True)
        return self

    def rm(self, name: str = "") -> bool:
        """Remove a file or a whole folder (recursively); False when there was nothing there.
        A job calls it on its own outputs only, before writing them again."""
        target = self._at(name)
        if not target.exists():
            return False
        if target.is_local:
            p = target.local_path
            if p.is_dir() and not p.is_symlink():
                import shutil

                shutil.rmtree(p)
            else:
                p.unlink()
        else:
            target.fs.rm(target.path, recursive=True)
            target._fresh(target.path)
        return True

    # ---- reading and writing ---------------------------------------------------------------------
    @contextlib.contextmanager
    def open(self, name: str = "", mode: str = "rb", encoding: str = "utf-8") -> Iterator[IO]:
        """A file under this folder. Read modes (``rb``, ``r``) read it; ``wb`` and ``w`` write it
        atomically (see the module docstring): nothing appears under the name until the ``with``
        block ends without an error, and then the whole file appears at once."""
        target = self._at(name)
        if mode in ("rb", "r"):
            if target.is_local:
                with open(target.local_path, mode, **({"encoding": encoding} if mode == "r" else {})) as fh:
                    yield fh
            else:
                with target.fs.open(target.path, "rb") as raw:
                    if mode == "rb":
                        yield raw
                    else:
                        text = io.TextIOWrapper(raw, encoding=encoding)
                        try:
                            yield text
                        finally:
                            text.detach()
            return
        if mode not in ("wb", "w"):
            raise ValueError(f"Folder.open: mode {mode!r} not supported (rb, r, wb, w); append with append_text")
        with target._atomic_binary() as raw:
            if mode == "wb":
                yield raw
            else:
                text = io.TextIOWrapper(raw, encoding=encoding, newline="")
                try:
                    yield text
                    text.flush()
                finally:
                    text.detach()

    @contextlib.contextmanager
    def _atomic_binary(self) -> Iterator[IO[bytes]]:
        if self.is_local:
            final = self.local_path
            final.parent.mkdir(parents=True, exist_ok=True)
            # hidden, in the same folder (same filesystem: the rename is atomic), unique per writer
            tmp = final.parent / f".{final.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
            try:
                with open(tmp, "wb") as fh:
                    yield fh
                os.replace(tmp, final)
            finally:
                if tmp.exists():
                    tmp.unlink()
            return
        fd, tmp = tempfile.mkstemp(prefix="llm4schema-put-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                yield fh
            # S3 has no rename; one put makes the object appear whole, and only on success.
            self.fs.put_file(tmp, self.path)
            self._fresh(self.path)
        finally:
            os.unlink(tmp)

    def write_bytes(self, name: str, data: bytes) -> "Folder":
        with self.open(name, "wb") as fh:
            fh.write(data)
        return self._at(name)

    def write_text(self, name: str, text: str, encoding: str = "utf-8") -> "Folder":
        return self.write_bytes(name, text.encode(encoding))

    def append_text(self, name: str, text: str, encoding: str = "utf-8") -> "Folder":
        """Add ``text`` at the end of a file (created if missing). Object stores cannot append: the
        file is read and written back whole, so two writers at once must not share a file."""
        target = self._at(name)
        if target.is_local:
            target.parent.makedirs()
            with open(target.local_path, "a", encoding=encoding) as fh:
                fh.write(text)
            return target
        old = target.read_bytes() if target.exists() else b""
        return self.write_bytes(name, old + text.encode(encoding))

    def read_bytes(self, name: str = "") -> bytes:
        with self.open(name, "rb") as fh:
            return fh.read()

    def read_text(self, name: str = "", encoding: str = "utf-8") -> str:
        return self.read_bytes(name).decode(encoding)

    def write_parquet(self, name: str, table, **kwargs: Any) -> "Folder":
        """Write a pyarrow Table as one Parquet file, atomically."""
        import pyarrow.parquet as pq

        with self.open(name, "wb") as fh:
            pq.write_table(table, fh, **kwargs)
        return self._at(name)

    def dataset(self, name: str = ""):
        """The Parquet table at ``self / name`` (one file or a folder of parts) as a pyarrow
        dataset; ``_``/``.`` files are skipped."""
        import pyarrow.dataset as pads

        target = self._at(name)
        if target.is_local:
            return pads.dataset(str(target.local_path), format="parquet")
        return pads.dataset(target.path, filesystem=target.fs, format="parquet")

    def read(self, name: str = "", columns: list[str] | None = None):
        """The Parquet table at ``self / name`` as a pyarrow Table."""
        return self.dataset(name).to_table(columns=columns)


def output_location(spec: str | os.PathLike | Folder) -> Folder:
    """The output root of ``--output``: a local path or a URL, as a Folder."""
    return Folder.of(spec)


def local_state_dir(root: str | os.PathLike | Folder, name: str) -> Path:
    """A folder on this machine's disk for state that needs a real filesystem (the SQLite request
    cache: it locks and updates in place, which no object store does): ``<root>/<name>`` when the
    output root is local, else ``$LLM4SCHEMA_STATE_DIR`` (default ``~/.cache/llm4schema``) /
    ``<the root's URL made a file name>/<name>``, so each remote root keeps its own cache."""
    root = Folder.of(root)
    if root.is_local:
        return root.local_path / name
    base = Path(os.environ.get("LLM4SCHEMA_STATE_DIR") or Path.home() / ".cache" / "llm4schema")
    return base / re.sub(r"[^A-Za-z0-9._-]+", "_", root.url) / name


def parquet_dataset(specs: list[str] | str, *, suffixes: tuple[str, ...] = (".parquet",), root=None, report=None):
    """One pyarrow dataset over Parquet ``--input`` specs. Local specs are expanded by
    :func:`udfs.runtime.inputs.resolve_inputs` (files, folders, globs, manifests; ``root``
    confines them); a URL (``s3://``, ``file://``...) names a file or a folder of parts and is read
    through its fsspec filesystem. Raises InputError when a URL names nothing. ``report`` (an
    ``InputReport``), when given, receives every file considered and every path skipped."""
    import pyarrow.dataset as pads

    from udfs.runtime.inputs import InputError, is_remote, resolve_inputs

    specs = [specs] if isinstance(specs, str) else list(specs)
    local = [s for s in specs if not is_remote(s)]
    parts = []
    if local:
        parts.append(pads.dataset(resolve_inputs(local, suffixes=suffixes, root=root, report=report), format="parquet"))
    by_fs: dict[int, tuple[Any, list[str]]] = {}
    for spec in specs:
        if not is_remote(spec):
            continue
        f = Folder(spec)
        if f.isdir():
            found = f.files(suffixes)
        elif f.isfile():
            found = [f.path]
        else:
            raise InputError(f"--input {spec!r}: no such file or folder")
        if not found:
            raise InputError(f"--input {spec!r}: no {'/'.join(suffixes)} files in this folder")
        by_fs.setdefault(id(f.fs), (f.fs, []))[1].extend(found)
        if report is not None:
            report.considered.extend(found)
    for fs, paths in by_fs.values():
        parts.append(pads.dataset(sorted(dict.fromkeys(paths)), filesystem=fs, format="parquet"))
    if not parts:
        raise InputError(f"--input {specs!r} matched no input files")
    return parts[0] if len(parts) == 1 else pads.dataset(parts)
