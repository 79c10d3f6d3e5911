"""The trust boundary of a WARC index (udfs/corpus/warc.py ``join_location``, ``ROOT_RULE``): an index
entry is read only if it resolves, symlinks followed, inside ``--warc-base``, or, for a URL base,
under its scheme, host and path prefix. Anything else is a ``not_found`` row whose reason names the
rule: the refused file is never opened (an audit hook watches every ``open``), the refused URL never
requested (a loopback server counts requests), and no byte of either reaches any output column.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import trap_server
from udfs.corpus import fetch
from udfs.corpus import html as P
from udfs.corpus import warc as W
from udfs.runtime.config import load_config

DATA = Path(__file__).resolve().parents[2] / "data"
ONE_PAGE = DATA / "warc" / "cc-main-2024-22-one-page.warc.gz"
SECRET = b"TOP-SECRET-7f3a: the bytes of a file nobody pointed the job at\n"

# Every path Python opens while ``_OPENED`` is a list (an audit hook cannot be removed, so it only
# records while a test asks it to).
_OPENED: list | None = None


def _audit(event, args):
    if event == "open" and _OPENED is not None and args and isinstance(args[0], (str, bytes, os.PathLike)):
        _OPENED.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)


@pytest.fixture()
def trap():
    """An HTTP server on 127.0.0.1 serving SECRET; ``trap.seen`` lists every request it received."""
    with trap_server(SECRET, "application/octet-stream") as server:
        yield server


@pytest.fixture()
def layout(tmp_path):
    """base/ with a real WARC, a link inside it to a WARC inside it, and a link leading out;
    outside/ with the secret and another real WARC."""
    base, outside = tmp_path / "base", tmp_path / "outside"
    (base / "crawl").mkdir(parents=True)
    outside.mkdir()
    shutil.copy(ONE_PAGE, base / "crawl" / "one.warc.gz")
    (outside / "secret.warc.gz").write_bytes(SECRET * 4)
    shutil.copy(ONE_PAGE, outside / "real.warc.gz")
    (base / "crawl" / "alias.warc.gz").symlink_to(base / "crawl" / "one.warc.gz")
    (base / "crawl" / "escape.warc.gz").symlink_to(outside / "secret.warc.gz")
    (base / "crawl" / "outdir").symlink_to(outside, target_is_directory=True)
    return base, outside


def test_local_base_admits_only_what_resolves_inside_it(layout):
    base, outside = layout
    one = str(base / "crawl" / "one.warc.gz")
    assert W.join_location(str(base), "crawl/one.warc.gz") == one
    assert W.join_location(str(base), one) == one  # an absolute path inside the base
    assert W.join_location(str(base), f"file://{one}") == one
    assert W.join_location(str(base), "crawl/x/../one.warc.gz") == one
    assert W.join_location(str(base), "crawl/alias.warc.gz") == one  # a link that stays inside
    refused = {
        "../outside/real.warc.gz": "climbs out of --warc-base",
        "crawl/../../outside/real.warc.gz": "climbs out of --warc-base",
        str(outside / "real.warc.gz"): "absolute path outside --warc-base",
        f"file://{outside / 'real.warc.gz'}": "absolute path outside --warc-base",
        "crawl/escape.warc.gz": "through a symlink",
        "crawl/outdir/real.warc.gz": "through a symlink",
        "http://127.0.0.1:9/crawl/one.warc.gz": "is a URL, and --warc-base is a local folder",
        "s3://commoncrawl/crawl-data/x.warc.gz": "is a URL, and --warc-base is a local folder",
        "file://evil.example/etc/passwd": "is a URL, and --warc-base is a local folder",
        ".": "names --warc-base itself",
    }
    for name, why in refused.items():
        with pytest.raises(W.WarcError) as e:
            W.join_location(str(base), name)
        assert e.value.status == W.NOT_FOUND == P.NOT_FOUND, name
        assert why in e.value.reason and W.ROOT_RULE in e.value.reason, (name, e.value.reason)


def test_url_base_admits_its_scheme_host_and_prefix_only():
    base = "https://data.commoncrawl.org/crawl-data/"
    ok = "https://data.commoncrawl.org/crawl-data/CC-MAIN-2024-22/x.warc.gz"
    assert W.join_location(base, "CC-MAIN-2024-22/x.warc.gz") == ok
    assert W.join_location(base, "/CC-MAIN-2024-22/x.warc.gz") == ok
    assert W.join_location(base, ok) == ok
    assert W.join_location("s3://commoncrawl", "crawl-data/x.warc.gz") == "s3://commoncrawl/crawl-data/x.warc.gz"
    refused = {
        "http://data.commoncrawl.org/crawl-data/x.warc.gz": "another scheme or host",
        "https://evil.example/crawl-data/x.warc.gz": "another scheme or host",
        "https://data.commoncrawl.org/other/x.warc.gz": "outside --warc-base's path prefix",
        "https://data.commoncrawl.org/crawl-data-2/x.warc.gz": "outside --warc-base's path prefix",
        "https://data.commoncrawl.org/crawl-data/x.warc.gz?u=1": "outside --warc-base's path prefix",
        "../x.warc.gz": "climbs out of --warc-base",
        "%2e%2e/x.warc.gz": "encoded separator",
        "a%2f..%2f..%2fx": "encoded separator",
        "file:///etc/passwd": "another scheme or host",
        "": "names no file",
    }
    for name, why in refused.items():
        with pytest.raises(W.WarcError) as e:
            W.join_location(base, name)
        assert e.value.status == W.NOT_FOUND and why in e.value.reason, (name, e.value.reason)


def _row(name: str, length: int = 4000) -> dict:
    return {
        "slot": 0,
        "candidate_rank": 0,
        "page_url": "https://an.wikipedia.org/wiki/Escopete",
        "types": None,
        "warc_filename": name,
        "warc_record_offset": 0,
        "warc_record_length": length,
        "fetch_status": 200,
        "content_mime_type": "text/html",
    }


def _no_secret(out: dict) -> bool:
    text = repr(out)
    return "TOP-SEC" not in text and "7f3a" not in text  # a reason quotes at most the first 8 bytes


def test_refused_entries_are_never_opened_nor_requested_and_leak_no_byte(layout, trap):
    global _OPENED
    base, outside = layout
    cfg = P.PageConfig.of(load_config().pages)
    bound = load_config().pages.max_record_bytes
    secret = outside / "secret.warc.gz"
    names = [
        "../outside/secret.warc.gz",
        str(secret),
        f"file://{secret}",
        "crawl/escape.warc.gz",
        "crawl/outdir/secret.warc.gz",
        f"{trap.url}/secret.warc.gz",
    ]
    _OPENED = []
    try:
        outs = [fetch.fetch_page(_row(n), str(base), cfg, bound) for n in names]
        # a URL base: another host and another prefix on the same host are refused as well
        outs += [
            fetch.fetch_page(_row(n), f"{trap.url}/crawl/", cfg, bound)
            for n in (f"{trap.url}/secret.warc.gz", "http://127.0.0.2:1/crawl/x.warc.gz", "../secret.warc.gz")
        ]
        opened = list(_OPENED)
    finally:
        _OPENED = None
    for name, out in zip(names + ["url-prefix", "url-host", "url-climb"], outs):
        assert out["status"] == P.NOT_FOUND, (name, out["reason"])
        assert out["reason"].startswith("refused:") and W.ROOT_RULE in out["reason"], out["reason"]
        assert _no_secret(out), (name, out)
    assert trap.seen == []
    assert not [p for p in opened if "outside" in p], opened

    # the controls: the same secret inside the base is read, and its bytes do show in the reason
    # (so the assertions above could fail); a name under the URL base does reach the server
    shutil.copy(secret, base / "crawl" / "secret-inside.warc.gz")
    inside = fetch.fetch_page(_row("crawl/secret-inside.warc.gz", 40), str(base), cfg, bound)
    assert inside["status"] == P.FETCH_ERROR and not _no_secret(inside)
    fetch.fetch_page(_row("secret.warc.gz", 40), f"{trap.url}/crawl/", cfg, bound)
    assert trap.seen and all(s.split()[1] == "/crawl/secret.warc.gz" for s in trap.seen), trap.seen
    ok = fetch.fetch_page(_row("crawl/one.warc.gz", 0), str(base), cfg, bound)  # the real page: ok through the rule
    assert ok["status"] == P.FETCH_ERROR and "bad byte range" in ok["reason"]


def test_the_pages_job_refuses_out_of_base_rows(spark, layout, tmp_path):
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from jobs.pages import PagesJob

    base, outside = layout
    (row,) = list(W.index_warc(str(base / "crawl" / "one.warc.gz"), "crawl/one.warc.gz"))
    escapes = {
        "http://t.example/abs": str(outside / "real.warc.gz"),
        "http://t.example/link": "crawl/outdir/real.warc.gz",
        "http://t.example/url": f"file://{outside / 'real.warc.gz'}",
    }
    index = [row] + [dict(row, url=u, warc_filename=n) for u, n in escapes.items()]
    pq.write_table(pa.Table.from_pylist(index), tmp_path / "index.parquet")
    pq.write_table(
        pa.Table.from_pylist([{"page_url": u, "types": ["Organization"]} for u in [row["url"], *escapes]]),
        tmp_path / "samples.parquet",
    )
    out = tmp_path / "out"
    PagesJob(
        [
            "--input",
            str(tmp_path / "samples.parquet"),
            "--warc-index",
            str(tmp_path / "index.parquet"),
            "--warc-base",
            str(base),
            "--replacements",
            "0",
            "--output",
            str(out),
        ]
    ).main()
    pages = {r["page_url"]: r for r in pq.read_table(out / "pages").to_pylist()}
    assert pages[row["url"]]["status"] == "ok"
    for u in escapes:
        assert pages[u]["status"] == "not_found" and pages[u]["reason"].startswith("refused:"), pages[u]
        assert pages[u]["html_bytes"] is None and pages[u]["text"] is None
    run = json.loads((out / "pages" / "_run.json").read_text())
    assert run["counters"]["selected_not_found"] == 3 and run["counters"]["reconciles"]
