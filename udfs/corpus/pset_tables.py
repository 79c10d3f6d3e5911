"""The LLM4Schema.org paper's pages and markups (its ``data/WDC/Pset`` folder, read by
``udfs.corpus.pset``) as the pipeline's tables: what ``jobs/import_pset.py`` writes.

    imp = PsetImport.open(open_pset(bundle), commit=None)      # lists the markups (PsetError)
    tables = imp.tables(text="paper", per_stratum=0, page_config=cfg, reject_raw_chars=1000)
    tables.pages, tables.stored_markups, tables.rejects, tables.counters

* ``pages``: one row per (feature, stratum, page) of the paper's folders, in the pages table's
  contract (``udfs.corpus.fetch.PAGES_SCHEMA``, so ``jobs/evaluate.py`` reads it as it reads
  ``jobs/pages.py``'s), plus the paper's own columns (``PSET_PAGES_SCHEMA``). ``human_markup`` is
  the paper's human markup file (``baseline/<id>_<types>.jsonld``) as it stands; ``text`` and
  ``judge_text`` are the paper's extracted ``<id>.txt`` (``text="paper"``) or the project's
  extraction of the page's HTML under ``[pages]``'s extractors and limits (``text="project"``,
  ``udfs.corpus.html.process_html``, as jobs/pages.py extracts).
* ``stored_markups``: one row per page and source of the markups the paper scored (results.csv;
  at a commit without results.csv, every ``<id>_<types>.jsonld`` of the source folders):
  ``page_id``, ``source`` (human, GPT-3.5, GPT-4), ``markup`` (the file's JSON-LD text), with the
  paper's triple counts. Where the paper scored a page once per order of its types, the file in
  the order of the page's human markup is kept and the others are rejects saying so
  (``one_per_page_and_source``).

The pages listed are every page with a file (``<id>.html``, ``<id>.txt``, ``<id>_class.json``) in a
``<feature>/stratum_<n>/corpus/`` folder and every page results.csv scores. A page whose HTML, text
or human markup is missing or unreadable, and a markup file that is, is a reject row naming the
path and the cause. Counters reconcile: pages listed = written + rejected + not selected; per
source, markups listed = written + rejected + not selected (``counters["reconciles"]``).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
from dataclasses import dataclass
from typing import Any, Callable, ContextManager

import pyarrow as pa

from udfs.corpus import html as P
from udfs.corpus.fetch import PAGES_SCHEMA
from udfs.corpus.pset import PSET, SOURCES, PsetError, PsetSource, results_rows
from udfs.corpus.text import detect_language
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

PageKey = tuple[str, int, str]  # (feature, stratum number, the paper's page id)

# the counter that says whether pages and markups add up (listed = written + rejected + not selected)
LISTED_ADDS_UP = "reconciles"


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


def stratum_name(stratum: int) -> str:
    """The project's name of the paper's stratum number (its number as text past the three)."""
    return STRATA[stratum] if stratum < len(STRATA) else str(stratum)


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


def list_pages(src: PsetSource, commit: str | None, markups: list[Markup]) -> list[PageKey]:
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
    pages: list[PageKey], markups: list[Markup], per_stratum: int, text_chars: dict[PageKey, int]
) -> tuple[list[PageKey], list[Markup]]:
    """The ``per_stratum`` pages of every (feature, stratum) whose paper text is shortest (ties by
    the sha256 of the page id), among the pages with exactly one markup of every source (a page
    with several markup files of one source, one per order of its types, is one page judged several
    times in the paper's sums: left out of a subset), and their markups. Shortest first bounds the
    judge's work on a CPU (its prompts carry the text); the subset leans to short pages, which the
    docs and the report name."""
    per_page: dict[PageKey, dict[str, int]] = {}
    for m in markups:
        counts = per_page.setdefault((m.feature, m.stratum, m.page_id), {})
        counts[m.source] = counts.get(m.source, 0) + 1
    eligible = [k for k in pages if per_page.get(k) == dict.fromkeys(SOURCES, 1)]
    eligible.sort(key=lambda k: (k[0], k[1], text_chars[k], hashlib.sha256(k[2].encode("ascii")).hexdigest()))
    kept: list[PageKey] = []
    for k in eligible:
        if sum(j[:2] == k[:2] for j in kept) < per_stratum:
            kept.append(k)
    chosen = set(kept)
    return sorted(kept), [m for m in markups if (m.feature, m.stratum, m.page_id) in chosen]


def one_per_page_and_source(
    markups: list[Markup], human: dict[PageKey, Markup]
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


def human_markups(markups: list[Markup]) -> dict[PageKey, Markup]:
    """The first human markup listed of every page."""
    human: dict[PageKey, Markup] = {}
    for m in markups:
        if m.source == "human":
            human.setdefault((m.feature, m.stratum, m.page_id), m)
    return human


@dataclass(frozen=True)
class PaperPage:
    """The paper's files of one page, read and checked: its HTML, its text, its human markup and
    the types of its class file (None without one)."""

    html: bytes
    paper_text: str
    human_markup: str
    types: list[str] | None


@dataclass
class PsetTables:
    """What an import makes: the two tables, the reject rows (pages first, then markups) and the
    counters of the run record (``reconciles`` among them)."""

    pages: pa.Table
    stored_markups: pa.Table
    rejects: list[dict[str, Any]]
    counters: dict[str, int | bool]


@dataclass
class PsetImport:
    """The paper's folder at one commit with its markups listed (``scored``: from results.csv)."""

    src: PsetSource
    commit: str | None
    markups: list[Markup]
    scored: bool

    @classmethod
    def open(cls, src: PsetSource, commit: str | None) -> PsetImport:
        """The import of ``src`` at ``commit`` (None: the last); a PsetError when the commit or its
        folder cannot be read."""
        markups, scored = list_markups(src, commit)
        return cls(src, commit, markups, scored)

    def read(self, path: str, what: str) -> tuple[bytes | None, str | None]:
        """The bytes of ``path`` at the import's commit, or the cause it cannot be read."""
        try:
            return self.src.read(path, self.commit), None
        except PsetError as exc:
            return None, f"{what} missing: {exc}"
        except OSError as exc:
            return None, f"{what} unreadable: {type(exc).__name__}: {exc}"

    def text_chars(self, pages: list[PageKey]) -> dict[PageKey, int]:
        """The paper text's length of every page (an unreadable text: -1, and its page is rejected
        later if drawn)."""
        out = {}
        for feature, stratum, pid in pages:
            data, _ = self.read(f"{corpus_dir(feature, stratum)}/{pid}.txt", "paper text")
            out[(feature, stratum, pid)] = -1 if data is None else len(data)
        return out

    def tables(
        self,
        *,
        text: str,
        per_stratum: int,
        page_config: P.PageConfig,
        reject_raw_chars: int,
        timed: Callable[[str], ContextManager] = lambda step: contextlib.nullcontext(),
    ) -> PsetTables:
        """The pages and stored markups of the import, their rejects and counters. ``text``:
        ``"paper"`` or ``"project"`` (see the module); ``per_stratum``: a subset of that many pages
        per feature and stratum (``select_subset``; 0: every page); ``timed(step)`` times the
        ``pages`` and ``markups`` steps (a run record's ``time``)."""
        pages = list_pages(self.src, self.commit, self.markups)
        listed_pages, markups = len(pages), self.markups
        if per_stratum:
            pages, markups = select_subset(pages, markups, per_stratum, self.text_chars(pages))
        samples = {f: sample_urls(self.src, self.commit, f) for f in sorted({p[0] for p in pages})}
        human = human_markups(markups)
        selected = {source: sum(m.source == source for m in markups) for source in SOURCES}
        markups, other_orders = one_per_page_and_source(markups, human)
        scored_pages = {(m.feature, m.stratum, m.page_id) for m in markups} if self.scored else set()
        rows, rejects = [], []
        with timed("pages"), Progress("import_pset", len(pages), "pages") as progress:
            for key in pages:
                row, why = self.page_row(key, human.get(key), samples, page_config, key in scored_pages, text)
                if row is None:
                    rejects.append(reject_row(why[0], None, why[1]))
                else:
                    row["slot"] = len(rows)
                    rows.append(row)
                progress.update(1)
        stored, markup_rejects = [], []
        with timed("markups"):
            for m in markups:
                row, reject = self.markup_row(m, reject_raw_chars)
                if reject is not None:
                    markup_rejects.append((m, reject))
                else:
                    stored.append(row)
        for m, kept in other_orders:
            why = (
                f"{m.source} markup of a page the paper scored once per order of its types ({m.classes}); "
                f"one markup per page and source is judged: {kept.path}, the order of the page's human markup"
            )
            markup_rejects.append((m, reject_row(m.path, None, why)))
        counters = self.counters(
            listed_pages, len(pages), rows, rejects, selected, stored, markup_rejects, other_orders
        )
        return PsetTables(
            pages=pa.Table.from_pylist(rows, schema=PSET_PAGES_SCHEMA),
            stored_markups=pa.Table.from_pylist(stored, schema=STORED_MARKUPS_SCHEMA),
            rejects=rejects + [r for _, r in markup_rejects],
            counters=counters,
        )

    def counters(
        self,
        listed_pages: int,
        selected_pages: int,
        rows: list[dict],
        rejects: list[dict],
        selected: dict[str, int],
        stored: list[dict],
        markup_rejects: list[tuple[Markup, dict]],
        other_orders: list[tuple[Markup, Markup]],
    ) -> dict[str, int | bool]:
        """The run record's counters of an import, and whether pages and every source's markups
        reconcile (listed = written + rejected + not selected)."""
        c: dict[str, int | bool] = {
            "pages_listed": listed_pages,
            "pages_written": len(rows),
            "pages_rejected": len(rejects),
            "pages_not_selected": listed_pages - selected_pages,
            "distinct_page_ids": len({r["page_id"] for r in rows}),
            "pages_ok": sum(r["status"] == P.OK for r in rows),
            "pages_url_from_sample": sum(r["url_source"] == "sample" for r in rows),
        }
        ok = c["pages_listed"] == c["pages_written"] + c["pages_rejected"] + c["pages_not_selected"]
        for source in SOURCES:
            listed = sum(m.source == source for m in self.markups)
            not_selected = listed - selected[source]
            written = sum(s["source"] == source for s in stored)
            rejected = sum(m.source == source for m, _ in markup_rejects)
            c |= {f"markups_listed_{source}": listed, f"markups_written_{source}": written}
            c[f"markups_rejected_{source}"] = rejected
            c[f"markups_other_order_{source}"] = sum(m.source == source for m, _ in other_orders)
            c[f"markups_not_selected_{source}"] = not_selected
            ok = ok and listed == written + rejected + not_selected
        c[LISTED_ADDS_UP] = ok
        return c

    def markup_row(self, m: Markup, reject_raw_chars: int) -> tuple[dict | None, dict | None]:
        """The stored_markups row of ``m``, or (None, its reject row) when its file is missing or
        not UTF-8 JSON."""
        data, why = self.read(m.path, f"{m.source} markup")
        text = None
        if data is not None:
            try:
                text = data.decode("utf-8")
                json.loads(text)
            except ValueError as exc:
                why, text = f"{m.source} markup unreadable: not UTF-8 JSON: {str(exc)[:200]}", None
        if text is None:
            return None, reject_row(m.path, None, why, data, raw_chars=reject_raw_chars)
        row = {
            "page_id": m.page_id,
            "source": m.source,
            "markup": text,
            "feature": m.feature,
            "stratum": stratum_name(m.stratum),
            "stratum_index": m.stratum,
            "classes": m.classes,
            "path": m.path,
            "paper_triples_in": m.triples_in,
            "paper_triples_kept": m.triples_kept,
        }
        return row, None

    def paper_page(self, key: PageKey, human: Markup | None) -> tuple[PaperPage | None, tuple[str, str] | None]:
        """The paper's files of ``key``, or (None, (path, cause)) for the first that is missing or
        unreadable: the HTML, the text (UTF-8), the human markup (UTF-8 JSON), the class file
        (JSON with ``pset_classes``) where there is one."""
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
        return PaperPage(html, paper_text, human_markup, types), None

    def page_row(
        self,
        key: PageKey,
        human: Markup | None,
        samples: dict[str, dict[int, dict]],
        cfg: P.PageConfig,
        scored: bool,
        text_from: str,
    ) -> tuple[dict | None, tuple[str, str] | None]:
        """The pages/ row of ``key`` (feature, stratum, page id), or (None, (path, cause))."""
        page, why = self.paper_page(key, human)
        if page is None:
            return None, why
        feature, stratum, pid = key
        found = P.process_html(page.html, None, None, cfg)
        sample = samples.get(feature, {}).get(stratum, {})
        url, rank = sample.get("urls", {}).get(pid, (None, None))
        if text_from == "paper":
            text, judge_text, extractors = page.paper_text, page.paper_text, (PAPER_TEXT, PAPER_TEXT)
            status, reason = P.OK, None
            language = detect_language(page.paper_text)
        else:
            text, judge_text = found["text"], found["judge_text"]
            extractors = (cfg.text_extractor, cfg.judge_text_extractor)
            ok = text is not None
            status, reason = (P.OK, None) if ok else (P.PARSE_ERROR, found["reason"])
            language = found["language"]
        row = {
            "page_url": url or f"pset:{pid}",
            "feature": feature,
            "stratum": stratum_name(stratum),
            "lower": sample.get("lower"),
            "upper": sample.get("upper"),
            "seed": None,
            "sample_rank": rank,
            "cset_id": None,
            "types": page.types,
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
            "human_markup": page.human_markup,
            "root_types": sorted(set(human.classes.split("_"))),
            "matched_block": None,
            # the paper's human markup is its own file, not one of the page's blocks: no generator here
            "generator": None,
            "generator_evidence": None,
            "markup_generators": found["markup_generators"],
            "markup_generator_evidence": found["markup_generator_evidence"],
            "page_id": pid,
            "stratum_index": stratum,
            "url_source": "sample" if url else "none",
            "scored": scored,
            "paper_text": page.paper_text,
            "html": page.html,
            "human_markup_path": human.path,
            "paper_commit": self.commit or "",
        }
        return row, None
