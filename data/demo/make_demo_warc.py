"""Pack the real HTML pages of data/html/extruct-samples into one local WARC file.

    python data/demo/make_demo_warc.py            # writes data/demo/extruct-samples.warc.gz

Each page becomes a ``response`` record (one gzip member, as Common Crawl writes them) with an
HTTP 200 header and the page bytes unchanged. The samples have no URL of their own, so each gets
one under the reserved ``.example`` domain (RFC 2606): ``http://extruct-samples.example/<folder>/<file>``.
Record ids and dates are fixed, so rerunning writes the same bytes.
"""

from __future__ import annotations

import io
import sys
import uuid
from pathlib import Path
from urllib.parse import quote

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "data" / "html" / "extruct-samples"
OUT = ROOT / "data" / "demo" / "extruct-samples.warc.gz"
HOST = "http://extruct-samples.example/"
WARC_DATE = "2026-01-01T00:00:00Z"  # fixed: the file is rebuilt byte for byte


def page_url(path: Path) -> str:
    return HOST + quote(path.relative_to(SAMPLES).as_posix())


def build(out: Path = OUT) -> int:
    pages = sorted(p for p in SAMPLES.rglob("*.html") if p.is_file())
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    with open(tmp, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        info = writer.create_warcinfo_record(
            out.name,
            {
                "software": "llm4schema data/demo/make_demo_warc.py (warcio)",
                "description": "HTML pages of scrapinghub/extruct tests/samples (BSD-3-Clause), see data/NOTICE.md",
            },
        )
        info.rec_headers.replace_header("WARC-Record-ID", f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, HOST)}>")
        info.rec_headers.replace_header("WARC-Date", WARC_DATE)
        writer.write_record(info)
        for path in pages:
            body = path.read_bytes()
            url = page_url(path)
            http = StatusAndHeaders(
                "200 OK", [("Content-Type", "text/html"), ("Content-Length", str(len(body)))], protocol="HTTP/1.1"
            )
            rec = writer.create_warc_record(
                url,
                "response",
                payload=io.BytesIO(body),
                http_headers=http,
                warc_headers_dict={
                    "WARC-Record-ID": f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, url)}>",
                    "WARC-Date": WARC_DATE,
                },
            )
            writer.write_record(rec)
    tmp.replace(out)
    return len(pages)


if __name__ == "__main__":
    n = build(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
    print(f"{n} pages -> {OUT if len(sys.argv) < 2 else sys.argv[1]}")
