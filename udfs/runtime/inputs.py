"""Turning ``--input`` into a list of files: files, directories, globs and manifests.

A manifest is a text file whose name ends in ``.manifest``, ``.paths`` or ``.txt`` (or that is
passed with ``@`` in front): one path or URL per line, ``#`` comments and blank lines ignored,
relative paths resolved against the manifest's folder; ``.gz`` manifests (Common Crawl's
``*.paths.gz``) are read too. Remote URLs (``s3a://``, ``hdfs://``, ...) are passed to the engine
as they are. Local paths may be confined to one or more roots (``root=``): a path, a manifest line,
a ``file://`` URL or a file found in a directory that resolves (symlinks followed, ``..`` applied)
outside them is an InputError, not a silent read of some other file; with roots, a remote URL
(``s3://``, ``http://``, ...) is admitted only under a URL root of the same scheme and host, below its
path prefix. The manifest named on the command line is the operator's own and is not confined;
what it lists is.

Every input is accounted for: a folder is walked with its symlinks followed (a symlinked
sub-folder is read), a folder reached a second time (a symlink loop, or two links to one folder)
is skipped, a file named more than once is read once, and an ``InputReport`` lists every file a
resolution considered and every path it skipped with the reason (a hidden or ``_`` name, another
suffix, a broken link, a loop, a file named again), for the job's run record (``Job.resolve_inputs``).
"""

from __future__ import annotations

import errno
import glob
import gzip
import os
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from udfs.runtime.errors import UserError

MANIFEST_SUFFIXES = (".manifest", ".paths", ".paths.gz", ".txt")
_REMOTE_PREFIXES = (
    "s3://",
    "s3a://",
    "s3n://",
    "hdfs://",
    "gs://",
    "abfs://",
    "abfss://",
    "http://",
    "https://",
    "file://",
)


class InputError(UserError, ValueError):
    """A bad ``--input``: nothing matched, a path escapes its root, an unreadable manifest."""


@dataclass
class InputReport:
    """What one or more resolutions considered: ``considered`` (every file or URL found, in the
    order found) and ``skipped`` (``{"path", "reason"}`` for every path passed over)."""

    considered: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)

    def skip(self, path, reason: str) -> None:
        self.skipped.append({"path": str(path), "reason": reason})

    def as_dict(self) -> dict:
        return {"considered": list(dict.fromkeys(self.considered)), "skipped": list(self.skipped)}


def is_remote(path: str) -> bool:
    return path.startswith(_REMOTE_PREFIXES)


def _is_manifest(p: str) -> bool:
    return p.startswith("@") or p.endswith(MANIFEST_SUFFIXES)


def _roots(root) -> tuple[Path | str, ...] | None:
    """Local roots as resolved Paths, URL roots as ``scheme://host/prefix/`` strings."""
    if root is None:
        return None
    items = [root] if isinstance(root, (str, Path)) else list(root)
    if not items:
        return None
    out: list[Path | str] = []
    for r in items:
        r = str(r)
        if r.startswith("file://"):
            r = r.removeprefix("file://")
        out.append(r.rstrip("/") + "/" if is_remote(r) else Path(r).expanduser().resolve())
    return tuple(out)


# percent-encoded dots and separators, or a query: ways a server could read another path than the one checked
_URL_TRICKS = re.compile(r"%(2e|2f|5c|00)|[?#]", re.I)
# percent-encoded dots and separators only: in an object store's key "?", "#" and "%" are characters of a name
_KEY_TRICKS = re.compile(r"%(2e|2f|5c|00)", re.I)
# schemes whose paths are read as they are written (Hadoop's Path, s3fs): no query, no fragment
_LITERAL_SCHEMES = ("s3", "s3a", "s3n", "gs", "hdfs", "abfs", "abfss")


def _split(url: str) -> tuple[str, str, str]:
    """(scheme, host, path) of a URL; an object store's path is everything after the host, so a
    key holding "?" or "#" keeps them (Hadoop and s3fs read them as characters)."""
    u = urlsplit(url)
    if u.scheme.lower() not in _LITERAL_SCHEMES:
        return u.scheme, u.netloc, u.path
    rest = url.split("://", 1)[1]
    host, slash, path = rest.partition("/")
    return u.scheme, host, slash + path


def _check_url(url: str, roots: tuple[Path | str, ...] | None, origin: str) -> None:
    """With roots, a remote URL must lie under a URL root: same scheme and host, below its path
    prefix, without ``..`` segments or encoded separators (nor, over HTTP, a query or fragment)."""
    if roots is None:
        return
    scheme, host, path = _split(url)
    tricks = _KEY_TRICKS if scheme.lower() in _LITERAL_SCHEMES else _URL_TRICKS
    for r in roots:
        if isinstance(r, Path):
            continue
        b_scheme, b_host, b_path = _split(r)
        if (scheme.lower(), host.lower()) != (b_scheme.lower(), b_host.lower()):
            continue
        if tricks.search(url.split("://", 1)[1]) or not path.startswith(b_path):
            continue
        if posixpath.normpath("/" + path[len(b_path) :]).startswith("/..") or "/../" in path + "/":
            continue
        return
    where = " or ".join(str(r) for r in roots)
    raise InputError(f"{origin}: {url} is outside the allowed root {where}")


def _read_manifest(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [ln.strip() for ln in fh if ln.strip() and not ln.lstrip().startswith("#")]


def _check_root(path: Path, roots: tuple[Path, ...] | None, origin: str) -> None:
    if roots is None:
        return
    resolved = path.resolve()
    if not any(isinstance(r, Path) and (resolved == r or r in resolved.parents) for r in roots):
        where = " or ".join(str(r) for r in roots)
        raise InputError(f"{origin}: {path} resolves to {resolved}, outside the allowed root {where}")


def resolve_inputs(
    specs: list[str] | str,
    *,
    suffixes: tuple[str, ...] = (".nq", ".nq.gz", ".gz", ".nt", ".nt.gz"),
    root: str | Path | list[str | Path] | tuple[str | Path, ...] | None = None,
    report: InputReport | None = None,
    _manifests: tuple[Path, ...] = (),
) -> list[str]:
    """Expand input specs into a sorted, de-duplicated list of file paths or URLs.

    Directories are walked recursively, symlinks followed, for files ending in one of
    ``suffixes`` (``_walk``: hidden files and ``_``-prefixed bookkeeping files are skipped, a
    folder reached twice is skipped). Raises InputError when nothing matches, and, with ``root``
    (one folder or URL prefix, or several), when an input lies outside every root. ``report``,
    when given, receives every file considered and every path skipped with its reason.
    """
    if isinstance(specs, str):
        specs = [specs]
    roots = _roots(root)  # idempotent: the recursion passes the resolved roots
    report = InputReport() if report is None else report
    out: list[str] = []
    for spec in specs:
        if spec.startswith("file://") and roots is not None:
            _check_root(Path(spec.removeprefix("file://")), roots, "--input")
        elif is_remote(spec):
            _check_url(spec, roots, "--input")
        if is_remote(spec):
            out.append(spec)
            report.considered.append(spec)
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
                elif is_remote(line):
                    _check_url(line, roots, f"manifest {mpath}")
                if is_remote(line):
                    out.append(line)
                    report.considered.append(line)
                    continue
                p = Path(line) if os.path.isabs(line) else (mpath.parent / line)
                _check_root(p, roots, f"manifest {mpath}")
                out.extend(resolve_inputs([str(p)], suffixes=suffixes, root=roots, report=report, _manifests=chain))
            continue
        p = Path(spec)
        if p.is_dir():
            _check_root(p, roots, "--input")
            found = _walk(p, suffixes, report)
            # A symlink inside the folder may point anywhere.
            for f in found:
                _check_root(f, roots, f"--input {p}")
            out.extend(str(f) for f in found)
        elif p.is_file():
            _check_root(p, roots, "--input")
            out.append(str(p))
            report.considered.append(str(p))
        else:
            matches = sorted(glob.glob(spec, recursive=True))
            files = [m for m in matches if os.path.isfile(m)]
            for m in files:
                _check_root(Path(m), roots, "--input")
            for m in matches:
                if not os.path.isfile(m):
                    report.skip(m, "matched by the glob but not a file (a folder or a broken link)")
            if not files:
                raise InputError(f"--input {spec!r}: no such file, directory or matching glob")
            out.extend(files)
            report.considered.extend(files)
    # Absolute, de-duplicated, in a stable order: the order fixes task ids and line positions. A
    # file named twice (two specs, a folder and a file in it, a link and its target) is read once,
    # and the report says so: its rows are neither counted twice nor merged without a word.
    seen: dict[str, str] = {}
    for f in out:
        key = f if is_remote(f) else str(Path(f).resolve())
        if key in seen:
            report.skip(f, f"the same file as {seen[key]}, named again: read once")
        else:
            seen[key] = f
    if not seen:
        raise InputError(f"--input {specs!r} matched no input files")
    return sorted(seen)


def local_name(uri: str) -> str:
    """A ``file:`` URI as the path ``resolve_inputs`` gives for it; any other location as it is."""
    from urllib.parse import unquote

    return unquote(urlsplit(uri).path) if uri.startswith("file:") else uri


def _walk(top: Path, suffixes: tuple[str, ...], report: InputReport) -> list[Path]:
    """The files under ``top`` ending in one of ``suffixes``, symlinks to files and folders
    followed. A folder is walked once: one reached again (a symlink loop, or a second link to a
    folder already walked) is skipped with the reason, as is every other path passed over (a
    hidden or ``_`` name, another suffix, a broken link, an unreadable folder); found files are
    ``report.considered``."""
    found: list[Path] = []
    walked: dict[tuple[int, int], Path] = {}
    stack = [top]
    while stack:
        d = stack.pop()
        try:
            st = d.stat()
            key = (st.st_dev, st.st_ino)
        except OSError as exc:
            report.skip(d, f"unreadable folder: {exc.strerror or exc}")
            continue
        if key in walked:
            first = walked[key]
            loop = first == d or first in d.parents
            report.skip(
                d,
                f"symlink loop: leads back to {first}, already walked"
                if loop
                else f"the same folder as {first}, already walked",
            )
            continue
        walked[key] = d
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as exc:
            report.skip(d, f"unreadable folder: {exc.strerror or exc}")
            continue
        subdirs = []
        for e in entries:
            p = Path(e.path)
            if e.name.startswith((".", "_")):
                report.skip(p, "hidden or bookkeeping name (starts with . or _)")
                continue
            try:
                is_dir, is_file = e.is_dir(), e.is_file()  # both follow symlinks
            except OSError as exc:
                report.skip(
                    p,
                    "symlink loop: the link never reaches a file or folder"
                    if exc.errno == errno.ELOOP
                    else f"unreadable: {exc.strerror or exc}",
                )
                continue
            if is_dir:
                subdirs.append(p)
            elif is_file:
                if e.name.endswith(suffixes):
                    found.append(p)
                    report.considered.append(str(p))
                else:
                    report.skip(p, f"name does not end in {' '.join(suffixes)}")
            elif e.is_symlink():
                report.skip(p, "broken symlink (or a symlink loop): its target does not exist")
            else:
                report.skip(p, "not a regular file or folder")
        stack.extend(reversed(subdirs))
    return found
