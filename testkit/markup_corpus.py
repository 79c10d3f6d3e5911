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

from udfs.runtime.paths import DATA_DIR
from udfs.schemaorg.vocab import DEFAULT_RELEASE

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
            for j, s in enumerate(_SCRIPT.findall(text[m.end() : end])):
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


# What the adversarial generator draws from besides the vocabulary: literals of every JSON kind
# and schema.org datatype shape, types and properties that are not the release's.
ADVERSARIAL_LITERALS: list = [
    "plain text",
    "https://example.org/page",
    "/relative/path",
    "2024-05-01",
    "2024-05-01T10:00:00Z",
    "10:30:00",
    "12",
    "3.5",
    "true",
    12,
    3.5,
    -7,
    0,
    True,
    False,
    "",
    "PT30M",
    "mailto:a@b.example",
    "https://schema.org/InStock",
    "InStock",
    {"@value": "bonjour", "@language": "fr"},
    {"@value": "2024-01-01", "@type": "Date"},
    {"@value": "42", "@type": "xsd:integer"},
    {"@value": "x", "@language": "not a tag!"},
]
UNKNOWN_TYPES = [
    "Foo",
    "Recipee",
    "schema:Cookbook",
    "http://xmlns.com/foaf/0.1/Person",
    "Text",
    "InStock",
    "DataType",
]
ODD_PROPERTIES = [
    "cookoo",
    "foaf:name",
    "http://example.org/p",
    "schema:nam",
    "https://schema.org/name",
    "http://www.schema.org/url",
]


def adversarial_markups(n: int = 300, seed: int = 0, vocab: str | None = None) -> list[CorpusMarkup]:
    """Generated markups aimed at the rules' edges, deterministic for a seed.

    Unknown and non-schema.org types, several types per entity, untyped entities, properties not
    defined for the type and outside schema.org, entity values of right and wrong types (subtypes,
    enumerations), literals of every JSON kind and schema.org datatype shape, ``@value`` objects,
    enumeration members as strings and IRIs, outside IRIs, ``@id`` references across ``@graph``,
    cycles, deep nesting, ``@list``, ``@reverse``, nulls.
    """
    from udfs.schemaorg.vocab import load_vocabulary

    gen = _AdversarialGenerator(load_vocabulary(vocab), seed)
    return [CorpusMarkup(f"adversarial:{seed}:{i}", json.dumps(gen.document(i % 6)), True) for i in range(n)]


class _AdversarialGenerator:
    """The draws of ``adversarial_markups``: one seeded ``random.Random`` over the vocabulary, so
    the same seed gives the same documents in the same order."""

    def __init__(self, v, seed: int):
        import random

        self.v = v
        self.rnd = random.Random(seed)
        self.types = sorted(c for c in v.classes if c not in v.datatypes and c != "DataType")
        self.props = sorted(v.properties)
        self.members = sorted(v.members)

    def pick_type(self) -> list[str] | str:
        rnd = self.rnd
        r = rnd.random()
        if r < 0.7:
            return rnd.choice(self.types)
        if r < 0.8:
            return rnd.choice(UNKNOWN_TYPES)
        return [rnd.choice(self.types), rnd.choice(self.types + UNKNOWN_TYPES)]

    def prop_for(self, t) -> str:
        rnd, v = self.rnd, self.v
        t0 = t[0] if isinstance(t, list) else t
        own = sorted(v.properties_of(t0)) if t0 in v.classes else []
        r = rnd.random()
        if own and r < 0.6:
            return rnd.choice(own)
        if r < 0.9:
            return rnd.choice(self.props)
        return rnd.choice(ODD_PROPERTIES)

    def value(self, p: str, depth: int, ids: list[str]):
        rnd = self.rnd
        r = rnd.random()
        if depth > 0 and r < 0.3:
            return self.entity(depth - 1, ids, p)
        if r < 0.4 and ids:
            return {"@id": rnd.choice(ids)}
        if r < 0.45:
            return {
                "@id": rnd.choice(["https://example.org/x", "schema:" + rnd.choice(self.members), "_:nowhere", "#frag"])
            }
        if r < 0.5:
            return [self.value(p, depth, ids) for _ in range(rnd.randint(0, 3))]
        if r < 0.52:
            return {"@list": [rnd.choice(ADVERSARIAL_LITERALS), rnd.choice(ADVERSARIAL_LITERALS)]}
        if r < 0.54:
            return None
        if r < 0.58:
            return "https://schema.org/" + rnd.choice(self.members)
        if r < 0.62:
            return {"name": "untyped entity"}
        return rnd.choice(ADVERSARIAL_LITERALS)

    def entity(self, depth: int, ids: list[str], via: str | None = None) -> dict:
        rnd, v = self.rnd, self.v
        e: dict = {}
        r = rnd.random()
        if r < 0.9:
            if via and rnd.random() < 0.5 and v.ranges.get(via):
                rt = rnd.choice(sorted(v.ranges[via]))
                sub = sorted(v.descendants(rt) & set(self.types)) or [rt]
                e["@type"] = rnd.choice(sub)  # a fitting type, or a subtype of one
            else:
                e["@type"] = self.pick_type()
        if rnd.random() < 0.3:
            e["@id"] = f"https://example.org/e{len(ids)}"
            ids.append(e["@id"])
        for _ in range(rnd.randint(0, 6)):
            p = self.prop_for(e.get("@type", "Thing"))
            e[p] = self.value(p, depth, ids)
        return e

    def document(self, kind: int):
        """One markup of each of six kinds in turn: a ``@graph`` with cross references and a cycle,
        deep nesting, no ``@context`` and an array at the top, an inline context with
        ``@reverse``, a blank-node cycle through ``@id``, a plain nested entity."""
        ids: list[str] = []
        entity, rnd = self.entity, self.rnd
        if kind == 0:  # @graph with cross references and a cycle
            a = entity(2, ids)
            a["@id"] = "https://example.org/a"
            b = entity(2, ids)
            b["@id"] = "https://example.org/b"
            a["knows"] = {"@id": "https://example.org/b"}
            b["knows"] = {"@id": "https://example.org/a"}
            b["subjectOf"] = {"@id": "https://example.org/a"}
            return {"@context": "https://schema.org/", "@graph": [a, b, entity(1, ids)]}
        if kind == 1:  # deep nesting
            doc = node = {"@context": "http://schema.org", "@type": "Thing"}
            for d in range(rnd.randint(5, 40)):
                child = {"@type": rnd.choice(["CreativeWork", "Person", "Dataset", "Place", "Foo"])}
                node[rnd.choice(["subjectOf", "about", "author", "hasPart", "containedInPlace"])] = child
                node = child
            node.update(entity(0, ids))
            return doc
        if kind == 2:  # no @context, array at the top level
            return [entity(2, ids), entity(1, ids)]
        if kind == 3:  # inline context and @reverse
            return {
                "@context": {"@vocab": "http://schema.org/", "ex": "http://example.org/"},
                **entity(2, ids),
                "@reverse": {"author": {"@type": "Book", "name": "B"}},
            }
        if kind == 4:  # blank-node cycle through @id
            return {
                "@context": "https://www.schema.org",
                "@id": "_:c0",
                "@type": self.pick_type(),
                "hasPart": {"@type": "WebPage", "isPartOf": {"@id": "_:c0"}},
                **entity(1, ids),
            }
        return {"@context": "https://schema.org", **entity(3, ids)}
