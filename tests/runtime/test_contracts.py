"""Input contracts (issue 64, section 2; ``udfs.runtime.contracts``): every job checks the tables
it reads against the contract their writer declares, at start, before any work.

The table per job: one row per bad input (the input, the exit status, the one message line, and
that nothing was written under the output root), run through the job's own command line
(``<Job>(argv).main()``, as tests/jobs/test_faults.py does) on small tables written with pyarrow.
The refusal comes from ``Job.preflight``, so no row starts a Spark session or asks a model service.
Then: which types are read as which (the widenings), the all-null warning, that readers' contracts
are their writers' declarations, and that tables the real jobs write meet them.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from udfs.runtime.contracts import ContractError, TableContract, check_inputs, check_table, readable, table_files

TMP = "TMP"  # tmp_path in the expected lines


def parquet(path: Path, columns: dict[str, pa.Array | list]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)
    return path


def csv(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


STRINGS = pa.list_(pa.string())


# ---- the inputs of each row: (tmp_path) -> the job's argv -----------------------------------------
def csets(tmp: Path, **overrides) -> list[str]:
    cols = {
        "cset_id": ["a", "b"],
        "types": pa.array([["Thing"], ["Place"]], STRINGS),
        "properties": pa.array([["name"], ["name", "url"]], STRINGS),
        "n_properties": [1, 2],
        "n_instances": [3, 4],
        "n_pages": [1, 1],
        "n_domains": [1, 1],
        "sample_urls": pa.array([["http://a"], ["http://b"]], STRINGS),
    }
    cols.update(overrides)
    parquet(tmp / "csets" / "part-0.parquet", {k: v for k, v in cols.items() if v is not None})
    return ["--input", str(tmp / "csets"), "--output", str(tmp / "out")]


def samples(tmp: Path, **overrides) -> list[str]:
    cols = {"feature": ["n_instances"], "stratum": ["low"], "sample_rank": [1], "page_url": ["http://a"]}
    cols.update(overrides)
    parquet(tmp / "samples" / "part-0.parquet", {k: v for k, v in cols.items() if v is not None})
    return ["--input", str(tmp / "samples"), "--warc-index", str(warc_index(tmp)), "--output", str(tmp / "out")]


def warc_index(tmp: Path, **overrides) -> Path:
    cols = {
        "url": ["http://a"],
        "warc_filename": ["a.warc.gz"],
        "warc_record_offset": [0],
        "warc_record_length": [100],
        "fetch_status": pa.array([200], pa.int16()),  # Common Crawl's type: widened
    }
    cols.update(overrides)
    return parquet(tmp / "index" / "part-0.parquet", {k: v for k, v in cols.items() if v is not None})


def bad_index(tmp: Path) -> list[str]:
    argv = samples(tmp)
    warc_index(tmp, warc_record_offset=["0"])
    return argv


def samples_csv(tmp: Path, header: str) -> list[str]:
    csv(tmp / "samples" / "rows.csv", f"{header}\nx,y\n")
    return ["--input", str(tmp / "samples"), "--warc-index", str(warc_index(tmp)), "--output", str(tmp / "out")]


def pages(tmp: Path, **overrides) -> list[str]:
    cols = {"page_url": ["http://a"], "status": ["ok"], "selected": [True], "text": ["A page."]}
    cols.update(overrides)
    parquet(tmp / "pages" / "part-0.parquet", {k: v for k, v in cols.items() if v is not None})
    return ["--input", str(tmp / "pages"), "--output", str(tmp / "out")]


def markups_without_key(tmp: Path) -> list[str]:
    parquet(tmp / "markups.parquet", {"source": ["gpt"], "markup": ["{}"]})
    return [*pages(tmp), "--markups", str(tmp / "markups.parquet")]


def scores(tmp: Path, **overrides) -> list[str]:
    cols = {
        "page_key": ["k"],
        "page_url": ["http://a"],
        "source": ["human"],
        "status": ["ok"],
        "n_triples": [3],
        "n_valid": [3],
        "n_factual": [2],
        "n_compliant": [2],
    }
    cols.update(overrides)
    parquet(tmp / "scores" / "part-0.parquet", {k: v for k, v in cols.items() if v is not None})
    return ["--input", str(tmp / "scores"), "--output", str(tmp / "out")]


def ground_truth(tmp: Path) -> list[str]:
    cols = {"text": ["t"], "property": ["name"], "value": ["v"], "entity_type": ["Thing"], "kind": ["positive"]}
    parquet(tmp / "gt" / "factuality.parquet", {**cols, "label": ["true"]})
    return ["run", "--input", str(tmp / "gt"), "--output", str(tmp / "out")]


def votes_csv(tmp: Path) -> list[str]:
    csv(tmp / "votes.csv", "human_vote,group\nhuman,m1\n")
    return ["kappa", "--input", str(tmp / "votes.csv"), "--output", str(tmp / "out")]


def job(name: str):
    import importlib

    module = importlib.import_module(f"jobs.{name}")
    return next(v for k, v in vars(module).items() if k.endswith("Job") and getattr(v, "name", None) == name)


TAKES = "{flag} takes a {table} table ({need}): give one with these columns and types, as {writer} writes it"
SAMPLE_TAKES = TAKES.format(
    flag="--input",
    table="csets",
    need="cset_id string, types list<string>, properties list<string>, sample_urls list<string>, "
    "n_instances int64 or double, n_properties int64 or double",
    writer="llm4schema-csets",
)
PAGES_TAKES = TAKES.format(flag="--input", table="samples", need="page_url string", writer="llm4schema-sample")
INDEX_TAKES = TAKES.format(
    flag="--warc-index",
    table="warc_index",
    need="url string, warc_filename string, warc_record_offset int64, warc_record_length int64",
    writer="llm4schema-warc-index (or Common Crawl's columnar index)",
)
EVALUATE_TAKES = TAKES.format(
    flag="--input",
    table="pages",
    need="page_url string, text string",
    writer="llm4schema-pages (or llm4schema-import-pset)",
)
REPORT_TAKES = TAKES.format(
    flag="--input",
    table="scores",
    need="page_key string, page_url string, source string, status string, n_triples int64, n_valid int64, "
    "n_factual int64, n_compliant int64",
    writer="llm4schema-evaluate",
)

# (job, the input, the one line on stderr after "<job>.py: error: ")
ROWS: list[tuple[str, Callable[[Path], list[str]], str]] = [
    # sample: a csets/ table without n_instances (before: 0 drawable sets, exit 0)
    (
        "sample",
        lambda t: csets(t, n_instances=None),
        f"TMP/csets/part-0.parquet: no column n_instances (int64 or double); {SAMPLE_TAKES}",
    ),
    # ... n_instances as string (before: a Spark trace of some 200 lines)
    (
        "sample",
        lambda t: csets(t, n_instances=["3", "4"]),
        f"TMP/csets/part-0.parquet: column n_instances is string, expected int64 or double; {SAMPLE_TAKES}",
    ),
    # ... not named by the issue: a list column given as a plain string
    (
        "sample",
        lambda t: csets(t, types=["Thing", "Place"]),
        f"TMP/csets/part-0.parquet: column types is string, expected list<string>; {SAMPLE_TAKES}",
    ),
    # pages: a samples/ table without page_url (before: 82 rejects, exit 0)
    (
        "pages",
        lambda t: samples(t, page_url=None),
        f"TMP/samples/part-0.parquet: no column page_url (string); {PAGES_TAKES}",
    ),
    # ... page_url as int64 (before: a Spark trace)
    (
        "pages",
        lambda t: samples(t, page_url=[7]),
        f"TMP/samples/part-0.parquet: column page_url is int64, expected string; {PAGES_TAKES}",
    ),
    # ... not named: a CSV whose header lacks page_url
    (
        "pages",
        lambda t: samples_csv(t, "url,feature"),
        f"TMP/samples/rows.csv: no column page_url (string); {PAGES_TAKES}",
    ),
    # ... not named: a CSV column where the contract declares a list
    (
        "pages",
        lambda t: samples_csv(t, "page_url,types"),
        "TMP/samples/rows.csv: column types is a CSV column (text), expected list<string>: a CSV cannot hold it; "
        + PAGES_TAKES,
    ),
    # ... not named: a WARC index whose offsets are text
    (
        "pages",
        bad_index,
        f"TMP/index/part-0.parquet: column warc_record_offset is string, expected int64; {INDEX_TAKES}",
    ),
    # evaluate: a pages/ table without text (before: every page "page has no text", exit 0)
    ("evaluate", lambda t: pages(t, text=None), f"TMP/pages/part-0.parquet: no column text (string); {EVALUATE_TAKES}"),
    # ... not named: a list where a string is declared
    (
        "evaluate",
        lambda t: pages(t, text=pa.array([["A", "page"]], STRINGS)),
        f"TMP/pages/part-0.parquet: column text is list<string>, expected string; {EVALUATE_TAKES}",
    ),
    # ... not named: stored markups without a key column
    (
        "evaluate",
        markups_without_key,
        "TMP/markups.parquet: no column page_id or page_url; --markups takes a stored markups table "
        "(source string, markup string, page_id or page_url): give one with these columns and types, "
        "as llm4schema-import-pset writes it",
    ),
    # report: a scores/ table without a count Table 7 needs
    (
        "report",
        lambda t: scores(t, n_factual=None),
        f"TMP/scores/part-0.parquet: no column n_factual (int64); {REPORT_TAKES}",
    ),
    # ... not named: a count as a float
    (
        "report",
        lambda t: scores(t, n_valid=[3.0]),
        f"TMP/scores/part-0.parquet: column n_valid is double, expected int64; {REPORT_TAKES}",
    ),
    # agents_bench: a ground truth whose labels are text
    (
        "agents_bench",
        ground_truth,
        "TMP/gt/factuality.parquet: column label is string, expected bool; --input takes a ground truth table "
        "(property string, value string, entity_type string, label bool, kind string): give one with these "
        "columns and types, as agents_bench.py build writes it",
    ),
    # ... not named: a votes CSV without MeMR's choice or scores
    (
        "agents_bench",
        votes_csv,
        "TMP/votes.csv: no column memr_choice or memr_h+memr_l; --input takes a votes table (human_vote string, "
        "memr_choice or memr_h+memr_l): give one with these columns and types, as a person (one row per page "
        "and group) writes it",
    ),
]


@pytest.mark.parametrize("name,make,line", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)])
def test_a_table_that_breaks_its_contract_is_one_line_and_exit_2_before_any_work(name, make, line, tmp_path, capsys):
    argv = make(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        job(name)(argv).main()
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert "Traceback" not in err
    errors = [x for x in err.splitlines() if x.startswith(f"{name}.py: error: ")]
    assert [e.replace(str(tmp_path), TMP) for e in errors] == [f"{name}.py: error: {line}"]
    out = tmp_path / "out"
    assert not out.exists() or not any(p.is_file() for p in out.rglob("*")), "nothing is written before the check"


def test_the_first_bad_file_is_named_and_the_others_counted(tmp_path):
    from udfs.corpus.fetch import SAMPLE_INPUT

    for i in range(3):
        parquet(tmp_path / f"part-{i}.parquet", {"page_url": [i]})
    parquet(tmp_path / "part-3.parquet", {"page_url": ["http://a"]})
    with pytest.raises(ContractError) as err:
        check_table(SAMPLE_INPUT, table_files([str(tmp_path)]))
    assert str(err.value).startswith(
        f"{tmp_path}/part-0.parquet: column page_url is int64, expected string (and 2 more files of --input); "
    )


def test_a_file_that_is_not_parquet_is_named(tmp_path):
    from udfs.corpus.fetch import SAMPLE_INPUT

    (tmp_path / "part-0.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(ContractError, match=rf"^{tmp_path}/part-0.parquet: not a Parquet file \("):
        check_table(SAMPLE_INPUT, table_files([str(tmp_path)]))


# ---- what is read as what ---------------------------------------------------------------------
WIDENINGS = [
    (pa.int8(), pa.int64()),
    (pa.int16(), pa.int64()),
    (pa.int32(), pa.int64()),
    (pa.uint32(), pa.int64()),
    (pa.int16(), pa.int32()),
    (pa.float32(), pa.float64()),
    (pa.large_string(), pa.string()),
    (pa.string(), pa.large_string()),
    (pa.large_binary(), pa.binary()),
    (pa.dictionary(pa.int32(), pa.string()), pa.string()),
    (pa.null(), pa.string()),
    (pa.null(), STRINGS),
    (pa.timestamp("ns"), pa.timestamp("us", tz="UTC")),
    (pa.large_list(pa.large_string()), STRINGS),
    (pa.list_(pa.field("element", pa.string())), STRINGS),
    (pa.struct([("a", pa.int32())]), pa.struct([("a", pa.int64())])),
    (pa.map_(pa.large_string(), pa.float32()), pa.map_(pa.string(), pa.float64())),
]
REFUSED = [
    (pa.int64(), pa.int32()),
    (pa.uint64(), pa.int64()),
    (pa.float64(), pa.int64()),
    (pa.int64(), pa.float64()),
    (pa.int64(), pa.string()),
    (pa.string(), pa.int64()),
    (pa.string(), pa.bool_()),
    (pa.binary(), pa.string()),
    (pa.string(), STRINGS),
    (STRINGS, pa.string()),
    (pa.list_(pa.int64()), STRINGS),
    (pa.struct([("b", pa.int32())]), pa.struct([("a", pa.int32())])),
    (pa.string(), pa.timestamp("us")),
]


@pytest.mark.parametrize("found,want", WIDENINGS, ids=[f"{f}->{w}" for f, w in WIDENINGS])
def test_safe_widenings_are_read(found, want):
    assert readable(found, want)


@pytest.mark.parametrize("found,want", REFUSED, ids=[f"{f}->{w}" for f, w in REFUSED])
def test_everything_else_is_refused(found, want):
    assert not readable(found, want)


def test_a_widened_table_passes_and_an_all_null_required_column_is_one_warning(tmp_path, caplog):
    from udfs.corpus.fetch import PAGES
    from udfs.evaluation.plan import pages_contract

    parquet(
        tmp_path / "pages" / "part-0.parquet",
        {
            "page_url": pa.array(["http://a", "http://b"], pa.large_string()),
            "text": pa.array([None, None], pa.string()),
            "sample_rank": pa.array([1, 2], pa.int16()),
        },
    )
    parquet(tmp_path / "pages" / "part-1.parquet", {"page_url": ["http://c"], "text": pa.nulls(1)})
    args = argparse.Namespace(input=[str(tmp_path / "pages")])
    with caplog.at_level(logging.WARNING, logger="llm4schema"):
        check_inputs(args, {"input": pages_contract(PAGES)})
    assert [r.getMessage().replace(str(tmp_path), TMP) for r in caplog.records] == [
        "--input TMP/pages: required column text is null in every row of the pages table (3 rows): "
        "nothing in it can be used"
    ]
    caplog.clear()
    parquet(tmp_path / "pages" / "part-2.parquet", {"page_url": ["http://d"], "text": ["A page."]})
    with caplog.at_level(logging.WARNING, logger="llm4schema"):
        check_inputs(args, {"input": pages_contract(PAGES)})
    assert caplog.records == []


def test_a_csv_scalar_column_is_read_as_its_declared_type(tmp_path):
    from udfs.corpus.warc import WARC_INDEX

    csv(tmp_path / "index.csv", "url,warc_filename,warc_record_offset,warc_record_length,fetch_status\n")
    assert check_table(WARC_INDEX, [str(tmp_path / "index.csv")]) == []


def test_a_flag_given_a_function_gets_its_contract_from_the_arguments(tmp_path):
    """sample's --features are required columns; a feature the csets writer does not declare may
    be of any type."""
    from udfs.corpus.sampling import csets_contract

    csets(tmp_path, n_pages=None)
    args = argparse.Namespace(input=[str(tmp_path / "csets")], features=["n_pages"])
    with pytest.raises(ContractError, match="no column n_pages \\(int64 or double\\)"):
        check_inputs(args, {"input": lambda a: csets_contract(a.features)})
    check_inputs(
        argparse.Namespace(input=args.input, features=["n_instances"]), {"input": lambda a: csets_contract(a.features)}
    )
    csets(tmp_path, n_pages=None, const=["x", "y"])
    check_inputs(
        argparse.Namespace(input=args.input, features=["const"]), {"input": lambda a: csets_contract(a.features)}
    )


# ---- readers' contracts are their writers' declarations ------------------------------------------
def test_evaluate_reads_pages_as_the_pages_writer_declares_them():
    """The evaluation's contract is the pages/ declaration narrowed: every column the plan and the
    workers read is declared by the writer, with the writer's type (an int64 sample_rank read too)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    from udfs.corpus.fetch import PAGES, PAGES_SCHEMA
    from udfs.corpus.pset_tables import PSET_PAGES_SCHEMA
    from udfs.evaluation.plan import PLAN_COLUMNS, READ_COLUMNS, pages_contract
    from udfs.evaluation.runner import PAGE_COLUMNS

    reader = pages_contract(PAGES)
    assert set(PLAN_COLUMNS) | set(PAGE_COLUMNS) == set(reader.columns) == set(READ_COLUMNS)
    written = {f.name: f.type for f in to_arrow_schema(PAGES_SCHEMA, timezone="UTC")}
    imported = {f.name: f.type for f in PSET_PAGES_SCHEMA}
    for col, want in reader.columns.items():
        first = want[0] if isinstance(want, tuple) else want
        assert first == imported[col], col
        assert col == "page_id" or first == written[col], col
    assert list(reader.required) == ["page_url", "text"]
    # the writers' own schemas meet it
    assert reader.problems(written) == [] and reader.problems(imported) == []


def test_readers_types_agree_with_their_writers_schemas():
    from pyspark.sql.pandas.types import to_arrow_schema

    from udfs.agents_bench.runner import COMPLIANCE_SCHEMA, FACTUALITY_SCHEMA, GROUND_TRUTH
    from udfs.corpus.csets import CSETS, CSETS_SCHEMA
    from udfs.corpus.fetch import SAMPLE_INPUT, SAMPLE_KEYS
    from udfs.corpus.pset_tables import STORED_MARKUPS_SCHEMA
    from udfs.corpus.sampling import SAMPLES, SAMPLES_SCHEMA
    from udfs.corpus.warc import WARC_INDEX
    from udfs.corpus.warc_index import INDEX_SCHEMA
    from udfs.evaluation.evaluator import SCORES, SCORES_SCHEMA
    from udfs.evaluation.stored import STORED_MARKUPS

    def arrow(schema) -> dict[str, pa.DataType]:
        schema = schema if isinstance(schema, pa.Schema) else to_arrow_schema(schema, timezone="UTC")
        return {f.name: f.type for f in schema}

    for contract, schema in (
        (CSETS, CSETS_SCHEMA),
        (SAMPLES, SAMPLES_SCHEMA),
        (SAMPLE_INPUT, SAMPLES_SCHEMA),
        (WARC_INDEX, INDEX_SCHEMA),
        (SCORES, SCORES_SCHEMA),
        (STORED_MARKUPS, STORED_MARKUPS_SCHEMA),
        (GROUND_TRUTH, FACTUALITY_SCHEMA),
        (GROUND_TRUTH, COMPLIANCE_SCHEMA),
    ):
        assert contract.problems(arrow(schema)) == [], contract.name
    # the sample columns the pages job casts its input to are the samples writer's types
    for col, t in arrow(SAMPLE_KEYS).items():
        declared = SAMPLE_INPUT.columns[col]
        assert (declared[0] if isinstance(declared, tuple) else declared) == t, col


def test_a_reader_cannot_expect_a_column_its_writer_does_not_declare():
    contract = TableContract("t", required={"a": pa.string()}, optional={"b": pa.int64()})
    with pytest.raises(ValueError, match="not declared columns"):
        contract.reading("a", "c")
    assert contract.reading("b").required == {} and contract.reading("a", "b", required=("b",)).required == {
        "b": pa.int64()
    }


# ---- the real jobs' tables meet the contracts their readers check ----------------------------------
@pytest.mark.slow
def test_tables_the_real_jobs_write_meet_their_readers_contracts(spark, tmp_path):
    """The demo's chain (Makefile ``demo``) on the bundled data: csets/ of data/demo/quads, its
    samples/, a warc_index/ of data/warc and data/demo, and the pages/ fetched with them, each
    checked against the contract of the job that reads it; then the pages job's own check passes."""
    from jobs.csets import CsetsJob
    from jobs.pages import PagesJob
    from jobs.sample import SampleJob
    from jobs.warc_index import WarcIndexJob
    from tests.conftest import DATA
    from udfs.corpus.fetch import PAGES, SAMPLE_INPUT
    from udfs.corpus.sampling import csets_contract
    from udfs.corpus.warc import WARC_INDEX
    from udfs.evaluation.plan import pages_contract

    out = str(tmp_path / "out")
    assert CsetsJob(["--input", str(DATA / "demo" / "quads"), "--output", out]).main() == 0
    assert SampleJob(["--input", f"{out}/csets", "--output", out, "--no-plots"]).main() == 0
    warcs = [str(DATA / "warc"), str(DATA / "demo")]
    assert WarcIndexJob(["--input", *warcs, "--warc-base", str(DATA), "--output", out]).main() == 0
    argv = ["--input", f"{out}/samples", "--warc-index", f"{out}/warc_index", "--warc-base", str(DATA)]
    assert PagesJob([*argv, "--output", out]).main() == 0
    for contract, table in (
        (csets_contract(["n_instances", "n_properties"]), "csets"),
        (SAMPLE_INPUT, "samples"),
        (WARC_INDEX, "warc_index"),
        (pages_contract(PAGES), "pages"),
        (PAGES, "pages"),
    ):
        files = table_files([f"{out}/{table}"])
        assert files and check_table(contract, files) == [], table
