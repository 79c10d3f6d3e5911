"""Table 7 per schema.org type: each source's pages grouped by the types of the human markup's root
entity (scores' ``root_types``), with the rates, intervals and pooling of ``udfs.report.groups``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from udfs.evaluation.evaluator import HUMAN, source_repeat
from udfs.report import groups as GR
from udfs.report.sections import Part
from udfs.report.sections.by_generator import COUNTS, judge_accuracy

if TYPE_CHECKING:
    from udfs.report.inputs import Run

BLOCK = "by_type"
PER_RUN = True


def type_tables(con, accuracy: dict[str, Any], width: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(tables, frame): per source (human first) the table of its pages with status ok per root
    type ("(no type)": none), and every table's rows as CSV records with their source."""
    rows = con.execute(
        f"SELECT source, root_types, {COUNTS} FROM scores WHERE status = 'ok' ORDER BY source"
    ).fetchall()
    tables, frame = [], []
    for source in sorted({r[0] for r in rows}, key=lambda s: (source_repeat(s)[0] != HUMAN, s)):
        units = [
            GR.Unit("/".join(sorted(set(types or []))) or "(no type)", tuple(int(c or 0) for c in cs))
            for s, types, *cs in rows
            if s == source
        ]
        header, text, part = GR.table_rows(GR.group_table(units, width, accuracy))
        tables.append({"source": source, "header": header, "rows": text})
        frame += [{"source": source, **f} for f in part]
    return tables, frame


def data(run: Run) -> Part:
    import pandas as pd

    tables, frame = type_tables(run.con, judge_accuracy(run.record), run.opts.group_width)
    return Part({"tables": tables}, {"by_type": pd.DataFrame(frame)})
