"""Why a WebDataCommons N-Quads line is malformed, as Spark SQL expressions.

WDC writes one quad per line: ``<s> <p> o <page-url>   .`` where ``o`` is an IRI, a blank node
(``_:n8b2...xb0``) or a literal with escapes and an optional language tag or datatype. The lines
are parsed on the JVM by a hand-written scanner (udfs/corpus/jvm/llm4schema/EntityPageScan.java, whose
comment gives the accepted grammar). The scanner itself names the lines that are not UTF-8 and the
lines over ``max_line_bytes`` (it sees their bytes; the raw text of a reject has U+FFFD in place of
invalid bytes, and a valid line may hold U+FFFD too); the reason of any other line it rejects is
computed here, on the rejected lines only, so its cost does not matter.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

# Reasons a line is rejected, most specific first.
REASON_UNDECODABLE = "undecodable bytes (invalid UTF-8)"
REASON_TOO_LONG = "line longer than max_line_bytes"
REASON_TRUNCATED = "truncated line (no terminating ' .')"
REASON_QUOTES = "unbalanced quotes"
REASON_BRACKETS = "unbalanced angle brackets"
REASON_TERM_COUNT = "wrong term count"
REASON_MALFORMED = "malformed term (bad IRI, blank node, escape, language tag or datatype)"


def reject_reason(line: Column) -> Column:
    """Why a well-formed UTF-8 line of normal length that failed ``parse`` is malformed (the term
    count reported in the reason)."""
    no_escapes = F.regexp_replace(line, r"\\.", "")
    quotes = F.length(no_escapes) - F.length(F.regexp_replace(no_escapes, '"', ""))
    no_literals = F.regexp_replace(line, r'"[^"\\]*+(?:\\.[^"\\]*+)*+"', '""')
    opens = F.length(no_literals) - F.length(F.regexp_replace(no_literals, "<", ""))
    closes = F.length(no_literals) - F.length(F.regexp_replace(no_literals, ">", ""))
    body = F.regexp_replace(F.trim(no_literals), r"\s*\.\s*$", "")
    n_terms = F.size(F.split(F.trim(body), r"\s+"))
    return (
        F.when(~F.rtrim(line).endswith("."), F.lit(REASON_TRUNCATED))
        .when(quotes % 2 == 1, F.lit(REASON_QUOTES))
        .when(opens != closes, F.lit(REASON_BRACKETS))
        .when(n_terms != 4, F.concat(F.lit(REASON_TERM_COUNT + " ("), n_terms.cast("string"), F.lit(")")))
        .otherwise(F.lit(REASON_MALFORMED))
    )
