"""How the report counts triples for Tables 7 and 8 over the DuckDB view ``scores``: the rows of
triples/, or the paper's counting where a run in validity mode paper carries it."""

from __future__ import annotations

from udfs.evaluation.evaluator import HUMAN

# {c}: "" for the rows of triples/, "_paper" for the paper's counting (triple_counting)
COUNTS_SQL = """
    sum(n_triples{c})::BIGINT AS triples_in, sum(n_valid{c})::BIGINT AS after_validity,
    sum(n_factual{c})::BIGINT AS after_factuality, sum(n_compliant{c})::BIGINT AS after_compliance,
    round(1 - sum(n_compliant{c}) / nullif(sum(n_triples{c}), 0), 3) AS rejection_rate,
    avg(memr_h) AS memr_h, avg(memr_l) AS memr_l, avg(key_f1) AS key_f1,
    count(*) AS pages, count(memr_h) AS memr_pages
"""


def counts_sql(counting: str) -> str:
    """The aggregate columns of Tables 7 and 8 over the scores, triples counted as ``counting`` says."""
    return COUNTS_SQL.format(c="_paper" if counting == "paper" else "")


def triple_counting(con) -> str:
    """``paper`` when every scored page (status ok) of the DuckDB view ``scores`` carries the paper's
    counting (a run in validity mode paper), else ``rows``: the key of :data:`COUNTINGS`."""
    if "n_triples_paper" not in {r[0] for r in con.execute("DESCRIBE scores").fetchall()}:
        return "rows"
    missing, ok = con.execute(
        "SELECT count(*) FILTER (WHERE n_triples_paper IS NULL), count(*) FROM scores WHERE status = 'ok'"
    ).fetchone()
    return "paper" if ok and not missing else "rows"


def frame(con, counting: str = "rows"):
    """Table 7 as a DataFrame from the DuckDB view ``scores``: per source, over the pages with
    status ok, the human source first."""
    return con.execute(f"""
        SELECT source, {counts_sql(counting)} FROM scores WHERE status = 'ok'
        GROUP BY source ORDER BY source = '{HUMAN}' DESC, source""").df()
