"""How the report writes a value: a number that may be missing (never ``NaN``), a table cell with
its class, a score, a triple as a readable claim."""

from __future__ import annotations

import math
from typing import Any


def num(x: Any) -> float | None:
    """``x`` as a float, or None where it is missing or not a number (NaN included)."""
    if x is None:
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def cell(text: str | list[str], cls: str = "n") -> dict[str, Any]:
    """A table cell of the page: its lines of text and its class (n: a number, why: a reason
    instead of a value, paper: the paper's figure)."""
    return {"lines": [text] if isinstance(text, str) else list(text), "cls": cls}


def fmt_score(x: Any) -> str:
    v = num(x)
    return "—" if v is None else f"{v:.2f}"


def claim(r: dict[str, Any]) -> str:
    """A triple of triples/ as its claim text, or entity type / property: value where it has none."""
    if r.get("claim"):
        return r["claim"]
    value = "a node" if str(r["value"]).startswith("_:") else f'"{r["value"]}"'
    return f"{r.get('entity_type') or 'Thing'} / {r['property']}: {value}"
