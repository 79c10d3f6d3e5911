"""Pages job per-page cost on one core: WARC record read and parse, then HTML extraction.

    .venv/bin/python benchmarks/pages_throughput.py [--repeat 3]

Pages: every HTML response record of the bundled WARC files (real Common Crawl records in
data/warc/, the extruct sample pages in data/demo/), read the way jobs/pages.py reads them: one
byte range (``udfs.corpus.warc.read_record``: range read, gunzip of one member, warcio parse), then
``udfs.corpus.html.process_html`` (JSON-LD blocks, markup selection, text, language) with each text
extractor. Rates are per CPU second of this process (what one core delivers, robust to other load
on a shared machine). Reading here is from local disk; on S3 each record is one ranged GET whose
latency is waiting, not CPU, which a cluster hides by running more fetches than cores.
docs/capacity.md uses the trafilatura figure (the job's default).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from udfs.corpus import html as P
from udfs.corpus import text as T
from udfs.corpus import warc as W
from udfs.runtime.cli import ArgumentParser
from udfs.runtime.config import load_config

ROOT = Path(__file__).resolve().parent.parent

WARCS = sorted((ROOT / "data" / "warc").glob("*.warc.gz")) + sorted((ROOT / "data" / "demo").glob("*.warc.gz"))
LIMIT = 50_000_000


def html_records() -> list[tuple[str, dict]]:
    out = []
    for path in WARCS:
        for row in W.index_warc(str(path)):
            if (
                row["warc_record_type"] == "response"
                and row["fetch_status"] == 200
                and (row["content_mime_type"] or "").startswith(("text/html", "application/xhtml"))
            ):
                out.append((str(path), row))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="passes over the pages per measurement")
    args = ap.parse_args(argv)
    records = html_records()
    if not records:
        raise SystemExit("no HTML records found in the bundled WARC files")

    cpu0, wall0 = time.process_time(), time.perf_counter()
    fetched = []
    for _ in range(args.repeat):
        fetched = []
        for path, row in records:
            rec = W.read_record(path, row["warc_record_offset"], row["warc_record_length"], max_record_bytes=LIMIT)
            W.html_record_check(rec, row["url"])
            fetched.append(rec)
    read_cpu = (time.process_time() - cpu0) / args.repeat
    read_wall = (time.perf_counter() - wall0) / args.repeat
    n = len(fetched)
    html_mb = sum(len(r.payload) for r in fetched) / 1e6
    print(f"{n} HTML records from {len(WARCS)} WARC files, {html_mb:.2f} MB of HTML, {args.repeat} passes")
    print(f"{'step':<38} {'pages/CPU-s':>12} {'CPU ms/page':>12} {'pages/wall-s':>13}")
    print(
        f"{'read record (range, gunzip, warcio)':<38} {n / read_cpu:>12,.0f} {1000 * read_cpu / n:>12.2f} {n / read_wall:>13,.0f}"
    )
    for extractor in T.TEXT_EXTRACTORS:
        cfg = P.PageConfig.of(load_config().pages, text_extractor=extractor)
        statuses: dict[str, int] = {}
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for _ in range(args.repeat):
            statuses = {}
            for rec in fetched:
                r = P.process_html(rec.payload, rec.content_type, None, cfg)
                statuses[r["status"]] = statuses.get(r["status"], 0) + 1
        cpu = (time.process_time() - cpu0) / args.repeat
        wall = (time.perf_counter() - wall0) / args.repeat
        total = cpu + read_cpu
        print(f"{'extract (' + extractor + ')':<38} {n / cpu:>12,.0f} {1000 * cpu / n:>12.2f} {n / wall:>13,.0f}")
        print(
            f"{'  read + extract (' + extractor + ')':<38} {n / total:>12,.1f} {1000 * total / n:>12.2f}"
            f"   statuses {dict(sorted(statuses.items()))}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
