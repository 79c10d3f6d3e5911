"""The LLM4Schema.org paper's pages and markups as the pipeline's tables: ``python jobs/import_pset.py --input BUNDLE_OR_CHECKOUT --output OUT``.

Reads the paper's ``data/WDC/Pset`` folder (``udfs.corpus.pset``: a checkout of GitHub
GDD-Nantes/LLM4SchemaOrg, or the history bundle with its ``commits.tsv``) at ``--commit`` (an
original commit; default the last) and writes ``pages/`` (the pages contract plus the paper's
columns), ``stored_markups/`` (one row per page and source of the markups the paper scored) and
``rejects/import_pset/``, as ``udfs.corpus.pset_tables`` makes them. Counters reconcile: pages
listed = written + rejected + not selected; per source, markups listed = written + rejected + not
selected; a run whose counters do not is an error.
"""

from __future__ import annotations

import sys
from collections import Counter

from udfs.corpus.html import PageConfig
from udfs.corpus.pset import PsetError, open_pset
from udfs.corpus.pset_tables import LISTED_ADDS_UP, PsetImport
from udfs.runtime.closing import Outcome
from udfs.runtime.job import Job


class ImportPsetJob(Job):
    name = "import_pset"
    table = "pages"
    outputs = ("pages", "stored_markups")
    # the next step judges the imported markups (--markups alone generates nothing)
    next_step = "llm4schema-evaluate --input {output}/pages --markups {output}/stored_markups --output {output}"
    description = __doc__
    input_help = (
        "the paper's history bundle (pset-history.bundle, commits.tsv beside it) or a checkout of its repository"
    )

    def run(self):
        a = self.args
        if len(a.input) != 1:
            self.fail("--input takes one bundle or checkout")
        try:
            pset = PsetImport.open(open_pset(a.input[0], a.cache or None), a.commit or None)
        except PsetError as exc:
            self.fail(str(exc))
        self.record["inputs"] = {"source": a.input[0], "commit": a.commit or "the last", "results_csv": pset.scored}
        self.clear_outputs()
        stored_markups = self.output_root / "stored_markups"
        stored_markups.rm()
        tables = pset.tables(
            text=a.text,
            per_stratum=a.per_stratum,
            page_config=PageConfig.of(self.config.pages),
            reject_raw_chars=a.reject_raw_chars,
            timed=self.record.time,
        )
        self.table_dir.write_parquet("part-0.parquet", tables.pages)
        stored_markups.write_parquet("part-0.parquet", tables.stored_markups)
        if tables.rejects:
            from udfs.evaluation.parts import write_rejects

            write_rejects(self.rejects_dir, "part-0.parquet", tables.rejects)
        self.record["outputs"] = {
            "pages": str(self.table_dir),
            "stored_markups": str(stored_markups),
            "rejects": str(self.rejects_dir),
        }
        counters = dict(tables.counters)
        listed_adds_up = counters.pop(LISTED_ADDS_UP)
        return Outcome(
            counters=counters,
            checks={"pages and every source's markups: listed = written + rejected + not selected": listed_adds_up},
            units="pages",
            given=counters["pages_listed"] - counters["pages_not_selected"],
            done=counters["pages_ok"],
            failures=dict(Counter(str(r["reason"]) for r in tables.rejects)),
        )


def main(argv=None) -> int:
    return ImportPsetJob(argv).main()


if __name__ == "__main__":
    sys.exit(main())
