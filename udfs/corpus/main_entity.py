"""The entity a page is about, when no C-set types say which (the pages job's URL-list route): the
rule of conf/main_entity.toml, whose branches are tried in its order. ``mainEntity``: the entity
the page's WebPage node names as its main entity; ``mainEntityOfPage``: a typed root whose
``mainEntityOfPage`` is the page; ``most specific``: the typed root, not site-wide furniture, with
the deepest schema.org type; ``first typed root``: what the pages job kept before the rule. The
rule's furniture lists and branch order are data, measured in experiments/main_entity; the
roots are the JSON-LD roots ``udfs.corpus.html.select_main_entity`` reads from a page's blocks."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from udfs.runtime.paths import project_file

MAIN_ENTITY_RULE_FILE = "conf/main_entity.toml"
# the branches a rule file may order (conf/main_entity.toml's header says what each does)
MAIN_ENTITY = "mainEntity"
MAIN_ENTITY_OF_PAGE = "mainEntityOfPage"
MOST_SPECIFIC = "most specific"
FIRST_TYPED_ROOT = "first typed root"
MAIN_ENTITY_BRANCHES = (MAIN_ENTITY, MAIN_ENTITY_OF_PAGE, MOST_SPECIFIC, FIRST_TYPED_ROOT)
_WEB_PAGE = "WebPage"


@dataclass(frozen=True)
class MainEntityRule:
    """How the page's main entity is chosen when no C-set types are given (conf/main_entity.toml):
    the branches in the order they are tried, and the types of site-wide furniture (exact names,
    and names whose subtypes are furniture too)."""

    branches: tuple[str, ...]
    furniture: frozenset[str]
    furniture_with_subtypes: tuple[str, ...]

    def is_furniture(self, types: Sequence[str]) -> bool:
        """Whether an entity of ``types`` (local names; other vocabularies' IRIs ignored) is furniture:
        it has a schema.org type and each of them is furniture."""
        schema = [t for t in types if "://" not in t]
        return bool(schema) and all(
            t in self.furniture or any(_is_subtype(t, f) for f in self.furniture_with_subtypes) for t in schema
        )


def load_main_entity_rule(path: str | None = None) -> MainEntityRule:
    """The rule of ``path`` (a TOML file in conf/main_entity.toml's format; None: that file). A
    file that is missing, not TOML, or with an unknown key, branch or a value of the wrong kind is
    a :class:`udfs.runtime.config.ConfigError` naming the file and the key."""
    import os

    from udfs.runtime.config import ConfigError

    path = project_file(path or MAIN_ENTITY_RULE_FILE)
    try:
        st = os.stat(path)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the main-entity rule: {exc}") from None
    # read once per version of the file, not once per page
    return _load_main_entity_rule(path, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=8)
def _load_main_entity_rule(path: str, mtime_ns: int, size: int) -> MainEntityRule:
    import tomllib

    from udfs.runtime.config import ConfigError

    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the main-entity rule: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not TOML: {exc}") from None
    keys = ("branches", "furniture", "furniture_with_subtypes")
    unknown = sorted(set(data) - set(keys))
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {unknown}; known: {list(keys)}")
    for key in keys:
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise ConfigError(f"{path}: {key} must be a list of non-empty strings, got {value!r}")
    branches = tuple(data.get("branches", []))
    bad = [b for b in branches if b not in MAIN_ENTITY_BRANCHES]
    if bad or not branches or len(set(branches)) != len(branches):
        raise ConfigError(
            f"{path}: branches must name each of {list(MAIN_ENTITY_BRANCHES)} at most once, got {list(branches)}"
        )
    return MainEntityRule(
        branches=branches,
        furniture=frozenset(data.get("furniture", [])),
        furniture_with_subtypes=tuple(data.get("furniture_with_subtypes", [])),
    )


@functools.lru_cache(maxsize=4096)
def _is_subtype(name: str, of: str) -> bool:
    """Whether schema.org type ``name`` is ``of`` or lies under it (bundled release)."""
    from udfs.schemaorg.vocab import load_vocabulary

    return name == of or of in load_vocabulary().ancestors(name)


@functools.lru_cache(maxsize=4096)
def type_depth(name: str) -> int:
    """How deep schema.org type ``name`` lies in the type hierarchy of the bundled release: Thing
    is 0, CreativeWork 1, Article 2, NewsArticle 3; through several supertypes, the longest path.
    A name that is no type of the release is -1 (less specific than any type)."""
    from udfs.schemaorg.vocab import load_vocabulary

    vocab = load_vocabulary()
    if name not in vocab.classes:
        return -1
    depth: dict[str, int] = {}

    def walk(c: str, path: frozenset) -> int:
        if c not in depth:
            ups = [s for s in vocab.superclasses.get(c, ()) if s in vocab.classes and s not in path]
            depth[c] = 1 + max((walk(s, path | {c}) for s in ups), default=-1)
        return depth[c]

    return walk(name, frozenset())


@dataclass
class Root:
    """One root candidate of the page: a top-level node of a usable block (each @graph node one),
    as its own document and as read."""

    block_index: int
    doc: dict
    markup: Any  # udfs.schemaorg.markup.Markup of ``doc``
    subtree_typed: bool  # a schema.org-typed entity in its markup (IRI references followed)

    @property
    def id(self) -> str:
        return self.markup.roots[0]

    @property
    def types(self) -> list[str]:
        return self.markup.entities[self.id].types

    @property
    def schema_types(self) -> list[str]:
        return [t for t in self.types if "://" not in t]


def _page_key(iri: str) -> str:
    """An address as compared with the page's: its normal form (udfs.corpus.urls) without fragment."""
    from udfs.corpus.urls import normal_url

    return (normal_url(iri.split("#", 1)[0]) or iri) if iri else iri


def _is_web_page(types: Sequence[str]) -> bool:
    return any("://" not in t and _is_subtype(t, _WEB_PAGE) for t in types)


def _by_main_entity(roots: list[Root], page_url, rule):
    """The entity the ``mainEntity`` of a WebPage node names, when it names one (an FAQPage's list
    of Questions names none: on a product page it is a section, experiments/main_entity) and the
    page's markup describes it with a schema.org type: a root of that @id, else the object nested
    under the node's ``mainEntity``. WebPage nodes in document order; the first that names one
    decides."""
    from udfs.schemaorg.markup import MarkupError, Ref, parse_markup

    by_id: dict[str, Root] = {}
    for r in roots:
        if r.schema_types and not r.markup.entities[r.id].is_blank:
            by_id.setdefault(r.id, r)
    for r in roots:
        for ent in r.markup.entities.values():
            if not _is_web_page(ent.types):
                continue
            named = ent.properties.get("mainEntity", ())
            for v in named if len(named) == 1 else ():
                if not isinstance(v, Ref):
                    continue
                if v.id in by_id:
                    target = by_id[v.id]
                    return target, target.doc, target.types
                nested = r.markup.entities.get(v.id)
                if nested is None or not any("://" not in t for t in nested.types):
                    continue
                ctx = r.doc.get("@context")
                for obj in _nested_main_entities(r.doc):
                    doc = obj if ("@context" in obj or ctx is None) else {"@context": ctx, **obj}
                    try:
                        m = parse_markup(doc)
                    except (MarkupError, RecursionError):
                        continue
                    if m.roots and (nested.is_blank or m.roots[0] == v.id):
                        return r, doc, m.entities[m.roots[0]].types
    return None


def _nested_main_entities(doc: Any) -> Iterator[dict]:
    """The node objects written under a ``mainEntity`` key anywhere in ``doc`` (the key as schema.org's
    context spells it, or a prefixed or full IRI ending in it), in document order."""
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(reversed(node))
        elif isinstance(node, dict):
            for k, v in reversed(list(node.items())):
                if k == "mainEntity" or k.endswith((":mainEntity", "/mainEntity")):
                    for obj in v if isinstance(v, list) else [v]:
                        if isinstance(obj, dict) and set(obj) - {"@id", "@context"}:
                            yield obj
                stack.append(v)


def _by_main_entity_of_page(roots: list[Root], page_url, rule):
    """The first typed root, not itself a WebPage node, whose ``mainEntityOfPage`` is the page: its
    URL (normal form, without fragment) or the @id of a root WebPage node of the page's markup."""
    from udfs.schemaorg.markup import Ref

    pages = {r.id for r in roots if _is_web_page(r.types) and not r.markup.entities[r.id].is_blank}
    page = _page_key(page_url) if page_url else None
    for r in roots:
        if not r.schema_types or _is_web_page(r.types):
            continue
        for v in r.markup.entities[r.id].properties.get("mainEntityOfPage", ()):
            iri = v.id if isinstance(v, Ref) else str(v.text)
            if iri in pages or (page is not None and not iri.startswith("_:") and _page_key(iri) == page):
                return r, r.doc, r.types
    return None


def _most_specific(roots: list[Root], page_url, rule):
    """The typed root that is not furniture with the deepest schema.org type; ties: document order."""
    best, best_depth = None, None
    for r in roots:
        if not r.schema_types or rule.is_furniture(r.types):
            continue
        depth = max(type_depth(t) for t in r.schema_types)
        if best_depth is None or depth > best_depth:
            best, best_depth = r, depth
    return None if best is None else (best, best.doc, best.types)


def _first_typed_root(roots: list[Root], page_url, rule):
    """The first root whose markup holds a schema.org-typed entity (what the pages job kept before
    the rule)."""
    for r in roots:
        if r.subtree_typed:
            return r, r.doc, r.types
    return None


def choose(roots: list[Root], page_url: str | None, rule: MainEntityRule) -> tuple[Root, dict, list[str], str] | None:
    """The first branch of ``rule`` that finds the page's main entity among ``roots``: (the root,
    the document kept as the human markup, its types, the branch); None when none finds one."""
    branch_of = {
        MAIN_ENTITY: _by_main_entity,
        MAIN_ENTITY_OF_PAGE: _by_main_entity_of_page,
        MOST_SPECIFIC: _most_specific,
        FIRST_TYPED_ROOT: _first_typed_root,
    }
    for branch in rule.branches:
        chosen = branch_of[branch](roots, page_url, rule)
        if chosen is not None:
            return (*chosen, branch)
    return None


# The selection before the rule (and the paper's fixtures' pages): the first root whose markup
# holds a schema.org-typed entity, whatever it is.
FIRST_TYPED_ROOT_ONLY = MainEntityRule(branches=(FIRST_TYPED_ROOT,), furniture=frozenset(), furniture_with_subtypes=())
