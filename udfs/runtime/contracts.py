"""Input contracts: what a job needs of each table it reads, checked before any work.

A :class:`TableContract` is one table's declaration: its required columns with their Arrow types,
its optional ones (checked when present), its key, and, where a reader takes one of several
columns, the alternatives (``one_of``). Each table's contract lives next to its writer, the one
place its schema is defined (``udfs.corpus.csets.CSETS``, ``udfs.corpus.sampling.SAMPLES``,
``udfs.corpus.warc.WARC_INDEX``, ``udfs.corpus.fetch.PAGES``, ``udfs.evaluation.evaluator.SCORES``
...), derived from the writer's schema where it has one; a reader narrows it to the columns it
reads (:meth:`TableContract.reading`), so the types a reader expects are the writer's by
construction.

A job declares ``input_contracts`` (``udfs.runtime.job.Job``): a flag's dest (``input``,
``warc_index``) -> its contract, or a function of the parsed arguments giving it (None: that
flag's value is not a table, e.g. a subcommand that reads text). ``Job.preflight`` calls
:func:`check_inputs`, which lists each flag's files as the jobs do
(``udfs.runtime.inputs.resolve_inputs``; a remote folder through its ``Folder``) and checks every
file, before any Spark session, model request or output write:

- a Parquet file by its footer (``pyarrow.parquet``, through ``Folder`` for remote paths; no data
  read);
- a CSV file by its header line. A CSV column is text: it is accepted where the contract declares
  a scalar (string, integer, float, boolean, timestamp), since the jobs cast it to the declared
  type as Spark does today (``udfs.corpus.fetch.with_sample_columns``, ``best_capture``; a value
  that does not parse is then the cast's error or null, which a header cannot show), and refused
  where it declares a list, struct or map, which no CSV column holds;
- any other file (JSON Lines) is left to its reader, which checks it line by line.

A missing required column, a missing ``one_of`` alternative, or a type that cannot be read as the
declared one is a :class:`ContractError` (a ``UserError``: one line, exit status 2) naming the
file, the column, the type expected and the type found. Read as declared (:func:`readable`): the
same type; a narrower integer (int8/16/32 and uint8/16/32 where int64 is declared, and so on down);
float16/32 as float64; string, large_string and string_view as one another, binary and
large_binary likewise; a dictionary-encoded column as its values; a null-typed (all-null) column
as anything; a timestamp of any unit or zone as a timestamp; lists, structs (same field names, in
order) and maps by their parts. Everything else is refused. A required column that is null in
every row of a flag's files (the footers' null counts, or a null type) is one warning line naming
the flag, the column and the rows.
"""

from __future__ import annotations

import csv
import glob
import io
import logging
import os
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

import pyarrow as pa

from udfs.runtime.errors import UserError
from udfs.runtime.inputs import InputError, is_remote, resolve_inputs

log = logging.getLogger("llm4schema")

# A column's declared type: one Arrow type, several accepted ones (the first is the canonical
# one), or None for any type (the column must only be there).
ColumnType = pa.DataType | tuple[pa.DataType, ...] | None
# The files a contract is checked on; other files of a folder are the readers' business.
TABLE_SUFFIXES = (".parquet", ".csv")


class ContractError(UserError):
    """An input table that does not meet its contract: names the file, the column, the type
    expected and the type found, and what to do."""


@dataclass(frozen=True)
class TableContract:
    """One table's contract (module docstring). ``writer`` says what writes such a table (for the
    error's "what to do"); ``one_of``: alternatives of columns (each a tuple), at least one of
    which must be there whole (a table keyed by ``page_id`` or by ``page_url``)."""

    name: str
    required: Mapping[str, ColumnType]
    optional: Mapping[str, ColumnType] = field(default_factory=dict)
    key: tuple[str, ...] = ()
    one_of: tuple[tuple[str, ...], ...] = ()
    writer: str = ""

    @classmethod
    def of_schema(
        cls,
        name: str,
        schema,
        *,
        required: tuple[str, ...],
        key: tuple[str, ...] = (),
        writer: str = "",
        one_of: tuple[tuple[str, ...], ...] = (),
        extra: Mapping[str, ColumnType] | None = None,
    ) -> "TableContract":
        """The contract of a table a writer writes with ``schema`` (a ``pyarrow.Schema`` or a
        Spark ``StructType``, converted as ``pyspark.sql.pandas.types.to_arrow_schema`` does):
        every field declared with its type, ``required`` ones required, the others (and
        ``extra``, columns some tables of this kind add) optional."""
        arrow = schema if isinstance(schema, pa.Schema) else _from_spark(schema)
        types = {f.name: f.type for f in arrow}
        unknown = [c for c in (*required, *key, *(c for alt in one_of for c in alt)) if c not in types]
        if unknown:
            raise ValueError(f"contract {name}: {unknown} are not columns of its schema")
        return cls(
            name=name,
            required={c: types[c] for c in required},
            optional={**{c: t for c, t in types.items() if c not in required}, **(extra or {})},
            key=key,
            one_of=one_of,
            writer=writer,
        )

    @property
    def columns(self) -> dict[str, ColumnType]:
        """Every declared column with its type, the required ones first."""
        return {**self.required, **self.optional}

    def reading(
        self, *columns: str, required: tuple[str, ...] | None = None, key: tuple[str, ...] | None = None
    ) -> "TableContract":
        """This contract narrowed to what one reader reads: ``columns`` (each declared here: a
        reader cannot expect a column or a type its writer does not declare), ``required`` of them
        required (default: the ones required here), the others optional."""
        declared = self.columns
        unknown = [c for c in (*columns, *(required or ())) if c not in declared]
        if unknown:
            raise ValueError(f"contract {self.name}: {unknown} are not declared columns of the table")
        req = [c for c in columns if c in self.required] if required is None else list(required)
        return replace(
            self,
            required={c: declared[c] for c in req},
            optional={c: declared[c] for c in dict.fromkeys(columns) if c not in req},
            key=self.key if key is None else key,
            one_of=tuple(alt for alt in self.one_of if all(c in columns for c in alt)),
        )

    def requiring(self, *columns: str) -> "TableContract":
        """This contract with ``columns`` required too: a declared column keeps its type, one not
        declared (a reader's own choice, such as a sampled feature) may have any type."""
        declared = self.columns
        req = {**self.required, **{c: declared.get(c) for c in columns}}
        return replace(self, required=req, optional={c: t for c, t in self.optional.items() if c not in req})

    def accepting(self, **types: pa.DataType) -> "TableContract":
        """This contract with one more type read for each named column (declared here): for a
        reader that casts the column to its declared type itself, where tables in use hold it so
        (an int64 rank from pandas or ``pa.Table.from_pylist`` where the writer writes int32)."""

        def more(col: str, t: ColumnType) -> ColumnType:
            return t if col not in types else (*_alternatives(t), types[col])

        unknown = [c for c in types if c not in self.columns]
        if unknown:
            raise ValueError(f"contract {self.name}: {unknown} are not declared columns of the table")
        return replace(
            self,
            required={c: more(c, t) for c, t in self.required.items()},
            optional={c: more(c, t) for c, t in self.optional.items()},
        )

    def summary(self) -> str:
        """The required columns with their types, as the error line shows them."""
        need = [f"{c} {type_name(t)}" if t is not None else c for c, t in self.required.items()]
        need += [" or ".join("+".join(alt) for alt in self.one_of)] if self.one_of else []
        return ", ".join(need)

    # ---- checks ------------------------------------------------------------------------------
    def problems(self, found: Mapping[str, pa.DataType | None]) -> list[str]:
        """What is wrong with a file whose columns are ``found`` (name -> Arrow type; None: a CSV
        column, text of no declared type): one phrase per problem, [] when it meets the contract."""
        out = []
        for col, want in self.columns.items():
            if col not in found:
                if col in self.required:
                    out.append(f"no column {col}" + (f" ({type_name(want)})" if want is not None else ""))
                continue
            got = found[col]
            if want is None:
                continue
            if got is None:  # a CSV column: text, cast by the reader
                if any(_nested(t) for t in _alternatives(want)):
                    out.append(f"column {col} is a CSV column (text), expected {type_name(want)}: a CSV cannot hold it")
            elif not any(readable(got, t) for t in _alternatives(want)):
                out.append(f"column {col} is {type_name(got)}, expected {type_name(want)}")
        if self.one_of and not any(all(c in found for c in alt) for alt in self.one_of):
            out.append("no column " + " or ".join("+".join(alt) for alt in self.one_of))
        return out


def _alternatives(t: ColumnType) -> tuple[pa.DataType, ...]:
    return t if isinstance(t, tuple) else (t,)


def _nested(t: pa.DataType) -> bool:
    return pa.types.is_nested(t)


def _from_spark(schema) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


_INTS = {
    pa.int64(): (pa.int8(), pa.int16(), pa.int32(), pa.uint8(), pa.uint16(), pa.uint32()),
    pa.int32(): (pa.int8(), pa.int16(), pa.uint8(), pa.uint16()),
    pa.int16(): (pa.int8(), pa.uint8()),
}
_SAME = [
    {pa.string(), pa.large_string(), pa.string_view()},
    {pa.binary(), pa.large_binary(), pa.binary_view()},
    {pa.float64(), pa.float32(), pa.float16()},
]


def readable(found: pa.DataType, want: pa.DataType) -> bool:
    """Whether a column of type ``found`` is read as ``want`` without loss (module docstring)."""
    t = pa.types
    if found == want or t.is_null(found):
        return True
    if t.is_dictionary(found):
        return readable(found.value_type, want)
    if found in _INTS.get(want, ()):
        return True
    if any(want in group and found in group for group in _SAME[:2]):
        return True
    if want == pa.float64() and found in _SAME[2]:
        return True
    if t.is_timestamp(want) and t.is_timestamp(found):
        return True
    lists = (t.is_list, t.is_large_list, t.is_list_view, t.is_large_list_view, t.is_fixed_size_list)
    if any(f(want) for f in lists) and any(f(found) for f in lists):
        return readable(found.value_type, want.value_type)
    if t.is_struct(want) and t.is_struct(found):
        names = [want.field(i).name for i in range(want.num_fields)]
        if [found.field(i).name for i in range(found.num_fields)] != names:
            return False
        return all(readable(found.field(i).type, want.field(i).type) for i in range(want.num_fields))
    if t.is_map(want) and t.is_map(found):
        return readable(found.key_type, want.key_type) and readable(found.item_type, want.item_type)
    return False


def type_name(t: ColumnType) -> str:
    """A type as the error line says it: ``list<string>``, ``string or timestamp``."""
    if t is None:
        return "any type"
    if isinstance(t, tuple):
        return " or ".join(type_name(x) for x in t)
    if pa.types.is_timestamp(t):
        return "timestamp"
    if pa.types.is_dictionary(t):
        return f"dictionary<{type_name(t.value_type)}>"
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return f"list<{type_name(t.value_type)}>"
    if pa.types.is_map(t):
        return f"map<{type_name(t.key_type)}, {type_name(t.item_type)}>"
    if pa.types.is_struct(t):
        return (
            "struct<" + ", ".join(f"{t.field(i).name}: {type_name(t.field(i).type)}" for i in range(t.num_fields)) + ">"
        )
    return str(t)


# ---- reading what a file declares ----------------------------------------------------------------
@dataclass
class FileColumns:
    """What one file says of itself: its columns (name -> Arrow type; None for a CSV column), its
    rows (None for a CSV: not counted) and, per flat column, its nulls where the footer says."""

    columns: dict[str, pa.DataType | None]
    rows: int | None = None
    nulls: dict[str, int] = field(default_factory=dict)


def read_columns(path: str) -> FileColumns | None:
    """The columns of a Parquet file (its footer) or a CSV file (its header); None for another
    kind of file. A file that cannot be opened, a Parquet file whose footer cannot be read, or a
    CSV without a header line, is a ContractError naming it."""
    try:
        return _read_columns(path)
    except OSError as exc:
        raise ContractError(
            f"{path}: cannot be read ({exc.strerror or exc}); check the path and its permissions"
        ) from exc


def _read_columns(path: str) -> FileColumns | None:
    from udfs.runtime.io import Folder

    if path.endswith(".csv"):
        from udfs.runtime.lines import Lines

        with Folder(path).open("", "rb") as fh:
            # the header line by the one line reader's rules: a leading byte order mark is no column's
            first = next(iter(Lines(fh)), (1, b""))[1].decode("utf-8", errors="replace")
        names = next(csv.reader(io.StringIO(first)), [])
        if not [n for n in names if n.strip()]:
            raise ContractError(f"{path}: a CSV file without a header line; its first line must name the columns")
        return FileColumns({n: None for n in names})
    if path.endswith((".jsonl", ".ndjson", ".json")):
        return None  # read line by line by its reader, which names a bad line
    import pyarrow.parquet as pq

    with Folder(path).open("", "rb") as fh:
        try:
            pf = pq.ParquetFile(fh)
        except pa.ArrowException as exc:
            raise ContractError(f"{path}: not a Parquet file ({exc}); give the table's Parquet files") from exc
        return _footer(pf)


def _footer(pf) -> FileColumns:
    schema, meta = pf.schema_arrow, pf.metadata
    nulls: dict[str, int] = {}
    flat = {n for n in schema.names if not pa.types.is_nested(schema.field(n).type)}
    for g in range(meta.num_row_groups):
        rg = meta.row_group(g)
        for i in range(rg.num_columns):
            c = rg.column(i)
            name = c.path_in_schema
            if name not in flat:
                continue
            stats = c.statistics
            if stats is None or not stats.has_null_count:
                flat.discard(name)  # unknown: no warning on a guess
                nulls.pop(name, None)
                continue
            nulls[name] = nulls.get(name, 0) + stats.null_count
    for n in schema.names:
        if pa.types.is_null(schema.field(n).type):
            nulls[n] = meta.num_rows
    return FileColumns({f.name: f.type for f in schema}, meta.num_rows, nulls)


# ---- the check a job runs ------------------------------------------------------------------------
def table_files(specs: list[str], suffixes: tuple[str, ...] = TABLE_SUFFIXES) -> list[str]:
    """The files of a table flag's specs, listed as the jobs list them: local files, folders,
    globs and manifests by ``resolve_inputs``; a remote folder by its ``Folder`` (its files ending
    in ``suffixes``, bookkeeping names skipped), a remote file as it is."""
    from udfs.runtime.io import Folder

    out = []
    for f in resolve_inputs(specs, suffixes=suffixes):
        if not is_remote(f):
            out.append(f)
            continue
        folder = Folder(f)
        if folder.isdir():
            out.extend(folder.fs.unstrip_protocol(p) for p in folder.files(suffixes))
        else:
            out.append(f)
    return out


def check_table(contract: TableContract, files: list[str], flag: str = "--input", where: str = "") -> list[str]:
    """Check every file of one flag against ``contract``; raises ContractError on the first file
    that does not meet it (counting the others that do not either), else returns the warning
    lines: one naming the required columns null in every row of every file, if any."""
    bad: list[tuple[str, list[str]]] = []
    rows, nulls = 0, dict.fromkeys(contract.required, 0)
    for path in files:
        cols = read_columns(path)
        if cols is None:
            continue
        problems = contract.problems(cols.columns)
        if problems:
            bad.append((path, problems))
            continue
        if cols.rows is None:  # a CSV: its nulls are unknown
            nulls = {}
            continue
        rows += cols.rows
        nulls = {c: n + cols.nulls[c] for c, n in nulls.items() if c in cols.nulls}
    if bad:
        path, problems = bad[0]
        more = f" (and {len(bad) - 1} more file{'s' if len(bad) > 2 else ''} of {flag})" if len(bad) > 1 else ""
        writer = f", as {contract.writer} writes it" if contract.writer else ""
        raise ContractError(
            f"{path}: {'; '.join(problems)}{more}; {flag} takes a {contract.name} table "
            f"({contract.summary()}): give one with these columns and types{writer}"
        )
    empty = [c for c, n in nulls.items() if rows and n == rows]
    if not empty:
        return []
    cols = f"column {empty[0]} is" if len(empty) == 1 else f"columns {', '.join(empty)} are"
    return [
        f"{flag} {where or 'table'}: required {cols} null in every row of the {contract.name} table ({rows} rows): "
        "nothing in it can be used"
    ]


def flag_values(args, dest: str) -> list[str]:
    """A table flag's value as a list of specs ([] when not given)."""
    value = getattr(args, dest, None)
    if not value:
        return []
    return [value] if isinstance(value, str) else [v for v in value if v]


def check_paths(args, dests: Iterable[str]) -> None:
    """Every local path a flag of ``dests`` names exists (a file, a folder, or a glob that matches):
    an InputError naming the flag and the path otherwise, before any work. URLs and manifests are
    the readers' to resolve."""
    for dest in dests:
        for spec in flag_values(args, dest):
            if is_remote(spec) or spec.startswith("@") or glob.glob(spec) or os.path.exists(spec):
                continue
            flag = "--" + dest.replace("_", "-")
            raise InputError(f"{flag} {spec!r}: no such file or folder; give a path that exists")


def check_inputs(args, contracts: Mapping[str, Any]) -> None:
    """``Job.preflight``'s input check: for each ``dest -> contract`` (or function of ``args``
    giving one, or None), the files of that flag checked (``check_table``), each warning logged as
    one line. A flag whose specs resolve to nothing is left to the job, which says so itself."""
    for dest, spec in contracts.items():
        contract = spec(args) if callable(spec) else spec
        specs = flag_values(args, dest)
        if contract is None or not specs:
            continue
        try:
            files = table_files(specs)
        except InputError:
            continue  # the job's own reading names what is missing, as it always has
        for line in check_table(contract, files, "--" + dest.replace("_", "-"), " ".join(specs)):
            log.warning("%s", line)
