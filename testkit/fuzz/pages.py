"""Differential fuzzing of the pages job's extraction: real pages mutated, their JSON-LD blocks and
text against html5lib, an HTML5 parser the project does not use for this.

Pages: the extruct sample pages (``../shared/data/html/extruct-samples``, else the bundled
``data/html/extruct-samples``). Each input is one page mutated by class and read by the job's own
step in-process (``udfs.corpus.html.process_html`` for the row, ``jsonld_blocks`` over
``decode_html`` for the blocks it is made from). With a time budget (``benchmarks/fuzz.py``) each
round's pages also go through the real job (``jobs/pages.py`` over a ``.warc.gz`` of them and an
index made with warcio), whose rows must equal the in-process ones.

The reference: html5lib parses the page's bytes itself (its own encoding sniffing, given the HTTP
charset, with UTF-8 as the encoding of a page that declares none, as the job's decoder assumes,
where html5lib's own default is windows-1252); a JSON-LD block is a ``script`` element (any namespace) whose ``type`` is exactly
``application/ld+json``, its content the element's text. An input matches when the job's blocks
are the reference's, in order, with equal text (or, where the texts differ, equal JSON), and the
row is not an empty success (``ok`` with no text and nothing said). A ``parse_error`` row with a
reason (a nesting, size or time limit) explains any difference; a block the job reads with an
error (invalid JSON, nested too deeply) is explained by that error. Anything else, an exception
out of the step included, is a discrepancy.
"""

from __future__ import annotations

import json
import random
import re
import time
from pathlib import Path
from typing import Any

from testkit.fuzz import Tally

JOB = "pages"
CLASSES = {
    "nesting": "the body wrapped in 10 to 2,500 <div>s (around lxml's 256 and 2,048 depth limits)",
    "unclosed": "end tags removed at random; the page cut at a random byte",
    "script_place": "a JSON-LD block before <html>, after </html>, in <table>, <p>, <svg>, <math>, <select>, "
    "<noscript>, <template>, <textarea>, <title>, a comment or an attribute; '</b>', '</script' and '<!--' in it",
    "huge_attr": "an attribute of 100 kB to 3 MB, or 20,000 attributes, on <body>, a JSON-LD <script> or a <div>",
    "encoding": "UTF-16 with a BOM, windows-1252 with <meta charset>, invalid UTF-8, NUL bytes, a BOM, a wrong HTTP charset",
    "json_depth": "a JSON-LD block nested 10 to 5,000 arrays or objects deep",
    "size": "the page padded past max_html_bytes",
}
PAGES_PER_CLASS = 3
LD = "application/ld+json"
_BODY = re.compile(rb"<body[^>]*>", re.I)
_END_TAG = re.compile(rb"</(div|p|span|a|li|ul|td|tr|table|section|article|h[1-6]|body|head)\s*>", re.I)


def _reference_name() -> str:
    import html5lib

    return f"html5lib {html5lib.__version__} (etree; its own encoding sniffing, UTF-8 when undeclared)"


def real_pages() -> list[tuple[str, bytes]]:
    """(name, bytes) of every extruct sample page, the shared copy when present."""
    from udfs.runtime.paths import PROJECT_ROOT

    shared = PROJECT_ROOT.parent / "shared" / "data" / "html" / "extruct-samples"
    root = shared if shared.is_dir() else PROJECT_ROOT / "data" / "html" / "extruct-samples"
    return [(str(p.relative_to(root)), p.read_bytes()) for p in sorted(root.rglob("*.html"))]


# ---- mutations -----------------------------------------------------------------------------------


def _block(rng: random.Random) -> bytes:
    name = rng.choice(["X", "a</b>c", "a</script>c".replace("/", "\\/"), "x<!--y", "é ü €"])
    return f'<script type="{LD}">{{"@context": "https://schema.org", "@type": "Thing", "name": {json.dumps(name)}}}</script>'.encode()


def _body_at(page: bytes) -> int:
    m = _BODY.search(page)
    return m.end() if m else 0


HTML = "text/html"  # the content type a mutated page is served with unless its class says otherwise
# where a JSON-LD block is put by the script_place mutation: (before it, after it)
_WRAPS = {
    "table": (b"<table><tr><td>a</td></tr>", b"<tr><td>b</td></tr></table>"),
    "p": (b"<p>a", b"b</p>"),
    "svg": (b"<svg>", b"</svg>"),
    "math": (b"<math>", b"</math>"),
    "select": (b"<select><option>a", b"</select>"),
    "noscript": (b"<noscript>", b"</noscript>"),
    "template": (b"<template>", b"</template>"),
    "textarea": (b"<textarea>", b"</textarea>"),
    "title": (b"<title>", b"</title>"),
    "comment": (b"<!--", b"-->"),
}


def mutate(page: bytes, cls: str, rng: random.Random, max_html_bytes: int) -> tuple[bytes, str]:
    """The page mutated by class ``cls`` and the HTTP content type it is served with."""
    if cls not in _MUTATIONS:
        raise ValueError(f"unknown class {cls!r}")
    return _MUTATIONS[cls](page, _body_at(page), rng, max_html_bytes)


def _nesting(page: bytes, j: int, rng: random.Random, max_html_bytes: int) -> tuple[bytes, str]:
    n = rng.choice([10, 100, 200, 240, 250, 251, 255, 300, 1000, 2040, 2100, 2500])
    end = page.lower().rfind(b"</body>")
    end = end if end > j else len(page)
    return page[:j] + b"<div>" * n + page[j:end] + b"</div>" * n + page[end:], HTML


def _unclosed(page: bytes, j: int, rng: random.Random, max_html_bytes: int) -> tuple[bytes, str]:
    if rng.random() < 0.5:
        tags = list(_END_TAG.finditer(page))
        drop = {id(m) for m in rng.sample(tags, min(len(tags), rng.randint(1, 50)))}
        out, last = [], 0
        for m in tags:
            if id(m) in drop:
                out.append(page[last : m.start()])
                last = m.end()
        return b"".join(out) + page[last:], HTML
    return page[: rng.randrange(1, len(page))], HTML


def _script_place(page: bytes, j: int, rng: random.Random, max_html_bytes: int) -> tuple[bytes, str]:
    s = _block(rng)
    where = rng.choice(
        ["before_html", "after_html", "table", "p", "svg", "math", "select", "noscript", "template"]
        + ["textarea", "title", "comment", "attribute", "unclosed_end"]
    )
    if where == "before_html":
        return s + page, HTML
    if where == "after_html":
        return page + s + b"<p>after the end</p>", HTML
    if where == "unclosed_end":
        return page + s[: -len(b"</script>")], HTML
    if where == "attribute":
        return page[:j] + b"<div title='" + s.replace(b"'", b"&#39;") + b"'>x</div>" + page[j:], HTML
    a, b = _WRAPS[where]
    return page[:j] + a + s + b + page[j:], HTML


def _huge_attr(page: bytes, j: int, rng: random.Random, max_html_bytes: int) -> tuple[bytes, str]:
    size = rng.choice([100_000, 1_000_000, 3_000_000])
    value = (b"v" * size) if rng.random() < 0.5 else (b"&amp;\xc3\xa9" * (size // 7))
    kind = rng.choice(["body", "script", "div", "many"])
    if kind == "many":
        attrs = b" ".join(b"data-a%d='%d'" % (i, i) for i in range(20_000))
        return page[:j] + b"<div " + attrs + b">x</div>" + page[j:], HTML
    if kind == "script" and b'type="application/ld+json"' in page:
        return page.replace(
            b'type="application/ld+json"', b'type="application/ld+json" data-x="' + value + b'"', 1
        ), HTML
    if kind == "body" and j:
        return page[: j - 1] + b' data-x="' + value + b'"' + page[j - 1 :], HTML
    return page[:j] + b'<div data-x="' + value + b'">x</div>' + page[j:], HTML


def _encoding(page: bytes, j: int, rng: random.Random, max_html_bytes: int) -> tuple[bytes, str]:
    text = page.decode("utf-8", errors="replace")
    kind = rng.choice(["utf16", "cp1252_meta", "invalid_utf8", "nul", "bom", "wrong_charset"])
    if kind == "utf16":
        return text.encode("utf-16"), HTML
    if kind == "cp1252_meta":
        k = text.lower().find("<head>")
        at = k + len("<head>") if k >= 0 else 0
        moved = text[:at] + '<meta charset="windows-1252">' + text[at:]
        return moved.encode("cp1252", errors="replace"), HTML
    if kind == "invalid_utf8":
        bad = rng.choice([b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\x80\x80"])
        k = page.find(b'"name"')
        at = k + 9 if k >= 0 else rng.randrange(len(page))
        return page[:at] + bad + page[at:], "text/html; charset=utf-8"
    if kind == "nul":
        k = page.find(b'"name"')
        at = k + 9 if k >= 0 else j
        return page[:at] + b"\x00" + page[at:j] + b"\x00" + page[j:], HTML
    if kind == "bom":
        return b"\xef\xbb\xbf" + page, "text/html; charset=iso-8859-1"
    return page, rng.choice(
        ["text/html; charset=iso-8859-1", "text/html; charset=utf-16", "text/html; charset=x-bogus"]
    )


def _json_depth(page: bytes, j: int, rng: random.Random, max_html_bytes: int) -> tuple[bytes, str]:
    n = rng.choice([10, 100, 500, 990, 1000, 3000, 5000])
    opener, closer = (b"[", b"]") if rng.random() < 0.5 else (b'{"a":', b"}")
    deep = opener * n + b"1" + closer * n
    s = (
        b'<script type="application/ld+json">{"@context": "https://schema.org", "@type": "Thing", "x": '
        + deep
        + b"}</script>"
    )
    return page[:j] + s + page[j:], HTML


def _size(page: bytes, j: int, rng: random.Random, max_html_bytes: int) -> tuple[bytes, str]:
    pad = b"<p>" + b"padding words " * 1000 + b"</p>\n"
    reps = (max_html_bytes - len(page)) // len(pad) + 1 + rng.randrange(3)
    return page[:j] + pad * reps + page[j:], HTML


# class -> mutation(page, where the body starts, rng, max_html_bytes); the classes of CLASSES
_MUTATIONS = {
    "nesting": _nesting,
    "unclosed": _unclosed,
    "script_place": _script_place,
    "huge_attr": _huge_attr,
    "encoding": _encoding,
    "json_depth": _json_depth,
    "size": _size,
}


# ---- the reference ----------------------------------------------------------------------------------


def reference_blocks(payload: bytes, content_type: str) -> tuple[list[str], str]:
    """The JSON-LD script texts html5lib finds in ``payload``, and the page's body text."""
    import html5lib

    m = re.search(r"charset=([^;\s]+)", content_type)
    # likely_encoding: what html5lib falls back on when no BOM, HTTP charset or <meta> names one (its
    # own default is windows-1252, where the job's decoder and today's browsers assume UTF-8)
    doc = html5lib.parse(
        payload, treebuilder="etree", transport_encoding=m.group(1) if m else None, likely_encoding="utf-8"
    )
    blocks, text = [], []
    for el in doc.iter():
        if not isinstance(el.tag, str):
            continue
        local = el.tag.rsplit("}", 1)[-1]
        if local == "script" and el.get("type") == LD:
            blocks.append(el.text or "")
        elif local == "body":
            skip = {"script", "style", "template", "noscript", "textarea", "title"}
            for node in el.iter():
                if isinstance(node.tag, str) and node.tag.rsplit("}", 1)[-1] not in skip and node.text:
                    text.append(node.text)
                if node is not el and node.tail:
                    text.append(node.tail)
    return blocks, " ".join(text)


def _json(raw: str) -> Any:
    try:
        return json.loads(raw, strict=False)
    except (ValueError, RecursionError):
        return _json  # a sentinel no block equals


# ---- the comparison ----------------------------------------------------------------------------------


def check(payload: bytes, content_type: str, cfg) -> tuple[dict[str, Any], str | None, bool]:
    """The job's row for one page, the first discrepancy with the reference (None: none) and
    whether a difference was explained by the row."""
    from udfs.corpus import html as P
    from udfs.corpus.encoding import decode_html

    row = P.process_html(payload, content_type, None, cfg)
    if row["status"] == P.PARSE_ERROR:
        if not row["reason"]:
            return row, "parse_error without a reason", False
        return row, None, True
    if row["status"] == P.OK and not (row["text"] or "").strip() and "empty text" not in (row["reason"] or ""):
        return row, f"empty success: ok, text_chars {row['text_chars']}, reason {row['reason']!r}", False
    html = decode_html(payload, content_type)
    blocks = P.jsonld_blocks(html)
    ref, ref_text = reference_blocks(payload, content_type)
    explained = False
    if len(blocks) != len(ref):
        return row, f"{len(blocks)} JSON-LD blocks, html5lib {len(ref)}", False
    for b, r in zip(blocks, ref):
        if b.raw == r and b.error is None:
            continue
        if b.error is not None:
            if b.error not in row["markup_errors"]:
                return row, f"block {b.index}: refused ({b.error[:80]!r}) without a word in the row", False
            explained = True  # the job refuses the block with its reason in markup_errors
            continue
        if b.data != _json(r):
            return row, f"block {b.index}: content differs ({b.raw[:60]!r} / {r[:60]!r})", False
    if row["status"] == P.OK and not (row["text"] or "").strip() and ref_text.strip():
        explained = True  # the reason says the text is empty
    return row, None, explained


# ---- the real job once per round ------------------------------------------------------------------------


def run_job(pages: list[tuple[bytes, str]], expected: list[dict[str, Any]], out: Path) -> str | None:
    """The round's pages through jobs/pages.py (a .warc.gz written with warcio, its index from
    warcio's offsets, a CSV of the URLs): each page's row must equal the in-process row (status,
    reason, text, markups). Returns the first difference (None: none)."""
    from io import BytesIO

    from warcio.archiveiterator import ArchiveIterator
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    from testkit.fuzz import run_job

    out.mkdir(parents=True, exist_ok=True)
    warc = out / "round.warc.gz"
    urls = [f"http://fuzz.example/{i}" for i in range(len(pages))]
    with warc.open("wb") as fh:
        w = WARCWriter(fh, gzip=True)
        for url, (payload, ct) in zip(urls, pages):
            http = StatusAndHeaders("200 OK", [("Content-Type", ct)], protocol="HTTP/1.1")
            w.write_record(w.create_warc_record(url, "response", payload=BytesIO(payload), http_headers=http))
    index = []
    with warc.open("rb") as fh:
        it = ArchiveIterator(fh)
        for rec in it:
            if rec.rec_type == "response":
                url = rec.rec_headers.get_header("WARC-Target-URI")
                rec.content_stream().read()
                index.append((url, warc.name, it.get_record_offset(), it.get_record_length(), 200, "text/html"))
    from udfs.runtime.job import build_spark

    spark = build_spark("fuzz-pages")
    spark.createDataFrame(
        index,
        "url string, warc_filename string, warc_record_offset long, warc_record_length long, "
        "fetch_status int, content_mime_type string",
    ).write.mode("overwrite").parquet(str(out / "index"))
    (out / "input.csv").write_text("page_url\n" + "\n".join(urls) + "\n")
    argv = ["--input", str(out / "input.csv"), "--warc-index", str(out / "index"), "--warc-base", str(out)]
    argv += ["--output", str(out), "--replacements", "0"]
    if run_job("pages", *argv) != 0:
        return "jobs/pages.py exited non-zero"
    rows = {r["page_url"]: r.asDict() for r in spark.read.parquet(str(out / "pages")).collect()}
    for url, want in zip(urls, expected):
        got = rows.get(url)
        if got is None:
            return f"{url}: no row in pages/"
        for k in ("status", "reason", "text", "markups"):
            if got[k] != want[k] and not (k == "markups" and not got[k] and not want[k]):
                return f"{url}: {k} {str(got[k])[:80]!r} in the job, {str(want[k])[:80]!r} in-process"
    return None


def fuzz(work: Path, *, seed: int, rounds: int | None = None, budget_s: float | None = None) -> list[Tally]:
    """Rounds of PAGES_PER_CLASS pages per class (see the module's docstring) until ``rounds`` or
    ``budget_s``; with ``budget_s`` each round also runs the real job once over its pages."""
    from udfs.corpus.html import PageConfig
    from udfs.runtime.config import load_config

    start = time.monotonic()
    work.mkdir(parents=True, exist_ok=True)
    cfg = PageConfig.of(load_config().pages)
    base = real_pages()
    with_jsonld = [p for p in base if LD.encode() in p[1]]
    ref = _reference_name()
    tallies = {c: Tally(JOB, c, ref) for c in CLASSES}
    rng = random.Random(seed)
    done = 0
    while (rounds is None or done < rounds) and (budget_s is None or time.monotonic() - start < budget_s):
        batch, rows = [], []
        for cls in CLASSES:
            pool = with_jsonld if cls in ("script_place", "json_depth", "encoding") else base
            for name, page in rng.sample(pool, PAGES_PER_CLASS):
                payload, ct = mutate(page, cls, rng, cfg.max_html_bytes)
                try:
                    row, diff, explained = check(payload, ct, cfg)
                except Exception as exc:  # noqa: BLE001 - an extraction that raises is a discrepancy
                    row, diff, explained = None, f"{type(exc).__name__}: {str(exc)[:200]}", False
                tallies[cls].add(explained=explained, discrepancy=None if diff is None else f"{name}: {diff}")
                if row is not None and cls != "size":
                    batch.append((payload, ct))
                    rows.append(row)
        if budget_s is not None and batch:
            try:
                diff = run_job(batch, rows, work / f"round-{done}")
            except Exception as exc:  # noqa: BLE001 - a job that fails on the round is a discrepancy
                diff = f"{type(exc).__name__}: {str(exc)[:200]}"
            job = tallies.setdefault("job", Tally(JOB, "job", "the in-process rows of the round"))
            job.add(discrepancy=None if diff is None else f"round {done}: {diff}")
        done += 1
    return list(tallies.values())
