"""Turning ``--input`` into a list of files: files, directories, globs and manifests.

A manifest is a text file whose name ends in ``.manifest``, ``.paths`` or ``.txt`` (or that is
passed with ``@`` in front): one path or URL per line, ``#`` comments and blank lines ignored,
relative paths resolved against the manifest's folder; ``.gz`` manifests (Common Crawl's
``*.paths.gz``) are read too. Remote URLs (``s3a://``, ``hdfs://``, ...) are passed to the engine
as they are. Local paths may be confined to a root: a manifest line that escapes it is an error,
not a silent read of some other file.
"""
from __future__ import annotations

import glob
import gzip
import os
from pathlib import Path

MANIFEST_SUFFIXES = (".manifest", ".paths", ".paths.gz", ".txt")
_REMOTE_PREFIXES = ("s3://", "s3a://", "s3n://", "hdfs://", "gs://", "abfs://", "abfss://", "http://", "https://", "file://")


class InputError(ValueError):
    """A bad ``--input``: nothing matched, a path escapes its root, an unreadable manifest."""


def is_remote(path: str) -> bool:
    return path.startswith(_REMOTE_PREFIXES)


def _is_manifest(p: str) -> bool:
    return p.startswith("@") or p.endswith(MANIFEST_SUFFIXES)


def _read_manifest(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [ln.strip() for ln in fh if ln.strip() and not ln.lstrip().startswith("#")]


def _check_root(path: Path, root: Path | None, origin: str) -> None:
    if root is None:
        return
    resolved = path.resolve()
    if resolved != root and root not in resolved.parents:
        raise InputError(f"{origin}: {path} is outside the allowed root {root}")


def resolve_inputs(
    specs: list[str] | str,
    *,
    suffixes: tuple[str, ...] = (".nq", ".nq.gz", ".gz", ".nt", ".nt.gz"),
    root: str | Path | None = None,
) -> list[str]:
    """Expand input specs into a sorted, de-duplicated list of file paths or URLs.

    Directories are walked recursively for files ending in one of ``suffixes`` (hidden files and
    ``_``-prefixed bookkeeping files are skipped). Raises InputError when nothing matches.
    """
    if isinstance(specs, str):
        specs = [specs]
    root_path = Path(root).resolve() if root is not None else None
    out: list[str] = []
    for spec in specs:
        if is_remote(spec):
            out.append(spec)
            continue
        if _is_manifest(spec):
            mpath = Path(spec.removeprefix("@"))
            if not mpath.is_file():
                raise InputError(f"manifest {mpath} does not exist")
            for line in _read_manifest(mpath):
                if is_remote(line):
                    out.append(line)
                    continue
                p = Path(line) if os.path.isabs(line) else (mpath.parent / line)
                _check_root(p, root_path, f"manifest {mpath}")
                out.extend(resolve_inputs([str(p)], suffixes=suffixes, root=root_path))
            continue
        p = Path(spec)
        if p.is_dir():
            _check_root(p, root_path, "--input")
            found = [
                str(f)
                for f in sorted(p.rglob("*"))
                if f.is_file()
                and f.name.endswith(suffixes)
                and not f.name.startswith((".", "_"))
                and not any(part.startswith((".", "_")) for part in f.relative_to(p).parts[:-1])
            ]
            out.extend(found)
        elif p.is_file():
            _check_root(p, root_path, "--input")
            out.append(str(p))
        else:
            matches = sorted(glob.glob(spec, recursive=True))
            files = [m for m in matches if os.path.isfile(m)]
            for m in files:
                _check_root(Path(m), root_path, "--input")
            if not files:
                raise InputError(f"--input {spec!r}: no such file, directory or matching glob")
            out.extend(files)
    # Absolute, de-duplicated, in a stable order: the order fixes task ids and line positions.
    seen: dict[str, None] = {}
    for f in out:
        seen.setdefault(f if is_remote(f) else str(Path(f).resolve()), None)
    if not seen:
        raise InputError(f"--input {specs!r} matched no input files")
    return sorted(seen)
