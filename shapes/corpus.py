"""Real JSON-LD markups the validity engines are compared on (tests) and timed on (benchmark).

* every JSON-LD block of the schema.org documentation examples
  (``data/schemaorg-<release>/schemaorg-all-examples.txt``: blocks start with ``TYPES: #eg-NNNN``,
  then ``PRE-MARKUP:``, ``MICRODATA:``, ``RDFA:`` and ``JSON:`` sections; the JSON section holds
  ``<script type="application/ld+json">`` elements, or ``TODO.``);
* extruct's expected JSON-LD outputs under ``data/html/extruct-samples`` (``*.jsonld`` files, and
  the ``json-ld`` list of ``*.json`` files), each list item one markup.

Blocks that are not valid JSON are returned too, flagged, so callers can count them as rejects.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from udfs.vocab import DATA_DIR, DEFAULT_RELEASE

_SCRIPT = re.compile(r"<script[^>]*application/ld\+json[^>]*>(.*?)</script>", re.S | re.I)
_SECTION = re.compile(r"^(TYPES|PRE-MARKUP|MICRODATA|RDFA|JSON):[ \t]*(.*)$", re.M)


@dataclass
class CorpusMarkup:
    source: str  # "examples:#eg-0382#0", "extruct:schema.org/Event.001.json#0"
    text: str  # the JSON text of one markup
    ok_json: bool


def schemaorg_example_markups(release: str = DEFAULT_RELEASE) -> Iterator[CorpusMarkup]:
    path = DATA_DIR / f"schemaorg-{release}" / "schemaorg-all-examples.txt"
    text = path.read_text(encoding="utf-8")
    marks = list(_SECTION.finditer(text))
    example = "?"
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        if m.group(1) == "TYPES":
            ex = re.search(r"#eg-\d+", m.group(2))
            example = ex.group(0) if ex else m.group(2).strip()
        elif m.group(1) == "JSON":
            for j, s in enumerate(_SCRIPT.findall(text[m.end():end])):
                yield _item(f"examples:{example}#{j}", s.strip())


def extruct_markups(root: Path | None = None) -> Iterator[CorpusMarkup]:
    root = root or DATA_DIR / "html" / "extruct-samples"
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".jsonld", ".json") or not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        raw = path.read_text(encoding="utf-8", errors="replace")
        try:
            doc = json.loads(raw)
        except json.JSONDecodeError:
            if path.suffix == ".jsonld":
                yield CorpusMarkup(f"extruct:{rel}", raw, False)
            continue
        if path.suffix == ".json":
            if not isinstance(doc, dict) or "json-ld" not in doc:
                continue
            doc = doc["json-ld"]
        for j, item in enumerate(doc if isinstance(doc, list) else [doc]):
            yield CorpusMarkup(f"extruct:{rel}#{j}", json.dumps(item, ensure_ascii=False), True)


def _item(source: str, text: str) -> CorpusMarkup:
    try:
        json.loads(text)
        return CorpusMarkup(source, text, True)
    except json.JSONDecodeError:
        return CorpusMarkup(source, text, False)


def real_markups() -> list[CorpusMarkup]:
    return list(schemaorg_example_markups()) + list(extruct_markups())
