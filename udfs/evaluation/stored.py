"""Stored markups: markups made elsewhere (another model, another prompt, another year), judged
exactly like the ones an evaluation generates (``jobs/evaluate.py --markups TABLE``).

The table: Parquet (a file or a folder of parts) or JSON Lines (a ``.jsonl`` file, one object a
line) with the columns ``source`` (the markup's source: any name but a ``--generators`` model;
``human`` replaces the page's own human markup), ``markup`` (JSON-LD text) and one key column:

- ``page_id`` when the table has one: the pages table's ``page_id`` column where the pages table
  has one, else the evaluation's page key ``udfs.evaluation.evaluator.page_key(page_url,
  human_markup)`` (the ``page_key`` of the output tables);
- else ``page_url``: the pages' URL; a URL held by several pages of the input (the same URL with
  two different human markups) is ambiguous, and its markups are rejected.

Every row is judged or rejected. A row is rejected, with its reason, when it has no key or no
source, names no page of the input, names a page that is not evaluated (status not ok, not
selected, no text, or input rows that do not name one page: ``udfs.evaluation.plan``, "Duplicate
keys"), names a page and source that another row names too (all such rows: which
one was meant cannot be told), or holds a markup that is empty or that
``udfs.schemaorg.markup.parse_markup`` refuses.

Bounded memory. The pages input is streamed by the plan (``udfs.evaluation.plan.scan_pages``);
its index (one small row per input row: key, URL, page key, state) is what the driver holds
anyway. The markups table is streamed too, batch by batch, into one DuckDB query that joins it to
that index and sorts it by page key and source (DuckDB spills a sort larger than its memory limit
to disk); the sorted rows stream back, each markup is read once to decide it, and the kept ones
are written, still sorted, to one Parquet lookup file in row groups of ``LOOKUP_ROWS`` rows. A
worker reads the markups of its own pages from that file with a page-key filter, which the row
groups' min/max statistics turn into reading the few groups that hold them. So neither the driver
nor a worker ever holds the markups table, and the lookup's content hash (``digest``, sha256 of
the kept rows in their sorted order) comes out of the same pass, for the run's settings hash.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa

from udfs.evaluation.plan import CONFLICT, NO_TEXT, NOT_OK
from udfs.runtime import lines as L
from udfs.runtime.contracts import TableContract
from udfs.runtime.io import Folder
from udfs.runtime.rejects import FIXED_RAW_CHARS, reject_row
from udfs.schemaorg.markup import MarkupError, parse_markup

KEYS = ("page_id", "page_url")  # the key column: the first of these the table has
# The contract of a --markups table in Parquet (udfs.runtime.contracts; JSON Lines is read line
# by line, each bad line a reject): source and markup, and one key column (KEYS), as text.
# jobs/import_pset.py's stored_markups/ (udfs.corpus.pset_tables.STORED_MARKUPS_SCHEMA) is one.
# Key: (page key, source).
STORED_MARKUPS = TableContract(
    "stored markups",
    required={"source": pa.string(), "markup": pa.string()},
    optional={k: pa.string() for k in KEYS},
    key=("page_id", "source"),
    one_of=tuple((k,) for k in KEYS),
    writer="llm4schema-import-pset",
)
LOOKUP_SCHEMA = pa.schema([("page_key", pa.string()), ("source", pa.string()), ("markup", pa.string())])
LOOKUP_ROWS = 1024  # rows per row group of the lookup file (a worker reads whole groups)
BATCH_ROWS = 4096
_STREAM = pa.schema(
    [
        ("k", pa.string()),
        ("source", pa.string()),
        ("markup", pa.string()),
        ("_file", pa.int32()),
        ("_row", pa.int64()),
        ("_bad", pa.string()),
    ]
)


@dataclass
class StoredMarkups:
    """What ``join_markups`` found: the key column used, the table's files, the lookup file
    (local path) and its content hash, the sources kept (``human`` among them when the table
    replaces human markups), the page keys with a kept markup (sorted), per-source counts of rows
    read, kept and rejected, the reject rows (``udfs.runtime.rejects`` contract) and the JSON Lines
    files that began with a byte order mark."""

    key: str
    files: list[str]
    lookup: Path
    digest: str
    sources: list[str] = field(default_factory=list)
    pages: list[str] = field(default_factory=list)
    read: dict[str, int] = field(default_factory=dict)
    kept: dict[str, int] = field(default_factory=dict)
    rejected: dict[str, int] = field(default_factory=dict)
    rejects: list[dict[str, Any]] = field(default_factory=list)
    byte_order_marks: int = 0  # JSON Lines files that began with one (skipped: udfs.runtime.lines)


def markup_files(spec: str) -> list[str]:
    """The files of the ``--markups`` table: a ``.jsonl`` file, a Parquet file, or a folder of
    Parquet parts (``_``/``.`` names skipped); local or a URL. InputError when there are none."""
    from udfs.runtime.inputs import InputError

    f = Folder(spec)
    if f.isfile():
        return [spec]
    if f.isdir():
        found = f.files((".parquet",))
        if not found:
            raise InputError(f"--markups {spec!r}: no .parquet files in this folder")
        return [found_url(f, p) for p in found]
    raise InputError(f"--markups {spec!r}: no such file or folder")


def found_url(folder: Folder, path: str) -> str:
    return path if folder.is_local else folder.fs.unstrip_protocol(path)


def _key_of(files: list[str]) -> str:
    """The table's key column (module docstring), from its first file."""
    import pyarrow.parquet as pq

    from udfs.runtime.inputs import InputError

    first = files[0]
    with Folder(first).open("", "rb") as fh:
        if first.endswith(".jsonl"):
            names: set[str] = set()
            for _, line in L.Lines(fh):
                try:
                    obj = json.loads(L.decode(line))
                except (json.JSONDecodeError, L.LineError):
                    continue
                if isinstance(obj, dict):
                    names = set(obj)
                    break
        else:
            names = set(pq.read_schema(fh).names)
    missing = [c for c in ("source", "markup") if c not in names]
    key = next((k for k in KEYS if k in names), None)
    if missing or key is None:
        need = ", ".join([*missing, *([] if key else ["page_id or page_url"])])
        raise InputError(f"--markups {first}: no column {need} (the table: page_id or page_url, source, markup)")
    return key


def _text(v: Any) -> str | None:
    return None if v is None else v if isinstance(v, str) else str(v)


def _stream(files: list[str], key: str, found: StoredMarkups | None = None) -> Iterator[pa.RecordBatch]:
    """The table's rows as ``_STREAM`` batches: ``_file`` its file's index, ``_row`` the row
    number in the file (JSON Lines: the line number, from 1), ``_bad`` why a line was unreadable.
    A JSON Lines file is read by ``udfs.runtime.lines``' rules: a byte order mark as its first
    bytes skipped (counted in ``found.byte_order_marks``); a line that is not UTF-8, starts with a
    later U+FEFF or holds a lone surrogate escape (``"\\uD800"``) is a row with that reason."""
    import pyarrow.parquet as pq

    for i, url in enumerate(files):
        with Folder(url).open("", "rb") as fh:
            if url.endswith(".jsonl"):
                cols: dict[str, list] = {n: [] for n in _STREAM.names}
                lines = L.Lines(fh)
                for n, line in lines:
                    if not line.strip():
                        continue
                    bad = None
                    try:
                        obj = json.loads(L.decode(line))
                        L.check_scalar_values(obj)
                    except json.JSONDecodeError as exc:
                        obj, bad = {}, f"line is not JSON: {exc}"
                    except L.LineError as exc:
                        obj, bad = {}, exc.reason
                    if not isinstance(obj, dict):
                        obj, bad = {}, bad or "line is not a JSON object"
                    for c, v in (("k", obj.get(key)), ("source", obj.get("source")), ("markup", obj.get("markup"))):
                        cols[c].append(_text(v) if not isinstance(v, (dict, list)) else json.dumps(v))
                    cols["_file"].append(i)
                    cols["_row"].append(n)
                    cols["_bad"].append(bad)
                    if len(cols["_row"]) >= BATCH_ROWS:
                        yield pa.record_batch([cols[c] for c in _STREAM.names], schema=_STREAM)
                        cols = {c: [] for c in _STREAM.names}
                if cols["_row"]:
                    yield pa.record_batch([cols[c] for c in _STREAM.names], schema=_STREAM)
                if found is not None:
                    found.byte_order_marks += lines.byte_order_marks
                continue
            pf = pq.ParquetFile(fh)
            names = pf.schema_arrow.names
            missing = [c for c in (key, "source", "markup") if c not in names]
            if missing:
                from udfs.runtime.inputs import InputError

                raise InputError(f"--markups {url}: no column {', '.join(missing)} (its first file has them)")
            row0 = 0
            for b in pf.iter_batches(batch_size=BATCH_ROWS, columns=[key, "source", "markup"]):
                n = b.num_rows
                yield pa.record_batch(
                    [
                        b.column(key).cast(pa.string()),
                        b.column("source").cast(pa.string()),
                        b.column("markup").cast(pa.string()),
                        pa.array([i] * n, pa.int32()),
                        pa.array(range(row0, row0 + n), pa.int64()),
                        pa.nulls(n, pa.string()),
                    ],
                    schema=_STREAM,
                )
                row0 += n


def join_markups(spec: str, index: pa.Table, lookup: Path, *, reserved: tuple[str, ...] = ()) -> StoredMarkups:
    """Read the table ``spec`` once (module docstring), join it to the pages ``index`` (a
    ``udfs.evaluation.plan.Scan.index``), write the kept rows to the Parquet file ``lookup``
    (``LOOKUP_SCHEMA``, sorted by page key and source). ``reserved`` are the sources the run
    generates: a table with one of them among its kept sources is an InputError (two markups of
    one source for a page)."""
    import duckdb
    import pyarrow.parquet as pq

    from udfs.runtime.inputs import InputError

    files = markup_files(spec)
    key = _key_of(files)
    out = StoredMarkups(key=key, files=files, lookup=lookup, digest="")
    con = duckdb.connect()
    con.execute(f"SET temp_directory = '{lookup.parent / 'duckdb-spill'}'")
    con.register("pages", index)
    con.register("m", pa.RecordBatchReader.from_batches(_STREAM, _stream(files, key, out)))
    # one row per key of the pages: how many pages it names, and the best state of its rows (a
    # page sampled in several strata is one page key with several input rows)
    rel = con.sql(f"""
        WITH idx AS (
            SELECT {key} AS k, count(DISTINCT page_key) AS n_pages, min(page_key) AS page_key, max(state) AS state
            FROM pages WHERE {key} IS NOT NULL GROUP BY {key})
        SELECT m._file, m._row, m.k, m.source, m.markup, m._bad, idx.n_pages, idx.page_key, idx.state,
               count(*) OVER (PARTITION BY idx.page_key, m.source) AS n_same
        FROM m LEFT JOIN idx ON m.k = idx.k
        ORDER BY idx.page_key NULLS LAST, m.source, m._file, m._row""")
    # DuckDB 1.x names it fetch_arrow_reader, later versions to_arrow_reader (the old name deprecated)
    rows = (rel.to_arrow_reader if hasattr(rel, "to_arrow_reader") else rel.fetch_arrow_reader)(BATCH_ROWS)
    digest = hashlib.sha256()
    buf: list[dict[str, str]] = []
    lookup.parent.mkdir(parents=True, exist_ok=True)
    with pq.ParquetWriter(lookup, LOOKUP_SCHEMA) as writer:
        for batch in rows:
            for r in batch.to_pylist():
                src = r["source"] or ""
                out.read[src] = out.read.get(src, 0) + 1
                why = _rejected(r, key)
                if why is None:
                    try:
                        parse_markup(r["markup"])
                        _check_escapes(r["markup"])
                    except MarkupError as exc:
                        why = f"markup does not parse: {exc.reason}"
                    except L.LineError as exc:
                        why = f"markup: {exc.reason}"
                if why is not None:
                    out.rejected[src] = out.rejected.get(src, 0) + 1
                    raw = json.dumps({key: r["k"], "source": r["source"], "markup": r["markup"]}, ensure_ascii=False)
                    out.rejects.append(reject_row(files[r["_file"]], r["_row"], why, raw, raw_chars=FIXED_RAW_CHARS))
                    continue
                out.kept[src] = out.kept.get(src, 0) + 1
                if not out.pages or out.pages[-1] != r["page_key"]:
                    out.pages.append(r["page_key"])
                for part in (r["page_key"], src, r["markup"]):
                    digest.update(part.encode("utf-8") + b"\0")
                buf.append({"page_key": r["page_key"], "source": src, "markup": r["markup"]})
                if len(buf) >= LOOKUP_ROWS:
                    writer.write_table(pa.Table.from_pylist(buf, schema=LOOKUP_SCHEMA))
                    buf = []
        if buf:
            writer.write_table(pa.Table.from_pylist(buf, schema=LOOKUP_SCHEMA))
    con.close()
    out.sources = sorted(out.kept)
    clash = sorted(set(out.sources) & set(reserved))
    if clash:
        raise InputError(
            f"--markups {spec}: source {', '.join(clash)} is also a model of --generators: a page would have two "
            "markups of one source; rename the stored source or leave the model out of --generators"
        )
    out.digest = digest.hexdigest()
    return out


def _check_escapes(markup: str) -> None:
    """LineError when the markup's own JSON escapes a lone surrogate (``"\\ud800"`` inside the
    JSON-LD text, which the table's JSON decoded only once): udfs.runtime.lines' rule for every
    JSON the project reads. A markup that is no JSON was refused by parse_markup already."""
    if "\\u" not in markup:
        return
    try:
        value = json.loads(markup)
    except ValueError:
        return
    L.check_scalar_values(value)


def _rejected(r: dict[str, Any], key: str) -> str | None:
    """Why a joined row cannot be judged (before its markup is read), or None."""
    if r["_bad"]:
        return r["_bad"]
    if not (r["k"] or "").strip():
        return f"no {key}"
    if not (r["source"] or "").strip():
        return "no source"
    if r["page_key"] is None:
        return f"no page with this {key} in the pages input"
    if r["n_pages"] > 1 and key == "page_url":
        return f"{r['n_pages']} pages of the input have this page_url (different human markups): key them by page_id"
    if r["n_pages"] > 1:
        return f"{r['n_pages']} pages of the input have this {key} (page_url or human_markup differ): none is judged"
    if r["state"] == NOT_OK:
        return "page not evaluated: its status is not ok or it is not selected"
    if r["state"] == NO_TEXT:
        return "page has no text"
    if r["state"] == CONFLICT:
        return (
            "page not evaluated: its input rows do not name one page (a page_id of several pages, or different texts)"
        )
    if r["n_same"] > 1:
        return f"{r['n_same']} rows give source {r['source']!r} for this page: none is judged"
    if not (r["markup"] or "").strip():
        return "markup is empty"
    return None


def read_stored(lookup: str, page_keys: list[str]) -> dict[str, dict[str, str]]:
    """page key -> {source: markup} of the ``page_keys`` in the lookup file ``lookup`` (a local
    path or a URL): only the row groups whose page-key range holds one of them are read."""
    import pyarrow.parquet as pq

    if not page_keys:
        return {}
    with Folder(lookup).open("", "rb") as fh:
        t = pq.read_table(fh, filters=[("page_key", "in", sorted(set(page_keys)))])
    out: dict[str, dict[str, str]] = {}
    for k, s, m in zip(t["page_key"].to_pylist(), t["source"].to_pylist(), t["markup"].to_pylist()):
        out.setdefault(k, {})[s] = m
    return out


def tally(
    found: StoredMarkups, *, evaluated: set[str], failed: set[str], already: set[str]
) -> dict[str, dict[str, int]]:
    """Per source, where every row read went: ``judged`` (its page evaluated by this run),
    ``failed`` (its page failed in this run), ``already_scored`` (its page done by an earlier
    run of these settings), ``over_limit`` (its page left out by ``--limit``), ``rejected``;
    ``read`` is their sum."""
    import pyarrow.parquet as pq

    out = {
        s: {"read": n, "judged": 0, "failed": 0, "already_scored": 0, "over_limit": 0, "rejected": 0}
        for s, n in sorted(found.read.items())
    }
    for s, n in found.rejected.items():
        out[s]["rejected"] = n
    pf = pq.ParquetFile(found.lookup)
    for b in pf.iter_batches(columns=["page_key", "source"], batch_size=BATCH_ROWS):
        for k, s in zip(b.column("page_key").to_pylist(), b.column("source").to_pylist()):
            where = (
                "failed"
                if k in failed
                else "judged"
                if k in evaluated
                else "already_scored"
                if k in already
                else "over_limit"
            )
            out[s][where] += 1
    return out
