"""The two modes compared (``--compare-modes``): both readings of the same markups counted the
paper's way, the triples they disagree on, and which mode removes each and why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from udfs.agents.validity.findings import (
    DATATYPE,
    MODES,
    RETIRED,
    UNDEFINED_PROPERTY,
    UNDEFINED_TYPE,
    UNTYPED,
    VALUE_TYPE,
    Findings,
    Removal,
    removal_verdicts,
    retired_terms,
)
from udfs.agents.validity.paper import paper_removals, paper_triples, with_subtrees
from udfs.schemaorg.markup import Literal, Markup
from udfs.schemaorg.shapes import ShapeModel


def schemaorg_removals(markup: Markup, f: Findings, model: ShapeModel) -> dict[tuple, Removal]:
    """What the default (schemaorg) reading removes from ``markup``: each value no type of its
    subject accepts (the union of a multi-typed entity's properties), and the subtrees this cuts
    off, as :func:`udfs.schemaorg.markup.to_jsonld` writes the cleaned markup."""
    ents = markup.entities
    retired = retired_terms(model.release)
    removed: dict[tuple, Removal] = {}
    for s, ent in ents.items():
        for p, values in ent.properties.items():
            for v in values:
                k = (s, p, v.key())
                if not ent.types:
                    if s in f.untyped:
                        removed[k] = (1, UNTYPED, "entity has no @type")
                elif k in f.bad_values:
                    removed[k] = (
                        3,
                        DATATYPE if isinstance(v, Literal) else VALUE_TYPE,
                        f"{p}: value of an unexpected type",
                    )
                elif not any((s, t) not in f.unknown_types and (s, p, t) not in f.not_allowed for t in ent.types):
                    known = [t for t in ent.types if (s, t) not in f.unknown_types]
                    if not known:
                        t = ent.types[0]
                        removed[k] = (1, RETIRED if t in retired else UNDEFINED_TYPE, f"{t} is not a schema.org type")
                    else:
                        removed[k] = (
                            2,
                            RETIRED if p in retired else UNDEFINED_PROPERTY,
                            f"{p} is not a property of {'/'.join(known)}",
                        )
    return with_subtrees(markup, removed, {})


@dataclass
class ModeComparison:
    """Both readings of a set of markups, counted the paper's way (summed over markups)."""

    markups: int = 0
    triples: int = 0
    kept: dict[str, int] = field(default_factory=lambda: {m: 0 for m in MODES})
    # (mode that removes the triple, cause) -> triples on which the modes disagree
    disagreements: dict[tuple[str, str], int] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)  # each disagreeing triple

    def share(self, mode: str) -> float | None:
        return self.kept[mode] / self.triples if self.triples else None

    def add(self, markup: Markup, findings: Findings, model: ShapeModel, name: str = "") -> None:
        """Count one markup; ``findings`` are the schemaorg reading's (any engine, any strictness)."""
        paper_removed, _dead = paper_removals(markup, model)
        rows = {
            m: {
                (r["property"], r["value"], r["entity_type"] or ""): r
                for r in paper_triples(markup, removal_verdicts(markup, rem, model))
            }
            for m, rem in (("paper", paper_removed), ("schemaorg", schemaorg_removals(markup, findings, model)))
        }
        self.markups += 1
        self.triples += len(rows["paper"])
        for mode in MODES:
            self.kept[mode] += sum(r["valid"] for r in rows[mode].values())
        for key, p in rows["paper"].items():
            s = rows["schemaorg"][key]
            if p["valid"] == s["valid"]:
                continue
            loser = "paper" if not p["valid"] else "schemaorg"
            cause = rows[loser][key]["cause"]
            self.disagreements[(loser, cause)] = self.disagreements.get((loser, cause), 0) + 1
            self.rows.append(
                {
                    "file": name,
                    "property": key[0],
                    "value": key[1],
                    "entity_type": p["entity_type"],
                    "removed_by": loser,
                    "cause": cause,
                    "reason": rows[loser][key]["reason"],
                }
            )

    def summary(self) -> dict[str, Any]:
        return {
            "markups": self.markups,
            "triples": self.triples,
            **{f"kept_{m}": self.kept[m] for m in MODES},
            **{f"share_{m}": round(self.share(m), 4) if self.triples else None for m in MODES},
            "disagreements": {f"removed by {m}: {c}": n for (m, c), n in sorted(self.disagreements.items())},
        }
