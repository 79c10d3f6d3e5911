"""The paper's pages: a run over the LLM4Schema.org paper's own documents (``jobs/import_pset.py``
then ``jobs/evaluate.py --markups``) set beside what the paper's agents wrote for the same
documents, read from the paper's folder (``udfs.corpus.pset``).

* ``paper_documents``: ``results.csv`` as one row per scored markup (source, feature, stratum,
  document, types): the triples the paper counted in and after each of its agents, and its MeMR.
* ``stored_verdicts``: the paper's per-claim verdicts of one markup (``*_factual_{expected,pred}.json``,
  ``*_semantic_*``). A claim is the paper's key ``property[TOK_Q_DELIM]value[TOK_Q_DELIM]type``; a
  text cut into chunks gives a claim one answer per chunk, and the paper keeps a claim when any
  chunk answered ``TOKPOS`` (its ``aggregation``, written when there are several chunks).
* ``verdict_agreement``: the run's verdicts (``triples/``) against the paper's on the claims both
  judged: confusion matrix, Cohen's kappa, each disagreement classified by cause.
* ``memr_documents``: MeMR per document three ways: the paper's stored value, the paper's method
  (the markups after all three of its agents: ``*_semantic_*_filtered.jsonld``; results.csv's
  ``jaccardms`` is computed there), and the markups as published (the project's reading).

Causes of a factuality disagreement, decided on the text the run's judge read (``judge_text``)
and the paper's text (``paper_text``), after whitespace and case are folded: *text extraction
differs* when the value occurs in one of the two texts only; otherwise the side that accepted a
value absent from the text, or rejected a value the text holds, is the side in error (*judge error,
ours* / *judge error, the paper's*); a value the text does not hold verbatim but that one side
accepted may still be a paraphrase, so these are the likely causes, not a ground truth.
Compliance disagreements are classified by direction only (the definition, not the text, decides).
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from udfs.corpus.pset import APPROACHES, PSET, SOURCES, PsetError, PsetSource
from udfs.scores.memr import memr_markups

DELIM = "[TOK_Q_DELIM]"
# results.csv metric -> the stage of Table 7 it counts
METRIC_STAGE = {"input": "triples_in", "shacl": "after_validity", "factual": "after_factuality",
                "semantic": "after_compliance"}  # fmt: skip
# the run's verdict agent -> the paper's file infix and the triples/ column
AGENTS = {"factuality": ("factual", "factual"), "compliance": ("semantic", "compliant")}
CAUSES = (
    "text extraction differs",
    "judge error, ours: rejected a value the text holds",
    "judge error, ours: accepted a value absent from the text",
    "judge error, the paper's: rejected a value the text holds",
    "judge error, the paper's: accepted a value absent from the text",
    "compliance: ours stricter",
    "compliance: the paper's stricter",
)
EXAMPLES = 10
# the columns of the frames that can be empty (a run without disagreements)
FRAME_COLUMNS = {
    "paper_causes": ["agent", "source", "cause", "claims"],
    "paper_examples": ["agent", "source", "document_id", "claim", "ours", "paper", "cause"],
}


def _stem(feature: str, stratum: int, source: str, document_id: str, classes: str) -> str:
    return f"{PSET}/{feature}/stratum_{stratum}/corpus/{SOURCES[source]}/{document_id}_{classes}"


def _doc_key(doc: dict[str, Any]) -> tuple:
    return doc["feature"], doc["stratum"], doc["document_id"], doc["classes"]


def _side(source: str) -> str:
    return "expected" if source == "human" else "pred"


def paper_documents(src: PsetSource, commit: str | None = None) -> list[dict[str, Any]]:
    """One row per markup results.csv scores: ``source`` (human, GPT-3.5, GPT-4), ``feature``,
    ``stratum`` (0-2), ``document_id``, ``classes``, the four stage counts of Table 7 and
    ``memr_h_<model>``/``memr_l`` (MeMR of the human side against each model, of the model side).
    The human markup's counts are those of GPT-3.5's approach (GPT-4's repeat them)."""
    text = src.read(f"{PSET}/results.csv", commit).decode("utf-8")
    rows: dict[tuple, dict[str, Any]] = {}
    for r in csv.DictReader(text.splitlines()):
        if r["approach"] not in APPROACHES:
            continue
        model = APPROACHES[r["approach"]]
        human = r["instance"] == "expected"
        source = "human" if human else model
        key = (source, r["sample_feature"], int(r["stratum"].removeprefix("stratum_")), r["document_id"],
               r["document_classes"])  # fmt: skip
        row = rows.setdefault(key, dict(zip(("source", "feature", "stratum", "document_id", "classes"), key)))
        if r["metric"] == "jaccardms":
            row[f"memr_h_{model}" if human else "memr_l"] = float(r["value"])
        elif r["metric"] in METRIC_STAGE and (not human or model == "GPT-3.5"):
            row[METRIC_STAGE[r["metric"]]] = int(float(r["n_triples"]))
    return [rows[k] for k in sorted(rows)]


def stored_verdicts(
    src: PsetSource, doc: dict[str, Any], agent: str, commit: str | None = None
) -> dict[tuple[str, str, str], bool] | None:
    """The paper's verdict per claim key (property, value, type) of the markup ``doc`` (a row of
    :func:`paper_documents`) for ``agent`` (factuality, compliance); None when the paper wrote no
    such file (its agent did not reach the markup)."""
    infix = AGENTS[agent][0]
    stem = _stem(doc["feature"], doc["stratum"], doc["source"], doc["document_id"], doc["classes"])
    try:
        data = json.loads(src.read(f"{stem}_{infix}_{_side(doc['source'])}.json", commit))
    except PsetError:
        return None
    out: dict[tuple[str, str, str], bool] = {}
    if "aggregation" in data:
        for k, v in data["aggregation"].items():
            if DELIM in k:
                out[tuple(k.split(DELIM))] = v is True or v == "TOKPOS"
        return out
    for name, chunk in data.items():
        if not name.startswith("chunk_") or not isinstance(chunk, dict):
            continue
        for k, v in chunk.items():
            if DELIM not in k:
                continue
            answer = v.get("response") if isinstance(v, dict) else v
            pos = answer is True or answer == "TOKPOS"
            key = tuple(k.split(DELIM))
            out[key] = out.get(key, False) or pos
    return out


_SPACE = re.compile(r"\s+")


def fold(text: str | None) -> str:
    """Whitespace collapsed, case folded: how a value is looked for in a text and matched to a key."""
    return _SPACE.sub(" ", text or "").strip().casefold()


def value_key(value: Any) -> str:
    """A value as both sides write it: numbers by their float value, text folded."""
    s = fold(str(value))
    try:
        return repr(float(s)) if s else s
    except ValueError:
        return s


def kappa(matrix: dict[tuple[bool, bool], int]) -> float | None:
    """Cohen's kappa of a 2x2 matrix {(ours, paper): n}; None when chance agreement is total."""
    n = sum(matrix.values())
    if not n:
        return None
    po = (matrix[(True, True)] + matrix[(False, False)]) / n
    ours_pos = (matrix[(True, True)] + matrix[(True, False)]) / n
    paper_pos = (matrix[(True, True)] + matrix[(False, True)]) / n
    pe = ours_pos * paper_pos + (1 - ours_pos) * (1 - paper_pos)
    return None if pe >= 1 else (po - pe) / (1 - pe)


@dataclass
class Agreement:
    """The run's verdicts against the paper's for one agent and source."""

    agent: str
    source: str
    paper_claims: int = 0  # claims the paper judged on the run's documents
    paper_claims_without_value: int = 0  # nested entities: the paper's key holds no value
    matched: int = 0  # of those, claims the run judged too
    matrix: dict[tuple[bool, bool], int] = field(
        default_factory=lambda: {(a, b): 0 for a in (True, False) for b in (True, False)}
    )
    causes: dict[str, int] = field(default_factory=dict)

    @property
    def kappa(self) -> float | None:
        return kappa(self.matrix)

    def row(self) -> dict[str, Any]:
        m = self.matrix
        n = sum(m.values())
        return {
            "agent": self.agent,
            "source": self.source,
            "paper_claims": self.paper_claims,
            "paper_claims_without_value": self.paper_claims_without_value,
            "matched": self.matched,
            "both_keep": m[(True, True)],
            "both_reject": m[(False, False)],
            "ours_keep_paper_rejects": m[(True, False)],
            "ours_reject_paper_keeps": m[(False, True)],
            "agreement": round((m[(True, True)] + m[(False, False)]) / n, 3) if n else None,
            "kappa": None if self.kappa is None else round(self.kappa, 3),
        }


def _cause(agent: str, ours: bool, value: str, judge_text: str, paper_text: str) -> str:
    if agent == "compliance":
        return CAUSES[5] if not ours else CAUSES[6]
    in_judge, in_paper = value in judge_text, value in paper_text
    if in_judge != in_paper:
        return CAUSES[0]
    if not ours:
        return CAUSES[1] if in_judge else CAUSES[4]
    return CAUSES[3] if in_judge else CAUSES[2]


def verdict_agreement(
    src: PsetSource,
    documents: Iterable[dict[str, Any]],
    triples: list[dict[str, Any]],
    texts: dict[str, tuple[str, str]],
    commit: str | None = None,
) -> tuple[list[Agreement], list[dict[str, Any]]]:
    """Per agent and source, the run's verdicts against the paper's on the claims both judged, and
    up to :data:`EXAMPLES` disagreements (chosen by a hash of the claim, so stable across runs).

    ``documents`` are rows of :func:`paper_documents` for the run's pages; ``triples`` the run's
    triples/ rows carrying ``page_id`` (the paper's document id), ``source``, ``property``,
    ``value``, ``entity_type`` and the verdict columns; ``texts`` maps a document id to (the text
    the run's judge read, the paper's text). A claim matches a paper key on property, value
    (:func:`value_key`) and type; a run's claim judged several times (repeated in the markup) keeps
    its first verdict."""
    ours: dict[tuple, dict[tuple, bool]] = {}
    for t in triples:
        for agent, (_, col) in AGENTS.items():
            if t.get(col) is None:
                continue
            types = [x.strip() for x in (t.get("entity_type") or "").split(",") if x.strip()] or [""]
            bucket = ours.setdefault((agent, t["page_id"], t["source"]), {})
            for ty in types:
                bucket.setdefault((t["property"], value_key(t["value"]), ty), bool(t[col]))
    results: dict[tuple[str, str], Agreement] = {}
    disagreements = []
    for doc in documents:
        judge_text, paper_text = (fold(x) for x in texts.get(doc["document_id"], ("", "")))
        for agent in AGENTS:
            paper = stored_verdicts(src, doc, agent, commit)
            if paper is None:
                continue
            a = results.setdefault((agent, doc["source"]), Agreement(agent, doc["source"]))
            mine = ours.get((agent, doc["document_id"], doc["source"]), {})
            for (prop, value, ty), paper_keeps in sorted(paper.items()):
                a.paper_claims += 1
                if not value.strip():
                    a.paper_claims_without_value += 1
                    continue
                got = mine.get((prop, value_key(value), ty))
                if got is None:
                    continue
                a.matched += 1
                a.matrix[(got, paper_keeps)] += 1
                if got != paper_keeps:
                    cause = _cause(agent, got, fold(value), judge_text, paper_text)
                    a.causes[cause] = a.causes.get(cause, 0) + 1
                    disagreements.append(
                        {
                            "agent": agent,
                            "source": doc["source"],
                            "document_id": doc["document_id"],
                            "claim": f"{ty} / {prop}: {value}",
                            "ours": "keep" if got else "reject",
                            "paper": "keep" if paper_keeps else "reject",
                            "cause": cause,
                        }
                    )
    order = sorted(results.values(), key=lambda a: (a.agent, a.source != "human", a.source))
    disagreements.sort(key=lambda d: hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest())
    return order, disagreements[:EXAMPLES]


def memr_documents(
    src: PsetSource, documents: Iterable[dict[str, Any]], commit: str | None = None
) -> list[dict[str, Any]]:
    """Per model markup of ``documents`` (rows of :func:`paper_documents` whose source is a model):
    MeMR of the human and model sides as the paper stored it, as the paper's method computes it
    (the markups after all its agents), and on the markups as published."""
    documents = list(documents)
    humans = {_doc_key(d): d for d in documents if d["source"] == "human"}
    out = []
    for doc in documents:
        if doc["source"] == "human":
            continue
        model = doc["source"]
        human = humans.get(_doc_key(doc), dict(doc, source="human"))
        files = {}
        for side, d in (("h", human), ("l", doc)):
            stem = _stem(d["feature"], d["stratum"], d["source"], d["document_id"], d["classes"])
            files[side] = (f"{stem}.jsonld", f"{stem}_semantic_{_side(d['source'])}_filtered.jsonld")
        row = {
            "model": model,
            "feature": doc["feature"],
            "stratum": doc["stratum"],
            "document_id": doc["document_id"],
            "classes": doc["classes"],
            "stored_h": human.get(f"memr_h_{model}"),
            "stored_l": doc.get("memr_l"),
        }
        for name, i in (("paper_method", 1), ("published", 0)):
            try:
                s = memr_markups(src.read(files["h"][i], commit), src.read(files["l"][i], commit))
                row[f"{name}_h"], row[f"{name}_l"] = s.h, s.l
            except (PsetError, ValueError) as exc:
                row[f"{name}_h"] = row[f"{name}_l"] = None
                row[f"{name}_error"] = f"{type(exc).__name__}: {exc}"[:200]
        out.append(row)
    return out


def memr_summary(rows: list[dict[str, Any]]) -> list[list[Any]]:
    """Per model, from :func:`memr_documents`' rows: documents, the paper's printed averages, the
    stored, recomputed (the paper's method) and published averages (human / model), and how many
    documents the paper's method gives to 1e-6."""
    from udfs.report import paper

    out = []
    for model, (h, llm) in paper.MEMR.items():
        mine = [r for r in rows if r["model"] == model]

        def avg(k: str, mine=mine) -> str:
            v = [r[k] for r in mine if r.get(k) is not None]
            return f"{sum(v) / len(v):.3f}" if v else "–"

        equal = sum(
            r["paper_method_h"] is not None
            and abs(r["stored_h"] - r["paper_method_h"]) < 1e-6
            and abs(r["stored_l"] - r["paper_method_l"]) < 1e-6
            for r in mine
        )
        out.append([model, len(mine), f"{h:.3f} / {llm:.3f}", f"{avg('stored_h')} / {avg('stored_l')}",
                    f"{avg('paper_method_h')} / {avg('paper_method_l')}", f"{equal} of {len(mine)}",
                    f"{avg('published_h')} / {avg('published_l')}"])  # fmt: skip
    return out


# ---- the report's section ---------------------------------------------------------------------

STAGES = ("triples_in", "after_validity", "after_factuality", "after_compliance")
RUN_COUNTS = ("n_triples", "n_valid", "n_factual", "n_compliant")


def _share(kept: int | None, of: int | None) -> str:
    return f"{kept / of:.1%}" if kept is not None and of else "–"


def _funnel_cells(counts: list[int | None]) -> list[str]:
    """in, then each stage as 'kept (share of the stage before)', then the rejection rate."""
    cells = [f"{counts[0]:,}" if counts[0] is not None else "–"]
    for before, after in zip(counts, counts[1:]):
        cells.append(f"{after:,} ({_share(after, before)})" if after is not None else "–")
    cells.append(_share(counts[0] - counts[-1], counts[0]) if None not in counts else "–")
    return cells


def _table(title: str, note: str, header: list[str], rows: list[list[Any]]) -> dict[str, Any]:
    return {"title": title, "note": note, "header": header, "rows": [[str(c) for c in r] for r in rows]}


def section(
    src: PsetSource,
    pages: list[dict[str, Any]],
    scores: list[dict[str, Any]],
    triples: list[dict[str, Any]],
    commit: str | None = None,
    *,
    group_width: float,
) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """The report's "paper's pages" section: tables (title, note, header, rows of text) and the
    same as CSV-able rows. ``pages`` are the run's pages/ rows (``page_url``, ``page_id``,
    ``feature``, ``stratum_index``, ``judge_text``, ``paper_text``), ``scores`` its scores/ rows
    with status ok, ``triples`` its triples/ rows (with ``page_url``); ``group_width``: as
    :func:`by_group` takes it."""
    by_url = {p["page_url"]: p for p in pages}
    run_docs = {(by_url[s["page_url"]]["page_id"], s["source"]): s for s in scores if s["page_url"] in by_url}
    documents, seen = [], set()
    for d in paper_documents(src, commit):
        key = (d["document_id"], d["source"])
        if key in run_docs and key not in seen:  # a page with several markup files: the first
            seen.add(key)
            documents.append(d)
    sources = [s for s in SOURCES if any(d["source"] == s for d in documents)]
    parts = [
        _funnel(documents, run_docs, sources),
        _strata(documents, run_docs, sources),
        *_verdicts(src, documents, pages, triples, commit),
        _memr(src, commit),
        *by_group(src, commit, group_width),
    ]
    return [table for _, table, _ in parts], {name: frame for name, _, frame in parts}


Part = tuple[str, dict[str, Any], list[dict[str, Any]]]  # (frame name, table, frame rows)


def _run_and_paper_counts(
    docs: list[dict[str, Any]], run_docs: dict[tuple[str, str], dict[str, Any]], source: str
) -> tuple[list[int], list[int]]:
    """The triples of ``docs`` after each stage, counted by the run (``RUN_COUNTS``) and by the
    paper (``STAGES``)."""
    ours = [sum(int(run_docs[(d["document_id"], source)][c] or 0) for d in docs) for c in RUN_COUNTS]
    theirs = [sum(d.get(s, 0) for d in docs) for s in STAGES]
    return ours, theirs


def _funnel(documents: list[dict[str, Any]], run_docs: dict, sources: list[str]) -> Part:
    """Triples after each agent per source: this run, the paper on the same documents, Table 7."""
    from udfs.report import paper

    rows, frame = [], []
    for source in sources:
        docs = [d for d in documents if d["source"] == source]
        ours, theirs = _run_and_paper_counts(docs, run_docs, source)
        table7 = list(paper.TABLE7[source])
        for who, counts in (("this run", ours), ("the paper, same documents", theirs), ("the paper, Table 7", table7)):
            rows.append([source, who, len(docs) if who != "the paper, Table 7" else "all", *_funnel_cells(counts)])
            frame.append({"source": source, "counted_by": who, **dict(zip(STAGES, counts))})
    table = _table(
        "Triples after each agent: this run, the paper on the same documents, the paper's Table 7",
        "Each stage's share is of the stage before; rejection is 1 - after compliance / in. This run counts "
        "triples/ rows under the project's validity and judge; the paper counts its property-value-type "
        "keys (results.csv).",
        [
            "source",
            "counted by",
            "documents",
            "in",
            "after validity",
            "after factuality",
            "after compliance",
            "rejection",
        ],  # fmt: skip
        rows,
    )
    return "paper_funnel", table, frame


def _strata(documents: list[dict[str, Any]], run_docs: dict, sources: list[str]) -> Part:
    """Kept after all agents per source, feature and stratum: this run and the paper."""
    rows, frame = [], []
    for source in sources:
        for feature in sorted({d["feature"] for d in documents}):
            for stratum in sorted({d["stratum"] for d in documents if d["feature"] == feature}):
                docs = [d for d in documents if (d["source"], d["feature"], d["stratum"]) == (source, feature, stratum)]
                if not docs:
                    continue
                ours, theirs = _run_and_paper_counts(docs, run_docs, source)
                rows.append([source, feature, stratum, len(docs), f"{ours[0]:,} / {theirs[0]:,}",
                             _share(ours[3], ours[0]), _share(theirs[3], theirs[0])])  # fmt: skip
                frame.append({"source": source, "feature": feature, "stratum": stratum, "documents": len(docs),
                              "run_in": ours[0], "run_kept": ours[3], "paper_in": theirs[0],
                              "paper_kept": theirs[3]})  # fmt: skip
    table = _table(
        "Kept after all agents, per feature and stratum",
        "Strata as the paper numbers them (0 low, 1 medium, 2 high).",
        ["source", "feature", "stratum", "documents", "in (run / paper)", "kept, this run", "kept, the paper"],
        rows,
    )
    return "paper_strata", table, frame


def _verdicts(
    src: PsetSource,
    documents: list[dict[str, Any]],
    pages: list[dict[str, Any]],
    triples: list[dict[str, Any]],
    commit: str | None,
) -> list[Part]:
    """The run's verdicts against the paper's, claim by claim: agreement per agent and source,
    the disagreements by likely cause, and examples of them."""
    texts = {p["page_id"]: (p.get("judge_text") or "", p.get("paper_text") or "") for p in pages}
    page_ids = {p["page_url"]: p["page_id"] for p in pages}
    ours = [dict(t, page_id=page_ids[t["page_url"]]) for t in triples if t.get("page_url") in page_ids]
    agreements, examples = verdict_agreement(src, documents, ours, texts, commit)
    rows = [a.row() for a in agreements]
    agreement = _table(
        "Verdicts against the paper's, claim by claim",
        "Claims both judged, matched on property, value and type. The paper judged the claims its validity "
        "filter kept; this run judged those its own validity kept. kappa: Cohen's, over the matched claims.",
        [
            "agent",
            "source",
            "paper's claims",
            "of which nested (no value)",
            "matched",
            "both keep",
            "both reject",
            "ours keeps, paper rejects",
            "ours rejects, paper keeps",
            "agreement",
            "kappa",
        ],  # fmt: skip
        [[r[k] if r[k] is not None else "–" for k in r] for r in rows],
    )
    causes = [{"agent": a.agent, "source": a.source, "cause": c, "claims": n}
              for a in agreements for c, n in sorted(a.causes.items())]  # fmt: skip
    by_cause = _table(
        "Disagreements by likely cause",
        "Factuality: decided on whether the value occurs (whitespace and case folded) in the text the run's "
        "judge read and in the paper's text; a paraphrase counts as absent. Compliance: by direction.",
        ["agent", "source", "cause", "claims"],
        [list(c.values()) for c in causes],
    )
    shown = _table(
        f"{len(examples)} disagreements",
        "Chosen by a hash of the claim (stable from run to run).",
        ["agent", "source", "document", "claim", "ours", "paper", "likely cause"],
        [list(e.values()) for e in examples],
    )
    return [
        ("paper_agreement", agreement, rows),
        ("paper_causes", by_cause, causes),
        ("paper_examples", shown, examples),
    ]


def _memr(src: PsetSource, commit: str | None) -> Part:
    """MeMR of the paper's markups over every document of the paper, three ways."""
    memr_all = memr_documents(src, paper_documents(src, commit), commit)
    table = _table(
        "MeMR of the paper's markups (human / model), every document",
        "The paper's MeMR (results.csv jaccardms, the averages it prints) compares the markups after all "
        "three of its agents; computed that way it is reproduced document by document. On the markups as "
        "published (before any agent) the project's reading differs: see the last column.",
        [
            "model",
            "documents",
            "paper's text",
            "stored, averaged",
            "paper's method, recomputed",
            "documents equal to 1e-6",
            "markups as published",
        ],  # fmt: skip
        memr_summary(memr_all),
    )
    return "paper_memr", table, memr_all


# ---- the paper's human markups per generator and per type ---------------------------------------

NOT_MATCHED = "(no block)"


def human_generators(src: PsetSource, documents: list[dict[str, Any]], commit: str | None = None) -> dict[str, Any]:
    """{document id: Attribution} of the paper's human markups: each page's HTML (``<id>.html``)
    read as the pages job reads it, its blocks attributed by conf/generators.toml
    (``udfs.corpus.generators``), and the stored human markup traced to the block it was taken
    from (``markup_attribution``); None for a document whose files cannot be read or whose markup
    has no value to trace."""
    from udfs.corpus import generators as G
    from udfs.corpus import html as P
    from udfs.corpus.encoding import decode_html
    from udfs.runtime.config import load_config
    from udfs.runtime.paths import project_file

    rules = G.load_rules(project_file(load_config().pages.generator_rules))
    out: dict[str, Any] = {}
    for d in documents:
        if d["source"] != "human" or d["document_id"] in out:
            continue
        stem = _stem(d["feature"], d["stratum"], "human", d["document_id"], d["classes"])
        try:
            page = src.read(f"{PSET}/{d['feature']}/stratum_{d['stratum']}/corpus/{d['document_id']}.html", commit)
            markup = json.loads(src.read(f"{stem}.jsonld", commit))
        except (PsetError, ValueError):
            out[d["document_id"]] = None
            continue
        html = decode_html(page)
        tree = P.html_tree(html)
        blocks = P.jsonld_blocks(html, tree)
        found = G.attribute_page(html, tree.root, P.jsonld_scripts(tree.root), rules, blocks)
        out[d["document_id"]] = G.markup_attribution(markup, blocks, found)
    return out


def by_group(src: PsetSource, commit: str | None, width: float) -> list[Part]:
    """The paper's Table 7 for its human markups per generator (``human_generators``) and per root
    type (the file name's types), from results.csv's counts (the paper's own verdicts: no model),
    with each agent's rejection rate and its bootstrap interval over documents
    (``udfs.report.groups``; not corrected: the paper's judge's accuracy is not measured). Every
    scored human markup is a unit, as in the paper's sums, so the rows add up to Table 7's human row."""
    from udfs.report import groups as GR

    docs = [d for d in paper_documents(src, commit) if d["source"] == "human"]
    gens = human_generators(src, docs, commit)

    def counts(d: dict[str, Any]) -> tuple[int, int, int, int]:
        return tuple(int(d.get(s, 0)) for s in STAGES)

    parts = []
    for name, title, key in (
        ("paper_by_generator", "per generator of the human markup", lambda d: gens.get(d["document_id"])),
        ("paper_by_type", "per root type of the human markup", None),
    ):
        units = []
        for d in docs:
            if key is None:
                group = "/".join(sorted(set(d["classes"].split("_"))))
            else:
                found = key(d)
                group = found.generator if found is not None else NOT_MATCHED
            units.append(GR.Unit(group, counts(d)))
        header, text, frame = GR.table_rows(GR.group_table(units, width), corrected=False, units="markups")
        table = _table(
            f"The paper's human markups: Table 7 {title}",
            f"{len(docs)} human markups scored in results.csv, the paper's own counts after each of its agents. "
            "Rejection: the claims an agent judged that it rejected, with a 95% bootstrap interval over "
            f"markups (the paper's judge's accuracy is not measured: not corrected). A group is shown on its "
            f"own when each interval is at most {width:.0%} wide; the rest are pooled as (other)."
            + (
                " The generator is the one of the page block the stored markup was taken from "
                "(conf/generators.toml; unknown: nothing in the page names it)."
                if key is not None
                else ""
            ),
            header,
            text,
        )
        parts.append((name, table, frame))
    return parts


def main(argv: list[str] | None = None) -> int:
    """``python -m udfs.report.paper_pages BUNDLE_OR_CHECKOUT [--commit C]``: the figures of every
    document of the paper that need no run: Table 7 summed from results.csv, and MeMR three ways."""
    from udfs.corpus.pset import open_pset
    from udfs.report import paper
    from udfs.runtime.cli import ArgumentParser

    p = ArgumentParser(description=main.__doc__.split("\n\n")[0] if main.__doc__ else None)
    p.add_argument("source", help="the paper's history bundle (or its folder) or a checkout of its repository")
    p.add_argument("--commit", default="", help="an original commit ('': the last)")
    p.add_argument(
        "--group-interval-width",
        type=float,
        help="the per-generator and per-type tables' widest interval of a group shown on its own "
        "(default: [report] group_interval_width)",
    )
    a = p.parse_args(argv)
    try:
        src = open_pset(a.source)
        docs = paper_documents(src, a.commit or None)
    except PsetError as exc:
        p.error(str(exc))
    print("| source | markups | " + " | ".join(STAGES) + " | Table 7 |")
    print("|---|---:|" + "---:|" * len(STAGES) + "---|")
    for source in SOURCES:
        mine = [d for d in docs if d["source"] == source]
        sums = [sum(d[s] for d in mine) for s in STAGES]
        same = "equal" if tuple(sums) == paper.TABLE7[source] else f"differs: {paper.TABLE7[source]}"
        print(f"| {source} | {len(mine)} | " + " | ".join(f"{x:,}" for x in sums) + f" | {same} |")
    rows = memr_documents(src, docs, a.commit or None)
    print("\n| model | documents | paper's text | stored | paper's method | documents equal | as published |")
    print("|---|---:|---|---|---|---:|---|")
    for row in memr_summary(rows):
        print("| " + " | ".join(str(c) for c in row) + " |")
    if a.group_interval_width is None:
        from udfs.runtime.config import load_config

        a.group_interval_width = load_config().report.group_interval_width
    for _, table, _ in by_group(src, a.commit or None, a.group_interval_width):
        print(f"\n{table['title']}\n\n| " + " | ".join(table["header"]) + " |")
        print("|---|" + "---:|" * (len(table["header"]) - 1))
        for row in table["rows"]:
            print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
