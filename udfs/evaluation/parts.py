"""The evaluation's tables in parts of bounded size, committed with markers, resumed by settings.

Layout under the output root (local or any fsspec URL; nothing assumes a disk the nodes share):

- ``markups/``, ``triples/``, ``scores/``: Parquet parts named
  ``part-<settings hash, 12>-<writer id>-<n>.parquet``, the same name in the three tables. A
  worker's ``PartWriter`` buffers the rows of the pages it evaluated and writes a part when a
  table's buffer reaches ``part_rows`` rows or its unit of pages ends; a page's rows are never
  split between two parts. Each file is written atomically (``Folder.write_parquet``).
- ``scores/_committed/<part name>.json``: the completion marker, written after the three files:
  the settings hash, the page keys the part holds and its row counts (datatrove's completion
  markers, per part). A part without a marker is a leftover of a killed run: the next run removes
  it and evaluates its pages again (from the request cache), so a kill redoes at most the parts
  that were in flight and no page is ever in two committed parts.

Every row carries ``settings_hash``, the hash of everything that changes an answer
(``settings_hash``): a resumed run skips the pages of committed parts with its own hash, and
refuses (``SettingsMismatch``) to add to an output holding parts of other settings unless
``--overwrite`` clears it first: results of two settings are never merged.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import pyarrow as pa

from udfs.runtime.errors import OutputError
from udfs.runtime.io import Folder
from udfs.runtime.paths import PROMPTS_DIR

TABLES = ("markups", "triples", "scores")
MARKERS = "_committed"
HASH_CHARS = 12
_PART = re.compile(r"^part-([0-9a-f]{%d})-[0-9a-z]+-\d+\.parquet$" % HASH_CHARS)


class SettingsMismatch(RuntimeError):
    """The output holds results of other settings (or of an older layout)."""


def settings_hash(cfg, *, prompts_dir=PROMPTS_DIR, extra: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    """(sha256 hex, what was hashed) of an ``EvalConfig``: every field (models, stages, context
    window, validity, max_claims, correction, scores settings and any field added later), the judge
    as applied (``udfs.agents.judge.Judge.identity``: its questions, their prompts' fingerprints,
    the thresholds and the calibration entries taken, not where a value came from nor the rest of
    the calibration file), the text of every prompt file under ``prompts_dir``, and the content of
    every file a field names (a vocabulary file: its content, not its path), plus ``extra``. Where
    the service runs, workers, timeouts and part sizes are not in it."""
    from pathlib import Path

    fields = dataclasses.asdict(dataclasses.replace(cfg, judge=None))
    fields["judge"] = cfg.judge.identity()
    files = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(value, str) and value and len(value) < 4096:
            try:
                p = Path(value)
                if p.is_file():
                    files[prefix] = hashlib.sha256(p.read_bytes()).hexdigest()
            except OSError:
                pass

    walk("", fields)
    prompts = {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(Path(prompts_dir).glob("*")) if p.is_file()
    }
    what = {"config": fields, "files": files, "prompts": prompts, **(extra or {})}
    digest = hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()
    return digest, what


@dataclass
class Committed:
    """What an output root holds under one settings hash: the page keys of its committed parts,
    the parts' names, and the files to remove before writing (uncommitted leftovers)."""

    pages: set[str] = field(default_factory=set)
    parts: list[str] = field(default_factory=list)
    leftovers: list[tuple[str, str]] = field(default_factory=list)  # (table, file name)
    rows: dict[str, int] = field(default_factory=lambda: {t: 0 for t in TABLES})


def committed(root: Folder, digest: str) -> Committed:
    """Read the markers under ``root`` (module docstring). Raises SettingsMismatch when a marker
    or a part was written under another settings hash, or a part has a name this layout does not
    write (a table of an older version, one file per page)."""
    out = Committed()
    markers = root / "scores" / MARKERS
    for name in markers.ls("*.json"):
        m = json.loads(markers.read_text(name))
        if m.get("settings_hash") != digest:
            raise SettingsMismatch(
                f"{root} holds results of other settings (settings hash {str(m.get('settings_hash'))[:HASH_CHARS]}, "
                f"this run's is {digest[:HASH_CHARS]}): give another --output, or --overwrite to replace them"
            )
        out.parts.append(name[: -len(".json")])
        out.pages.update(m["pages"])
        for t in TABLES:
            out.rows[t] += int(m.get("rows", {}).get(t, 0))
    done = set(out.parts)
    for t in TABLES:
        for name in (root / t).ls("*.parquet"):
            m = _PART.match(name)
            if not m or m.group(1) != digest[:HASH_CHARS]:
                raise SettingsMismatch(
                    f"{root / t} holds {name}, not a part of this run's settings (hash {digest[:HASH_CHARS]}): "
                    "written with other settings or by an older version; give another --output, or "
                    "--overwrite to replace it"
                )
            if name[: -len(".parquet")] not in done:
                out.leftovers.append((t, name))
    return out


def remove_leftovers(root: Folder, found: Committed) -> None:
    """Remove the parts a killed run left without a marker (their pages are evaluated again)."""
    for t, name in found.leftovers:
        (root / t).rm(name)


class PartWriter:
    """One worker's rolling writer of the three tables (module docstring). ``add`` takes one
    page's result; ``flush`` commits what is buffered as one part per table and its marker.
    ``writer_id`` must be unique among the writers of a run (a random id per worker)."""

    def __init__(self, root: str | Folder, digest: str, writer_id: str, part_rows: int):
        self.root = Folder.of(root)
        self.digest = digest
        self.writer_id = writer_id
        self.part_rows = max(1, int(part_rows))
        self.seq = 0
        self.parts: list[str] = []
        self._reset()

    def _reset(self) -> None:
        self.rows: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLES}
        self.pages: list[str] = []

    def add(self, page_key: str, result: dict[str, list[dict[str, Any]]]) -> None:
        for t in TABLES:
            self.rows[t].extend({**r, "settings_hash": self.digest} for r in result[t])
        self.pages.append(page_key)
        if max(len(v) for v in self.rows.values()) >= self.part_rows:
            self.flush()

    def flush(self) -> str | None:
        """Write the buffered pages as one part (three files, then the marker); its name, or None
        when nothing was buffered."""
        from udfs.evaluation.evaluator import MARKUPS_SCHEMA, SCORES_SCHEMA, TRIPLES_SCHEMA, to_table

        if not self.pages:
            return None
        name = f"part-{self.digest[:HASH_CHARS]}-{self.writer_id}-{self.seq:05d}"
        schemas = {"markups": MARKUPS_SCHEMA, "triples": TRIPLES_SCHEMA, "scores": SCORES_SCHEMA}
        for t in TABLES:  # scores last, then the marker: a marker means the three files are whole
            table = to_table(self.rows[t], schemas[t])
            written(self.root / t, f"{name}.parquet", lambda f, n: f.write_parquet(n, table))
        marker = {"settings_hash": self.digest, "pages": self.pages, "rows": {t: len(self.rows[t]) for t in TABLES}}
        written(self.root / "scores" / MARKERS, f"{name}.json", lambda f, n: f.write_text(n, json.dumps(marker)))
        self.seq += 1
        self.parts.append(name)
        self._reset()
        return name


def written(folder: Folder, name: str, write: Callable[[Folder, str], Any]) -> None:
    """``write(folder, name)``, a write of one file; a failure of the filesystem (no space left, a
    file-size limit, a permission changed) is an ``OutputError`` naming the file and the OS's
    reason. The write is atomic (``Folder``), so the failed file is not there: a part without its
    marker is a leftover the next run removes (module docstring), and nothing half-written counts
    as done."""
    try:
        write(folder, name)
    except OSError as exc:
        raise OutputError(
            f"cannot write {folder / name}: {exc.strerror or exc}; free space there or raise the file-size "
            "limit (ulimit -f), then run again: it resumes from the parts committed so far"
        ) from exc


def rejects_schema() -> pa.Schema:
    """``udfs.runtime.rejects``' contract as an Arrow schema (the evaluation writes it from Python)."""
    from udfs.runtime.rejects import FIELDS

    kinds = {"string": pa.string(), "bigint": pa.int64()}
    return pa.schema([pa.field(n, kinds[k], nullable) for n, k, nullable in FIELDS])


def write_rejects(folder: Folder, name: str, rows: list[dict[str, Any]]) -> None:
    """``rows`` (``reject_row`` dicts) as one Parquet file ``name`` in the job's rejects folder;
    an existing file of that name is replaced, and no rows writes no file (and removes one)."""
    if not rows:
        folder.rm(name)
        return
    table = pa.Table.from_pylist(rows, schema=rejects_schema())
    written(folder, name, lambda f, n: f.write_parquet(n, table))
