"""Who wrote each JSON-LD block of a page: the CMS plugin, platform or module (its *generator*),
with the evidence that decided it, by the rules of ``conf/generators.toml``.

    rules = load_rules("conf/generators.toml")         # GeneratorRules; ConfigError naming the entry
    found = attribute_page(html, root, scripts, rules)   # one Attribution per JSON-LD script
    found[0].generator, found[0].evidence                # "yoast", 'script class="yoast-schema-graph"'

The evidence comes from the page as it is, never fetched or run: the ``<script>`` element's own
attributes, the comments a plugin writes around its output, the elements next to and around the
script, the block's text and its ``@id`` values, and the page's ``<meta name="generator">``,
markers and comments. Each rule entry is a conjunction of such conditions; a block takes the
generator of the strongest entry that holds (``STRENGTH``). A block no entry matches is
``UNKNOWN`` with no evidence; one that equally strong entries of two generators match is
``UNKNOWN`` with the conflict as its evidence: nothing is guessed. Two generators on one page
(Yoast's graph and a WooCommerce product block) are two blocks, each with its own attribution.

The scripts are the page's JSON-LD script elements in document order, as
``udfs.corpus.html.jsonld_scripts`` lists them for ``jsonld_blocks``, so
``attribute_page(...)[block.index]`` is a block's attribution. The cost is linear in
the page: one walk over its elements and comments, one search of each page-level pattern.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from udfs.runtime.config import ConfigError, parse_section, read_toml

UNKNOWN = "unknown"
_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
# How much a condition says about one block (the module docstring; conf/generators.toml's header).
STRENGTH = {
    "script_attribute": 4,
    "section_start": 3,
    "comment_before": 3,
    "next_class": 3,
    "ancestor_class": 3,
    "raw": 2,
    "id": 2,
    "meta_generator": 1,
    "page_marker": 1,
    "page_comment": 1,
}
PAGE_LEVEL = ("meta_generator", "page_marker", "page_comment")
# Evidence strings quote at most this much of what matched.
QUOTE_CHARS = 80


@dataclass(frozen=True)
class Evidence:
    """One entry of a generator's ``evidence`` list: the conditions that must all hold (a regex
    each; "" = not a condition of this entry). ``script_value`` goes with ``script_attribute``,
    ``section_end`` with ``section_start``."""

    script_attribute: str = ""
    script_value: str = ""
    section_start: str = ""
    section_end: str = ""
    comment_before: str = ""
    next_class: str = ""
    ancestor_class: str = ""
    raw: str = ""
    id: str = ""
    meta_generator: str = ""
    page_marker: str = ""
    page_comment: str = ""

    def conditions(self) -> list[str]:
        """The condition keys this entry gives (``script_value``/``section_end`` go with theirs)."""
        return [k for k in STRENGTH if getattr(self, k)]

    @property
    def strength(self) -> int:
        return max(STRENGTH[k] for k in self.conditions())

    @property
    def page_level(self) -> bool:
        """Whether every condition is about the page, not the block (it also holds for a block
        without a script element: a microdata item)."""
        return all(k in PAGE_LEVEL for k in self.conditions())


@dataclass(frozen=True)
class GeneratorRule:
    """One ``[[generator]]``: its id (what the ``generator`` columns hold), its name, its evidence."""

    id: str
    name: str
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True)
class GeneratorRules:
    """The rules of one file, in its order, with their regexes compiled."""

    path: str
    generators: tuple[GeneratorRule, ...]
    compiled: dict[tuple[int, int, str], re.Pattern] = dataclasses.field(repr=False, compare=False)

    def ids(self) -> list[str]:
        return [g.id for g in self.generators]

    def pattern(self, g: int, e: int, key: str) -> re.Pattern:
        return self.compiled[(g, e, key)]


@dataclass(frozen=True)
class Attribution:
    """A block's generator (a rule's id or ``UNKNOWN``) and the evidence that decided it (None: no
    entry matched)."""

    generator: str
    evidence: str | None = None


# ---- reading the rules ---------------------------------------------------------------------------


def parse_rules(data: dict[str, Any], path: str) -> GeneratorRules:
    """The rules of a parsed TOML document (``{"generator": [{...}, ...]}``); any fault is a
    ConfigError naming ``path`` and the entry (its id where it has one, else its position)."""
    unknown = sorted(set(data) - {"generator"})
    if unknown:
        raise ConfigError(
            f"{path}: unknown top-level key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} (known: generator)"
        )
    entries = data.get("generator")
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{path}: no [[generator]] entries")
    generators, compiled, seen = [], {}, set()
    for g, entry in enumerate(entries):
        name = entry.get("id") if isinstance(entry, dict) else None
        label = f"[[generator]] {name!r}" if isinstance(name, str) else f"[[generator]] #{g + 1}"
        if not isinstance(entry, dict):
            raise ConfigError(f"{path}: {label} must be a table, not {type(entry).__name__}")
        extra = sorted(set(entry) - {"id", "name", "evidence"})
        if extra:
            raise ConfigError(
                f"{path}: {label} has unknown key{'s' if len(extra) > 1 else ''} {', '.join(extra)} (known: id, name, evidence)"
            )
        for key in ("id", "name"):
            if not isinstance(entry.get(key), str) or not entry[key]:
                raise ConfigError(f"{path}: {label} {key} must be a non-empty string, not {entry.get(key)!r}")
        gid = entry["id"]
        if not _ID.match(gid) or gid == UNKNOWN:
            raise ConfigError(f"{path}: {label} id must be lowercase words joined by '-' and not {UNKNOWN!r}")
        if gid in seen:
            raise ConfigError(f"{path}: {label} is given twice")
        seen.add(gid)
        items = entry.get("evidence")
        if not isinstance(items, list) or not items:
            raise ConfigError(f"{path}: {label} evidence must be a non-empty list of tables")
        evidence = []
        for e, item in enumerate(items):
            where = f"{label} evidence[{e}]"
            ev = parse_section(Evidence, "evidence", item, path, label=where)
            if not ev.conditions():
                raise ConfigError(f"{path}: {where} gives no condition (one of {', '.join(STRENGTH)})")
            if bool(ev.script_attribute) != bool(ev.script_value):
                raise ConfigError(f"{path}: {where} script_attribute and script_value go together")
            if ev.section_end and not ev.section_start:
                raise ConfigError(f"{path}: {where} section_end needs a section_start")
            if ev.section_start and not ev.section_end:
                raise ConfigError(f"{path}: {where} section_start needs a section_end (comment_before: one comment)")
            for key in (*STRENGTH, "script_value", "section_end"):
                if key == "script_attribute" or not getattr(ev, key):
                    continue
                try:
                    compiled[(g, e, key)] = re.compile(getattr(ev, key))
                except re.error as exc:
                    raise ConfigError(f"{path}: {where} {key} is not a regular expression: {exc}") from None
            evidence.append(ev)
        generators.append(GeneratorRule(gid, entry["name"], tuple(evidence)))
    return GeneratorRules(path, tuple(generators), compiled)


@functools.lru_cache(maxsize=8)
def load_rules(path: str | Path) -> GeneratorRules:
    """The rules of the TOML file ``path`` (read once per process and path); a ConfigError names
    the file and the entry at fault."""
    return parse_rules(read_toml(Path(path)), str(path))


# ---- one page ------------------------------------------------------------------------------------


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1] + "\u2026"


def _ids(node: Any, limit: int = 100_000) -> list[str]:
    """Every string ``@id`` of a JSON tree (the first ``limit`` values visited: a block's size is
    bounded before it is read, this bounds the walk on its own)."""
    out: list[str] = []
    stack = [node]
    while stack and limit > 0:
        n = stack.pop()
        limit -= 1
        if isinstance(n, dict):
            v = n.get("@id")
            if isinstance(v, str):
                out.append(v)
            stack.extend(n.values())
        elif isinstance(n, list):
            stack.extend(n)
    return out


@dataclass
class _Page:
    """What the page-level conditions and the section conditions read, gathered once."""

    html: str
    generators: list[str]
    comments: list[str]
    # per script (document order): the comments open around it, as (rule key, opening comment)
    sections: list[dict[tuple[int, int], str]]


def _walk(html: str, root, scripts: list, rules: GeneratorRules) -> _Page:
    """One pass over the page in document order: its generator metas, its comments, and for each
    script the rule sections (section_start ... section_end) it lies in."""
    import lxml.etree as etree

    index = {id(s): i for i, s in enumerate(scripts)}
    sectioned = [
        (g, e) for g, rule in enumerate(rules.generators) for e, ev in enumerate(rule.evidence) if ev.section_start
    ]
    open_: dict[tuple[int, int], str] = {}
    metas, comments, sections = [], [], [dict() for _ in scripts]
    for node in root.iter():
        if node.tag is etree.Comment:
            text = node.text or ""
            comments.append(text)
            for g, e in sectioned:
                # an end comment first: "/ Schema optimized by Schema Pro" closes, it does not open
                if rules.pattern(g, e, "section_end").search(text):
                    open_.pop((g, e), None)
                elif rules.pattern(g, e, "section_start").search(text):
                    open_[(g, e)] = text
        elif node.tag == "meta" and (node.get("name") or "").strip().lower() == "generator":
            metas.append(node.get("content") or "")
        elif id(node) in index:
            sections[index[id(node)]] = dict(open_)
    return _Page(html=html, generators=metas, comments=comments, sections=sections)


def _class_of(el) -> str:
    if el is None or not isinstance(el.tag, str):
        return ""
    return el.get("class") or ""


def _check(
    rules: GeneratorRules,
    g: int,
    e: int,
    ev: Evidence,
    page: _Page,
    i: int | None,
    script,
    text: str,
    data: Any,
    ids_cache: dict,
) -> list[str] | None:
    """What each condition of entry ``e`` of generator ``g`` found for script ``i`` (``script``:
    its element, ``text``: its text, ``data``: its JSON; None: a block without a script), or None
    when one of them does not hold."""
    found = []
    p = functools.partial(rules.pattern, g, e)
    if ev.script_attribute:
        if script is None:
            return None
        value = script.get(ev.script_attribute)
        if value is None or not p("script_value").search(value):
            return None
        found.append(f'<script {ev.script_attribute}="{_quote(value)}">')
    if ev.section_start:
        opening = page.sections[i].get((g, e)) if i is not None else None
        if opening is None:
            return None
        found.append(f"inside <!-- {_quote(opening)} --> ... its closing comment")
    if ev.comment_before:
        import lxml.etree as etree

        prev = script.getprevious() if script is not None else None
        if prev is None or prev.tag is not etree.Comment or (prev.tail or "").strip():
            return None
        if not p("comment_before").search(prev.text or ""):
            return None
        found.append(f"after <!-- {_quote(prev.text or '')} -->")
    if ev.next_class:
        after = script.getnext() if script is not None else None
        while after is not None and not isinstance(after.tag, str):  # comments between
            after = after.getnext()
        if after is None or (script.tail or "").strip() or not p("next_class").search(_class_of(after)):
            return None
        found.append(f'before <{after.tag} class="{_quote(_class_of(after))}">')
    if ev.ancestor_class:
        if script is None:
            return None
        hit = next((a for a in script.iterancestors() if p("ancestor_class").search(_class_of(a))), None)
        if hit is None:
            return None
        found.append(f'inside <{hit.tag} class="{_quote(_class_of(hit))}">')
    if ev.raw:
        m = p("raw").search(text) if script is not None else None
        if m is None:
            return None
        found.append(f'text "{_quote(m.group())}"')
    if ev.id:
        if "ids" not in ids_cache:
            ids_cache["ids"] = _ids(data)
        hit = next((v for v in ids_cache["ids"] if p("id").search(v)), None)
        if hit is None:
            return None
        found.append(f'@id "{_quote(hit)}"')
    if ev.meta_generator:
        hit = next((m for m in page.generators if p("meta_generator").search(m)), None)
        if hit is None:
            return None
        found.append(f'<meta name="generator" content="{_quote(hit)}">')
    if ev.page_marker:
        m = p("page_marker").search(page.html)
        if m is None:
            return None
        found.append(f'page contains "{_quote(m.group())}"')
    if ev.page_comment:
        hit = next((c for c in page.comments if p("page_comment").search(c)), None)
        if hit is None:
            return None
        found.append(f"page comment <!-- {_quote(hit)} -->")
    return found


def _decide(matches: list[tuple[int, str, str]]) -> Attribution:
    """The attribution of one block from its matching entries (strength, generator, evidence)."""
    if not matches:
        return Attribution(UNKNOWN)
    best = max(s for s, _, _ in matches)
    top: dict[str, str] = {}
    for s, gid, text in matches:
        if s == best:
            top.setdefault(gid, text)
    if len(top) == 1:
        gid, text = next(iter(top.items()))
        return Attribution(gid, text)
    return Attribution(UNKNOWN, "conflicting evidence: " + "; ".join(f"{gid}: {t}" for gid, t in top.items()))


def attribute_page(
    html: str, root, scripts: list, rules: GeneratorRules, blocks: list | None = None
) -> list[Attribution]:
    """One :class:`Attribution` per block of the page: its JSON-LD ``scripts`` (their elements in
    document order, ``udfs.corpus.html.jsonld_scripts`` of ``root``, the page's lxml tree as
    ``udfs.corpus.html.html_tree`` parses ``html``), then, when ``blocks`` lists more blocks than
    the page has scripts, one per block past them (microdata items: page-level entries alone can
    decide them). ``blocks``: the page's parsed blocks (``jsonld_blocks``, then
    ``microdata_blocks``; their ``data`` gives the ``@id`` values); without them the ``@id``
    conditions read each script's text as JSON."""
    page = _walk(html, root, scripts, rules)
    out = []
    for i in range(max(len(scripts), len(blocks or ()))):
        script = scripts[i] if i < len(scripts) else None
        data, text = None, script.xpath("string()") if script is not None else ""
        if blocks is not None and i < len(blocks):
            data = blocks[i].data
        elif script is not None:
            try:
                data = json.loads(text)
            except ValueError:
                data = None
        ids_cache: dict = {}
        matches = []
        for g, rule in enumerate(rules.generators):
            for e, ev in enumerate(rule.evidence):
                if script is None and not ev.page_level:
                    continue
                found = _check(rules, g, e, ev, page, i if script is not None else None, script, text, data, ids_cache)
                if found is not None:
                    matches.append((ev.strength, rule.id, " + ".join(found)))
        out.append(_decide(matches))
    return out


# ---- pages/ columns ------------------------------------------------------------------------------


def empty_columns() -> dict[str, Any]:
    """The generator columns of pages/ (``udfs.corpus.fetch.PAGES_SCHEMA``) of a page whose blocks
    were not read."""
    return {"generator": None, "generator_evidence": None, "markup_generators": [], "markup_generator_evidence": []}


def page_columns(html: str, root, scripts: list, blocks: list, matched_block: int | None, cfg) -> dict[str, Any]:
    """The generator columns of one page's pages/ row: ``markup_generators`` and
    ``markup_generator_evidence``, one value per entry of ``markups`` (the blocks with data, in
    order), and ``generator`` and ``generator_evidence`` of the block the human markup was taken
    from (``matched_block``; null without one). ``root`` and ``scripts``: as
    :func:`attribute_page` takes them; ``blocks``: the page's JSON-LD blocks then its microdata
    items (``udfs.corpus.html``); ``cfg``: its ``PageConfig`` (``generator_rules``, the rules file)."""
    found = attribute_page(html, root, scripts, load_rules(cfg.generator_rules), blocks)
    with_data = [b.index for b in blocks if b.data is not None]
    out = {
        "markup_generators": [found[i].generator for i in with_data],
        "markup_generator_evidence": [found[i].evidence for i in with_data],
        "generator": None,
        "generator_evidence": None,
    }
    if matched_block is not None:
        out["generator"], out["generator_evidence"] = found[matched_block].generator, found[matched_block].evidence
    return out


# ---- a markup kept apart from its page ---------------------------------------------------------

# A markup is the page block's when the block holds at least this share of the markup's values.
MATCH_SHARE = 0.5


def _values(node: Any, out: set[str], limit: list[int]) -> set[str]:
    """The scalar values of a JSON tree (``@context`` left aside), as text; at most ``limit[0]``
    nodes visited."""
    stack = [node]
    while stack and limit[0] > 0:
        n = stack.pop()
        limit[0] -= 1
        if isinstance(n, dict):
            stack.extend(v for k, v in n.items() if k != "@context")
        elif isinstance(n, list):
            stack.extend(n)
        elif isinstance(n, (str, int, float)) and not isinstance(n, bool):
            text = str(n).strip()
            if text:
                out.add(text)
    return out


def markup_attribution(markup: Any, blocks: list, found: list[Attribution]) -> Attribution | None:
    """The generator of a markup that was taken from a page's blocks and kept apart from them (the
    LLM4Schema.org paper's stored human markups): the block holding the largest share of the
    markup's values, when at least ``MATCH_SHARE`` of them, decides; a markup no block holds
    that much of, spread over blocks that all have one generator, takes it; otherwise it is
    ``UNKNOWN`` saying so. ``blocks``: the page's blocks (``data``), ``found``: their
    attributions (:func:`attribute_page`). None: the markup has no value to match."""
    want = _values(markup, set(), [100_000])
    if not want:
        return None
    shares = []
    for b in blocks:
        if b.data is not None:
            hold = len(want & _values(b.data, set(), [100_000]))
            if hold:
                shares.append((hold, -b.index, b.index))
    if not shares:
        return Attribution(UNKNOWN, f"no block of the page holds any of the markup's {len(want)} values")
    hold, _, best = max(shares)
    if hold >= MATCH_SHARE * len(want):
        a = found[best]
        where = f"block {best} holds {hold} of the markup's {len(want)} values"
        return Attribution(a.generator, f"{where}; {a.evidence}" if a.evidence else where)
    gens = {found[i].generator for _, _, i in shares}
    where = f"no block holds half of the markup's {len(want)} values; blocks {', '.join(str(i) for *_, i in sorted(shares, key=lambda s: s[2]))} hold some"
    if len(gens) == 1:
        return Attribution(gens.pop(), where)
    return Attribution(UNKNOWN, f"{where}, of generators {', '.join(sorted(gens))}")
