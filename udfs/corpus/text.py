"""A page's text, the one generation reads and the one the factuality judge reads: the text
extractors (``TEXT_EXTRACTORS``: trafilatura's main text, html2text's whole page, and the main text
with what it drops appended, ``main_and_rest``) and the page's language. Plain Python over a
decoded page; ``udfs/corpus/html.py`` calls it under its time limit."""

from __future__ import annotations

import re
from typing import Sequence

TEXT_EXTRACTORS = ("trafilatura", "html2text", "main+rest")


def _trafilatura_text(html: str) -> str:
    import trafilatura

    return trafilatura.extract(html, include_comments=False, include_tables=True, deduplicate=False) or ""


def _html2text_text(html: str) -> str:
    import html2text

    h = html2text.HTML2Text()
    h.ignore_links = True
    h.ignore_images = True
    h.body_width = 0  # no hard wraps: chunking counts tokens, not lines
    return h.handle(html).strip()


_MD_MARKS = re.compile(r"^[\s#>*+\-|]+|[*_`|]+|\s+$")
_SPACES = re.compile(r"\s+")
# trafilatura keeps typographic quotes where html2text writes straight ones
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
REST_SEPARATOR = "\n\n"


def _line_key(line: str) -> str:
    """A line as it is compared with the main text: html2text's Markdown marks, case and
    spacing do not count (trafilatura writes "Author:" and "Stendhal" on two lines where
    html2text writes "Author: Stendhal")."""
    return _SPACES.sub(" ", _MD_MARKS.sub(" ", line)).strip().casefold().translate(_QUOTES)


def _holds(text: str, part: str) -> bool:
    """Whether ``part`` occurs in ``text`` as whole words ("4" is not held by "2024")."""
    start = text.find(part)
    while start >= 0:
        end = start + len(part)
        if (start == 0 or not (text[start - 1].isalnum() and part[0].isalnum())) and (
            end == len(text) or not (text[end].isalnum() and part[-1].isalnum())
        ):
            return True
        start = text.find(part, start + 1)
    return False


def main_and_rest(main: str, whole: str) -> str:
    """The main text, then every line of the whole-page text that the main text does not already
    hold, in page order: what the main-content heuristic dropped (sidebars, lists of events,
    footers) still reaches the reader, after the content it judged central, so a cut at the
    context budget drops the periphery first. A line counts as held when its words (without
    Markdown marks, case and spacing) occur in the main text."""
    held = _SPACES.sub(" ", main).casefold().translate(_QUOTES)
    rest, seen = [], set()
    for line in whole.splitlines():
        key = _line_key(line)
        if not key or key in seen or _holds(held, key):
            continue
        seen.add(key)
        rest.append(line.strip())
    if not rest:
        return main
    return (main + REST_SEPARATOR if main else "") + "\n".join(rest)


def extract_text(html: str, extractor: str) -> str:
    """The page text by one of ``TEXT_EXTRACTORS``: ``trafilatura`` (the main content),
    ``html2text`` (the whole page as Markdown, the paper's) or ``main+rest`` (``main_and_rest`` of
    the two); an unknown name is a ValueError naming the known ones."""
    if extractor == "trafilatura":
        return _trafilatura_text(html)
    if extractor == "html2text":
        return _html2text_text(html)
    if extractor == "main+rest":
        return main_and_rest(_trafilatura_text(html), _html2text_text(html))
    raise ValueError(f"unknown text extractor {extractor!r}; choose from {TEXT_EXTRACTORS}")


def extract_texts(html: str, extractors: Sequence[str]) -> dict[str, str]:
    """The page text by each of ``extractors`` (``extract_text``), each underlying extraction run
    once: ``main+rest`` beside ``trafilatura`` reuses its main text."""
    for x in extractors:
        if x not in TEXT_EXTRACTORS:
            raise ValueError(f"unknown text extractor {x!r}; choose from {TEXT_EXTRACTORS}")
    parts: dict[str, str] = {}

    def part(name: str) -> str:
        if name not in parts:
            parts[name] = _trafilatura_text(html) if name == "trafilatura" else _html2text_text(html)
        return parts[name]

    return {
        x: (main_and_rest(part("trafilatura"), part("html2text")) if x == "main+rest" else part(x))
        for x in dict.fromkeys(extractors)
    }


def detect_language(text: str, max_chars: int = 20000) -> str | None:
    if not text or not text.strip():
        return None
    import py3langid as langid

    lang, _ = langid.classify(text[:max_chars])
    return lang
