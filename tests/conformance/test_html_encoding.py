"""html5lib's character-encoding tests (``../shared/data/conformance/html5lib-tests/encoding/``: every
``*.dat`` file, ``#data`` / ``#encoding`` blocks) against the pages job's choice of character set,
``udfs.corpus.encoding.sniff_encoding`` (what ``decode_html`` decodes a page with).

Names are compared as the WHATWG Encoding standard gives them (``get_encoding``): the label a test
expects and the encoding the job chooses are both mapped to the standard's name, so ``ISO-8859-1``
and ``Windows-1252`` are both windows-1252, ``iso8859-2`` is iso-8859-2, ``UTF-8`` is utf-8.

The tests give no HTTP header: they cover the sniffing below the transport layer (a byte order
mark, then the page's declaration: the prescan of the first 1024 bytes, an XML declaration, a
``<meta>`` further in the head). For a page that declares nothing the suite expects its default,
windows-1252 (its first, "control" test says to set it): the suite is run with that default; the
pages job's own default is UNDECLARED_ENCODING (utf-8). The transport layer's precedence in the job
(the WARC record's Content-Type charset before the page's declaration, a BOM before both) is checked
on constructed pages at the end, and the whole choice against html5lib's own on real pages.

Files in ``NOT_APPLICABLE`` are skipped with their reason. Skipped where ``../shared`` is absent.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from udfs.corpus import encoding as E

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT.parent / "shared" / "data" / "conformance" / "html5lib-tests" / "encoding"
SUITE_DEFAULT = "windows-1252"  # the encoding the suite expects of a page that declares none
NOT_APPLICABLE = {
    "scripted/tests1.dat": "the declaration is written by a script (document.write); the pages job runs no script",
}
_BLOCK = re.compile(rb"#data\n(.*?)\n#encoding\n([^\n]*)", re.S)


def suite_tests(path: Path) -> list[tuple[bytes, str]]:
    """The (document bytes, expected encoding label) of every test of a ``.dat`` file."""
    raw = path.read_bytes()
    tests = [(m.group(1), m.group(2).decode("ascii").strip()) for m in _BLOCK.finditer(raw)]
    if len(tests) != raw.count(b"#data\n"):
        raise AssertionError(f"{path}: {raw.count(b'#data')} #data blocks, {len(tests)} read")
    return tests


def _cases():
    out = []
    for path in sorted(SUITE.rglob("*.dat")) if SUITE.is_dir() else []:
        name = path.relative_to(SUITE).as_posix()
        marks = [pytest.mark.skip(reason=f"not applicable: {NOT_APPLICABLE[name]}")] if name in NOT_APPLICABLE else []
        for i, (data, expected) in enumerate(suite_tests(path)):
            out.append(pytest.param(data, expected, id=f"{name}:{i}", marks=marks))
    return out


@pytest.mark.skipif(not SUITE.is_dir(), reason=f"html5lib's encoding tests are not at {SUITE}")
@pytest.mark.parametrize("data, expected", _cases())
def test_html5lib_encoding(data, expected):
    want = E.get_encoding(expected)
    assert want is not None, f"{expected!r} is no label of the Encoding standard"
    assert E.sniff_encoding(data, None, SUITE_DEFAULT).encoding == want


@pytest.mark.skipif(not SUITE.is_dir(), reason=f"html5lib's encoding tests are not at {SUITE}")
def test_every_suite_file_is_read_and_the_skipped_ones_exist():
    files = {p.relative_to(SUITE).as_posix(): len(suite_tests(p)) for p in SUITE.rglob("*.dat")}
    assert set(NOT_APPLICABLE) <= set(files)
    assert sum(files.values()) == 83


# ---- the transport layer and the default: constructed pages ----------------------------------------------

META_2 = b'<!DOCTYPE html><html><head><meta charset="iso-8859-2"><title>t</title></head><body>\xe8</body></html>'


@pytest.mark.parametrize(
    "payload, content_type, encoding, source",
    [
        (META_2, "text/html; charset=utf-8", "utf-8", "http"),  # the HTTP charset wins over <meta>
        (META_2, 'text/html; charset="ISO-8859-1"', "windows-1252", "http"),  # a label, as the standard maps it
        (META_2, "text/html; charset=x-bogus", "iso-8859-2", "meta"),  # an unknown label is no charset
        (META_2, "text/html", "iso-8859-2", "meta"),
        (b"\xef\xbb\xbf" + META_2, "text/html; charset=iso-8859-2", "utf-8", "bom"),  # a BOM wins over both
        (b"\xff\xfe<\x00p\x00>\x00", "text/html; charset=utf-8", "utf-16le", "bom"),
        (b"<p>\xc3\xa8</p>", "text/html", E.UNDECLARED_ENCODING, "default"),
        (b"<p>\xc3\xa8</p>", None, E.UNDECLARED_ENCODING, "default"),
    ],
)
def test_the_transport_layer_comes_before_the_page_and_a_bom_before_both(payload, content_type, encoding, source):
    assert E.sniff_encoding(payload, content_type, E.UNDECLARED_ENCODING) == E.CharsetChoice(encoding, source)


def test_a_declaration_past_the_prescan_is_found_in_the_head_not_in_the_body():
    """After the first 1024 bytes a <meta> counts while the page is still in its head (outside
    script text); past the head it does not (before: w3lib's scan read the first 4096 bytes as
    markup, the text of a script included: this page was read as koi8-r)."""
    pad = b"<!-- " + b"x" * 2000 + b" -->"
    head = b"<html><head>" + pad + b'<script>var m = "<meta charset=koi8-r>";</script><meta charset="iso-8859-2">'
    assert E.sniff_encoding(head + b"</head><body>x</body></html>", None, "utf-8") == E.CharsetChoice(
        "iso-8859-2", "meta"
    )
    # a comment ends at "-->", not at its first ">": a <meta> inside it is not one
    commented = b'<html><head><!-- a > b <meta charset="koi8-r"> --><meta charset="iso-8859-2"></head></html>'
    assert E.sniff_encoding(commented, None, "utf-8") == E.CharsetChoice("iso-8859-2", "meta")
    body = b"<html><head></head><body>" + pad + b'<p>x</p><meta charset="iso-8859-2"></body></html>'
    assert E.sniff_encoding(body, None, "utf-8") == E.CharsetChoice("utf-8", "default")


def test_the_page_text_is_decoded_with_the_choice():
    assert E.decode_html(META_2, "text/html").endswith("<body>\u010d</body></html>")  # 0xE8 in ISO-8859-2
    assert E.decode_html(META_2, "text/html; charset=windows-1252").endswith("<body>\u00e8</body></html>")
    assert E.decode_html(b"\xef\xbb\xbf<p>\xc3\xa8</p>", None) == "<p>\u00e8</p>"  # the BOM is not text


# ---- real pages: the job's choice against html5lib's own ---------------------------------------------------


def _real_pages(pset_pages: list[tuple[str, bytes]]) -> list[tuple[str, bytes, str | None]]:
    """(name, bytes, HTTP Content-Type) of the project's bundled pages: the extruct samples (read
    as text/html, as tests/corpus/test_pages.py reads them), every HTML response of the bundled
    WARC files (with its header), then ``pset_pages`` (no header, as import-pset reads them)."""
    from warcio.archiveiterator import ArchiveIterator

    out = [
        (str(p.relative_to(ROOT)), p.read_bytes(), "text/html")
        for p in sorted((ROOT / "data" / "html" / "extruct-samples").rglob("*.html"))
    ]
    for warc in sorted((ROOT / "data").glob("*/*.warc.gz")):
        with gzip.open(warc, "rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type == "response" and rec.http_headers is not None:
                    ctype = rec.http_headers.get_header("Content-Type")
                    if ctype and ctype.split(";")[0].strip().lower() in ("text/html", "application/xhtml+xml"):
                        name = f"{warc.relative_to(ROOT)} {rec.rec_headers.get_header('WARC-Target-URI')}"
                        out.append((name, rec.content_stream().read(), ctype))
    return out + [(name, data, None) for name, data in pset_pages]


def _html5lib_encoding(payload: bytes, content_type: str | None) -> str:
    """html5lib's encoding for a page after parsing it whole (its prescan, and a <meta> met while
    parsing), given the HTTP charset and the job's default for a page that declares none."""
    import html5lib

    m = re.search(r"charset=\"?([^;\s\"]+)", content_type or "")
    parser = html5lib.HTMLParser(namespaceHTMLElements=False)
    parser.parse(payload, transport_encoding=m.group(1) if m else None, likely_encoding=E.UNDECLARED_ENCODING)
    return parser.tokenizer.stream.charEncoding[0].name


def _check_real(pages):
    differ = [
        (name, got, ref)
        for name, data, ctype in pages
        if (got := E.sniff_encoding(data, ctype, E.UNDECLARED_ENCODING).encoding)
        != (ref := _html5lib_encoding(data, ctype))
    ]
    assert differ == []
    return {E.sniff_encoding(d, c, E.UNDECLARED_ENCODING).source for _, d, c in pages}


def test_real_pages_get_html5libs_encoding():
    pages = _real_pages([])
    assert len(pages) >= 70
    # BOM, HTTP charset, <meta> and undeclared pages are all among them
    assert _check_real(pages) == {"bom", "http", "meta", "default"}


@pytest.mark.slow
def test_the_papers_pages_get_html5libs_encoding(pset):
    paths = [p for p in pset.files() if p.endswith(".html")]
    assert len(paths) >= 180
    _check_real([(p, pset.read(p), None) for p in paths])
