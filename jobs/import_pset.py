"""The LLM4Schema.org paper's pages and markups as the pipeline's tables: ``python jobs/import_pset.py --input BUNDLE_OR_CHECKOUT --output OUT``.

Reads the paper's ``data/WDC/Pset`` folder (``udfs.corpus.pset``: a checkout of GitHub
GDD-Nantes/LLM4SchemaOrg, or the history bundle with its ``commits.tsv``) at ``--commit`` (an
original commit; default the last) and writes

* ``pages/``: one row per (feature, stratum, page) of the paper's folders, in the pages table's
  contract (``udfs.corpus.fetch.PAGES_SCHEMA``, so ``jobs/evaluate.py`` reads it as it reads
  ``jobs/pages.py``'s), plus the paper's own columns (``PSET_PAGES_SCHEMA``). ``human_markup`` is
  the paper's human markup file (``baseline/<id>_<types>.jsonld``) as it stands; ``text`` and
  ``judge_text`` are the paper's extracted ``<id>.txt`` (``--text paper``) or the project's
  extraction of the page's HTML under ``[pages]``'s extractors and limits (``--text project``,
  ``udfs.corpus.html.process_html``, as jobs/pages.py extracts).
* ``stored_markups/``: one row per page and source of the markups the paper scored (results.csv;
  at a commit without results.csv, every ``<id>_<types>.jsonld`` of the source folders):
  ``page_id``, ``source`` (human, GPT-3.5, GPT-4), ``markup`` (the file's JSON-LD text), with the
  paper's triple counts. Where the paper scored a page once per order of its types, the file in
  the order of the page's human markup is kept and the others are rejects saying so
  (``one_per_page_and_source``).

The pages listed are every page with a file (``<id>.html``, ``<id>.txt``, ``<id>_class.json``) in a
``<feature>/stratum_<n>/corpus/`` folder and every page results.csv scores. A page whose HTML, text
or human markup is missing or unreadable, and a markup file that is, is a reject row naming the
path and the cause. Counters reconcile: pages listed = written + rejected; per source, markups
listed = written + rejected.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import sys
from dataclasses import dataclass

import pyarrow as pa

from udfs.corpus import html as P
from udfs.corpus.fetch import PAGES_SCHEMA
from udfs.corpus.pset import PSET, SOURCES, PsetError, PsetSource, open_pset, results_rows
from udfs.runtime.job import Job
from udfs.runtime.progress import Progress
from udfs.runtime.rejects import reject_row

# The paper's stratum numbers as the project's samples name them.
STRATA = ("low", "medium", "high")
# A plain markup file of a source folder: <id>_<types>.jsonld, the types joined by "_"; the
# paper's agents' outputs beside it carry one of DERIVED among the name's parts.
MARKUP_NAME = re.compile(r"^([0-9a-f]{32})_([A-Za-z0-9]+(?:_[A-Za-z0-9]+)*)\.jsonld$")
DERIVED = {"shacl", "factual", "semantic", "filtered", "expected", "pred"}
PAGE_FILE = re.compile(r"^([0-9a-f]{32})(\.html|\.txt|_class\.json)$")
PAPER_TEXT = "paper"  # text_extractor of a row whose text is the paper's <id>.txt


def _pages_arrow_schema() -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(PAGES_SCHEMA, timezone="UTC")


# pages/: the pages contract, then the paper's columns.
PSET_EXTRA = [
    pa.field("page_id", pa.string()),  # the paper's document id (md5 of the page URL where known)
    pa.field("stratum_index", pa.int32()),  # the paper's stratum number (0, 1, 2)
    pa.field("url_source", pa.string()),  # "sample": the paper's sample.parquet; "none": pset:<id>
    pa.field("scored", pa.bool_()),  # results.csv scores this page (false at a commit without it)
    pa.field("paper_text", pa.string()),  # the paper's <id>.txt, byte for byte (UTF-8)
    pa.field("html", pa.binary()),  # the paper's <id>.html, byte for byte
    pa.field("human_markup_path", pa.string()),  # the file human_markup holds
    pa.field("paper_commit", pa.string()),  # the original commit read ("" = a checkout's own files)
]
PSET_PAGES_SCHEMA = pa.schema([*_pages_arrow_schema(), *PSET_EXTRA])
STORED_MARKUPS_SCHEMA = pa.schema(
    [
        pa.field("page_id", pa.string()),
        pa.field("source", pa.string()),  # human | GPT-3.5 | GPT-4
        pa.field("markup", pa.string()),  # the file's JSON-LD text as the paper stored it
        pa.field("feature", pa.string()),
        pa.field("stratum", pa.string()),
        pa.field("stratum_index", pa.int32()),
        pa.field("classes", pa.string()),  # the file name's types, joined by "_"
        pa.field("path", pa.string()),
        pa.field("paper_triples_in", pa.int64()),  # results.csv metric "input" (null without it)
        pa.field("paper_triples_kept", pa.int64()),  # results.csv metric "shacl" (null without it)
    ]
)


@dataclass(frozen=True)
class Markup:
    """One markup file: its page, source, types and path, and the paper's counts when scored."""

    page_id: str
    source: str
    feature: str
    stratum: int
    classes: str
    path: str
    triples_in: int | None = None
    triples_kept: int | None = None


def corpus_dir(feature: str, stratum: int) -> str:
    return f"{PSET}/{feature}/stratum_{stratum}/corpus"


def list_markups(src: PsetSource, commit: str | None) -> tuple[list[Markup], bool]:
    """The markups of ``commit``: results.csv's (its ``input``/``shacl`` rows, ``results_rows``),
    or where the commit has no results.csv, every plain ``<id>_<types>.jsonld`` of the sources'
    folders. The flag says which."""
    if f"{PSET}/results.csv" in src.files(commit):
        rows = results_rows(src, commit)
        return [
            Markup(r.document_id, r.source, r.feature, r.stratum, r.classes, r.markup, r.triples_in, r.triples_kept)
            for r in rows
        ], True
    out = []
    folders = {f"/{folder}/": source for source, folder in SOURCES.items()}
    for path in src.files(commit):
        parts = path[len(PSET) + 1 :].split("/")
        if len(parts) < 4 or parts[2] != "corpus" or not parts[1].startswith("stratum_"):
            continue
        rest = "/" + "/".join(parts[3:-1]) + "/"
        m = MARKUP_NAME.match(parts[-1])
        if rest in folders and m and not DERIVED & set(m.group(2).split("_")):
            stratum = int(parts[1].removeprefix("stratum_"))
            out.append(Markup(m.group(1), folders[rest], parts[0], stratum, m.group(2), path))
    return sorted(out, key=lambda k: (k.source, k.feature, k.stratum, k.page_id, k.classes)), False


def list_pages(src: PsetSource, commit: str | None, markups: list[Markup]) -> list[tuple[str, int, str]]:
    """(feature, stratum, page id) of every page with a file in a stratum's corpus folder or a
    markup listed, sorted."""
    pages = {(m.feature, m.stratum, m.page_id) for m in markups}
    for path in src.files(commit):
        parts = path[len(PSET) + 1 :].split("/")
        m = PAGE_FILE.match(parts[-1])
        if len(parts) == 4 and parts[2] == "corpus" and parts[1].startswith("stratum_") and m:
            pages.add((parts[0], int(parts[1].removeprefix("stratum_")), m.group(1)))
    return sorted(pages)


def select_subset(
    pages: list[tuple[str, int, str]], markups: list[Markup], per_stratum: int, text_chars: dict[tuple, int]
) -> tuple[list[tuple[str, int, str]], list[Markup]]:
    """The ``per_stratum`` pages of every (feature, stratum) whose paper text is shortest (ties by
    the sha256 of the page id), among the pages with exactly one markup of every source (a page
    with several markup files of one source, one per order of its types, is one page judged several
    times in the paper's sums: left out of a subset), and their markups. Shortest first bounds the
    judge's work on a CPU (its prompts carry the text); the subset leans to short pages, which the
    docs and the report name."""
    per_page: dict[tuple[str, int, str], dict[str, int]] = {}
    for m in markups:
        counts = per_page.setdefault((m.feature, m.stratum, m.page_id), {})
        counts[m.source] = counts.get(m.source, 0) + 1
    eligible = [k for k in pages if per_page.get(k) == dict.fromkeys(SOURCES, 1)]
    eligible.sort(key=lambda k: (k[0], k[1], text_chars[k], hashlib.sha256(k[2].encode("ascii")).hexdigest()))
    kept: list[tuple[str, int, str]] = []
    for k in eligible:
        if sum(j[:2] == k[:2] for j in kept) < per_stratum:
            kept.append(k)
    chosen = set(kept)
    return sorted(kept), [m for m in markups if (m.feature, m.stratum, m.page_id) in chosen]


def one_per_page_and_source(
    markups: list[Markup], human: dict[tuple[str, int, str], Markup]
) -> tuple[list[Markup], list[tuple[Markup, Markup]]]:
    """One markup per (page, source). The paper scored 13 of its pages several times, one markup
    file per order of the page's types for every source (``<id>_Product_Offer.jsonld`` beside
    ``<id>_Offer_Product.jsonld``), and its sums count each; a page here is one page, so of each
    source the file in the order of the page's human markup (the one the pages table holds) is
    kept, else the first listed. Returns the kept markups, in order, and (dropped, kept) pairs."""
    groups: dict[tuple, list[Markup]] = {}
    for m in markups:
        groups.setdefault((m.feature, m.stratum, m.page_id, m.source), []).append(m)
    keep: dict[tuple, Markup] = {}
    for key, ms in groups.items():
        h = human.get(key[:3])
        keep[key] = next((m for m in ms if h is not None and m.classes == h.classes), ms[0])
    chosen = [keep[(m.feature, m.stratum, m.page_id, m.source)] for m in markups]
    kept = [m for m, k in zip(markups, chosen) if k is m]
    return kept, [(m, k) for m, k in zip(markups, chosen) if k is not m]


def sample_urls(src: PsetSource, commit: str | None, feature: str) -> dict[int, dict]:
    """The paper's ``<feature>/sample.parquet`` (one row per stratum, in stratum order): per stratum
    its bounds and its URLs by md5 (the paper's page id) with their position; empty without it."""
    import pyarrow.parquet as pq

    path = f"{PSET}/{feature}/sample.parquet"
    if path not in src.files(commit):
        return {}
    out = {}
    for i, r in enumerate(pq.read_table(io.BytesIO(src.read(path, commit))).to_pylist()):
        urls = r["unit_url"].split(" ")
        out[i] = {
            "lower": float(r["min"]),
            "upper": float(r["max"]),
            "urls": {hashlib.md5(u.encode("utf-8")).hexdigest(): (u, k) for k, u in enumerate(urls)},
        }
    return out


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

    def add_arguments(self, p):
        p.add_argument(
            "--commit", help="an original commit of the paper's repository that touched its folder ('': the last)"
        )
        p.add_argument(
            "--text",
            choices=["paper", "project"],
            help="text and judge_text: the paper's <id>.txt, or the project's extraction of the HTML ([pages] settings)",
        )
        p.add_argument("--cache", help="where a bundle is cloned once ('': under the system temp dir)")
        p.add_argument(
            "--per-stratum",
            type=int,
            help="a subset: this many pages per feature and stratum, shortest paper text first, with one markup per source (0: every page)",
        )
        p.add_argument("--reject-raw-chars", type=int, help="reject rows' raw is cut to this many characters")

    def read(self, path: str, what: str) -> tuple[bytes | None, str | None]:
        """The bytes of ``path`` at the run's commit, or the cause it cannot be read."""
        try:
            return self.src.read(path, self.commit), None
        except PsetError as exc:
            return None, f"{what} missing: {exc}"
        except OSError as exc:
            return None, f"{what} unreadable: {type(exc).__name__}: {exc}"

    def run(self):
        a = self.args
        if len(a.input) != 1:
            self.fail("--input takes one bundle or checkout")
        try:
            self.src = open_pset(a.input[0], a.cache or None)
            self.commit = a.commit or None
            markups, scored = list_markups(self.src, self.commit)
        except PsetError as exc:
            self.fail(str(exc))
        self.record["inputs"] = {"source": a.input[0], "commit": a.commit or "the last", "results_csv": scored}
        self.clear_outputs()
        (self.output_root / "stored_markups").rm()
        cfg = P.PageConfig.of(self.config.pages)
        pages = list_pages(self.src, self.commit, markups)
        listed_pages, listed_markups = len(pages), markups
        if a.per_stratum:
            pages, markups = select_subset(pages, markups, a.per_stratum, self.text_chars(pages))
        samples = {f: sample_urls(self.src, self.commit, f) for f in sorted({p[0] for p in pages})}
        human = {}
        for m in markups:
            if m.source == "human":
                human.setdefault((m.feature, m.stratum, m.page_id), m)
        selected = {source: sum(m.source == source for m in markups) for source in SOURCES}
        markups, other_orders = one_per_page_and_source(markups, human)
        scored_pages = {(m.feature, m.stratum, m.page_id) for m in markups} if scored else set()
        rows, rejects = [], []
        with self.record.time("pages"), Progress("import_pset", len(pages), "pages") as progress:
            for key in pages:
                row, why = self.page_row(key, human.get(key), samples, cfg, key in scored_pages, a.text)
                if row is None:
                    rejects.append(reject_row(why[0], None, why[1]))
                else:
                    row["slot"] = len(rows)
                    rows.append(row)
                progress.update(1)
        stored, markup_rejects = [], []
        with self.record.time("markups"):
            for m in markups:
                data, why = self.read(m.path, f"{m.source} markup")
                text = None
                if data is not None:
                    try:
                        text = data.decode("utf-8")
                        json.loads(text)
                    except ValueError as exc:
                        why, text = f"{m.source} markup unreadable: not UTF-8 JSON: {str(exc)[:200]}", None
                if text is None:
                    markup_rejects.append((m, reject_row(m.path, None, why, data, raw_chars=a.reject_raw_chars)))
                    continue
                stratum = STRATA[m.stratum] if m.stratum < len(STRATA) else str(m.stratum)
                stored.append(
                    {
                        "page_id": m.page_id,
                        "source": m.source,
                        "markup": text,
                        "feature": m.feature,
                        "stratum": stratum,
                        "stratum_index": m.stratum,
                        "classes": m.classes,
                        "path": m.path,
                        "paper_triples_in": m.triples_in,
                        "paper_triples_kept": m.triples_kept,
                    }
                )
        self.table_dir.write_parquet("part-0.parquet", pa.Table.from_pylist(rows, schema=PSET_PAGES_SCHEMA))
        (self.output_root / "stored_markups").write_parquet(
            "part-0.parquet", pa.Table.from_pylist(stored, schema=STORED_MARKUPS_SCHEMA)
        )
        for m, kept in other_orders:
            why = (
                f"{m.source} markup of a page the paper scored once per order of its types ({m.classes}); "
                f"one markup per page and source is judged: {kept.path}, the order of the page's human markup"
            )
            markup_rejects.append((m, reject_row(m.path, None, why)))
        all_rejects = rejects + [r for _, r in markup_rejects]
        if all_rejects:
            from udfs.evaluation.parts import write_rejects

            write_rejects(self.rejects_dir, "part-0.parquet", all_rejects)
        c = {
            "pages_listed": listed_pages,
            "pages_written": len(rows),
            "pages_rejected": len(rejects),
            "pages_not_selected": listed_pages - len(pages),
            "distinct_page_ids": len({r["page_id"] for r in rows}),
            "pages_ok": sum(r["status"] == P.OK for r in rows),
            "pages_url_from_sample": sum(r["url_source"] == "sample" for r in rows),
        }
        ok = c["pages_listed"] == c["pages_written"] + c["pages_rejected"] + c["pages_not_selected"]
        for source in SOURCES:
            listed = sum(m.source == source for m in listed_markups)
            not_selected = listed - selected[source]
            written = sum(s["source"] == source for s in stored)
            rejected = sum(m.source == source for m, _ in markup_rejects)
            c |= {f"markups_listed_{source}": listed, f"markups_written_{source}": written}
            c[f"markups_rejected_{source}"] = rejected
            c[f"markups_other_order_{source}"] = sum(m.source == source for m, _ in other_orders)
            c[f"markups_not_selected_{source}"] = not_selected
            ok = ok and listed == written + rejected + not_selected
        c["reconciles"] = ok
        for k, v in c.items():
            self.record.count(k, v)
        self.record["outputs"] = {
            "pages": str(self.table_dir),
            "stored_markups": str(self.output_root / "stored_markups"),
            "rejects": str(self.rejects_dir),
        }
        if not ok:
            raise RuntimeError(f"counters do not reconcile: {c}")

    def text_chars(self, pages: list[tuple[str, int, str]]) -> dict[tuple, int]:
        """The paper text's length of every page (an unreadable text: -1, and its page is rejected
        later if drawn)."""
        out = {}
        for feature, stratum, pid in pages:
            data, _ = self.read(f"{corpus_dir(feature, stratum)}/{pid}.txt", "paper text")
            out[(feature, stratum, pid)] = -1 if data is None else len(data)
        return out

    def page_row(self, key, human, samples, cfg, scored, text_from):
        """The pages/ row of ``key`` (feature, stratum, page id), or (None, (path, cause))."""
        feature, stratum, pid = key
        base = corpus_dir(feature, stratum)
        html, why = self.read(f"{base}/{pid}.html", "HTML")
        if html is None:
            return None, (f"{base}/{pid}.html", why)
        txt, why = self.read(f"{base}/{pid}.txt", "paper text")
        if txt is None:
            return None, (f"{base}/{pid}.txt", why)
        try:
            paper_text = txt.decode("utf-8")
        except UnicodeDecodeError as exc:
            return None, (f"{base}/{pid}.txt", f"paper text unreadable: not UTF-8: {exc}")
        if human is None:
            return None, (f"{base}/baseline/{pid}_*.jsonld", "human markup missing: no baseline markup of this page")
        data, why = self.read(human.path, "human markup")
        if data is None:
            return None, (human.path, why)
        try:
            human_markup = data.decode("utf-8")
            json.loads(human_markup)
        except ValueError as exc:
            return None, (human.path, f"human markup unreadable: not UTF-8 JSON: {str(exc)[:200]}")
        types = None
        class_path = f"{base}/{pid}_class.json"
        if class_path in self.src.files(self.commit):
            raw, why = self.read(class_path, "class file")
            try:
                types = sorted(json.loads(raw)["pset_classes"]) if raw is not None else None
            except (ValueError, KeyError, TypeError) as exc:
                why = f"class file unreadable: {type(exc).__name__}: {str(exc)[:200]}"
            if types is None:
                return None, (class_path, why)

        found = P.process_html(html, None, None, cfg)
        sample = samples.get(feature, {}).get(stratum, {})
        url, rank = sample.get("urls", {}).get(pid, (None, None))
        if text_from == "paper":
            text, judge_text, extractors = paper_text, paper_text, (PAPER_TEXT, PAPER_TEXT)
            status, reason = P.OK, None
            language = P.detect_language(paper_text)
        else:
            text, judge_text = found["text"], found["judge_text"]
            extractors = (cfg.text_extractor, cfg.judge_text_extractor)
            ok = text is not None
            status, reason = (P.OK, None) if ok else (P.PARSE_ERROR, found["reason"])
            language = found["language"]
        row = {
            "page_url": url or f"pset:{pid}",
            "feature": feature,
            "stratum": STRATA[stratum] if stratum < len(STRATA) else str(stratum),
            "lower": sample.get("lower"),
            "upper": sample.get("upper"),
            "seed": None,
            "sample_rank": rank,
            "cset_id": None,
            "types": types,
            "properties": None,
            "sampled_page_url": url or f"pset:{pid}",
            "sampled_cset_id": None,
            "candidate_rank": 0,
            "selected": True,
            "status": status,
            "reason": reason,
            "html_sha256": found["html_sha256"],
            "html_bytes": found["html_bytes"],
            "text": text,
            "text_chars": None if text is None else len(text),
            "text_extractor": extractors[0],
            "judge_text": judge_text,
            "judge_text_extractor": extractors[1],
            "language": language,
            "markups": found["markups"],
            "markup_errors": found["markup_errors"],
            "human_markup": human_markup,
            "root_types": sorted(set(human.classes.split("_"))),
            "matched_block": None,
            "page_id": pid,
            "stratum_index": stratum,
            "url_source": "sample" if url else "none",
            "scored": scored,
            "paper_text": paper_text,
            "html": html,
            "human_markup_path": human.path,
            "paper_commit": self.commit or "",
        }
        return row, None


def main(argv=None) -> int:
    return ImportPsetJob(argv).main()


if __name__ == "__main__":
    sys.exit(main())
