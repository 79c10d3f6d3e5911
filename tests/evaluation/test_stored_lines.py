"""``--markups`` JSON Lines by the one line reader's rules (udfs/runtime/lines.py, issue 65 part 2):
a byte order mark as the file's first bytes is skipped and counted, JSON's own ``\\uD83D\\uDE00``
pair is its one code point, and a lone surrogate escape, a later U+FEFF at a line's start or bytes
that are not UTF-8 make a reject row whose reason says so."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

from udfs.evaluation.plan import INDEX_SCHEMA, OK
from udfs.runtime import lines as L

MARKUP = '{"@context": "https://schema.org", "@type": "Person", "name": "%s"}'
PAGES = [f"http://p{i}.example/" for i in range(7)]


def index() -> pa.Table:
    return pa.Table.from_pylist(
        [{"page_id": None, "page_url": u, "page_key": f"k{i}", "state": OK} for i, u in enumerate(PAGES)],
        schema=INDEX_SCHEMA,
    )


def line(i: int, name: str) -> bytes:
    # ensure_ascii: every non-ASCII character as JSON's \\u escapes, a pair for U+1F600
    return json.dumps({"page_url": PAGES[i], "source": "other", "markup": MARKUP % name}).encode() + b"\n"


def test_jsonl_lines_as_writers_write_them(tmp_path):
    from udfs.evaluation.stored import join_markups

    lone = json.dumps({"page_url": PAGES[2], "source": "other", "markup": "x"}).replace('"x"', '"\\ud800"')
    data = (
        b"\xef\xbb\xbf"
        + line(0, "Ada \U0001f600")
        + line(1, "Bea")
        + lone.encode()
        + b"\n"
        + b"\xef\xbb\xbf"
        + line(3, "Cy")
        + line(4, "Di")[:-2]
        + b"\xff}\n"
        + line(5, "Ed")
        # the markup's own JSON escapes a lone surrogate: the table's JSON holds "\\ud800"
        + line(6, "Fay").replace(b"Fay", b"F\\\\ud800")
    )
    assert b"\\ud83d\\ude00" in data
    path = tmp_path / "markups.jsonl"
    path.write_bytes(data)

    found = join_markups(str(path), index(), tmp_path / "lookup.parquet")

    assert found.byte_order_marks == 1
    assert found.kept == {"other": 3}
    assert sorted((r["position"], r["reason"]) for r in found.rejects) == [
        (3, L.REASON_SURROGATE.replace("{escape}", "\\uD800")),
        (4, L.REASON_BOM_INSIDE),
        (5, L.REASON_UNDECODABLE),
        (7, "markup: " + L.REASON_SURROGATE.replace("{escape}", "\\uD800")),
    ]
    kept = pq.read_table(found.lookup).to_pylist()
    assert [json.loads(r["markup"])["name"] for r in kept] == ["Ada \U0001f600", "Bea", "Ed"]


def test_a_file_without_a_byte_order_mark_counts_none(tmp_path):
    from udfs.evaluation.stored import join_markups

    path = tmp_path / "markups.jsonl"
    path.write_bytes(line(0, "Ada").replace(b"\n", b"\r\n") + line(1, "Bea"))
    found = join_markups(str(path), index(), tmp_path / "lookup.parquet")
    assert (found.byte_order_marks, found.kept, found.rejects) == (0, {"other": 2}, [])
