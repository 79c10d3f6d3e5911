"""From one page's HTML to what the evaluation needs: its JSON-LD blocks, the human markup that
carries the sampled C-set (kept with its root entity, as the paper does), the page texts (the one
generation reads and the one the factuality judge reads, ``extract_texts``) and the language.

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
from udfs.runtime.config import PagesConf
from udfs.runtime.paths import project_file
from udfs.schemaorg.namespace import SCHEMA_NS, SCHEMA_NS_RE, context_document, is_schema_context_url
from udfs.schemaorg.vocab import DEFAULT_RELEASE

# ---- statuses of pages/ (architecture.md) ------------------------------------------------------
OK = "ok"
NOT_FOUND = "not_found"
FETCH_ERROR = "fetch_error"
PARSE_ERROR = "parse_error"
NO_MATCHING_MARKUP = "no_matching_markup"
STATUSES = (OK, NOT_FOUND, FETCH_ERROR, PARSE_ERROR, NO_MATCHING_MARKUP)


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


# ---- character set ----------------------------------------------------------------------------------
#
# HTML's encoding sniffing algorithm (HTML standard, 13.2.3.2 "Determining the character encoding"),
# with the labels and names of the WHATWG Encoding standard (``webencodings`` holds its label table).
# Conformance: html5lib's encoding tests (tests/conformance/test_html_encoding.py).

# The prescan's end condition: the standard encourages the first 1024 bytes, where the authoring
# rules require an encoding declaration to be.
PRESCAN_BYTES = 1024
# The head scan past the prescan (head_declared_encoding) gives up after this many tags and
# comments, an end condition for efficiency as the standard allows the prescan one: the heads of the
# 258 real pages at hand (the paper's, extruct's samples, the bundled WARC files) took at most 90.
HEAD_SCAN_MARKUP = 4096
# The encoding of a page that declares none (no BOM, HTTP charset or <meta>): the standard leaves
# it to the implementation and suggests UTF-8 where the documents' encoding can be prescribed (the
# suite's windows-1252 is a browser's default for Western locales); it is how such a page was
# decoded before (w3lib's default).
UNDECLARED_ENCODING = "utf-8"
# The decoder of these Encoding-standard encodings is Python's codec of a superset: the standard's
# GBK decoder is its gb18030 decoder (webencodings maps shift_jis, euc-kr and big5 already).
_PYTHON_CODEC = {"gbk": "gb18030"}
# The byte order marks the Encoding standard knows (there is no UTF-32 on the web)
_BOMS = {"utf-8": b"\xef\xbb\xbf", "utf-16be": b"\xfe\xff", "utf-16le": b"\xff\xfe"}
_WS = b"\t\n\x0c\r "
_META_GAP = (b"\t", b"\n", b"\x0c", b"\r", b" ", b"/")  # "<meta" then one of these
_RAW_TEXT = (b"script", b"style", b"title", b"textarea", b"xmp", b"iframe", b"noembed", b"noframes", b"noscript")
# Chromium's rule for a declaration past the first 1024 bytes: the scan goes on while the page is
# still in its head (these elements and comments), as the parser that would find it there and
# reparse the page would.
_HEAD_ELEMENTS = frozenset(
    (b"html", b"head", b"meta", b"link", b"title", b"base", b"script", b"style", b"noscript", b"object", b"template")
)
_TAG_START = re.compile(rb"<(/?)([A-Za-z])")
_MARKUP_START = re.compile(rb"<[A-Za-z!?/]")  # any other "<" is text
_ATTR_GAP = re.compile(rb"[\t\n\x0c\r /]*")
_WS_RUN = re.compile(rb"[\t\n\x0c\r ]*")
_NAME_REST = re.compile(rb"[^=\t\n\x0c\r />]*")
_UNQUOTED = re.compile(rb"[^\t\n\x0c\r >]*")
_TAG_NAME = re.compile(rb"[^\t\n\x0c\r >]*")
# A Content-Type parameter: a quoted value is read whole; a token ends at whitespace, ";" or ","
# (a comma joins the values of a header sent twice: the first one's charset counts)
_CONTENT_TYPE_PARAM = re.compile(r';[ \t]*(?P<name>[^\s;=]+)=(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<token>[^\s;,]*))')


@dataclass(frozen=True)
class CharsetChoice:
    """The encoding a page is decoded with, by its Encoding-standard name (lowercase, as
    ``webencodings`` writes it: ``utf-8``, ``windows-1252``, ``shift_jis``), and where it came
    from: ``bom``, ``http`` (the Content-Type's charset), ``meta`` (the page's own declaration:
    ``<meta charset>``, ``<meta http-equiv=content-type>``, an XML declaration) or ``default``."""

    encoding: str
    source: str


def get_encoding(label: str | bytes) -> str | None:
    """The Encoding standard's "get an encoding": the encoding a label names (surrounding ASCII
    whitespace and case do not count; ``latin1``, ``iso-8859-1`` and ``ascii`` name
    ``windows-1252``), None for a label it does not know."""
    import webencodings

    if isinstance(label, bytes):
        label = label.decode("latin-1")
    found = webencodings.lookup(label)
    return found.name if found is not None else None


class _OutOfBytes(Exception):
    """The prescan ran past its bytes: it stops there (HTML: "abort the prescan")."""


def _get_attribute(data: bytes, pos: int, end: int) -> tuple[bytes, bytes, int] | None:
    """The prescan's "get an attribute" from ``pos``: (name, value, position after it), name and
    value ASCII-lowercased; None when the tag ends there (``>``). _OutOfBytes when ``end`` comes
    first."""
    if pos >= end:
        raise _OutOfBytes
    pos = _ATTR_GAP.match(data, pos, end).end()
    if pos >= end:
        raise _OutOfBytes
    if data[pos] == 0x3E:  # ">"
        return None
    start = pos
    # a first "=" belongs to the name; the name ends at "=", whitespace, "/" or ">"
    pos = _NAME_REST.match(data, pos + 1, end).end()
    name = data[start:pos].lower()
    if pos < end and data[pos] in _WS:
        pos = _WS_RUN.match(data, pos, end).end()
        if pos < end and data[pos] != 0x3D:
            return name, b"", pos
    if pos >= end:
        raise _OutOfBytes
    if data[pos] != 0x3D:  # "/" or ">"
        return name, b"", pos
    pos = _WS_RUN.match(data, pos + 1, end).end()
    if pos >= end:
        raise _OutOfBytes
    quote = data[pos]
    if quote in b"\"'":
        close = data.find(bytes([quote]), pos + 1, end)
        if close < 0:
            raise _OutOfBytes
        return name, data[pos + 1 : close].lower(), close + 1
    if quote == 0x3E:
        return name, b"", pos
    stop = _UNQUOTED.match(data, pos, end).end()
    if stop >= end:
        raise _OutOfBytes
    return name, data[pos:stop].lower(), stop


def charset_from_content(value: bytes) -> str | None:
    """HTML's "algorithm for extracting a character encoding from a meta element" over a
    ``content`` attribute's value (``text/html; charset=iso-8859-2``): the encoding, or None."""
    pos, lower = 0, value.lower()
    while True:
        k = lower.find(b"charset", pos)
        if k < 0:
            return None
        pos = k + 7
        while pos < len(value) and value[pos] in _WS:
            pos += 1
        if pos >= len(value) or value[pos] != 0x3D:
            continue
        pos += 1
        while pos < len(value) and value[pos] in _WS:
            pos += 1
        if pos >= len(value):
            return None
        q = value[pos]
        if q in b"\"'":
            close = value.find(bytes([q]), pos + 1)
            return get_encoding(value[pos + 1 : close]) if close >= 0 else None
        stop = pos
        while stop < len(value) and value[stop] not in b"\t\n\x0c\r ;":
            stop += 1
        return get_encoding(value[pos:stop])


def _meta_encoding(data: bytes, pos: int, end: int) -> tuple[str | None, int]:
    """The encoding a ``<meta`` whose attributes start at ``pos`` declares, and the position of
    the ``>`` after them: the prescan's steps for a meta (a ``charset`` attribute, or a
    ``content`` attribute's charset with ``http-equiv=content-type``; an attribute given twice
    counts once, the first time). None when it declares no encoding the standard knows."""
    seen: set[bytes] = set()
    got_pragma, need_pragma, charset = False, None, None
    while (attr := _get_attribute(data, pos, end)) is not None:
        name, value, pos = attr
        if name in seen:
            continue
        seen.add(name)
        if name == b"http-equiv":
            got_pragma = got_pragma or value == b"content-type"
        elif name == b"content":
            found = charset_from_content(value)
            if found is not None and charset is None:
                charset, need_pragma = found, True
        elif name == b"charset":
            charset, need_pragma = get_encoding(value), False
    pos = _tag_end(data, pos, end)
    if need_pragma is None or (need_pragma and not got_pragma) or charset is None:
        return None, pos
    if charset in ("utf-16be", "utf-16le"):
        return "utf-8", pos  # a page that declares it in ASCII bytes is not UTF-16
    if charset == "x-user-defined":
        return "windows-1252", pos
    return charset, pos


def _tag_end(data: bytes, pos: int, end: int) -> int:
    """The position of the ``>`` that ends the attributes before ``pos`` (whitespace and ``/``
    skipped, as "get an attribute" does)."""
    return _ATTR_GAP.match(data, pos, end).end()


def _skip_attributes(data: bytes, pos: int, end: int) -> int:
    """The position of the ``>`` after a tag's attributes (the prescan's "repeatedly get an
    attribute")."""
    while (attr := _get_attribute(data, pos, end)) is not None:
        pos = attr[2]
    return _tag_end(data, pos, end)


def prescan(data: bytes, end: int) -> str | None:
    """HTML's "prescan a byte stream to determine its encoding" over ``data[:end]``: comments
    skipped, every tag's attributes read (a ``>`` or ``<meta`` inside a quoted value is not
    one), the first ``<meta>`` that declares an encoding the standard knows wins; then, when the
    bytes run out, "get an XML encoding" over the same bytes. None: no declaration."""
    end = min(end, len(data))
    if data.startswith(b"<\x00?\x00x\x00"):
        return "utf-16le"
    if data.startswith(b"\x00<\x00?\x00x"):
        return "utf-16be"
    pos = 0
    try:
        while (pos := data.find(b"<", pos, end)) >= 0:
            if data.startswith(b"<!--", pos):
                close = data.find(b"-->", pos + 2, end)  # "<!-->" is a whole comment
                if close < 0:
                    break
                pos = close + 3
            elif data[pos + 1 : pos + 5].lower() == b"meta" and data[pos + 5 : min(pos + 6, end)] in _META_GAP:
                found, pos = _meta_encoding(data, pos + 5, end)
                if found is not None:
                    return found
            elif tag := _TAG_START.match(data, pos, end):
                pos = _skip_attributes(data, _TAG_NAME.match(data, tag.end(), end).end(), end)
            elif data[pos + 1 : pos + 2] in (b"!", b"/", b"?"):
                pos = data.find(b">", pos + 1, end)
                if pos < 0:
                    break
            else:
                pos += 1
    except _OutOfBytes:
        pass
    return xml_declared_encoding(data[:end])


def xml_declared_encoding(data: bytes) -> str | None:
    """HTML's "get an XML encoding": the encoding of a leading ``<?xml ... encoding="..."?>``."""
    if not data.startswith(b"<?xml"):
        return None
    end = data.find(b">")
    k = data.find(b"encoding", 0, end) if end >= 0 else -1
    if k < 0:
        return None
    m = re.match(rb"encoding[\x00-\x20]*=[\x00-\x20]*(?:\"([^\"]*)\"|'([^']*)')", data[k:end])
    label = m and (m.group(1) if m.group(1) is not None else m.group(2))
    if label is None or any(b <= 0x20 for b in label):
        return None
    found = get_encoding(label)
    return "utf-8" if found in ("utf-16be", "utf-16le") else found


def head_declared_encoding(data: bytes, start: int) -> str | None:
    """A ``<meta>`` declaration that the prescan of the first ``start`` bytes did not reach, found
    the way Chromium's parser finds one: the page read as the parser reads it (comments and the
    text of script, style and the other raw-text elements skipped), up to the first element past
    ``start`` that is not one of the head's, or HEAD_SCAN_MARKUP tags and comments. HTML lets the
    parser change a tentative encoding when it meets such a declaration (13.2.3.4 "Changing the
    encoding while parsing"): a browser decodes the page with it."""
    pos, end = 0, len(data)
    try:
        for _ in range(HEAD_SCAN_MARKUP):
            markup = _MARKUP_START.search(data, pos)
            if markup is None:
                return None
            pos = markup.start()
            if data.startswith(b"<!--", pos):
                close = data.find(b"-->", pos + 2)
                if close < 0:
                    return None
                pos = close + 3
                continue
            tag = _TAG_START.match(data, pos)
            if tag is None:  # "<!", "<?" or "</" and no letter: a bogus comment, to the next ">"
                pos = data.find(b">", pos + 1)
                if pos < 0:
                    return None
                continue
            name_end = _NAME_REST.match(data, tag.end()).end()
            name = data[tag.start(2) : name_end].lower()
            if tag.group(1):  # an end tag
                pos = _skip_attributes(data, name_end, end)
                continue
            if pos >= start and name not in _HEAD_ELEMENTS:
                return None
            if name == b"meta":
                declared, pos = _meta_encoding(data, name_end, end)
                if declared is not None:
                    return declared
                continue
            pos = _skip_attributes(data, name_end, end)
            if name in _RAW_TEXT:
                close = re.compile(rb"</" + re.escape(name) + rb"[\t\n\x0c\r />]", re.I).search(data, pos)
                if close is None:
                    return None
                pos = close.start()
    except _OutOfBytes:
        return None
    return None


def http_charset(content_type: str | None) -> str | None:
    """The encoding of a Content-Type header's ``charset`` parameter (the first one; a quoted
    value unquoted), None when it has none or names no encoding the Encoding standard knows."""
    if not content_type:
        return None
    for m in _CONTENT_TYPE_PARAM.finditer(content_type):
        if m.group("name").lower() == "charset":
            quoted = m.group("quoted")
            return get_encoding(re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else m.group("token"))
    return None


def sniff_encoding(payload: bytes, content_type: str | None, default: str) -> CharsetChoice:
    """HTML's encoding sniffing algorithm: a byte order mark, then the transport layer's charset
    (``content_type``, the HTTP header as the WARC record has it), then the page's own declaration
    (the prescan over the first PRESCAN_BYTES, an XML declaration, then a ``<meta>`` further in
    the head: :func:`head_declared_encoding`), else ``default`` (an Encoding-standard label; the
    pages job gives UNDECLARED_ENCODING)."""
    for encoding, bom in _BOMS.items():
        if payload.startswith(bom):
            return CharsetChoice(encoding, "bom")
    found = http_charset(content_type)
    if found is not None:
        return CharsetChoice(found, "http")
    found = prescan(payload, PRESCAN_BYTES)
    if found is None and len(payload) > PRESCAN_BYTES:
        found = head_declared_encoding(payload, PRESCAN_BYTES)
    if found is not None:
        return CharsetChoice(found, "meta")
    name = get_encoding(default)
    if name is None:
        raise ValueError(f"default encoding {default!r} is not a label of the Encoding standard")
    return CharsetChoice(name, "default")


def decode_with(payload: bytes, encoding: str) -> str:
    """``payload`` decoded as ``encoding`` (an Encoding-standard name), its byte order mark
    dropped, each sequence the encoding cannot decode one U+FFFD."""
    import webencodings
    from w3lib.encoding import to_unicode

    bom = _BOMS.get(encoding)
    if bom and payload.startswith(bom):
        payload = payload[len(bom) :]
    if encoding == "replacement":  # ISO-2022-KR, HZ and the like: the standard decodes them to one U+FFFD
        return "\ufffd" if payload else ""
    info = webencodings.lookup(encoding).codec_info
    if encoding == "x-user-defined":  # no Python codec: webencodings' own
        return info.decode(payload)[0]
    return to_unicode(payload, _PYTHON_CODEC.get(encoding, info.name))


def decode_html(payload: bytes, content_type: str | None = None) -> str:
    """Bytes to text the way browsers do (:func:`sniff_encoding`): BOM, then the HTTP charset,
    then the page's declaration, then UNDECLARED_ENCODING."""
    return decode_with(payload, sniff_encoding(payload, content_type, UNDECLARED_ENCODING).encoding)


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


def select_markup(blocks: list[JsonLdBlock], cset_types: list[str] | None) -> Selection:
    """The root entity whose markup holds an entity typed exactly as the C-set (the paper keeps
    the markup containing the C-set and evaluates its first-level entity).

    With no C-set types (a plain table of URLs) the first root entity with a schema.org type is
    kept. Blocks with an error are skipped; the first match in document order wins. The root keeps
    its block's ``@context`` so it reads the same on its own.

    The work is linear in the size of the blocks: a block's context is read once for all its
    roots, each IRI entity is followed once per block (a root that reaches one already followed
    from an earlier root finds nothing new there: that root did not match), and the types seen are
    a set beside their list.
    """
    from udfs.schemaorg.markup import MarkupError, parse_markup

    want = sorted(set(cset_types)) if cset_types else None
    sel = Selection()
    seen_types: set[tuple[str, ...]] = set()
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
            found = False
            for types in _entity_types_under(m, whole, followed):
                if types and tuple(types) not in seen_types:
                    seen_types.add(tuple(types))
                    sel.types_seen.append(types)
                if want is not None:
                    found = found or types == want
                else:
                    found = found or any("://" not in t for t in types)
            if found:
                sel.human_markup = doc
                sel.root_types = sorted(set(m.entities[m.roots[0]].types))
                sel.block_index = block.index
                return sel
    return sel


def _readable_roots(data: Any) -> Iterator[dict]:
    """The root documents of a block (:func:`udfs.schemaorg.markup.root_documents`), up to where
    the reader refuses the block's structure: a root before that point is still a candidate."""
    from udfs.schemaorg.markup import MarkupError, root_documents

    try:
        yield from root_documents(data)
    except MarkupError:
        return


# ---- text -----------------------------------------------------------------------------------------

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
    payload: bytes, content_type: str | None, cset_types: list[str] | None, cfg: PageConfig
) -> dict[str, Any]:
    """The ``pages/`` columns that come from the HTML, with ``status`` and ``reason``."""
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
        markups, sel = run_with_time_limit(read_markups, cfg.time_limit_s, "markup reading", blocks, cset_types, cfg)
    except ExtractionTimeout as exc:
        out.update(status=PARSE_ERROR, reason=str(exc))
        return out
    out["markups"] = markups
    out["markup_errors"] += [b.error for b in blocks if b.error]
    if sel.human_markup is not None:
        out["human_markup"] = json.dumps(sel.human_markup, ensure_ascii=False)[: cfg.max_markup_chars]
        out["root_types"] = sel.root_types
        out["matched_block"] = sel.block_index
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
                sel.block_index,
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
    blocks: list[JsonLdBlock], cset_types: list[str] | None, cfg: PageConfig
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
    return markups, select_markup(blocks, cset_types)


# ---- microdata (optional) ---------------------------------------------------------------------------


def microdata_blocks(html: str, first_index: int) -> list[JsonLdBlock]:
    """Microdata items in extruct's uniform (JSON-LD shaped) form, one block per item."""
    import extruct

    items = extruct.extract(html, syntaxes=["microdata"], uniform=True, errors="strict").get("microdata", [])
    return [JsonLdBlock(index=first_index + i, raw="", data=item) for i, item in enumerate(items)]


# ---- JSON-LD to WDC-style N-Quads ---------------------------------------------------------------------


class RemoteContextError(ValueError):
    pass


def with_bundled_contexts(node: Any) -> Any:
    """A copy of a JSON-LD tree whose schema.org context references are the bundled context.

    Any other remote reference (a URL context, ``@import``) raises RemoteContextError: the parser
    would otherwise fetch it, and page content never makes us fetch anything.
    """

    def ctx_value(ctx: Any) -> Any:
        if isinstance(ctx, str):
            if is_schema_context_url(ctx):
                return context_document(DEFAULT_RELEASE)
            raise RemoteContextError(f"remote @context not fetched: {ctx[:200]}")
        if isinstance(ctx, list):
            return [ctx_value(c) for c in ctx]
        if isinstance(ctx, dict):
            if "@import" in ctx:
                raise RemoteContextError(f"@import of a remote context not fetched: {str(ctx['@import'])[:200]}")
            return {k: copy_tree(v) for k, v in ctx.items()}
        return ctx

    def copy_tree(n: Any) -> Any:
        if isinstance(n, dict):
            return {k: (ctx_value(v) if k == "@context" else copy_tree(v)) for k, v in n.items()}
        if isinstance(n, list):
            return [copy_tree(x) for x in n]
        return n

    return copy_tree(node)


_BLANK_LABEL_RE = re.compile(r"^b[0-9]+$")
_NOT_A_NODE = ("@value", "@list", "@set", "@id", "id", "@graph")


def label_blank_nodes(tree: Any) -> Any:
    """Give every node object without an identifier the blank-node id ``_:b<n>``, document order.

    rdflib names blank nodes with random ids; naming them ourselves makes the N-Quads of a page
    the same on every run (idempotent outputs).
    """
    counter = iter(range(1 << 62))

    def visit(n: Any) -> Any:
        if isinstance(n, dict):
            out = {k: (v if k == "@context" else visit(v)) for k, v in n.items()}
            if not any(k in n for k in _NOT_A_NODE):
                out["@id"] = f"_:b{next(counter)}"
            return out
        if isinstance(n, list):
            return [visit(x) for x in n]
        return n

    return visit(tree)


_IRI_UNSAFE = re.compile(r'[\x00-\x20<>"{}|^`\\]')


def _iri(value: str) -> str:
    # Every spelling of the schema.org namespace is written the one way WDC writes it.
    m = SCHEMA_NS_RE.match(value)
    if m:
        value = SCHEMA_NS + value[m.end() :]
    # N-Quads forbids these in IRIs; percent-encode rather than lose the triple
    return "<" + _IRI_UNSAFE.sub(lambda c: "%%%02X" % ord(c.group()), value) + ">"


def jsonld_to_quads(data: Any, page_url: str, block_index: int = 0, bnode_prefix: str | None = None) -> list[str]:
    """N-Quads lines of one JSON-LD block, as WebDataCommons writes them: the page URL is the graph
    term, blank nodes get page-scoped labels, schema.org IRIs in ``http://schema.org/`` form.

    Blank-node labels are derived from the page URL, the block's position in the page and the order
    of appearance (``_:n<page hash>x<block>b<n>``): blocks of one page never share a blank node, and
    a rerun writes the same lines.
    """
    from rdflib import BNode, Graph, Literal, URIRef
    from rdflib.plugins.parsers.jsonld import to_rdf
    from rdflib.plugins.serializers.nt import _quote_encode

    if not isinstance(data, (dict, list)):
        raise ValueError(f"JSON-LD block is a {type(data).__name__}, not an object or array")
    resolved = label_blank_nodes(with_bundled_contexts(data))
    g = Graph()
    to_rdf(resolved, g, base=page_url)
    prefix = bnode_prefix or ("n" + hashlib.sha1(page_url.encode("utf-8")).hexdigest()[:16])
    labels: dict[BNode, str] = {}
    graph = _iri(page_url)

    def term(t) -> str:
        if isinstance(t, BNode):
            if t not in labels:
                # b<n> from label_blank_nodes; a bnode rdflib made itself (lists) gets a serial
                local = str(t) if _BLANK_LABEL_RE.match(str(t)) else f"r{len(labels)}"
                labels[t] = f"_:{prefix}x{block_index}{local}"
            return labels[t]
        if isinstance(t, URIRef):
            return _iri(str(t))
        if isinstance(t, Literal):
            lit = _quote_encode(str(t))
            if t.language:
                return f"{lit}@{t.language}"
            if t.datatype and str(t.datatype) != "http://www.w3.org/2001/XMLSchema#string":
                return f"{lit}^^{_iri(str(t.datatype))}"
            return lit
        raise TypeError(f"unexpected RDF term {t!r}")

    # rdflib's graph has no order; sort for a stable file, label blank nodes in that order
    lines = []
    for s, p, o in sorted(g, key=lambda spo: tuple((type(x).__name__, str(x)) for x in spo)):
        lines.append(f"{term(s)} {term(p)} {term(o)} {graph}   .")
    return lines
