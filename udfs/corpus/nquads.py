"""Why a WebDataCommons N-Quads line is malformed, as Spark SQL expressions.

WDC writes one quad per line: ``<s> <p> o <page-url>   .`` where ``o`` is an IRI, a blank node
(``_:n8b2...xb0``) or a literal with escapes and an optional language tag or datatype. The lines
are parsed on the JVM by a hand-written scanner (udfs/corpus/jvm/llm4schema/EntityPageScan.java, whose
comment gives the accepted grammar); the reason of a line it rejects is computed here, on the
rejected lines only, so its cost does not matter.
"""
from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

# Reasons a line is rejected, most specific first.
REASON_UNDECODABLE = "undecodable bytes (invalid UTF-8, or a U+FFFD replacement character)"
REASON_TRUNCATED = "truncated line (no terminating ' .')"
REASON_QUOTES = "unbalanced quotes"
REASON_BRACKETS = "unbalanced angle brackets"
REASON_TERM_COUNT = "wrong term count"
REASON_MALFORMED = "malformed term (bad IRI, blank node, escape, language tag or datatype)"


def valid_utf8(line: Column) -> Column:
    """The scan decodes each line with U+FFFD in place of invalid UTF-8 bytes, so a U+FFFD is
    damage; Spark 4's is_valid_utf8 also catches raw invalid bytes in a line from elsewhere."""
    ok = F.instr(line, "\ufffd") == 0
    return F.is_valid_utf8(line) & ok if hasattr(F, "is_valid_utf8") else ok


def reject_reason(line: Column) -> Column:
    """Why a line that failed ``parse`` is malformed (the term count reported in the reason)."""
    no_escapes = F.regexp_replace(line, r"\\.", "")
    quotes = F.length(no_escapes) - F.length(F.regexp_replace(no_escapes, '"', ""))
    no_literals = F.regexp_replace(line, r'"[^"\\]*+(?:\\.[^"\\]*+)*+"', '""')
    opens = F.length(no_literals) - F.length(F.regexp_replace(no_literals, "<", ""))
    closes = F.length(no_literals) - F.length(F.regexp_replace(no_literals, ">", ""))
    body = F.regexp_replace(F.trim(no_literals), r"\s*\.\s*$", "")
    n_terms = F.size(F.split(F.trim(body), r"\s+"))
    return (
        F.when(~valid_utf8(line), F.lit(REASON_UNDECODABLE))
        .when(~F.rtrim(line).endswith("."), F.lit(REASON_TRUNCATED))
        .when(quotes % 2 == 1, F.lit(REASON_QUOTES))
        .when(opens != closes, F.lit(REASON_BRACKETS))
        .when(~n_terms.isin(4, 5), F.concat(F.lit(REASON_TERM_COUNT + " ("), n_terms.cast("string"), F.lit(")")))
        .otherwise(F.lit(REASON_MALFORMED))
    )
