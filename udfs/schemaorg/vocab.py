"""The schema.org vocabulary as plain Python indexes.

Read from a release's N-Triples file (``data/schemaorg-30.0/schemaorg-current-https.nt`` by
default). The file is the vocabulary's own canonical dump, so a line reader is enough and keeps
start-up at tens of milliseconds, which matters because every Spark executor and Ray worker
loads it.

Terms are named by their local name (``Recipe``, ``name``): the C-set contract, the shapes and the
prompts all speak local names, and the namespace variants (http/https, ``www.``) are one namespace.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from udfs.runtime.paths import DATA_DIR
from udfs.schemaorg.namespace import SCHEMA_NS_RE

DEFAULT_RELEASE = "30.0"

RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
RDF_TYPE = RDF + "type"

# schema.org's datatypes and the XSD-like lexical family each belongs to. Subtypes of these in a
# release (URL under Text, Integer and Float under Number, ...) are found through rdfs:subClassOf.
DATATYPE_ROOTS = ("Text", "Number", "Boolean", "Date", "DateTime", "Time")

_NT_LINE = re.compile(
    r'^<([^>]*)>\s+<([^>]*)>\s+(?:<([^>]*)>|"((?:[^"\\]|\\.)*)"(?:@[A-Za-z0-9-]+|\^\^<[^>]*>)?)\s*\.\s*$'
)
_ESCAPES = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}


def _unescape(s: str) -> str:
    def repl(m: re.Match) -> str:
        e = m.group(1)
        if e[0] in "uU":
            return chr(int(e[1:], 16))
        return _ESCAPES[e]

    return re.sub(r"\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|[tbnrf\"'\\])", repl, s)


def schema_local_name(iri: str) -> str | None:
    """``https://www.schema.org/name`` -> ``name``; None outside the schema.org namespace."""
    m = SCHEMA_NS_RE.match(iri)
    if not m:
        return None
    local = iri[m.end() :]
    return local or None


@dataclass
class Vocabulary:
    """Indexes over one schema.org release. All names are local names."""

    release: str
    classes: set[str] = field(default_factory=set)
    properties: set[str] = field(default_factory=set)
    datatypes: set[str] = field(default_factory=set)
    superclasses: dict[str, set[str]] = field(default_factory=dict)  # direct rdfs:subClassOf
    domains: dict[str, set[str]] = field(default_factory=dict)  # property -> domainIncludes
    ranges: dict[str, set[str]] = field(default_factory=dict)  # property -> rangeIncludes
    superproperties: dict[str, set[str]] = field(default_factory=dict)
    comments: dict[str, str] = field(default_factory=dict)  # term -> rdfs:comment
    superseded_by: dict[str, str] = field(default_factory=dict)
    instance_of: dict[str, set[str]] = field(default_factory=dict)  # enumeration member -> its types

    # ---- derived indexes -------------------------------------------------------------------
    @functools.cached_property
    def subclasses(self) -> dict[str, set[str]]:
        sub: dict[str, set[str]] = {}
        for c, supers in self.superclasses.items():
            for s in supers:
                sub.setdefault(s, set()).add(c)
        return sub

    def ancestors(self, cls: str) -> set[str]:
        """The class and every class above it (multiple inheritance followed)."""
        return self._closure(cls, self.superclasses)

    def descendants(self, cls: str) -> set[str]:
        """The class and every class below it."""
        return self._closure(cls, self.subclasses)

    @staticmethod
    def _closure(start: str, edges: dict[str, set[str]]) -> set[str]:
        seen = {start}
        todo = [start]
        while todo:
            for nxt in edges.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    @functools.cached_property
    def properties_by_domain(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for p, doms in self.domains.items():
            for d in doms:
                out.setdefault(d, set()).add(p)
        return out

    def properties_of(self, cls: str) -> set[str]:
        """Properties usable on a class: its own and those of every ancestor (``name`` via Thing)."""
        props: set[str] = set()
        for a in self.ancestors(cls):
            props |= self.properties_by_domain.get(a, set())
        return props

    @functools.cached_property
    def enumerations(self) -> set[str]:
        return self.descendants("Enumeration") - {"Enumeration"} if "Enumeration" in self.classes else set()

    @functools.cached_property
    def enumeration_members(self) -> dict[str, set[str]]:
        """Enumeration class -> its member individuals (``ItemAvailability`` -> ``InStock``, ...)."""
        out: dict[str, set[str]] = {}
        for member, types in self.instance_of.items():
            for t in types:
                if t in self.enumerations:
                    out.setdefault(t, set()).add(member)
        return out

    @functools.cached_property
    def members(self) -> set[str]:
        return {m for ms in self.enumeration_members.values() for m in ms}

    def is_type(self, name: str) -> bool:
        return name in self.classes

    def is_property(self, name: str) -> bool:
        return name in self.properties

    def datatype_root(self, name: str) -> str | None:
        """The root datatype a datatype derives from (``URL`` -> ``Text``), else None."""
        if name not in self.datatypes:
            return None
        anc = self.ancestors(name)
        for root in DATATYPE_ROOTS:
            if root in anc:
                return root
        return None


@functools.lru_cache(maxsize=8)
def load_vocabulary(source: str | Path | None = None) -> Vocabulary:
    """Load a release: ``None`` (bundled 30.0), a release name (``"30.0"``) or a path to an .nt file."""
    path = resolve_vocab_path(source)
    release = path.parent.name.removeprefix("schemaorg-") if path.parent.name.startswith("schemaorg-") else path.stem
    v = Vocabulary(release=release)
    types_of: dict[str, set[str]] = {}
    with open(path, encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip() or line.startswith("#"):
                continue
            m = _NT_LINE.match(line)
            if not m:
                raise ValueError(f"{path}:{line_no}: not an N-Triples line: {line[:200]!r}")
            s_iri, p_iri, o_iri, o_lit = m.groups()
            s = schema_local_name(s_iri)
            if s is None:
                continue
            o = schema_local_name(o_iri) if o_iri else None
            if p_iri == RDF_TYPE:
                if o_iri == RDFS + "Class":
                    v.classes.add(s)
                elif o_iri == RDF + "Property":
                    v.properties.add(s)
                elif o == "DataType":
                    v.datatypes.add(s)
                    v.classes.add(s)
                elif o is not None:
                    types_of.setdefault(s, set()).add(o)
            elif p_iri == RDFS + "subClassOf" and o is not None:
                v.superclasses.setdefault(s, set()).add(o)
            elif p_iri == RDFS + "subPropertyOf" and o is not None:
                v.superproperties.setdefault(s, set()).add(o)
            elif p_iri == RDFS + "comment" and o_lit is not None:
                v.comments[s] = _unescape(o_lit)
            else:
                local_p = schema_local_name(p_iri)
                if local_p == "domainIncludes" and o is not None:
                    v.domains.setdefault(s, set()).add(o)
                elif local_p == "rangeIncludes" and o is not None:
                    v.ranges.setdefault(s, set()).add(o)
                elif local_p == "supersededBy" and o is not None:
                    v.superseded_by[s] = o
    # Subclasses of a datatype (URL, Integer, Float, ...) are datatypes too.
    for dt in list(v.datatypes):
        v.datatypes |= v.descendants(dt) & v.classes
    # Individuals (enumeration members) are typed with a class but are not classes themselves.
    v.instance_of = {s: ts for s, ts in types_of.items() if s not in v.classes and s not in v.properties}
    return v


def resolve_vocab_path(source: str | Path | None) -> Path:
    if source is None:
        source = DEFAULT_RELEASE
    p = Path(source)
    if p.suffix == ".nt" and p.exists():
        return p.resolve()
    if p.is_dir():
        cand = p / "schemaorg-current-https.nt"
        if cand.exists():
            return cand.resolve()
    cand = DATA_DIR / f"schemaorg-{source}" / "schemaorg-current-https.nt"
    if cand.exists():
        return cand
    raise FileNotFoundError(
        f"schema.org vocabulary {source!r} not found: give a release bundled under {DATA_DIR} "
        f"(e.g. 30.0), a release folder holding schemaorg-current-https.nt, or an .nt file"
    )
