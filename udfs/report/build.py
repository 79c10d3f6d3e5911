"""The report of one pipeline run: ``scores/`` (+ ``triples/``, ``pages/``, ``samples/`` and the
run records under the same output root, each used when present) to the paper's Tables 7 and 8,
the page funnel, Fig. 10, the agents' rejections and score distributions, the agents' measured
accuracy, and one self-contained HTML page.

Contract of the page (``render``): one file, rendered by the Jinja2 template
``templates/report.html.j2`` with autoescape on (page text and markup values are untrusted);
every image is embedded as a ``data:`` URI (PNG from matplotlib); no script, font or style sheet is
fetched. A value that is not defined is never shown as ``NaN``: the cell says why it is missing.
A table or run record the run did not write is said in the page, not an error.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import io
import json
import math
import platform
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Iterable, Sequence

from udfs.evaluation.evaluator import HUMAN, page_key, source_repeat
from udfs.llm.serving.config import load_serving_conf
from udfs.report import paper
from udfs.runtime.config import ConfigError
from udfs.runtime.io import Folder, parquet_dataset
from udfs.runtime.judge_record import read_judge

STAGES = ("triples_in", "after_validity", "after_factuality", "after_compliance")
STAGE_TITLES = ("triples in", "after validity", "after factuality", "after compliance")
STRATUM_ORDER = {"low": 0, "medium": 1, "high": 2}
# what a cell says instead of a number it cannot have
NO_STRATA = "no strata: pages/ not found (Table 8 needs feature and stratum per page)"
EXAMPLES_PER_PROPERTY = 2
MAX_PROPERTIES = 15
# {c}: "" for the rows of triples/, "_paper" for the paper's counting (triple_counting)
COUNTS_SQL = """
    sum(n_triples{c})::BIGINT AS triples_in, sum(n_valid{c})::BIGINT AS after_validity,
    sum(n_factual{c})::BIGINT AS after_factuality, sum(n_compliant{c})::BIGINT AS after_compliance,
    round(1 - sum(n_compliant{c}) / nullif(sum(n_triples{c}), 0), 3) AS rejection_rate,
    avg(memr_h) AS memr_h, avg(memr_l) AS memr_l, avg(key_f1) AS key_f1,
    count(*) AS pages, count(memr_h) AS memr_pages
"""


@dataclass
class Sources:
    """Where the report's inputs are: ``scores`` (given), the others found under ``root``."""

    scores: list[str]
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


@dataclass
class Report:
    """What the page shows, as plain values (the template's context) and the CSV-able tables."""

    context: dict[str, Any] = field(default_factory=dict)
    frames: dict[str, Any] = field(default_factory=dict)  # name -> pandas DataFrame (CSV files)
    stage_png: bytes = b""  # the Table 7 plot, also written beside the page
    table7_text: str = ""


# ---- inputs -----------------------------------------------------------------------------------


def _strata(src: Sources) -> tuple[Any, str | None]:
    """page_key -> (feature, stratum) of every selected ok page (a page in two strata: two rows)."""
    import pandas as pd

    cols = ["page_key", "feature", "stratum"]
    ds = src.dataset("pages")
    if ds is None:
        return pd.DataFrame(columns=cols), NO_STRATA
    want = [c for c in ("page_url", "human_markup", "feature", "stratum", "status", "selected") if c in ds.schema.names]
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


def funnel(src: Sources, scores) -> list[dict[str, Any]]:
    """The page funnel: sampled -> fetched -> with text -> deduplicated -> evaluated, each step
    with its count or the reason it has none (its table is missing)."""
    steps: list[dict[str, Any]] = []
    samples = src.dataset("samples")
    steps.append(
        {
            "step": "sampled",
            "count": samples.count_rows() if samples is not None else None,
            "note": "rows of samples/ (one per feature, stratum and draw)"
            if samples is not None
            else "samples/ not found under the output root",
        }
    )
    pages = src.dataset("pages")
    if pages is None:
        for step in ("fetched", "with text", "deduplicated"):
            steps.append({"step": step, "count": None, "note": "pages/ not found under the output root"})
    else:
        want = [c for c in ("page_url", "human_markup", "status", "selected", "text_chars") if c in pages.schema.names]
        rows = [r for r in pages.to_table(columns=want).to_pylist() if r.get("selected", True) is not False]
        ok = [r for r in rows if r.get("status") == "ok"]
        text = [r for r in ok if (r.get("text_chars") or 0) > 0]
        distinct = {page_key(r["page_url"], r.get("human_markup")) for r in text}
        steps.append(
            {"step": "fetched", "count": len(ok), "note": f"selected rows of pages/ with status ok, of {len(rows)}"}
        )
        steps.append(
            {"step": "with text", "count": len(text), "note": "fetched pages whose extracted text is not empty"}
        )
        steps.append(
            {
                "step": "deduplicated",
                "count": len(distinct),
                "note": "distinct (page URL, human markup): a page sampled in several strata is evaluated once",
            }
        )
    evaluated = len(set(scores["page_key"])) if len(scores) else 0
    rec = src.run_record("scores") or {}
    c = rec.get("counters", {})
    note = "distinct pages in scores/"
    if c.get("over_limit"):
        note += f"; {c['over_limit']} more left out by the evaluation's limit ({rec.get('config', {}).get('limit')})"
    if c.get("failed"):
        note += f"; {c['failed']} failed"
    steps.append({"step": "evaluated", "count": evaluated, "note": note})
    return steps


# ---- tables 7 and 8 ---------------------------------------------------------------------------


def _num(x: Any) -> float | None:
    if x is None:
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


MEMR_FOOTNOTES = {
    "human": "MeMR and key F1 compare a model's markup with the human markup: the human row has none "
    "(the human side of each comparison is MeMR h on the model's row).",
    "undefined": "Undefined: on no page of this row did either side keep a triple after the stages "
    "(MeMR divides by the merged markup's size).",
}


def _cell(text: str, cls: str = "n") -> dict[str, Any]:
    """A table cell of the page: its lines of text and its class (n: a number, why: a reason
    instead of a value, paper: the paper's figure)."""
    return {"lines": [text] if isinstance(text, str) else list(text), "cls": cls}


def _kept(row: dict[str, Any], stage: str, lines: bool = False) -> str | list[str]:
    n0 = _num(row["triples_in"]) or 0
    n = int(_num(row[stage]) or 0)
    if not n0:
        return f"{n:,}"
    return [f"{n:,}", f"{n / n0:.1%}"] if lines else f"{n:,} ({n / n0:.1%})"


def _paper(source: str, value) -> dict[str, Any]:
    """The paper's Table 7 figure for ``source`` (the human row for the human markup; GPT-3.5 and
    GPT-4 for a model of ours, which is set beside both): ``value(name)`` formats one."""
    if source == HUMAN:
        return _cell(value("human"), "paper")
    return _cell([f"{name.removeprefix('GPT-')}: {value(name)}" for name in ("GPT-3.5", "GPT-4")], "paper")


def _memr_pair(row: dict[str, Any]) -> dict[str, Any]:
    """MeMR of both sides in one cell: ``h <human side> / l <model side>`` and on how many pages."""
    if row["source"] == HUMAN:
        return _cell("n/a ¹", "why")
    h, lo = _num(row["memr_h"]), _num(row["memr_l"])
    if h is None or lo is None:
        return _cell("undefined ²", "why")
    return _cell([f"{h:.3f} / {lo:.3f}", f"{int(row['memr_pages'])} of {int(row['pages'])} pages"])


def _memr(row: dict[str, Any], col: str) -> dict[str, Any]:
    if row["source"] == HUMAN:
        return _cell("n/a ¹", "why")
    v = _num(row[col])
    if v is None:
        return _cell("undefined ²", "why")
    return _cell(f"{v:.3f}" if col == "key_f1" else f"{v:.3f} ({int(row['memr_pages'])}/{int(row['pages'])} p.)")


def _rejected(row: dict[str, Any]) -> dict[str, Any]:
    n0 = _num(row["triples_in"]) or 0
    kept = _num(row["after_compliance"]) or 0
    return _cell(f"{1 - kept / n0:.1%}") if n0 else _cell("no triples in", "why")


TABLE7_HEADER = [
    "source",
    "pages",
    "triples in",
    "paper",
    "after validity",
    "paper",
    "after factuality",
    "paper",
    "after compliance",
    "paper",
    "rejected",
    "paper",
    "MeMR h / l",
    "paper",
    "key F1",
]
TABLE8_HEADER = [
    "feature",
    "stratum",
    "source",
    "pages",
    "triples in",
    "after validity",
    "after factuality",
    "after compliance",
    "rejected",
    "MeMR h",
    "MeMR l",
    "paper's finding",
]


def table7_rows(df) -> list[list[dict[str, Any]]]:
    """Table 7 as cells: per source, ours (counts, the share of the triples in kept after each
    stage, the rejection rate, MeMR where defined, else why not) beside the paper's figures."""
    out = []
    for row in df.to_dict("records"):
        src = row["source"]
        t = paper.TABLE7
        cells = [
            _cell(src, ""),
            _cell(str(int(row["pages"]))),
            _cell(f"{int(_num(row['triples_in']) or 0):,}"),
            _paper(src, lambda n: f"{t[n][0]:,}"),
        ]
        for i, stage in enumerate(STAGES[1:], 1):
            cells += [_cell(_kept(row, stage, lines=True)), _paper(src, lambda n, i=i: f"{t[n][i] / t[n][0]:.1%}")]
        cells += [
            _rejected(row),
            _paper(src, lambda n: f"{paper.REJECTION[n]:.1%}"),
            _memr_pair(row),
            _cell("n/a ¹", "paper") if src == HUMAN else _paper(src, lambda n: "{:.3f}/{:.3f}".format(*paper.MEMR[n])),
            _memr(row, "key_f1"),
        ]
        out.append(cells)
    return out


def table8_rows(df) -> list[list[dict[str, Any]]]:
    """Table 8 as cells: per feature, stratum and source, ours, and the paper's finding for the
    stratum (the article's per-stratum figures are not in the summary the project keeps)."""
    out = []
    for row in df.to_dict("records"):
        cells = [
            _cell(row["feature"], ""),
            _cell(row["stratum"], ""),
            _cell(row["source"], ""),
            _cell(str(int(row["pages"]))),
            _cell(f"{int(_num(row['triples_in']) or 0):,}"),
        ]
        cells += [_cell(_kept(row, s)) for s in STAGES[1:]]
        cells += [
            _rejected(row),
            _memr(row, "memr_h"),
            _memr(row, "memr_l"),
            _cell(paper.TABLE8_FINDING.get(row["stratum"], "none stated"), "paper"),
        ]
        out.append(cells)
    return out


def footnotes(*tables: list[list[dict[str, Any]]]) -> list[str]:
    """The footnotes the cells of ``tables`` refer to, numbered as the cells mark them."""
    marks = {line for t in tables for row in t for c in row for line in c["lines"]}
    out = []
    if any(m.endswith("¹") for m in marks):
        out.append("¹ " + MEMR_FOOTNOTES["human"])
    if any(m.endswith("²") for m in marks):
        out.append("² " + MEMR_FOOTNOTES["undefined"])
    return out


COUNTINGS = {
    "rows": "Triples counted as the rows of triples/: one per (subject, property, value, entity type), "
    "links between nodes and repeated strings included (the scores' n_* columns). The paper counts "
    "distinct leaf (property, value, entity type) strings: a run in validity mode paper reports "
    "that counting, and these tables then use it.",
    "paper": "Triples counted the paper's way (validity mode paper; the scores' n_*_paper columns): a leaf "
    "(property, value) with its entity type, identical strings once, links between nodes, @type "
    "and @id not counted; a triple is kept after a stage while one of its occurrences is.",
}


def triple_counting(con) -> str:
    """``paper`` when every scored page (status ok) of the DuckDB view ``scores`` carries the paper's
    counting (a run in validity mode paper), else ``rows``: the key of :data:`COUNTINGS`."""
    if "n_triples_paper" not in {r[0] for r in con.execute("DESCRIBE scores").fetchall()}:
        return "rows"
    missing, ok = con.execute(
        "SELECT count(*) FILTER (WHERE n_triples_paper IS NULL), count(*) FROM scores WHERE status = 'ok'"
    ).fetchone()
    return "paper" if ok and not missing else "rows"


def tables(con, counting: str = "rows") -> dict[str, Any]:
    """Table 7, Table 8 and the pages without a score, as DataFrames from the DuckDB views
    ``scores`` and ``strata`` (page_key, feature, stratum); triples counted as ``counting`` says
    (:data:`COUNTINGS`)."""
    counts = COUNTS_SQL.format(c="_paper" if counting == "paper" else "")
    t7 = con.execute(f"""
        SELECT source, {counts} FROM scores WHERE status = 'ok'
        GROUP BY source ORDER BY source = '{HUMAN}' DESC, source""").df()
    t8 = con.execute(f"""
        SELECT st.feature, st.stratum, s.source, {counts}
        FROM scores s JOIN strata st USING (page_key) WHERE s.status = 'ok'
        GROUP BY st.feature, st.stratum, s.source
        ORDER BY st.feature, CASE st.stratum WHEN 'low' THEN 0 WHEN 'medium' THEN 1 WHEN 'high' THEN 2 ELSE 3 END,
                 s.source = '{HUMAN}' DESC, s.source""").df()
    failures = con.execute("""
        SELECT source, status, count(*) AS pages, any_value(reason) AS example_reason
        FROM scores WHERE status <> 'ok' GROUP BY ALL ORDER BY ALL""").df()
    return {"table7": t7, "table8": t8, "failures": failures}


def table7_text(t7, counting: str = "rows") -> str:
    """Table 7 for the console: counts, rejection rate, MeMR where defined ("-" and a footnote
    otherwise), no NaN, and which counting of triples it shows."""
    lines = [
        f"{'source':<24}{'pages':>6}{'in':>8}{'valid':>8}{'factual':>9}{'compliant':>10}{'rejected':>10}"
        f"{'MeMR h':>8}{'MeMR l':>8}"
    ]
    for row in t7.to_dict("records"):
        n0 = _num(row["triples_in"]) or 0
        kept = _num(row["after_compliance"]) or 0
        h, lo = _num(row["memr_h"]), _num(row["memr_l"])
        lines.append(
            f"{str(row['source'])[:23]:<24}{int(row['pages']):>6}"
            + "".join(f"{int(_num(row[s]) or 0):>{w}}" for s, w in zip(STAGES, (8, 8, 9, 10)))
            + (f"{1 - kept / n0:>10.1%}" if n0 else f"{'-':>10}")
            + (f"{h:>8.3f}" if h is not None else f"{'-':>8}")
            + (f"{lo:>8.3f}" if lo is not None else f"{'-':>8}")
        )
    lines.append("MeMR -: the human row (MeMR compares a model with the human markup) or no page where it is defined")
    lines.append(COUNTINGS[counting])
    return "\n".join(lines)


# ---- rejections per property --------------------------------------------------------------------


def _fmt_score(x: Any) -> str:
    v = _num(x)
    return "—" if v is None else f"{v:.2f}"


def _claim(r: dict[str, Any]) -> str:
    if r.get("claim"):
        return r["claim"]
    value = "a node" if str(r["value"]).startswith("_:") else f'"{r["value"]}"'
    return f"{r.get('entity_type') or 'Thing'} / {r['property']}: {value}"


def rejections(triples) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Per source and property: triples in, rejected by each agent (validity: the rule and its
    reason; factuality and compliance: the verdict), with example rejected claims and scores.
    The properties with the most rejections first, at most ``MAX_PROPERTIES`` per source; the
    second value says how many more properties each source had (their counts are in the CSV)."""
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for r in triples:
        g = groups.setdefault(
            (r["source"], r["property"]),
            {
                "source": r["source"],
                "property": r["property"],
                "n": 0,
                "validity": 0,
                "factuality": 0,
                "compliance": 0,
                "unjudged": 0,
                "reasons": {},
                "examples": [],
            },
        )
        g["n"] += 1
        stage = None
        if r.get("valid") is False:
            stage = "validity"
            reason = r.get("valid_reason") or "invalid"
            rule = r.get("validity_rule")
            key = f"rule {rule}: {reason}" if rule is not None else reason
            g["reasons"][key] = g["reasons"].get(key, 0) + 1
        elif r.get("factual") is False:
            stage = "factuality"
        elif r.get("factual") is None and r.get("factual_error"):
            g["unjudged"] += 1
        elif r.get("compliant") is False:
            stage = "compliance"
        elif r.get("compliant") is None and r.get("compliant_error"):
            g["unjudged"] += 1
        if stage:
            g[stage] += 1
            if len(g["examples"]) < EXAMPLES_PER_PROPERTY:
                g["examples"].append(
                    {
                        "stage": stage,
                        "claim": _claim(r),
                        "factual": _fmt_score(r.get("factual_score")),
                        "compliant": _fmt_score(r.get("compliant_score")),
                        "why": (
                            r.get("valid_reason")
                            if stage == "validity"
                            else r.get("compliant_note")
                            if stage == "compliance"
                            else None
                        )
                        or "",
                    }
                )
    rows = sorted(
        groups.values(),
        key=lambda g: (
            g["source"] != HUMAN,
            g["source"],
            -(g["validity"] + g["factuality"] + g["compliance"]),
            g["property"],
        ),
    )
    out, per_source = [], {}
    for g in rows:
        if g["validity"] + g["factuality"] + g["compliance"] == 0:
            continue
        per_source[g["source"]] = per_source.get(g["source"], 0) + 1
        if per_source[g["source"]] > MAX_PROPERTIES:
            continue
        g["reasons"] = "; ".join(f"{k} (×{v})" for k, v in sorted(g["reasons"].items(), key=lambda kv: -kv[1]))
        out.append(g)
    left = {src: n - MAX_PROPERTIES for src, n in per_source.items() if n > MAX_PROPERTIES}
    return out, left


# ---- figures ------------------------------------------------------------------------------------


def _png_bytes(fig) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()


def data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _png(fig) -> str:
    return data_uri(_png_bytes(fig))


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def stage_plot(t7) -> bytes:
    """Triples kept after each agent, per source (Table 7 as lines), as PNG bytes."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for row in t7.to_dict("records"):
        ax.plot(range(4), [_num(row[s]) or 0 for s in STAGES], marker="o", label=row["source"])
    ax.set_xticks(range(4), list(STAGE_TITLES))
    ax.set_ylabel("triples kept")
    ax.set_title("Triples kept after each agent (Table 7)")
    if len(t7):
        ax.legend()
    fig.tight_layout()
    return _png_bytes(fig)


# ---- repeated runs (--repeats) --------------------------------------------------------------------
# Table 7's rates over the repeats of a run: the share of a stage's input it rejected, and overall
REPEAT_RATES = (
    ("validity", "triples_in", "after_validity"),
    ("factuality", "after_validity", "after_factuality"),
    ("compliance", "after_factuality", "after_compliance"),
    ("overall", "triples_in", "after_compliance"),
)


def repeat_rates(t7) -> dict[str, dict[str, list[float | None]]]:
    """Per source of a run with repeats (names ``source#r``, ``udfs.evaluation.evaluator.
    source_repeat``), per rate of :data:`REPEAT_RATES`, the rate of each repeat in repeat order
    (None where the stage had no input); {} for a run without repeats."""
    by: dict[str, dict[int, dict[str, Any]]] = {}
    for row in t7.to_dict("records"):
        base, r = source_repeat(row["source"])
        if r is not None:
            by.setdefault(base, {})[r] = row
    out: dict[str, dict[str, list[float | None]]] = {}
    for base, reps in by.items():
        rows = [reps[r] for r in sorted(reps)]
        out[base] = {
            name: [(1 - row[b] / row[a]) if _num(row[a]) else None for row in rows] for name, a, b in REPEAT_RATES
        }
    return out


def repeats_table(rates: dict[str, dict[str, list[float | None]]]) -> list[dict[str, Any]]:
    """Table 7's rejection rates per source as the mean over its repeats, the sample standard
    deviation and the range (min to max), with the repeats counted; a rate no repeat could have
    (no input at that stage) says so."""
    out = []
    for base in sorted(rates, key=lambda b: (b != HUMAN, b)):
        for name, values in rates[base].items():
            xs = [x for x in values if x is not None]
            row = {"source": base, "rate": name, "repeats": len(values), "with_input": len(xs)}
            if xs:
                mean = sum(xs) / len(xs)
                sd = (sum((x - mean) ** 2 for x in xs) / (len(xs) - 1)) ** 0.5 if len(xs) > 1 else None
                row.update(
                    mean=f"{mean:.1%}",
                    sd="–" if sd is None else f"{sd:.1%}",
                    range=f"{min(xs):.1%} – {max(xs):.1%}",
                    values=", ".join(f"{x:.1%}" for x in xs),
                )
            else:
                row.update(mean="no input", sd="–", range="–", values="–")
            out.append(row)
    return out


def repeats_plot(rates: dict[str, dict[str, list[float | None]]]) -> bytes:
    """Each source's rejection rates per repeat (dots) beside their mean (a bar), per rate."""
    plt = _pyplot()
    names = [n for n, _, _ in REPEAT_RATES]
    bases = sorted(rates, key=lambda b: (b != HUMAN, b))
    fig, ax = plt.subplots(figsize=(7, 3.6))
    width = 0.8 / max(1, len(bases))
    for k, base in enumerate(bases):
        for i, name in enumerate(names):
            xs = [x for x in rates[base][name] if x is not None]
            if not xs:
                continue
            at = i + (k - (len(bases) - 1) / 2) * width
            ax.bar(at, sum(xs) / len(xs), width * 0.9, color=f"C{k}", alpha=0.35, label=base if i == 0 else None)
            ax.plot([at] * len(xs), xs, "o", color=f"C{k}", markersize=4)
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel("rejected (share of the stage's input)")
    ax.set_title("Rejection rates per repeat (dots) and their mean (bars)")
    if bases:
        ax.legend()
    fig.tight_layout()
    return _png_bytes(fig)


# ---- GraphCorrect (evaluate --correct) ------------------------------------------------------------
CORRECTION_EXAMPLES = 5


def graph_correct(con, record: dict[str, Any] | None, triples: list[dict[str, Any]], counting: str) -> dict[str, Any]:
    """The GraphCorrect section: whether the run corrected (the record's ``evaluation.correction``;
    None: not recorded), per source the triples corrected (the scores' ``n_corrected`` over the
    pages with status ok) beside Table 7's after-factuality count, which holds them (a corrected
    claim passes factuality with its re-verified value, ``udfs.evaluation.evaluator``), and how many
    of them are kept after the last stage (triples/' ``kept``: after compliance when it ran; None
    without triples/); the line that says so under
    Table 7; and up to :data:`CORRECTION_EXAMPLES` corrected triples (claim, value, corrected
    value), taken in turn from each source (human first), each source's in page and claim order."""
    ran = ((record or {}).get("evaluation") or {}).get("correction")
    has_triples = bool(triples)
    # scores written before n_corrected was a column cannot say
    known = "n_corrected" in {r[0] for r in con.execute("DESCRIBE scores").fetchall()}
    rows = []
    for source, pages, corrected, factual in con.execute(f"""
        SELECT source, count(*), {"sum(n_corrected)::BIGINT" if known else "NULL::BIGINT"}, sum(n_factual)::BIGINT
        FROM scores
        WHERE status = 'ok' GROUP BY source ORDER BY source = '{HUMAN}' DESC, source""").fetchall():
        fixed = [r for r in triples if r["source"] == source and r.get("corrected")]
        rows.append(
            {
                "source": source,
                "pages": int(pages),
                "corrected": None if corrected is None else int(corrected),
                "after_factuality": None if factual is None else int(factual),
                "corrected_kept": sum(r.get("kept") is True for r in fixed) if has_triples else None,
            }
        )
    by_source: dict[str, list[dict[str, Any]]] = {}
    for r in sorted(
        (r for r in triples if r.get("corrected")),
        key=lambda r: (r["source"] != HUMAN, r["source"], r.get("page_url") or "", _claim(r)),
    ):
        by_source.setdefault(r["source"], []).append(r)
    examples: list[dict[str, Any]] = []
    queues = list(by_source.values())
    while queues and len(examples) < CORRECTION_EXAMPLES:
        for q in list(queues):
            if len(examples) == CORRECTION_EXAMPLES:
                break
            r = q.pop(0)
            examples.append(
                {
                    "source": r["source"],
                    "page_url": r.get("page_url"),
                    "claim": _claim(r),
                    "value": r.get("value"),
                    "corrected_value": r.get("corrected_value"),
                }
            )
            if not q:
                queues.remove(q)
    counts = ", ".join(
        f"{r['source']} {r['corrected'] if r['corrected'] is not None else 'not recorded'}" for r in rows
    )
    if ran is False:
        line = "This run did not correct (evaluate without --correct): no triple of Table 7 is a corrected one."
    else:
        line = (
            "Table 7 counts corrected triples (GraphCorrect, evaluate --correct): a claim judged non-factual whose "
            "value the text states passes factuality with that value re-verified, so it is kept after factuality, "
            f"and after compliance when its corrected value complies. Corrected triples per source: {counts}."
        )
        if counting == "paper":
            line += " They are counted as rows of triples/, not the paper's way."
    return {"ran": ran, "rows": rows, "examples": examples, "table7_line": line}


STRATUM_COLOURS = {"low": "#dbe9f6", "medium": "#fde9c9", "high": "#f6d5d5"}


def histogram_figures(sample_record: dict[str, Any] | None) -> list[dict[str, str]]:
    """Fig. 10 from the sample run record: per feature, the log-log histogram of C-sets with each
    stratum shaded and labelled (its bounds and how many C-sets it holds)."""
    if not sample_record or not sample_record.get("histograms"):
        return []
    plt = _pyplot()
    bounds = sample_record.get("bounds", {})
    names = sample_record.get("stratum_names") or ["low", "medium", "high"]
    sizes = {(s["feature"], s["stratum"]): s for s in sample_record.get("strata_sizes", [])}
    out = []
    for hist in sample_record["histograms"]:
        feat = hist["feature"]
        bins = hist.get("bins") or []
        fig, ax = plt.subplots(figsize=(6.5, 3.8))
        if bins:
            lo_all = min(b["lower"] for b in bins)
            hi_all = max(b["upper"] for b in bins)
            # The features are counts: stratum k holds the integers of (q_{k-1}, q_k], drawn as
            # [q_{k-1} + 1, q_k + 1) on the axis, where a log2 bin [lower, upper) holds lower..upper-1.
            qs = [q for q in bounds.get(feat, [])]
            edges = [lo_all, *[q + 1 for q in qs], hi_all]
            for k, name in enumerate(names[: len(edges) - 1]):
                a, b = max(edges[k], lo_all), min(edges[k + 1], hi_all)
                if b <= a:
                    continue
                ax.axvspan(a, b, color=STRATUM_COLOURS.get(name, "#eeeeee"), zorder=0)
                s = sizes.get((feat, name), {})
                lo_v = "min" if k == 0 else f">{qs[k - 1]:g}"
                hi_v = f"≤{qs[k]:g}" if k < len(qs) else "max"
                ax.text(
                    math.sqrt(a * b),
                    0.97 - 0.13 * k,
                    f"{name} ({lo_v}..{hi_v})\n{s.get('population', '?')} C-sets",
                    transform=ax.get_xaxis_transform(),
                    ha="center",
                    va="top",
                    fontsize=8,
                    bbox={"facecolor": "white", "alpha": 0.7, "edgecolor": "none", "pad": 1},
                )
            ax.bar(
                [b["lower"] for b in bins],
                [b["count"] for b in bins],
                width=[b["upper"] - b["lower"] for b in bins],
                align="edge",
                color="#4c72b0",
                edgecolor="white",
                zorder=2,
            )
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_ylim(top=max(b["count"] for b in bins) * 40)
        else:
            ax.text(0.5, 0.5, "no positive values", ha="center", va="center", transform=ax.transAxes)
        ax.set_xlabel(f"{feat} (log2 bins)")
        ax.set_ylabel("C-sets (log)")
        ax.set_title(f"Fig. 10: {feat}, strata bounds {bounds.get(feat, [])}", fontsize=10)
        fig.tight_layout()
        out.append({"feature": feat, "src": _png(fig)})
    return out


def score_distribution(triples, thresholds: dict[str, float]) -> str | None:
    """Factuality and compliance scores per source as histograms, the thresholds drawn; None when
    no claim has a score (no triples/, or neither stage ran)."""
    if not any(_num(r.get(c)) is not None for r in triples for c in ("factual_score", "compliant_score")):
        return None
    plt = _pyplot()
    sources = sorted({r["source"] for r in triples}, key=lambda s: (s != HUMAN, s))
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, (col, stage) in zip(axes, (("factual_score", "factuality"), ("compliant_score", "compliance"))):
        for s in sources:
            vals = [v for r in triples if r["source"] == s and (v := _num(r.get(col))) is not None]
            if vals:
                ax.hist(vals, bins=[i / 20 for i in range(21)], alpha=0.55, label=f"{s} ({len(vals)})")
        t = thresholds.get(stage)
        if t is not None:
            ax.axvline(t, color="black", linestyle="--", linewidth=1)
            ax.annotate(
                f"threshold {t:g}",
                (t, 0.5),
                xycoords=("data", "axes fraction"),
                xytext=(4, 0),
                textcoords="offset points",
                fontsize=8,
                va="center",
                rotation=90,
            )
        ax.set_xlim(0, 1)
        ax.set_xlabel(f"{stage} score")
        ax.set_ylabel("claims")
        ax.set_title(f"{stage}: score per judged claim")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return _png(fig)


def benchmark(root: Folder) -> list[dict[str, Any]]:
    """Each agents-benchmark configuration under ``root/agents_bench/results`` (what
    ``jobs/agents_bench.py run`` writes): its per-task metrics and the precision-recall plot."""
    import pyarrow.parquet as pq

    results = root / "agents_bench" / "results"
    out = []
    if not results.isdir():
        return out
    for name in sorted(results.ls("*")):
        conf = results / name
        if not conf.isfile("metrics.parquet"):
            continue
        with conf.open("metrics.parquet") as fh:
            metrics = pq.read_table(fh).to_pylist()
        src = None
        if conf.isfile("pr.png"):
            src = data_uri(conf.read_bytes("pr.png"))
        rows = [
            {
                "task": m["task"],
                "agent": m["agent"],
                "n": m["n"],
                "threshold": _fmt_score(m["threshold"]),
                "precision": _fmt_score(m["precision"]),
                "recall": _fmt_score(m["recall"]),
                "f1": _fmt_score(m["f1"]),
                "auroc": _fmt_score(m["auroc"]),
                "unanswered": m.get("unanswered", 0),
            }
            for m in metrics
        ]
        out.append({"config": conf.name, "metrics": rows, "plot": src})
    return out


# ---- rejection rates corrected for the judge -----------------------------------------------------

# per agent: the claims it judged on a page and the ones it rejected (scores' counts)
_JUDGED = {"factuality": ("n_valid", "n_factual"), "compliance": ("n_factual", "n_compliant")}


def calibration_note(record: dict[str, Any] | None) -> str:
    """Which calibration the evaluation applied (the file, the entry taken per agent, or why none
    was), from its run record's judge block (``udfs.runtime.judge_record``)."""
    judge = read_judge(record)
    if judge is None:
        return "not recorded (the run predates the judge's block): unknown"
    parts = []
    for agent, r in judge.agents.items():
        if r.entry is not None:
            parts.append(f"{agent}: entry {r.entry['id']}")
        else:
            why = next((p.why for p in r.threshold.passed_over if p.kind == "calibration"), "not taken")
            parts.append(f"{agent}: none ({why})")
    return f"{judge.calibration_file or 'no calibration file'}: " + "; ".join(parts)


def corrected_rates(con, record: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Per source and verdict agent: the observed rejection rate over the scored pages and the rate
    corrected for the judge's errors with its bootstrap interval (``udfs.scores.correction``),
    using the sensitivity and specificity the applied calibration measured on its test split. A
    rate that cannot be corrected says why (no calibration matched this agent, or the flags of
    the estimator)."""
    from udfs.scores.correction import CI_LEVEL, JudgeAccuracy, corrected_rate

    ev = (record or {}).get("evaluation") or {}
    stages = ev.get("stages") or ["validity", "factuality", "compliance"]
    judge = read_judge(record)
    entries = {a: r.entry for a, r in (judge.agents if judge else {}).items() if r.entry is not None}
    rows = con.execute(
        "SELECT source, n_valid, n_factual, n_compliant FROM scores WHERE status = 'ok' ORDER BY source, page_key"
    ).fetchall()
    by_source: dict[str, list[tuple]] = {}
    for source, *counts in rows:
        by_source.setdefault(source, []).append(tuple(int(x or 0) for x in counts))
    out = []
    order = sorted(by_source, key=lambda src: (src != HUMAN, src))
    for source in order:
        for agent, (before, after) in _JUDGED.items():
            if agent not in stages:
                continue
            i, j = (
                ("n_valid", "n_factual", "n_compliant").index(before),
                ("n_valid", "n_factual", "n_compliant").index(after),
            )
            judged = [c[i] for c in by_source[source]]
            rejected = [max(0, c[i] - c[j]) for c in by_source[source]]
            n = sum(judged)
            observed = sum(rejected) / n if n else None
            row = {
                "source": source,
                "agent": agent,
                "pages": len(judged),
                "claims": n,
                "observed": f"{observed:.1%}" if observed is not None else "no claim judged",
                "corrected": None,
                "interval": None,
                "why": None,
            }
            test = (entries.get(agent) or {}).get("test") or {}
            if agent not in entries:
                row["why"] = "no calibration matched this agent: the judge's errors are not measured"
            elif n:
                c = corrected_rate(
                    judged,
                    rejected,
                    JudgeAccuracy(
                        int(test.get("tp") or 0),
                        int(test.get("fn") or 0),
                        int(test.get("tn") or 0),
                        int(test.get("fp") or 0),
                    ),
                )
                if c.corrected is not None:
                    row["corrected"] = f"{c.corrected:.1%}"
                if c.low is not None:
                    row["interval"] = f"{c.low:.1%} – {c.high:.1%} ({CI_LEVEL:.0%})"
                row["why"] = "; ".join(c.flags) or None
            out.append(row)
    return out


# ---- per generator and per type -------------------------------------------------------------------

NOT_ATTRIBUTED = "(not attributed)"


def judge_accuracy(record: dict[str, Any] | None) -> dict[str, Any]:
    """The judge's measured accuracy per agent (the test split of the calibration entry it applied;
    ``udfs.scores.correction.JudgeAccuracy``), for the agents that took one."""
    from udfs.scores.correction import JudgeAccuracy

    judge = read_judge(record)
    out = {}
    for agent, r in (judge.agents if judge else {}).items():
        if r.entry is not None:
            test = r.entry.get("test") or {}
            out[agent] = JudgeAccuracy(*(int(test.get(k) or 0) for k in ("tp", "fn", "tn", "fp")))
    return out


def group_sections(con, names: list[str], record: dict[str, Any] | None, width: float) -> dict[str, Any]:
    """Table 7 per generator of the human markup (the human source's pages, by scores'
    ``human_generator``) and per root schema.org type (every source's pages, by ``root_types``),
    with the rates and intervals of ``udfs.report.groups``; a group whose intervals are wider than
    ``width`` is pooled as "(other)". Each part says why it is empty (no column, no page)."""
    from udfs.report import groups as GR

    accuracy = judge_accuracy(record)
    out: dict[str, Any] = {"width": width, "generator": None, "types": [], "why_generator": None, "frames": {}}
    counts = "n_triples, n_valid, n_factual, n_compliant"
    if "human_generator" not in names:
        out["why_generator"] = "scores/ has no human_generator column (a run before pages/ named generators)"
    else:
        rows = con.execute(f"SELECT source, human_generator, {counts} FROM scores WHERE status = 'ok'").fetchall()
        # one repeat of the human source stands for its pages (the repeats judge the same pages)
        humans = sorted({s for s, *_ in rows if source_repeat(s)[0] == HUMAN}, key=lambda s: source_repeat(s)[1] or 0)
        units = [
            GR.Unit(gen or NOT_ATTRIBUTED, tuple(int(c or 0) for c in cs))
            for s, gen, *cs in rows
            if humans and s == humans[0]
        ]
        if not units:
            out["why_generator"] = "no human page with status ok"
        else:
            header, text, frame = GR.table_rows(GR.group_table(units, width, accuracy))
            out["generator"] = {"source": humans[0], "header": header, "rows": text}
            out["frames"]["by_generator"] = frame
    rows = con.execute(
        f"SELECT source, root_types, {counts} FROM scores WHERE status = 'ok' ORDER BY source"
    ).fetchall()
    frames = []
    for source in sorted({r[0] for r in rows}, key=lambda s: (source_repeat(s)[0] != HUMAN, s)):
        units = [
            GR.Unit("/".join(sorted(set(types or []))) or "(no type)", tuple(int(c or 0) for c in cs))
            for s, types, *cs in rows
            if s == source
        ]
        header, text, frame = GR.table_rows(GR.group_table(units, width, accuracy))
        out["types"].append({"source": source, "header": header, "rows": text})
        frames += [{"source": source, **f} for f in frame]
    out["frames"]["by_type"] = frames
    return out


# ---- metadata -----------------------------------------------------------------------------------

ANSWER_KEYS = (
    "stages",
    "strategy",
    "factuality_threshold",
    "compliance_threshold",
    "verdict_models",
    "judge_model",
    "context_window",
    "max_tokens",
    "max_claims",
    "correct",
    "generators",
    "generation",
    "validity_engine",
    "validity_strict",
    "validity_vocab",
    "validity_mode",
    "scores",
)


def settings_hash(record: dict[str, Any]) -> str:
    """sha256 of the evaluation settings that change answers (models, stages, strategy, thresholds,
    context, validity and scores settings; not where the service ran or how many workers): the
    one the evaluation recorded (``evaluation.settings_hash``, also in every row), else computed
    from an older record's settings."""
    if record.get("evaluation", {}).get("settings_hash"):
        return record["evaluation"]["settings_hash"]
    merged = {**record.get("config", {}), **record.get("evaluation", {})}
    keep = {k: merged.get(k) for k in ANSWER_KEYS}
    return hashlib.sha256(json.dumps(keep, sort_keys=True, default=str).encode()).hexdigest()


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


def run_sources(
    record: dict[str, Any] | None, score_sources: Iterable[str], triples: list[dict[str, Any]]
) -> tuple[list[str], list[str]]:
    """(models, stored): the models of the run (the generators its record names and the models
    that gave the triples' verdicts) and the sources of stored markups (``--markups``: markups made
    elsewhere and judged by this run, not models of it): every source of the scores that is neither
    ``human`` nor a generator, a repeat's (``source#r``) by its source's name. A record without its
    generators (older runs) cannot tell a stored source from a model: such sources count as models."""
    ev = (record or {}).get("evaluation") or {}
    verdicts = {m for r in triples if (m := r.get("model"))}
    others = {name for s in score_sources if (name := source_repeat(s)[0]) != HUMAN}
    if "models" in ev:
        generators = set(ev["models"] or ())
        return sorted(generators | verdicts), sorted(others - generators)
    return sorted(others | verdicts), []


def _model_file(model_ids: list[str]) -> str:
    """The model file behind the served model ids, from conf/serving.toml's embedded models (the
    run record names the models, not the file they were loaded from)."""
    if not model_ids:
        return "none: no model generated or judged"
    try:
        conf = load_serving_conf()
    except ConfigError as exc:
        return f"unknown ({exc})"
    for m in conf.embedded.models if conf.embedded else ():
        if m.model_id in model_ids:
            return m.model if m.model.endswith(".gguf") else f"{m.model}.gguf (embedded llama.cpp, conf/serving.toml)"
    return f"not an embedded model of conf/serving.toml ({', '.join(model_ids)}): see the service's configuration"


def _stored_note(record: dict[str, Any], stored: Sequence[str]) -> str:
    """The stored sources and the ``--markups`` table they came from (the run record's)."""
    table = (record.get("markups") or {}).get("table")
    return ", ".join(stored) + (f" (--markups {table})" if table else "")


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def run_metadata(record: dict[str, Any] | None, model_ids: list[str], stored: Sequence[str] = ()) -> dict[str, Any]:
    """Date, models (``run_sources``: the sources of stored markups in a row of their own),
    strategy, thresholds and where they came from, the settings hash, versions."""
    rec = record or {}
    ev = {**rec.get("config", {}), **rec.get("evaluation", {})}
    judge = read_judge(rec)
    rows = [
        (
            "evaluated",
            f"{rec.get('started_at', 'unknown')} to {rec.get('finished_at', 'unknown')}"
            if rec
            else "unknown: scores/_run.json not found",
        ),
        ("report built", dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")),
        ("models (generation and verdicts)", ", ".join(model_ids) or "none recorded"),
        *([("stored markups (sources, not models)", _stored_note(rec, stored))] if stored else []),
        ("model file", _model_file(model_ids)),
        ("stages", ", ".join(ev.get("stages") or []) or "unknown"),
        ("strategy", judge.strategy if judge else "unknown"),
        *(
            (
                f"{a} threshold",
                f"{judge.agents[a].threshold.value:g} from {judge.agents[a].threshold.origin.describe()}"
                if judge and a in judge.agents
                else "unknown: not recorded",
            )
            for a in ("factuality", "compliance")
        ),
        (
            "factuality questions",
            " → ".join(judge.agents["factuality"].order) + f" (in this order; gate {judge.agents['factuality'].gate:g})"
            if judge
            else "unknown",
        ),
        ("pages limit", f"{ev.get('limit', 'unknown')}, order {ev.get('order', 'unknown')}"),
        (
            "validity",
            f"{ev.get('validity_mode') or 'schemaorg'} mode"
            + (
                " (the paper's filter)"
                if ev.get("validity_mode") == "paper"
                else f", {ev.get('validity_engine', 'unknown')} engine, {'strict' if ev.get('validity_strict') else 'lenient'} literals"
            ),
        ),
        ("calibration", calibration_note(rec)),
        ("settings hash", settings_hash(rec) if rec else "unknown"),
        (
            "versions",
            ", ".join(f"{d} {_version(d)}" for d in ("pyspark", "ray", "duckdb"))
            + f", python {platform.python_version()} (report) / {rec.get('python', 'unknown')} (evaluation)",
        ),
    ]
    thresholds = {a: r.threshold.value for a, r in judge.agents.items()} if judge else {}
    return {"rows": rows, "thresholds": thresholds}


# ---- the report ----------------------------------------------------------------------------------


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


def _further_sections(ctx, frames, con, ds, record, triples, counting: str, t7, group_width: float) -> None:
    """The sections after the corrected rates, into ``ctx`` (the page) and ``frames`` (the CSVs):
    the repeated runs, the per-generator and per-type tables, GraphCorrect."""
    import pandas as pd

    rates = repeat_rates(t7)
    ctx["repeats"] = repeats_table(rates) if rates else None
    ctx["repeats_plot"] = data_uri(repeats_plot(rates)) if rates else None
    if rates:
        frames["repeats"] = pd.DataFrame(ctx["repeats"])
    ctx["groups"] = group_sections(con, ds.schema.names, record, group_width)
    for name, frame in ctx["groups"].pop("frames").items():
        frames[name] = pd.DataFrame(frame)
    ctx["graph_correct"] = graph_correct(con, record, triples, counting)
    frames["graph_correct"] = pd.DataFrame(
        ctx["graph_correct"]["rows"],
        columns=["source", "pages", "corrected", "after_factuality", "corrected_kept"],
    )
    frames["graph_correct_examples"] = pd.DataFrame(
        ctx["graph_correct"]["examples"], columns=["source", "page_url", "claim", "value", "corrected_value"]
    )


def build(
    scores: list[str], root: Folder, pages: Folder | None = None, paper_source: str = "", *, group_width: float
) -> Report:
    """Everything the page shows, from the ``scores`` table and what ``root`` holds; with
    ``paper_source`` (the paper's folder the pages were imported from: a bundle or a checkout), the
    "paper's pages" section (``udfs.report.paper_pages``). ``group_width``: the widest interval a
    group of the per-generator and per-type tables may have to be shown on its own ([report]
    group_interval_width)."""
    import duckdb
    import pandas as pd

    src = Sources(scores=scores, root=root, pages=pages)
    con = duckdb.connect()
    ds = parquet_dataset(scores)
    con.register("scores", ds)
    check_one_row_per_key(con, ds)
    strata, strata_note = _strata(src)
    con.register("strata", strata)
    counting = triple_counting(con)
    frames = tables(con, counting)
    score_rows = ds.to_table(columns=["page_key", "source", "status"]).to_pydict()
    tri_ds = src.dataset("triples")
    triples = (
        tri_ds.to_table(columns=[c for c in TRIPLE_COLUMNS if c in tri_ds.schema.names]).to_pylist()
        if tri_ds is not None
        else []
    )
    record = src.run_record("scores")
    model_ids, stored = run_sources(record, score_rows["source"], triples)
    meta = run_metadata(record, model_ids, stored)
    t7, t8 = frames["table7"], frames["table8"]
    # strata overlap among the evaluated pages: a page in two strata is a row in both
    evaluated = set(score_rows["page_key"])
    in_strata = strata[strata["page_key"].isin(evaluated)]
    per_key = in_strata.groupby("page_key").size()
    overlap = int((per_key > 1).sum()) if len(in_strata) else None
    bench = benchmark(root)
    rejected, left = rejections(triples)
    stage_png = stage_plot(t7)
    ctx = {
        "title": "LLM4Schema.org evaluation report",
        "meta": meta["rows"],
        "funnel": funnel(src, score_rows),
        "stage_titles": STAGE_TITLES,
        "paper_citation": paper.CITATION,
        "table7_header": TABLE7_HEADER,
        "table7_counting": COUNTINGS[counting],
        "table7": table7_rows(t7),
        "table8_header": TABLE8_HEADER,
        "table8": table8_rows(t8),
        "footnotes7": footnotes(table7_rows(t7)),
        "footnotes8": footnotes(table8_rows(t8)),
        "table8_note": strata_note,
        "overlap": overlap,
        "strata_pages": int(in_strata["page_key"].nunique()),
        "strata_rows": len(in_strata),
        "stage_plot": data_uri(stage_png),
        "histograms": histogram_figures(src.run_record("samples")),
        "rejections": rejected,
        "rejections_left": left,
        "triples_note": None if tri_ds is not None else "triples/ not found under the output root",
        "score_plot": score_distribution(triples, meta["thresholds"]),
        "benchmarks": bench,
        "corrected_rates": corrected_rates(con, record),
        "bench_root": str(root / "agents_bench"),
        "failures": frames["failures"].to_dict("records"),
    }
    frames["corrected_rates"] = pd.DataFrame(ctx["corrected_rates"])
    _further_sections(ctx, frames, con, ds, record, triples, counting, t7, group_width)
    ctx["paper_pages"] = None
    if paper_source:
        ctx["paper_pages"] = paper_pages_section(src, ds, triples, paper_source, group_width)
        frames.update(ctx["paper_pages"].pop("frames"))
    return Report(context=ctx, frames=frames, table7_text=table7_text(t7, counting), stage_png=stage_png)


def paper_pages_section(
    src: Sources, scores_ds, triples: list[dict[str, Any]], paper_source: str, group_width: float
) -> dict[str, Any]:
    """The tables of the "paper's pages" section and their frames, or why there are none."""
    import pandas as pd

    from udfs.corpus.pset import PsetError, open_pset
    from udfs.report import paper_pages

    pages_ds = src.dataset("pages")
    need = ["page_url", "page_id", "judge_text", "paper_text", "paper_commit"]
    if pages_ds is None or not set(need) <= set(pages_ds.schema.names):
        return {"why": "pages/ is not a table of jobs/import_pset.py (no page_id and paper_text)", "frames": {}}
    pages = pages_ds.to_table(columns=need).to_pylist()
    commits = {p["paper_commit"] for p in pages}
    if len(commits) != 1:
        return {"why": f"pages/ mixes commits of the paper's folder: {sorted(commits)}", "frames": {}}
    cols = ["page_url", "source", "status", "n_triples", "n_valid", "n_factual", "n_compliant"]
    scores = [r for r in scores_ds.to_table(columns=cols).to_pylist() if r["status"] == "ok"]
    try:
        tables, frames = paper_pages.section(
            open_pset(paper_source), pages, scores, triples, commits.pop() or None, group_width=group_width
        )
    except PsetError as exc:
        return {"why": f"the paper's folder cannot be read: {exc}", "frames": {}}
    frames = {k: pd.DataFrame(v, columns=paper_pages.FRAME_COLUMNS.get(k)) for k, v in frames.items()}
    return {"why": None, "tables": tables, "frames": frames}


def render(report: Report) -> str:
    """The page: the Jinja2 template over the report's context, autoescaped."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("udfs.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template("report.html.j2").render(**report.context)


def write(report: Report, out: Folder) -> Folder:
    """``out`` gets index.html (self-contained), one CSV per table and the Table 7 plot
    (``triples_per_stage.png``); returns the page's location."""
    for name, df in report.frames.items():
        out.write_text(f"{name}.csv", df.to_csv(index=False))
    out.write_bytes("triples_per_stage.png", report.stage_png)
    out.write_text("index.html", render(report))
    return out / "index.html"
