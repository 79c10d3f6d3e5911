"""WebDataCommons N-Quads as Spark SQL expressions (JVM only: no Python on the hot path).

WDC writes one quad per line: ``<s> <p> o <page-url>   .`` where ``o`` is an IRI, a blank node
(``_:n8b2...xb0``) or a literal with escapes and an optional language tag or datatype. A fifth
term (a second graph/provenance term some N-Quads producers emit) is accepted and ignored.

Parsing is one Java regex per line: ``regexp_replace`` rewrites a valid line into
``s \\x01 p \\x01 g \\x01 x \\x01 o`` and leaves an invalid line untouched, so "line changed" is the
validity test and ``split(..., 5)`` gives the terms. The object goes last because only a literal
may contain a raw ``\\x01``; IRIs and blank node labels cannot (control characters are excluded),
so the first four fields are exact and the object is the remainder.

All quantifiers are possessive and literals use the unrolled-loop form: Java's regex engine
recurses per repetition of an alternation, and WDC literals run to hundreds of kilobytes.
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from udfs.vocab import RDF_TYPE

# Stricter than the N-Quads grammar would be wrong for WDC: real IRIs carry `{search_term_string}`
# (SearchAction targets) and other characters the grammar excludes; whitespace, controls, quotes
# and brackets still end an IRI.
_IRI_CHAR = r"""[^\x00-\x20<>"\\]"""
_UCHAR = r"\\(?:u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8})"
IRI = rf"<{_IRI_CHAR}*+(?:{_UCHAR}{_IRI_CHAR}*+)*+>"
_BNODE_CHAR = r"""[^\x00-\x20<>".]"""
BNODE = rf"_:{_BNODE_CHAR}++(?:\.++{_BNODE_CHAR}++)*+"
_ECHAR = r"""\\(?:[tbnrf"'\\]|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8})"""
_STR_CHAR = r'[^"\\\n\r]'
LITERAL = rf'"{_STR_CHAR}*+(?:{_ECHAR}{_STR_CHAR}*+)*+"(?:@[A-Za-z]++(?:-[A-Za-z0-9]++)*+|\^\^{IRI})?+'

SUBJECT = rf"(?:{IRI}|{BNODE})"
OBJECT = rf"(?:{IRI}|{BNODE}|{LITERAL})"
QUAD = rf"^[ \t]*+({SUBJECT})[ \t]++({IRI})[ \t]++({OBJECT})[ \t]++({SUBJECT})(?:[ \t]++({SUBJECT}))?+[ \t]*+\.[ \t\r]*+$"

SEP = "\u0001"
_REWRITE = f"$1{SEP}$2{SEP}$4{SEP}$5{SEP}$3"

SCHEMA_IRI_LOCAL = r"^<https?://(?:www\.)?schema\.org/([^>]+)>$"
RDF_TYPE_TERM = f"<{RDF_TYPE}>"

# Reasons a line is rejected, most specific first. Computed only for lines that failed the
# parse, so their cost does not matter.
REASON_UNDECODABLE = "undecodable bytes (invalid UTF-8, or a U+FFFD replacement character)"
REASON_TRUNCATED = "truncated line (no terminating ' .')"
REASON_QUOTES = "unbalanced quotes"
REASON_BRACKETS = "unbalanced angle brackets"
REASON_TERM_COUNT = "wrong term count"
REASON_MALFORMED = "malformed term (bad IRI, blank node, escape, language tag or datatype)"


def valid_utf8(line: Column) -> Column:
    """The text source hands the JVM the raw bytes of a line; Spark 4 can check them. A U+FFFD
    replacement character (what other decoders leave behind) is treated as damage too."""
    ok = F.instr(line, "\ufffd") == 0
    return F.is_valid_utf8(line) & ok if hasattr(F, "is_valid_utf8") else ok


def printable(line: Column) -> Column:
    """A line safe to store as a Parquet string: invalid UTF-8 sequences become U+FFFD."""
    return F.make_valid_utf8(line) if hasattr(F, "make_valid_utf8") else line


def parse(lines: DataFrame, column: str = "line", out: str = "q") -> DataFrame:
    """Add a struct column ``out`` = (ok, blank, s, p, o, g); ok is false for a malformed line.

    The rewrite is its own projection so that the regex runs once per line: Spark does not
    collapse a projection into one that would evaluate an expensive expression several times.
    """
    line = F.col(column)
    with_rewrite = lines.withColumn("_rewritten", F.regexp_replace(line, QUAD, _REWRITE))
    rewritten = F.col("_rewritten")
    parts = F.split(rewritten, SEP, 5)
    blank = (F.trim(line) == "") | F.ltrim(line).startswith("#")
    ok = (rewritten != line) & ~blank & valid_utf8(line)
    return with_rewrite.withColumn(out, F.struct(
        ok.alias("ok"),
        blank.alias("blank"),
        F.when(ok, parts.getItem(0)).alias("s"),
        F.when(ok, parts.getItem(1)).alias("p"),
        F.when(ok, parts.getItem(4)).alias("o"),
        F.when(ok, parts.getItem(2)).alias("g"),
    )).drop("_rewritten")


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


def schema_local(term: Column) -> Column:
    """``<https://www.schema.org/name>`` -> ``name``; empty string outside the schema.org namespace."""
    return F.regexp_extract(term, SCHEMA_IRI_LOCAL, 1)


def iri_value(term: Column) -> Column:
    """``<http://x/>`` -> ``http://x/``; other terms unchanged."""
    return F.when(term.startswith("<") & term.endswith(">"), term.substr(F.lit(2), F.length(term) - 2)).otherwise(term)
