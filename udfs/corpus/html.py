"""From one page's HTML to what the evaluation needs: its status, its JSON-LD blocks and the human
markup that carries the sampled C-set (kept with its root entity, as the paper does); its texts and
language come from ``udfs.corpus.text``, its decoding from ``udfs.corpus.encoding``.

Everything here is plain Python over bytes and dicts; ``jobs/pages.py`` runs it in Spark tasks.
Nothing from a page is fetched or executed: JSON-LD is parsed as JSON, an ``@context`` naming
schema.org is understood as the bundled official context, any other remote context makes its
block uninterpretable (a reason, never a request). Every extraction runs under a time limit and
after a size check, so a pathological page costs one status row, not a hung worker.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import signal
import threading
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

from udfs.corpus import generators
from udfs.corpus import main_entity as ME
from udfs.corpus.encoding import decode_html
from udfs.corpus.text import detect_language, extract_texts
from udfs.runtime.config import PagesConf
from udfs.runtime.paths import project_file

# ---- statuses of pages/ (architecture.md) ------------------------------------------------------
OK = "ok"
NOT_FOUND = "not_found"
FETCH_ERROR = "fetch_error"
PARSE_ERROR = "parse_error"
NO_MATCHING_MARKUP = "no_matching_markup"
# the capture holds part of the page (udfs.corpus.warc.truncation, or the index's
# content_truncated): not judged unless [pages] judge_truncated
TRUNCATED = "truncated"
STATUSES = (OK, NOT_FOUND, FETCH_ERROR, PARSE_ERROR, NO_MATCHING_MARKUP, TRUNCATED)


class ExtractionTimeout(Exception):
    pass


@contextmanager
def time_limit(seconds: float, what: str = "extraction"):
    """Interrupt the block after ``seconds`` with ExtractionTimeout.

    SIGALRM interrupts pure-Python and most lxml loops. Only the main thread can receive signals;
    Spark and Ray run task code there. Elsewhere the limit is not enforced here and the caller
    should use ``run_with_time_limit``, which abandons the work instead.
    """
    if not seconds or seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def _raise(signum, frame):
        raise ExtractionTimeout(f"{what} exceeded {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_with_time_limit(fn, seconds: float, what: str, *args, **kwargs):
    """``fn(*args, **kwargs)`` under a time limit, from any thread."""
    if threading.current_thread() is threading.main_thread():
        with time_limit(seconds, what):
            return fn(*args, **kwargs)
    box: dict[str, Any] = {}

    def _target():
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            box["error"] = exc

    worker = threading.Thread(target=_target, daemon=True)
    worker.start()
    worker.join(seconds if seconds and seconds > 0 else None)
    if worker.is_alive():
        # a thread cannot be killed; it is abandoned and its result ignored
        raise ExtractionTimeout(f"{what} exceeded {seconds:g} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


# ---- HTML ------------------------------------------------------------------------------------------


def html_sha256(payload: bytes) -> str:
    return hashlib.sha256(payload).hexdigest()


# ---- JSON-LD ---------------------------------------------------------------------------------------


@dataclass
class JsonLdBlock:
    """One ``<script type="application/ld+json">`` of a page."""

    index: int
    raw: str
    data: Any = None
    error: str | None = None  # why the block is not usable (invalid JSON, remote context)


_HTML_OR_JS_COMMENTLINE = re.compile(r"^\s*(//.*|<!--.*-->)")


def _parse_jsonld_script(script: str) -> Any:
    """extruct's rules, so our blocks equal extruct's output: lenient JSON, then JSON with
    comments stripped (a first line that is a ``//`` or ``<!-- -->`` comment, then JavaScript
    comments anywhere). A script the JSON-LD API reads is read the same; these comments, which
    it refuses ("invalid script element"), are the XHTML-era wrappers of real pages
    (``//<![CDATA[`` ... ``//]]>``)."""
    import jstyleson

    try:
        return json.loads(script, strict=False)
    except ValueError:
        # jstyleson leaves a // comment that ends the text unstripped (no newline after it), as
        # in "//]]></script>": the newline ends it
        return jstyleson.loads(_HTML_OR_JS_COMMENTLINE.sub("", script) + "\n", strict=False)


# libxml2 (2.14, under lxml 6) stops an HTML document at this element depth (``<html>`` is 1)
# unless XML_PARSE_HUGE is set: the elements below are dropped, with ERR_RESOURCE_LIMIT in the
# parser's log and no exception. trafilatura parses without it, so its text of a deeper page is
# the text above that depth (measured: a real page under 251 wrapping <div>s, 257 deep, gave
# trafilatura 0 characters and lost the JSON-LD block below).
LXML_DEPTH_LIMIT = 256
# The same limit with XML_PARSE_HUGE (``huge_tree=True``), how html_tree parses.
LXML_HUGE_DEPTH_LIMIT = 2048


@dataclass
class HtmlTree:
    """A page parsed by lxml's HTML parser as extruct does (``lxml.html.HTMLParser``), with
    ``huge_tree`` so that nesting up to LXML_HUGE_DEPTH_LIMIT is kept: the tree, its element depth
    (``<html>`` is 1) and whether the parser stopped at its depth limit (the tree is then cut)."""

    root: Any
    depth: int
    cut: bool


# Comments and the elements whose content is text, not markup (HTML's raw text and escapable raw
# text elements): an end tag inside them is not a tag.
_NOT_MARKUP = re.compile(
    r"<!--.*?(?:-->|\Z)|<(script|style|textarea|title|xmp|iframe|noembed|noframes)\b.*?(?:</\1\s*>|\Z)",
    re.I | re.S,
)
_HTML_END_TAG = re.compile(r"</html\s*>", re.I)


def without_html_end_tags(html: str) -> str:
    """``html`` with every ``</html>`` end tag outside comments and raw-text elements replaced by
    spaces of its length. libxml2's HTML parser drops everything after ``</html>`` without a
    word, where HTML5 parsers (html5lib, browsers) put it in the body: a JSON-LD block or text
    appended after ``</html>`` (trackers, widgets) was lost to both the markup and the text.
    Script contents, attribute values and everything else keep their characters and offsets."""
    if "</" not in html or not _HTML_END_TAG.search(html):
        return html
    out, last = [], 0
    for m in _NOT_MARKUP.finditer(html):
        out.append(_HTML_END_TAG.sub(lambda t: " " * len(t.group()), html[last : m.start()]))
        out.append(m.group())
        last = m.end()
    out.append(_HTML_END_TAG.sub(lambda t: " " * len(t.group()), html[last:]))
    return "".join(out)


def html_tree(html: str | bytes) -> HtmlTree:
    """Parse ``html`` (text, or UTF-8 bytes) into an :class:`HtmlTree`, its ``</html>`` end tags
    neutralized first (:func:`without_html_end_tags`)."""
    import lxml.html

    if isinstance(html, bytes):
        html = html.decode("utf-8", errors="replace")
    html = without_html_end_tags(html).encode("utf-8")
    parser = lxml.html.HTMLParser(encoding="UTF-8", huge_tree=True)
    root = lxml.html.fromstring(html, parser=parser)
    cut = any("Excessive depth" in e.message for e in parser.error_log)
    depth, stack = 0, [(root, 1)]
    while stack:
        node, d = stack.pop()
        depth = max(depth, d)
        stack.extend((c, d + 1) for c in node if isinstance(c.tag, str))
    return HtmlTree(root=root, depth=depth, cut=cut)


def nesting_problem(tree: HtmlTree, max_depth: int, extractors: Sequence[str]) -> str | None:
    """Why the page cannot be read whole because of its nesting (None: it can): the parser cut
    the tree at its limit, the page is deeper than ``max_depth`` (``[pages] max_html_depth``), or
    deeper than trafilatura's parser reads while an extractor uses trafilatura."""
    if tree.cut:
        return (
            f"HTML nested deeper than {LXML_HUGE_DEPTH_LIMIT} elements: lxml's parser stops there "
            "and drops what is below; not read"
        )
    if tree.depth > max_depth:
        return f"HTML nested {tree.depth} elements deep, over max_html_depth={max_depth}; not read"
    if tree.depth > LXML_DEPTH_LIMIT and any(x in ("trafilatura", "main+rest") for x in extractors):
        return (
            f"HTML nested {tree.depth} elements deep: trafilatura's lxml parser stops at {LXML_DEPTH_LIMIT} "
            "and loses the text below; not read"
        )
    return None


JSONLD_MIME_TYPE = "application/ld+json"


def is_jsonld_type(value: str | None) -> bool:
    """Whether a script's ``type`` attribute makes it a JSON-LD script: its MIME type's essence
    (type/subtype, ASCII case-insensitive, surrounding whitespace left aside) is
    ``application/ld+json``, with or without parameters (``;profile=...``, which the JSON-LD API
    itself uses to select a script, or ``;charset=utf-8``)."""
    if not value:
        return False
    essence = value.split(";", 1)[0].strip(" \t\n\r\x0c")
    return essence.lower() == JSONLD_MIME_TYPE


def jsonld_scripts(root) -> list:
    """The page's JSON-LD ``<script>`` elements (``root``: an :class:`HtmlTree`'s root) in document
    order: the blocks of :func:`jsonld_blocks`, numbered alike."""
    return [s for s in root.xpath("descendant-or-self::script[@type]") if is_jsonld_type(s.get("type"))]


def jsonld_blocks(html: str | bytes, tree: HtmlTree | None = None) -> list[JsonLdBlock]:
    """Every JSON-LD script of the page, parsed one by one so a broken block is a reason and the
    others still count. ``tree``: the page already parsed (:func:`html_tree`)."""
    if tree is None:
        tree = html_tree(html)
    tree = tree.root
    out: list[JsonLdBlock] = []
    for i, node in enumerate(jsonld_scripts(tree)):
        script = node.xpath("string()")
        block = JsonLdBlock(index=i, raw=script)
        foreign = next((a.tag for a in node.iterancestors() if a.tag in ("svg", "math")), None)
        if foreign is not None:
            # lxml reads it as text; to an HTML5 parser (browsers, html5lib) it is an element of
            # SVG or MathML whose content is markup: tags and comments in it are not its text
            block.error = (
                f"block {i}: a JSON-LD script inside <{foreign}>: HTML5 parsers read its content as "
                f"{foreign} markup, not as text; not read"
            )
            out.append(block)
            continue
        try:
            block.data = _parse_jsonld_script(script)
        except Exception as exc:  # noqa: BLE001 - any parse failure is the block's recorded error
            block.error = f"invalid JSON-LD in block {i}: {type(exc).__name__}: {str(exc)[:200]}"
        out.append(block)
    return out


def extruct_items(blocks: list[JsonLdBlock]) -> list[Any]:
    """The blocks flattened as ``extruct.jsonld.JsonLdExtractor`` returns them (its test oracle)."""
    items: list[Any] = []
    for b in blocks:
        if b.data is None:
            continue
        data = b.data
        if isinstance(data, list):
            items.extend(x for x in data if x)
        elif isinstance(data, dict) and data:
            items.append(data)
    return items


@dataclass
class Selection:
    human_markup: dict | None = None
    root_types: list[str] = field(default_factory=list)
    block_index: int | None = None
    types_seen: list[list[str]] = field(default_factory=list)
    # the branch of the main-entity rule that chose human_markup (MAIN_ENTITY_BRANCHES); None on
    # the C-set route or when nothing was chosen
    main_entity_rule: str | None = None


def check_block(
    block: JsonLdBlock, max_nodes: int | None = None, max_chars: int | None = None, serialized: str | None = None
) -> None:
    """Set ``block.error`` when the block cannot be read as markup (udfs/schemaorg/markup.py's reading:
    the one every later stage uses), e.g. a remote ``@context`` that is never fetched, or when it
    is over ``max_nodes`` JSON values or ``max_chars`` characters as JSON (``serialized``, when
    the caller has it): such a block is refused before it is read, so its cost is bounded by the
    limits, and its reason carries the start of it."""
    from udfs.schemaorg.markup import MarkupError, count_json_values, parse_markup

    if block.error is not None or block.data is None:
        return
    if max_nodes is not None and count_json_values(block.data, max_nodes) > max_nodes:
        sample = (serialized if serialized is not None else block.raw)[:80]
        block.error = f"block {block.index}: markup over max_markup_nodes={max_nodes} JSON values (starts {sample!r})"
        return
    if max_chars is not None:
        size = len(serialized if serialized is not None else json.dumps(block.data, ensure_ascii=False))
        if size > max_chars:
            sample = (serialized if serialized is not None else block.raw)[:80]
            block.error = f"block {block.index}: markup of {size} characters over max_markup_chars={max_chars} (starts {sample!r})"
            return
    try:
        parse_markup(block.data)
    except MarkupError as exc:
        block.error = f"block {block.index}: {exc.reason}"
    except RecursionError:
        block.error = f"block {block.index}: nested too deeply"


def _entity_types_under(root_markup, block_markup, seen_iris: set[str] | None = None) -> list[list[str]]:
    """Types of every entity of a root's markup, an entity with an IRI taken as the block describes
    it as a whole (RDF merges nodes with one @id: a C-set counts the merged types), following IRI
    references into the rest of the block.

    ``seen_iris``: IRIs whose entities were already followed (and are skipped); the caller passes
    one set for all the roots of a block, so each IRI entity of the block is followed once, not
    once per root that reaches it (a chain of roots referring to each other was quadratic)."""
    from udfs.schemaorg.markup import Ref

    out: list[list[str]] = []
    if seen_iris is None:
        seen_iris = set()
    queue: deque[str] = deque()
    for ent in root_markup.entities.values():
        if not ent.is_blank and block_markup is not None and ent.id in block_markup.entities:
            queue.append(ent.id)
        else:
            out.append(sorted(set(ent.types)))
            for values in ent.properties.values():
                queue.extend(v.id for v in values if isinstance(v, Ref) and not v.id.startswith("_:"))
    while queue:
        iri = queue.popleft()
        if iri in seen_iris or block_markup is None or iri not in block_markup.entities:
            continue
        seen_iris.add(iri)
        ent = block_markup.entities[iri]
        out.append(sorted(set(ent.types)))
        for values in ent.properties.values():
            queue.extend(v.id for v in values if isinstance(v, Ref) and not v.id.startswith("_:"))
    return out


def select_markup(
    blocks: list[JsonLdBlock],
    cset_types: list[str] | None,
    page_url: str | None = None,
    rule: ME.MainEntityRule | None = None,
) -> Selection:
    """The root entity whose markup holds an entity typed exactly as the C-set (the paper keeps
    the markup containing the C-set and evaluates its first-level entity).

    With no C-set types (a plain table of URLs) the page's main entity is kept, chosen by ``rule``
    (:func:`select_main_entity`; default: conf/main_entity.toml), ``page_url`` the page's address
    it may name; on the C-set route neither is read. Blocks with an error are skipped; the first
    match in document order wins. The root keeps its block's ``@context`` so it reads the same on
    its own.

    The work is linear in the size of the blocks: a block's context is read once for all its
    roots, each IRI entity is followed once per block (a root that reaches one already followed
    from an earlier root finds nothing new there: that root did not match), and the types seen are
    a set beside their list.
    """

    want = sorted(set(cset_types)) if cset_types else None
    if want is None:
        return select_main_entity(blocks, page_url, rule)
    sel = Selection()
    for block, doc, m, under in _roots(blocks, sel):
        if want in under:
            sel.human_markup = doc
            sel.root_types = sorted(set(m.entities[m.roots[0]].types))
            sel.block_index = block.index
            return sel
    return sel


def _roots(blocks: list[JsonLdBlock], sel: Selection) -> Iterator[tuple[JsonLdBlock, dict, Any, list[list[str]]]]:
    """Each readable root of the blocks without an error, in document order: (its block, its
    document, its markup, the types of the entities under it, IRI references followed); each
    types list not seen before is added to ``sel.types_seen``, before the root is yielded."""
    from udfs.schemaorg.markup import MarkupError, parse_markup

    seen_types = {tuple(t) for t in sel.types_seen}
    for block in blocks:
        if block.error is not None or block.data is None:
            continue
        try:
            whole = parse_markup(block.data)
        except (MarkupError, RecursionError):
            whole = None
        contexts: dict = {}  # the block's contexts, applied once for all its roots
        followed: set[str] = set()
        for doc in _readable_roots(block.data):
            try:
                m = parse_markup(doc, contexts=contexts)
            except (MarkupError, RecursionError):
                continue
            if not m.roots:
                continue
            under = list(_entity_types_under(m, whole, followed))
            for types in under:
                if types and tuple(types) not in seen_types:
                    seen_types.add(tuple(types))
                    sel.types_seen.append(types)
            yield block, doc, m, under


def _readable_roots(data: Any) -> Iterator[dict]:
    """The root documents of a block (:func:`udfs.schemaorg.markup.root_documents`), up to where
    the reader refuses the block's structure: a root before that point is still a candidate."""
    from udfs.schemaorg.markup import MarkupError, root_documents

    try:
        yield from root_documents(data)
    except MarkupError:
        return


# ---- the entity a page is about (no C-set types: udfs/corpus/main_entity.py) ---------------------


def select_main_entity(blocks: list[JsonLdBlock], page_url: str | None, rule: ME.MainEntityRule | None) -> Selection:
    """The page's main entity, with no C-set types: the first branch of ``rule`` (default:
    :func:`udfs.corpus.main_entity.load_main_entity_rule`) that finds one decides, and the selection says which in
    ``main_entity_rule``. The kept markup is the chosen entity's document: a root as the block
    writes it (its nested subtree with it) with the block's ``@context``, or, for a main entity
    the WebPage node nests under ``mainEntity``, that nested object with the context. Blocks with
    an error are skipped. ``types_seen`` is filled as on the C-set route."""
    rule = rule or ME.load_main_entity_rule()
    sel = Selection()
    roots = [
        ME.Root(block.index, doc, m, any("://" not in t for types in under for t in types))
        for block, doc, m, under in _roots(blocks, sel)
    ]
    chosen = ME.choose(roots, page_url, rule)
    if chosen is not None:
        root, doc, types, branch = chosen
        sel.human_markup = doc
        sel.root_types = sorted(set(types))
        sel.block_index = root.block_index
        sel.main_entity_rule = branch
    return sel


# ---- one page ------------------------------------------------------------------------------------


class PageConfig(PagesConf):
    """How one page is read: the ``[pages]`` settings (``udfs.runtime.config.PagesConf``, where each
    is declared with its default and range: a new page limit is declared there and read here) with
    ``generator_rules`` resolved to the rules file's path. Built one way, :meth:`of`."""

    @classmethod
    def of(cls, conf: PagesConf, **override: Any) -> "PageConfig":
        """The config of a checked ``[pages]`` section (the job's, command line applied, or a file's),
        ``override`` replacing some of its values."""
        values = {f.name: getattr(conf, f.name) for f in dataclasses.fields(PagesConf)}
        values["generator_rules"] = project_file(conf.generator_rules)
        return cls(**{**values, **override})


def process_html(
    payload: bytes,
    content_type: str | None,
    cset_types: list[str] | None,
    cfg: PageConfig,
    page_url: str | None = None,
    main_entity: ME.MainEntityRule | None = None,
) -> dict[str, Any]:
    """The ``pages/`` columns that come from the HTML, with ``status`` and ``reason``; ``page_url``
    (the page's address, when known) is what a ``mainEntityOfPage`` may name, ``main_entity`` the
    rule that picks the page's entity without C-set types (None: conf/main_entity.toml's;
    :func:`select_main_entity`)."""
    out: dict[str, Any] = {
        "status": None,
        "reason": None,
        "html_sha256": html_sha256(payload),
        "html_bytes": len(payload),
        "text": None,
        "text_chars": None,
        "judge_text": None,
        "language": None,
        "markups": [],
        "markup_errors": [],
        "human_markup": None,
        "root_types": None,
        "matched_block": None,
        "main_entity_rule": None,
        **generators.empty_columns(),
    }
    if len(payload) > cfg.max_html_bytes:
        out.update(
            status=PARSE_ERROR, reason=f"oversized page: {len(payload)} bytes > max_html_bytes={cfg.max_html_bytes}"
        )
        return out
    try:
        html = run_with_time_limit(decode_html, cfg.time_limit_s, "decoding", payload, content_type)
        tree = run_with_time_limit(html_tree, cfg.time_limit_s, "HTML parsing", html)
        problem = nesting_problem(tree, cfg.max_html_depth, (cfg.text_extractor, cfg.judge_text_extractor))
        if problem is not None:
            out.update(status=PARSE_ERROR, reason=problem)
            return out
        blocks = run_with_time_limit(jsonld_blocks, cfg.time_limit_s, "JSON-LD extraction", html, tree)
    except ExtractionTimeout as exc:
        out.update(status=PARSE_ERROR, reason=str(exc))
        return out
    except Exception as exc:  # noqa: BLE001 - lxml on garbage: the page is unreadable, say why
        out.update(status=PARSE_ERROR, reason=f"HTML not parsable: {type(exc).__name__}: {str(exc)[:200]}")
        return out

    if cfg.microdata:
        try:
            blocks += run_with_time_limit(microdata_blocks, cfg.time_limit_s, "microdata extraction", html, len(blocks))
        except ExtractionTimeout as exc:
            out["markup_errors"].append(str(exc))
        except Exception as exc:  # noqa: BLE001 - extruct's errors on a page's microdata are recorded, its JSON-LD kept
            out["markup_errors"].append(f"microdata not extracted: {type(exc).__name__}: {str(exc)[:200]}")
    try:
        markups, sel = run_with_time_limit(
            read_markups, cfg.time_limit_s, "markup reading", blocks, cset_types, cfg, page_url, main_entity
        )
    except ExtractionTimeout as exc:
        out.update(status=PARSE_ERROR, reason=str(exc))
        return out
    out["markups"] = markups
    out["markup_errors"] += [b.error for b in blocks if b.error]
    if sel.human_markup is not None:
        out["human_markup"] = json.dumps(sel.human_markup, ensure_ascii=False)[: cfg.max_markup_chars]
        out["root_types"] = sel.root_types
        out["matched_block"] = sel.block_index
        out["main_entity_rule"] = sel.main_entity_rule
    # A page whose every block is unreadable (a parse_error, _page_status) still has a generator:
    # its first block's, read from the HTML around the block as for a readable one, so the share
    # of unreadable markup can be told per generator.
    attributed = sel.block_index
    if attributed is None and blocks and not any(b.error is None and b.data is not None for b in blocks):
        attributed = blocks[0].index
    try:
        out.update(
            run_with_time_limit(
                generators.page_columns,
                cfg.time_limit_s,
                "generator attribution",
                html,
                tree.root,
                jsonld_scripts(tree.root),
                blocks,
                attributed,
                cfg,
            )
        )
    except ExtractionTimeout as exc:
        out.update(status=PARSE_ERROR, reason=str(exc))
        return out

    text, judge_text, text_error = _page_texts(html, cfg, out)
    _page_status(out, blocks, sel, cset_types, cfg, text, judge_text, text_error)
    return out


def _page_texts(html: str, cfg: PageConfig, out: dict[str, Any]) -> tuple[str | None, str | None, str | None]:
    """The page's text and judge text (``cfg``'s extractors, under its time limit), written into
    ``out`` cut to ``max_text_chars`` with the text's language; returns (text, judge text, the
    extraction's error or None)."""
    try:
        wanted = (cfg.text_extractor, cfg.judge_text_extractor)
        texts = run_with_time_limit(
            extract_texts,
            cfg.time_limit_s,
            f"text extraction ({', '.join(dict.fromkeys(wanted))})",
            without_html_end_tags(html),
            wanted,
        )
        text, judge_text = texts[cfg.text_extractor], texts[cfg.judge_text_extractor]
    except ExtractionTimeout as exc:
        return None, None, str(exc)
    except Exception as exc:  # noqa: BLE001 - a text extractor's failure is recorded as the page's text_error
        return None, None, f"text extraction failed: {type(exc).__name__}: {str(exc)[:200]}"
    out["text_chars"] = len(text)
    out["text"] = text[: cfg.max_text_chars]
    out["language"] = detect_language(out["text"])
    out["judge_text"] = judge_text[: cfg.max_text_chars]
    return text, judge_text, None


def _page_status(out, blocks, sel, cset_types, cfg: PageConfig, text, judge_text, text_error) -> None:
    """The page's ``status`` and ``reason`` in ``out``: a text that could not be extracted, a
    matching markup (ok; an empty text said), no usable block, or no entity of the C-set's types."""
    usable = [b for b in blocks if b.error is None and b.data is not None]
    if text_error:
        out.update(status=PARSE_ERROR, reason=text_error)
    elif sel.human_markup is not None:
        notes = list(out["markup_errors"])
        # an ok page says when its text is empty: the extractor found nothing, not a parser limit
        for name, value in ((cfg.text_extractor, text), (cfg.judge_text_extractor, judge_text)):
            if not value.strip() and f"empty text: {name}" not in "; ".join(notes):
                notes.append(f"empty text: {name} extracted no text from the page")
        out.update(status=OK, reason="; ".join(notes) or None)
    elif blocks and not usable:
        out.update(status=PARSE_ERROR, reason="; ".join(out["markup_errors"]))
    else:
        want = sorted(set(cset_types)) if cset_types else None
        seen = ", ".join("/".join(t) for t in sel.types_seen[:20]) or "none"
        why = (
            f"no entity typed exactly {want}" if want else "no typed schema.org entity"
        ) + f" among {len(usable)} usable JSON-LD blocks (types seen: {seen})"
        if out["markup_errors"]:
            why += "; " + "; ".join(out["markup_errors"])
        out.update(status=NO_MATCHING_MARKUP, reason=why)


def read_markups(
    blocks: list[JsonLdBlock],
    cset_types: list[str] | None,
    cfg: PageConfig,
    page_url: str | None = None,
    main_entity: ME.MainEntityRule | None = None,
) -> tuple[list[str], Selection]:
    """Every block checked (``check_block`` under ``cfg``'s markup limits) and the human markup
    selected: the ``markups`` column (each block as JSON; a block over the node limit is its raw
    text, both cut to ``max_markup_chars``) and the :class:`Selection`. A block over a limit is
    an error (a reason in ``markup_errors``), never read: the cost is bounded by the limits and
    linear in the blocks; ``process_html`` runs this under ``time_limit_s`` as well."""
    from udfs.schemaorg.markup import count_json_values

    markups = []
    for b in blocks:
        if b.data is None:
            continue
        if count_json_values(b.data, cfg.max_markup_nodes) > cfg.max_markup_nodes:
            # not serialized either: the check itself stopped at the limit
            check_block(b, max_nodes=cfg.max_markup_nodes)
            markups.append(b.raw[: cfg.max_markup_chars])
            continue
        text = json.dumps(b.data, ensure_ascii=False, sort_keys=False)
        check_block(b, max_chars=cfg.max_markup_chars, serialized=text)
        markups.append(text[: cfg.max_markup_chars])
    return markups, select_markup(blocks, cset_types, page_url, main_entity)


# ---- microdata (optional) ---------------------------------------------------------------------------


def microdata_blocks(html: str, first_index: int) -> list[JsonLdBlock]:
    """Microdata items in extruct's uniform (JSON-LD shaped) form, one block per item."""
    import extruct

    items = extruct.extract(html, syntaxes=["microdata"], uniform=True, errors="strict").get("microdata", [])
    return [JsonLdBlock(index=first_index + i, raw="", data=item) for i, item in enumerate(items)]
