"""Which pages an evaluation run takes, decided without holding the pages table.

``plan_pages`` reads the input's small columns file by file, batch by batch (page URL, status,
selected, sample rank, feature, stratum, the human markup only to key the page, the text only
for its length), and keeps one small row per usable input row: its page key, URL, order and
where it lies (file, row number in the file). DuckDB then orders those rows, keeps the first row
of each page key (a page sampled in several strata is one page), applies ``limit`` and drops the
pages already done. The text and the markup are read again by the workers, for the rows of
their own unit only (``udfs.evaluation.runner``): the driver never holds them.

Row numbers are the identity of a page's row: Ray Data's Parquet reader gives no row identity,
so with its blocks spread over workers two rows of one page (in one file or in two) could both
be evaluated; a unit names the exact rows to read instead.

Duplicate keys. The input's key is ``page_id`` where it has that column, else the page key
(``udfs.evaluation.evaluator.page_key(page_url, human_markup)``, the key of the outputs). A page's
rows are one page: the rows of a page sampled in several strata (same page key, same text) are
evaluated once, the others counted as ``duplicate_rows``. Rows that share a key but not a page
are never merged: a ``page_id`` whose rows name several page keys (another URL or human markup),
and a page key whose usable rows hold different texts (two captures or extractions of one page),
cannot say which row is meant, so none of their usable rows is evaluated. They are counted
(``ambiguous_page_id_rows``, ``conflicting_text_rows``), named in one warning line on the console
and given as reject rows (``Plan.rejects``); a stored markup naming such a page is a reject of its
own (``CONFLICT``, ``udfs.evaluation.stored``).

One page under several URLs. Pages (page keys) whose rows hold the same HTML (``html_sha256``),
the same human markup (the block the C-set route selected: one HTML can carry several entities,
drawn for different C-sets, and those are different pages to judge) and the same text are one
page: the first in the run's order is judged, each other is counted in ``pages_same_html`` and
given as a row that points to it (``Plan.same_html``: its URL and key, ``same_page_as`` the judged
page's key), so that no rate counts it twice. ``http://example.com/a``, ``http://Example.com/a``
and ``http://example.com/a/`` captured with one HTML are judged once. A row without an
``html_sha256`` (an input that is not a pages/ table) is never merged this way, and neither is a
run over stored markups (``only``): there each stored markup is judged as given.

The counters reconcile: ``input_rows`` = ``not_ok_or_not_selected`` + ``no_text`` +
``ambiguous_page_id_rows`` + ``conflicting_text_rows`` + ``duplicate_rows`` + ``pages_same_html``
+ ``over_limit`` + ``already_scored`` + the pages planned (which the run then splits into evaluated and failed); a
run restricted to some pages (``only``: the pages a table of stored markups names,
``udfs.evaluation.stored``) counts the usable rows of the other pages as ``no_stored_markup``.

``scan_pages`` is the pass over the input alone; ``plan_pages`` takes its result (or scans) and
selects. With ``index``, the scan also keeps one small row per input row (its join key, URL,
page key and state) for joining a table of stored markups to the pages.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

import pyarrow as pa

from udfs.evaluation.evaluator import page_key
from udfs.runtime.contracts import TableContract
from udfs.runtime.rejects import FIXED_RAW_CHARS, reject_row

log = logging.getLogger("llm4schema.evaluate.plan")

# What the order and the dedup read in the planning pass (each when the input has it).
PLAN_COLUMNS = (
    "page_url",
    "page_id",
    "status",
    "selected",
    "sample_rank",
    "feature",
    "stratum",
    "human_markup",
    "text",
    "html_sha256",
)
# What the evaluation reads of a page: the plan's columns and the workers'
# (udfs.evaluation.runner.PAGE_COLUMNS); a page needs its URL and its text.
READ_COLUMNS = (*PLAN_COLUMNS, "root_types", "judge_text", "generator", "truncated")
REQUIRED_COLUMNS = ("page_url", "text")
BATCH_ROWS = 8192


def pages_contract(pages: TableContract) -> TableContract:
    """jobs/evaluate.py's contract on its --input: the pages/ table's own declaration
    (``udfs.corpus.fetch.PAGES``, passed in: this package does not import the corpus one)
    narrowed to ``READ_COLUMNS``, ``REQUIRED_COLUMNS`` required; the key is the page key's
    columns (page_url, human_markup; ``page_id`` where the table has one). So what the evaluation
    expects of a column is what the pages writer writes, by construction (and an int64
    sample_rank, which the plan reads as int64 anyway)."""
    contract = pages.reading(*READ_COLUMNS, required=REQUIRED_COLUMNS, key=("page_url", "human_markup"))
    return contract.accepting(sample_rank=pa.int64())  # _usable reads it as int64 whatever its width


# The text and markup a scan batch holds at most (a batch shrinks to fit, down to one row): a
# Parquet row group of pages is often hundreds of MB of text, and reading it whole, or with the
# dataset scanner's readahead, made the driver's memory grow with the input.
BATCH_BYTES = 8 << 20
# Bytes of a column chunk the Parquet reader holds at once (a buffered stream, not the whole chunk).
READ_BUFFER_BYTES = 1 << 20
# A page's state in the scan's index: ``plan_pages`` evaluates the OK pages only. CONFLICT: usable
# rows left out because their key does not name one page (module docstring); the highest, so that
# a key's best state says so.
NOT_OK, NO_TEXT, OK, CONFLICT = 0, 1, 2, 3
AMBIGUOUS_PAGE_ID = (
    "page_id names {n} different pages of the input (page_url or human_markup differ): none is evaluated"
)
CONFLICTING_TEXT = "{n} rows of this page (same page_url and human_markup) hold different texts: none is evaluated"
NAMED = 5  # keys the warning line names (the counters and the rejects hold them all)
INDEX_SCHEMA = pa.schema(
    [("page_id", pa.string()), ("page_url", pa.string()), ("page_key", pa.string()), ("state", pa.int8())]
)
ROWS_SCHEMA = pa.schema(
    [
        ("page_key", pa.string()),
        ("page_url", pa.string()),
        ("file", pa.int32()),
        ("row", pa.int64()),
        ("sample_rank", pa.int64()),
        ("feature", pa.string()),
        ("stratum", pa.string()),
        ("text_len", pa.int64()),
        ("page_id", pa.string()),  # the input's page_id column, where it has one
        ("text_hash", pa.string()),  # of the text: rows of one page must agree on it
        ("html_sha256", pa.string()),  # the input's, where it has one: one HTML under several URLs
        ("markup_hash", pa.string()),  # of the human markup (none: the hash of "")
    ]
)
# What a page left out for holding the same HTML as a judged one names (Plan.same_html).
SAME_HTML = "same HTML, human markup and text as page {key} ({url}), judged in this run: not judged again"


@dataclass
class InputFile:
    """One Parquet file of the input: its URL (a local absolute path, or ``s3://...``) and the
    row count its footer states."""

    url: str
    rows: int


@dataclass
class Plan:
    """The pages to evaluate, in order: ``todo`` is an Arrow table (page_key, page_url, file,
    row), ``file`` indexing ``files``; ``no_text`` the (page_url, page_key) of usable rows with
    no text, for the rejects; ``rejects`` the usable rows left out because their key names no
    single page (``udfs.runtime.rejects`` rows: the file, the row, the reason, the keys as raw);
    ``same_html`` the pages left out because a judged page holds the same HTML, markup and text
    (one dict each: page_key, page_url, file, row, html_sha256, ``same_page_as`` the judged page's
    key, ``same_page_url`` its URL); ``counters`` as the module docstring says."""

    files: list[InputFile]
    todo: pa.Table
    no_text: list[tuple[str, str]] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=dict)
    rejects: list[dict[str, Any]] = field(default_factory=list)
    same_html: list[dict[str, Any]] = field(default_factory=list)

    def units(self, pages_per_unit: int, *, spread: bool = False) -> Iterator[dict[str, Any]]:
        """The todo pages in units of at most ``pages_per_unit``, each a plain dict
        ``{"unit": n, "pages": [[file, row, page_key], ...]}`` (what a worker is handed).
        Consecutive pages by default; ``spread``: the k units take every k-th page, so units that
        run side by side on a corpus ordered by kind (pages of one site together, say) get the
        same mix and finish together."""
        n = max(1, int(pages_per_unit))
        total = self.todo.num_rows
        cols = self.todo.select(["file", "row", "page_key"]).to_pydict()
        k = -(-total // n)
        for u in range(k):
            rows = range(u, total, k) if spread else range(u * n, min((u + 1) * n, total))
            yield {"unit": u, "pages": [[cols["file"][i], cols["row"][i], cols["page_key"][i]] for i in rows]}


def input_files(dataset) -> list[InputFile]:
    """The files of a pyarrow dataset (``udfs.runtime.io.parquet_dataset``; a union of local and
    remote parts too) as URLs a worker on another node can open, with their footers' row counts."""
    out: list[InputFile] = []
    for ds in _file_datasets(dataset):
        for frag in ds.get_fragments():
            out.append(InputFile(_url(ds.filesystem, frag.path), frag.count_rows()))
    return out


def _file_datasets(dataset) -> Iterable:
    import pyarrow.dataset as pads

    if isinstance(dataset, pads.UnionDataset):
        for child in dataset.children:
            yield from _file_datasets(child)
    else:
        yield dataset


def _url(filesystem, path: str) -> str:
    import pyarrow.fs as pafs

    if isinstance(filesystem, pafs.LocalFileSystem):
        return path
    if isinstance(filesystem, pafs.PyFileSystem) and hasattr(filesystem.handler, "fs"):
        return filesystem.handler.fs.unstrip_protocol(path)
    return f"{filesystem.type_name}://{path}"


@dataclass
class Scan:
    """The pass over the input: its files, one small row per usable input row whose key names one
    page (``rows``, ``ROWS_SCHEMA``), the usable rows without text (``no_text``, as in ``Plan``),
    the counters of the pass, the rows left out for their key (``rejects``, as in ``Plan``), and
    with ``index`` one row per input row (``INDEX_SCHEMA``: ``page_id`` the input's ``page_id``
    column as text where it has one, else the page key; the URL, the page key, the state
    ``NOT_OK``/``NO_TEXT``/``OK``/``CONFLICT``)."""

    files: list[InputFile]
    rows: pa.Table
    no_text: list[tuple[str, str]]
    counters: dict[str, int]
    index: pa.Table | None = None
    has_page_id: bool = False
    rejects: list[dict[str, Any]] = field(default_factory=list)


def scan_pages(dataset, *, batch_rows: int = BATCH_ROWS, index: bool = False) -> Scan:
    """Read the input's small columns file by file, batch by batch (module docstring)."""
    files = input_files(dataset)
    c = {"input_rows": 0, "not_ok_or_not_selected": 0, "no_text": 0}
    batches: list[pa.RecordBatch] = []
    indexed: list[pa.RecordBatch] | None = [] if index else None
    no_text: list[tuple[str, str]] = []
    pages_of: dict[str, set[str]] = {}  # page_id -> the page keys its rows name
    with_id = 0
    n_file = 0
    for ds in _file_datasets(dataset):
        for frag in ds.get_fragments():
            row0 = 0
            cols = [n for n in PLAN_COLUMNS if n in frag.physical_schema.names]
            with_id += "page_id" in cols
            # one file at a time, in batches: the driver holds one batch of text, never the table
            for b in _batches(frag, cols, batch_rows):
                kept = _usable(b, n_file, row0, c, no_text, indexed, pages_of)
                if kept is not None:
                    batches.append(kept)
                row0 += b.num_rows
            n_file += 1
    if index and 0 < with_id < n_file:
        from udfs.runtime.inputs import InputError

        # a page_id of some files beside page keys of the others would join markups by two rules
        raise InputError(f"{with_id} of the {n_file} input files have a page_id column: all or none must")
    rows = pa.Table.from_batches(batches, schema=ROWS_SCHEMA) if batches else ROWS_SCHEMA.empty_table()
    idx = None
    if indexed is not None:
        idx = pa.Table.from_batches(indexed, schema=INDEX_SCHEMA) if indexed else INDEX_SCHEMA.empty_table()
    rows, idx, rejects = _drop_conflicts(rows, idx, pages_of, files, c)
    return Scan(files, rows, no_text, c, idx, with_id > 0, rejects)


def _drop_conflicts(
    rows: pa.Table, index: pa.Table | None, pages_of: dict[str, set[str]], files: list[InputFile], c: dict[str, int]
) -> tuple[pa.Table, pa.Table | None, list[dict[str, Any]]]:
    """``rows`` without the rows whose key names no single page (module docstring), the index
    with those rows' state ``CONFLICT``, and their reject rows; counts them in ``c`` and names the
    keys in one warning line."""
    import pyarrow.compute as pc

    ambiguous = {i: len(keys) for i, keys in pages_of.items() if len(keys) > 1}
    by_id = pc.fill_null(pc.is_in(rows["page_id"], value_set=pa.array(sorted(ambiguous), pa.string())), False)
    rest = rows.filter(pc.invert(by_id))
    texts = rest.group_by("page_key").aggregate([("text_hash", "count_distinct")])
    conflicting = dict(
        (k, n) for k, n in zip(texts["page_key"].to_pylist(), texts["text_hash_count_distinct"].to_pylist()) if n > 1
    )
    by_text = pc.is_in(rows["page_key"], value_set=pa.array(sorted(conflicting), pa.string()))
    out = pc.and_(pc.invert(by_id), by_text)
    c["ambiguous_page_id_rows"] = pc.sum(by_id.cast(pa.int64())).as_py() or 0
    c["conflicting_text_rows"] = pc.sum(out.cast(pa.int64())).as_py() or 0
    left = rows.filter(pc.or_(by_id, out))
    rejects = []
    for r in left.select(["file", "row", "page_id", "page_url", "page_key"]).to_pylist():
        why = (
            AMBIGUOUS_PAGE_ID.format(n=ambiguous[r["page_id"]])
            if r["page_id"] in ambiguous
            else CONFLICTING_TEXT.format(n=conflicting[r["page_key"]])
        )
        raw = json.dumps({k: r[k] for k in ("page_id", "page_url", "page_key")}, ensure_ascii=False)
        rejects.append(reject_row(files[r["file"]].url, r["row"], why, raw, raw_chars=FIXED_RAW_CHARS))
    if rejects:
        named = [f"page_id {i}" for i in sorted(ambiguous)] + [f"page key {k}" for k in sorted(conflicting)]
        log.warning(
            "%d input rows not evaluated: their key names no single page (%s%s)",
            len(rejects),
            ", ".join(named[:NAMED]),
            f" and {len(named) - NAMED} more" if len(named) > NAMED else "",
        )
    if index is not None and rejects:
        # the index's page_id is the input's where it has one (an ambiguous id implies it has)
        hit = pc.fill_null(
            pc.or_(
                pc.is_in(index["page_key"], value_set=pa.array(sorted(conflicting), pa.string())),
                pc.is_in(index["page_id"], value_set=pa.array(sorted(ambiguous), pa.string())),
            ),
            False,
        )
        state = pc.if_else(pc.and_(hit, pc.equal(index["state"], OK)), pa.scalar(CONFLICT, pa.int8()), index["state"])
        index = index.set_column(index.schema.get_field_index("state"), "state", state)
    return rows.filter(pc.invert(pc.or_(by_id, out))), index, rejects


def _batches(frag, cols: list[str], batch_rows: int) -> Iterator[pa.RecordBatch]:
    """A Parquet fragment's ``cols`` in batches of at most ``batch_rows`` rows and about
    ``BATCH_BYTES`` of its widest row group's bytes per row, read through a buffered stream."""
    import pyarrow.parquet as pq

    with frag.filesystem.open_input_file(frag.path) as fh:
        pf = pq.ParquetFile(fh, buffer_size=READ_BUFFER_BYTES, pre_buffer=False)
        meta = pf.metadata
        wanted = set(cols)
        per_row = 0.0
        for g in range(meta.num_row_groups):
            rg = meta.row_group(g)
            size = sum(
                rg.column(i).total_uncompressed_size
                for i in range(rg.num_columns)
                if rg.column(i).path_in_schema in wanted
            )
            per_row = max(per_row, size / max(rg.num_rows, 1))
        rows = max(1, min(batch_rows, int(BATCH_BYTES / per_row) if per_row else batch_rows))
        yield from pf.iter_batches(batch_size=rows, columns=cols)


def plan_pages(
    dataset,
    *,
    limit: int,
    order: str,
    done: set[str] | None = None,
    batch_rows: int = BATCH_ROWS,
    scan: Scan | None = None,
    only: list[str] | None = None,
) -> Plan:
    """The plan of a run over ``dataset`` (module docstring), from ``scan`` when given (a
    ``scan_pages`` of the same dataset): ``order`` "sample" (sample rank, feature, stratum, URL)
    or "shortest" (text length first, then the sample order); ``only`` (page keys), when given,
    the pages the run may take at all; ``limit`` pages at most (0: all) before ``done`` (page
    keys already evaluated under this run's settings) are taken out."""
    import duckdb
    import pyarrow.compute as pc

    scan = scan or scan_pages(dataset, batch_rows=batch_rows)
    c = dict(scan.counters)
    rows = scan.rows
    if only is not None:
        wanted = pc.is_in(rows["page_key"], value_set=pa.array(only, pa.string()))
        kept = rows.filter(wanted)
        c["no_stored_markup"] = rows.num_rows - kept.num_rows
        rows = kept
    first = "text_len, " if order == "shortest" else ""
    by = f"{first}sample_rank, feature, stratum, page_url, file, row"
    con = duckdb.connect()
    con.register("rows", rows)
    pages = con.sql(f"""
        SELECT * FROM rows
        QUALIFY row_number() OVER (PARTITION BY page_key ORDER BY {by}) = 1
        ORDER BY {by}""").to_arrow_table()
    c["duplicate_rows"] = rows.num_rows - pages.num_rows
    pages, same_html = _same_html(con, pages, by) if only is None else (pages, [])
    c["pages_same_html"] = len(same_html)
    c["over_limit"] = max(0, pages.num_rows - limit) if limit else 0
    if limit:
        pages = pages.slice(0, limit)
    con.close()
    if done:
        todo = pages.filter(pc.invert(pc.is_in(pages["page_key"], value_set=pa.array(sorted(done), pa.string()))))
    else:
        todo = pages
    c["already_scored"] = pages.num_rows - todo.num_rows
    return Plan(
        files=scan.files,
        todo=todo.select(["page_key", "page_url", "file", "row"]),
        no_text=scan.no_text,
        counters=c,
        rejects=scan.rejects,
        same_html=same_html,
    )


def _same_html(con, pages: pa.Table, by: str) -> tuple[pa.Table, list[dict[str, Any]]]:
    """``pages`` (one row per page key, in the run's order ``by``) less the pages that hold the
    same HTML, human markup and text as an earlier one (module docstring), and those pages, each
    naming the judged one."""
    import pyarrow.compute as pc

    con.register("pages", pages)
    ranked = con.sql(f"""
        SELECT *, CASE WHEN html_sha256 IS NULL THEN NULL ELSE first_value(page_key) OVER w END AS same_page_as,
               CASE WHEN html_sha256 IS NULL THEN NULL ELSE first_value(page_url) OVER w END AS same_page_url
        FROM pages
        WINDOW w AS (PARTITION BY html_sha256, markup_hash, text_hash ORDER BY {by})
        ORDER BY {by}""").to_arrow_table()
    judged = pc.fill_null(pc.equal(ranked["same_page_as"], ranked["page_key"]), True)
    others = ranked.filter(pc.invert(judged))
    same = others.select(
        ["page_key", "page_url", "file", "row", "html_sha256", "same_page_as", "same_page_url"]
    ).to_pylist()
    return ranked.filter(judged).select(pages.schema.names), same


def _usable(
    b: pa.RecordBatch,
    file: int,
    row0: int,
    c: dict[str, int],
    no_text: list[tuple[str, str]],
    index: list[pa.RecordBatch] | None = None,
    pages_of: dict[str, set[str]] | None = None,
) -> pa.RecordBatch | None:
    import pyarrow.compute as pc

    n = b.num_rows
    c["input_rows"] += n
    d = {name: b.column(name) for name in b.schema.names}
    ok = pc.fill_null(pc.equal(d["status"], "ok"), False) if "status" in d else pa.array([True] * n)
    if "selected" in d:
        ok = pc.and_(ok, pc.invert(pc.fill_null(pc.equal(d["selected"], False), False)))
    urls = d["page_url"].to_pylist()
    markups = d["human_markup"].to_pylist() if "human_markup" in d else [None] * n
    text = d["text"] if "text" in d else pa.nulls(n, pa.string())
    has_text = pc.fill_null(pc.greater(pc.utf8_length(pc.utf8_trim_whitespace(text)), 0), False)
    text_len = pc.fill_null(pc.utf8_length(text), 0)
    ok_l, has_l = ok.to_pylist(), has_text.to_pylist()
    keys = [page_key(urls[i], markups[i]) for i in range(n)]
    page_ids = d["page_id"].cast(pa.string()).to_pylist() if "page_id" in d else [None] * n
    if pages_of is not None:
        for i in range(n):
            if page_ids[i] is not None:
                pages_of.setdefault(page_ids[i], set()).add(keys[i])
    keep, states = [], []
    for i in range(n):
        if not ok_l[i]:
            c["not_ok_or_not_selected"] += 1
            states.append(NOT_OK)
        elif not has_l[i]:
            c["no_text"] += 1
            no_text.append((urls[i], keys[i]))
            states.append(NO_TEXT)
        else:
            keep.append(i)
            states.append(OK)
    if index is not None:
        ids = d["page_id"].cast(pa.string()) if "page_id" in d else pa.array(keys, pa.string())
        index.append(
            pa.record_batch(
                [ids, pa.array(urls, pa.string()), pa.array(keys, pa.string()), pa.array(states, pa.int8())],
                schema=INDEX_SCHEMA,
            )
        )
    if not keep:
        return None
    idx = pa.array(keep, pa.int64())

    def col(name: str, typ) -> pa.Array:
        if name not in d:
            return pa.nulls(len(keep), typ)
        return pc.take(d[name], idx).cast(typ)

    return pa.record_batch(
        [
            pa.array([keys[i] for i in keep], pa.string()),
            pa.array([urls[i] for i in keep], pa.string()),
            pa.array([file] * len(keep), pa.int32()),
            pa.array([row0 + i for i in keep], pa.int64()),
            pc.fill_null(col("sample_rank", pa.int64()), 0),
            pc.fill_null(col("feature", pa.string()), ""),
            pc.fill_null(col("stratum", pa.string()), ""),
            pc.take(text_len, idx).cast(pa.int64()),
            pa.array([page_ids[i] for i in keep], pa.string()),
            pa.array([_digest(t) for t in pc.take(text, idx).to_pylist()], pa.string()),
            col("html_sha256", pa.string()),
            pa.array([_digest(markups[i] or "") for i in keep], pa.string()),
        ],
        schema=ROWS_SCHEMA,
    )


def _digest(text: str) -> str:
    """A short hash of a page's text: rows of one page compare by it (16 bytes, not the text)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
