"""Why a WebDataCommons N-Quads line is malformed, as Spark SQL expressions.

WDC writes one quad per line: ``<s> <p> o <page-url> [<extractor>]   .`` where ``o`` is an IRI, a
blank node (``_:n8b2...xb0``) or a literal with escapes and an optional language tag or datatype,
and the optional fifth term names the extractor (``<ex:html-microdata>``, ``<ex:html-rdfa>``,
``<ex:html-embedded-jsonld>``). W3C N-Quads has three or four terms (no graph term: the default
graph); the fifth is WDC's, read unless ``strict_nquads``. The lines are parsed on the JVM by a
hand-written scanner (udfs/corpus/jvm/llm4schema/EntityPageScan.java, whose comment gives the
accepted grammar). The scanner itself names the lines that are not UTF-8, the lines over
``max_line_bytes`` (it sees their bytes; the raw text of a reject has U+FFFD in place of invalid
bytes, and a valid line may hold U+FFFD too) and a fifth term under ``strict_nquads``; the reason
of any other line it rejects is computed here, on the rejected lines only, so its cost does not
matter.

The rules of a line as extractors write it (a byte order mark, UCHAR surrogate pairs, escapes
that are no Unicode scalar value) are udfs/runtime/lines.py's, which the scanner keeps: it gives
those reasons itself.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from udfs.runtime import lines as L

# Reasons a line is rejected, most specific first.
REASON_UNDECODABLE = L.REASON_UNDECODABLE
REASON_TOO_LONG = "line longer than max_line_bytes"
REASON_TRUNCATED = "truncated line (no terminating ' .')"
REASON_QUOTES = "unbalanced quotes"
REASON_BRACKETS = "unbalanced angle brackets"
REASON_TERM_COUNT = "wrong term count"
REASON_FIFTH_TERM_STRICT = (
    "wrong term count (5): a fifth term, which strict_nquads refuses (W3C N-Quads has four at most)"
)
REASON_MALFORMED = "malformed term (bad IRI, blank node, escape, language tag or datatype)"


# A term once the literals are blanked to "" and the IRIs to <>: an IRI, a blank node (up to white
# space or the start of the next term), a literal with its language tag or datatype, or any other
# run of characters (a bare 1.0: one malformed term). Terms need no white space between them, so
# they are counted by matching, not by splitting at spaces.
_TERM = r'<>|_:[^\s<>"]+|""(?:@[A-Za-z0-9-]*|\^\^<>)?|[^\s<>"]+'


def reject_reason(line: Column) -> Column:
    """Why a well-formed UTF-8 line of normal length that failed ``parse`` is malformed (the term
    count reported in the reason: three to five terms are a count the grammar has, so such a line
    is a malformed term)."""
    no_escapes = F.regexp_replace(line, r"\\.", "")
    quotes = F.length(no_escapes) - F.length(F.regexp_replace(no_escapes, '"', ""))
    no_literals = F.regexp_replace(line, r'"[^"\\]*+(?:\\.[^"\\]*+)*+"', '""')
    opens = F.length(no_literals) - F.length(F.regexp_replace(no_literals, "<", ""))
    closes = F.length(no_literals) - F.length(F.regexp_replace(no_literals, ">", ""))
    # A comment may follow the final '.'; a '#' inside an IRI or a literal starts none.
    no_comment = F.regexp_replace(F.regexp_replace(no_literals, r"<[^<>]*>", "<>"), r"#.*$", "")
    body = F.regexp_replace(F.trim(no_comment), r"\s*\.\s*$", "")
    n_terms = F.regexp_count(body, F.lit(_TERM))
    return (
        F.when(~F.rtrim(no_comment).endswith("."), F.lit(REASON_TRUNCATED))
        .when(quotes % 2 == 1, F.lit(REASON_QUOTES))
        .when(opens != closes, F.lit(REASON_BRACKETS))
        .when(~n_terms.between(3, 5), F.concat(F.lit(REASON_TERM_COUNT + " ("), n_terms.cast("string"), F.lit(")")))
        .otherwise(F.lit(REASON_MALFORMED))
    )
