"""Bytes to text the way browsers do: HTML's encoding sniffing algorithm (HTML standard, 13.2.3.2
"Determining the character encoding"), with the labels and names of the WHATWG Encoding standard
(``webencodings`` holds its label table). :func:`decode_html` is what the pages job and
``extract_quads`` decode a page with; :func:`sniff_encoding` says which encoding and why.
Conformance: html5lib's encoding tests (tests/conformance/test_html_encoding.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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
