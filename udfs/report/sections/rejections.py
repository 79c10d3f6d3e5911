"""Rejections per property: per source and property, the triples in and those each agent rejected
(validity: the rule and its reason; factuality and compliance: the verdict), with example
rejected claims and their scores."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from udfs.evaluation.evaluator import HUMAN
from udfs.report.sections import Part
from udfs.report.values import claim, fmt_score

if TYPE_CHECKING:
    from udfs.report.inputs import Run

BLOCK = "rejections"
PER_RUN = True
EXAMPLES_PER_PROPERTY = 2
MAX_PROPERTIES = 15


def _stage(r: dict[str, Any], g: dict[str, Any]) -> str | None:
    """The stage that rejected triple ``r`` (None: kept, or not judged, counted in ``g``), with a
    validity rejection's rule and reason counted in ``g``."""
    if r.get("valid") is False:
        reason = r.get("valid_reason") or "invalid"
        rule = r.get("validity_rule")
        key = f"rule {rule}: {reason}" if rule is not None else reason
        g["reasons"][key] = g["reasons"].get(key, 0) + 1
        return "validity"
    if r.get("factual") is False:
        return "factuality"
    if r.get("factual") is None and r.get("factual_error"):
        g["unjudged"] += 1
    elif r.get("compliant") is False:
        return "compliance"
    elif r.get("compliant") is None and r.get("compliant_error"):
        g["unjudged"] += 1
    return None


def _example(r: dict[str, Any], stage: str) -> dict[str, Any]:
    why = r.get("valid_reason") if stage == "validity" else r.get("compliant_note") if stage == "compliance" else None
    return {
        "stage": stage,
        "claim": claim(r),
        "factual": fmt_score(r.get("factual_score")),
        "compliant": fmt_score(r.get("compliant_score")),
        "why": why or "",
    }


def rejections(triples) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Per source and property: triples in, rejected by each agent, with example rejected claims
    and scores. The properties with the most rejections first, at most ``MAX_PROPERTIES`` per
    source; the second value says how many more properties each source had."""
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
        stage = _stage(r, g)
        if stage:
            g[stage] += 1
            if len(g["examples"]) < EXAMPLES_PER_PROPERTY:
                g["examples"].append(_example(r, stage))
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


def data(run: Run) -> Part:
    rows, left = rejections(run.triples)
    return Part({"rows": rows, "left": left, "triples_note": run.triples_note})
