"""Turning ``--input`` into a list of files: files, directories, globs and manifests.

A manifest is a text file whose name ends in ``.manifest``, ``.paths`` or ``.txt`` (or that is
passed with ``@`` in front): one path or URL per line, ``#`` comments and blank lines ignored,
relative paths resolved against the manifest's folder; ``.gz`` manifests (Common Crawl's
``*.paths.gz``) are read too. Remote URLs (``s3a://``, ``hdfs://``, ...) are passed to the engine
as they are. Local paths may be confined to one or more roots (``root=``): a path, a manifest line,
a ``file://`` URL or a file found in a directory that resolves (symlinks followed, ``..`` applied)
outside them is an InputError, not a silent read of some other file. The manifest named on the
command line is the operator's own and is not confined; what it lists is.
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


def _roots(root) -> tuple[Path, ...] | None:
    if root is None:
        return None
    items = [root] if isinstance(root, (str, Path)) else list(root)
    if not items:
        return None
    return tuple(Path(r).expanduser().resolve() for r in items)


def _read_manifest(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [ln.strip() for ln in fh if ln.strip() and not ln.lstrip().startswith("#")]


def _check_root(path: Path, roots: tuple[Path, ...] | None, origin: str) -> None:
    if roots is None:
        return
    resolved = path.resolve()
    if not any(resolved == r or r in resolved.parents for r in roots):
        where = " or ".join(str(r) for r in roots)
        raise InputError(f"{origin}: {path} resolves to {resolved}, outside the allowed root {where}")


def resolve_inputs(
    specs: list[str] | str,
    *,
    suffixes: tuple[str, ...] = (".nq", ".nq.gz", ".gz", ".nt", ".nt.gz"),
    root: str | Path | list[str | Path] | tuple[str | Path, ...] | None = None,
    _manifests: tuple[Path, ...] = (),
) -> list[str]:
    """Expand input specs into a sorted, de-duplicated list of file paths or URLs.

    Directories are walked recursively for files ending in one of ``suffixes`` (hidden files and
    ``_``-prefixed bookkeeping files are skipped). Raises InputError when nothing matches, and,
    with ``root`` (one folder or several), when a local input resolves outside every root.
    """
    if isinstance(specs, str):
        specs = [specs]
    roots = _roots(root)
    out: list[str] = []
    for spec in specs:
        if spec.startswith("file://") and roots is not None:
            _check_root(Path(spec.removeprefix("file://")), roots, "--input")
        if is_remote(spec):
            out.append(spec)
            continue
        if _is_manifest(spec):
            mpath = Path(spec.removeprefix("@"))
            if not mpath.is_file():
                raise InputError(f"manifest {mpath} does not exist")
            if mpath.resolve() in _manifests:
                raise InputError(f"manifest {mpath} lists itself (through {' -> '.join(map(str, _manifests))})")
            chain = (*_manifests, mpath.resolve())
            for line in _read_manifest(mpath):
                if line.startswith("file://") and roots is not None:
                    _check_root(Path(line.removeprefix("file://")), roots, f"manifest {mpath}")
                if is_remote(line):
                    out.append(line)
                    continue
                p = Path(line) if os.path.isabs(line) else (mpath.parent / line)
                _check_root(p, roots, f"manifest {mpath}")
                out.extend(resolve_inputs([str(p)], suffixes=suffixes, root=roots, _manifests=chain))
            continue
        p = Path(spec)
        if p.is_dir():
            _check_root(p, roots, "--input")
            found = [
                f
                for f in sorted(p.rglob("*"))
                if f.is_file()
                and f.name.endswith(suffixes)
                and not f.name.startswith((".", "_"))
                and not any(part.startswith((".", "_")) for part in f.relative_to(p).parts[:-1])
            ]
            # A symlink inside the folder may point anywhere.
            for f in found:
                _check_root(f, roots, f"--input {p}")
            out.extend(str(f) for f in found)
        elif p.is_file():
            _check_root(p, roots, "--input")
            out.append(str(p))
        else:
            matches = sorted(glob.glob(spec, recursive=True))
            files = [m for m in matches if os.path.isfile(m)]
            for m in files:
                _check_root(Path(m), roots, "--input")
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
