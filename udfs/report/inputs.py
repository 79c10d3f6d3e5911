"""What the report's sections read: the tables under the output root (:class:`Sources`: pages/,
samples/, triples/, the agents' benchmark) and, per settings hash of the scores, one :class:`Run`
(its scores as the DuckDB view ``scores`` beside ``strata``, its run record, the triples of its
hash). A section computes from one Run; with ``--compare-settings`` it is computed once per Run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from udfs.evaluation.evaluator import page_key
from udfs.report.runs import Settings
from udfs.runtime.io import Folder, parquet_dataset

# what a cell says instead of a number it cannot have
NO_STRATA = "no strata: pages/ not found (Table 8 needs feature and stratum per page)"
# the triples' columns the rejections and score plots read (a few per triple: the report runs on
# one machine over the pages of a study, thousands of triples, not over a corpus)
TRIPLE_COLUMNS = (
    "page_url",
    "source",
    "property",
    "value",
    "claim",
    "entity_type",
    "valid",
    "valid_reason",
    "validity_rule",
    "factual",
    "factual_score",
    "factual_error",
    "compliant",
    "compliant_score",
    "compliant_error",
    "compliant_note",
    "kept",
    "corrected",
    "corrected_value",
    "model",
)


@dataclass(frozen=True)
class Options:
    """The report's flags: the paper's folder (``--paper``, "" for none), the widest interval of a
    shown group (``--group-interval-width``) and whether settings hashes are compared."""

    paper_source: str
    group_width: float
    compare: bool


@dataclass
class Sources:
    """The tables under the output root ``root`` (``pages``: the --pages table when given)."""

    root: Folder
    pages: Folder | None = None

    def table(self, name: str) -> Folder:
        if name == "pages" and self.pages is not None:
            return self.pages
        return self.root / name

    def run_record(self, name: str) -> dict[str, Any] | None:
        f = self.table(name)
        if f.isfile("_run.json"):
            return json.loads(f.read_text("_run.json"))
        return None

    def dataset(self, name: str):
        f = self.table(name)
        if not f.isdir() or not f.files((".parquet",)):
            return None
        return parquet_dataset([str(f)])

    def strata(self) -> tuple[Any, str | None]:
        """page_key -> (feature, stratum) of every selected ok page of pages/ (a page in two strata:
        two rows), and why there are none (no pages/)."""
        import pandas as pd

        cols = ["page_key", "feature", "stratum"]
        ds = self.dataset("pages")
        if ds is None:
            return pd.DataFrame(columns=cols), NO_STRATA
        names = ds.schema.names
        want = [c for c in ("page_url", "human_markup", "feature", "stratum", "status", "selected") if c in names]
        rows = []
        for r in ds.to_table(columns=want).to_pylist():
            if r.get("status", "ok") == "ok" and r.get("selected", True) is not False:
                rows.append(
                    {
                        "page_key": page_key(r["page_url"], r.get("human_markup")),
                        "feature": r.get("feature") or "-",
                        "stratum": r.get("stratum") or "-",
                    }
                )
        return pd.DataFrame(rows, columns=cols).drop_duplicates(), None

    def triples(self) -> list[dict[str, Any]] | None:
        """The rows of triples/ (:data:`TRIPLE_COLUMNS` and their ``settings_hash``), None without it."""
        ds = self.dataset("triples")
        if ds is None:
            return None
        return ds.to_table(columns=[c for c in (*TRIPLE_COLUMNS, "settings_hash") if c in ds.schema.names]).to_pylist()


def check_one_row_per_key(con, ds) -> None:
    """The scores' key is (page_key, source): a key in several rows (the scores of two runs given
    together, a part copied twice) would count a page twice in every table, so it is an InputError
    naming the first keys and the files that hold them, not a report. ``con`` has ``ds`` (the scores
    dataset) registered as ``scores``."""
    from udfs.runtime.inputs import InputError

    dup = con.execute(
        "SELECT page_key, source, count(*) AS n FROM scores GROUP BY page_key, source HAVING n > 1 "
        "ORDER BY page_key, source"
    ).fetchall()
    if not dup:
        return
    named = {(k, s): [] for k, s, _ in dup[:3]}
    for frag in ds.get_fragments():
        t = frag.to_table(columns=["page_key", "source"])
        for key in set(zip(t["page_key"].to_pylist(), t["source"].to_pylist())) & set(named):
            named[key].append(frag.path)
    first = "; ".join(f"page_key {k}, source {s}: {n} rows in {', '.join(named[(k, s)])}" for k, s, n in dup[:3])
    raise InputError(
        f"{len(dup)} (page_key, source) keys of the scores are in more than one row ({first}"
        f"{f' and {len(dup) - 3} more' if len(dup) > 3 else ''}): give the scores of one run"
    )


class Run:
    """The scores of one settings hash, as every section reads them: ``con`` (DuckDB: the view
    ``scores`` of these rows only, and ``strata``), ``ds`` (their dataset), ``record`` (their run
    record), ``triples`` (the rows of triples/ of this hash; of a table older than the hash column,
    all of them when the report has one settings hash) and the root's ``src`` and ``opts``."""

    def __init__(self, settings: Settings, src: Sources, opts: Options, strata, strata_note, triples, only: bool):
        import duckdb

        self.settings, self.src, self.opts = settings, src, opts
        self.label = settings.label if opts.compare else ""
        self.record = settings.record
        self.ds = parquet_dataset(settings.files)
        self.con = duckdb.connect()
        self.con.register("scores", self.ds)
        check_one_row_per_key(self.con, self.ds)
        self.strata, self.strata_note = strata, strata_note
        self.con.register("strata", strata)
        cols = ["page_key", "source", "status", *(["truncated"] if "truncated" in self.ds.schema.names else [])]
        self.score_rows = self.ds.to_table(columns=cols).to_pydict()
        self.triples_note = None if triples is not None else "triples/ not found under the output root"
        self.triples = [
            {k: v for k, v in r.items() if k != "settings_hash"}
            for r in triples or ()
            if r.get("settings_hash") == settings.hash or (only and r.get("settings_hash") is None)
        ]
        if triples and not self.triples:
            self.triples_note = f"triples/ holds no row of settings hash {settings.label}"

    @cached_property
    def counting(self) -> str:
        from udfs.report.counting import triple_counting

        return triple_counting(self.con)

    @cached_property
    def table7(self):
        """Table 7 of these scores as a DataFrame (``udfs.report.counting.frame``)."""
        from udfs.report.counting import frame

        return frame(self.con, self.counting)

    def counter(self, name: str) -> int:
        """A counter of the evaluation, summed over the run folders of these settings."""
        return sum(int((r.record.get("counters") or {}).get(name) or 0) for r in self.settings.folders)
