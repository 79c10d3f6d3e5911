"""Table 7 per generator of the human markup: the human source's pages grouped by the software that
wrote their markup (scores' ``human_generator``), with the rates and intervals of
``udfs.report.groups``; a group whose intervals are too wide is pooled as "(other)"."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from udfs.evaluation.evaluator import HUMAN, source_repeat
from udfs.report import groups as GR
from udfs.report.sections import Part
from udfs.runtime.judge_record import read_judge

if TYPE_CHECKING:
    from udfs.report.inputs import Run

BLOCK = "by_generator"
PER_RUN = True
NOT_ATTRIBUTED = "(not attributed)"
COUNTS = "n_triples, n_valid, n_factual, n_compliant"


def judge_accuracy(record: dict[str, Any] | None) -> dict[str, Any]:
    """The judge's measured accuracy per agent (the test split of the calibration entry it applied;
    ``udfs.scores.confusion.Confusion``), for the agents that took one."""
    from udfs.scores.confusion import Confusion

    judge = read_judge(record)
    out = {}
    for agent, r in (judge.agents if judge else {}).items():
        if r.entry is not None:
            test = r.entry.get("test") or {}
            out[agent] = Confusion(**{k: int(test.get(k) or 0) for k in ("tp", "fn", "tn", "fp")})
    return out


def generator_table(con, names: list[str], accuracy: dict[str, Any], width: float) -> dict[str, Any]:
    """``generator`` (the table of the human source's pages with status ok per ``human_generator``:
    its source, header and rows), or None and ``why`` (no column, no page); ``frame``: its rows
    as CSV records. ``names``: the scores' columns."""
    if "human_generator" not in names:
        return {
            "generator": None,
            "why": "scores/ has no human_generator column (a run before pages/ named generators)",
        }
    rows = con.execute(f"SELECT source, human_generator, {COUNTS} FROM scores WHERE status = 'ok'").fetchall()
    # one repeat of the human source stands for its pages (the repeats judge the same pages)
    humans = sorted({s for s, *_ in rows if source_repeat(s)[0] == HUMAN}, key=lambda s: source_repeat(s)[1] or 0)
    units = [
        GR.Unit(gen or NOT_ATTRIBUTED, tuple(int(c or 0) for c in cs))
        for s, gen, *cs in rows
        if humans and s == humans[0]
    ]
    if not units:
        return {"generator": None, "why": "no human page with status ok"}
    header, text, frame = GR.table_rows(GR.group_table(units, width, accuracy))
    return {"generator": {"source": humans[0], "header": header, "rows": text}, "why": None, "frame": frame}


def data(run: Run) -> Part:
    import pandas as pd

    width = run.opts.group_width
    out = generator_table(run.con, run.ds.schema.names, judge_accuracy(run.record), width)
    frames = {"by_generator": pd.DataFrame(out.pop("frame"))} if "frame" in out else {}
    return Part({**out, "width": width}, frames)
