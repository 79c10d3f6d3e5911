"""Pages without a score: per source and status (not ok), how many pages and an example reason."""

from __future__ import annotations

from typing import TYPE_CHECKING

from udfs.report.sections import Part

if TYPE_CHECKING:
    from udfs.report.inputs import Run

BLOCK = "failures"
PER_RUN = True


def frame(con):
    """The pages of the DuckDB view ``scores`` whose status is not ok, per source and status."""
    return con.execute("""
        SELECT source, status, count(*) AS pages, any_value(reason) AS example_reason
        FROM scores WHERE status <> 'ok' GROUP BY ALL ORDER BY ALL""").df()


def data(run: Run) -> Part:
    df = frame(run.con)
    return Part({"rows": df.to_dict("records")}, {"failures": df})
