"""Synthetic pages for measuring the evaluation harness: the demo's pages with text and human markup
(the extruct samples, through the pages job's own extraction) replicated under new URLs. Each
copy's text starts with its copy number and each literal of its markup is changed the way its kind
allows (text gets the copy number, a URL a fragment, a number or a date an offset), so no two
copies ask the same request and a request cache answers nothing. ``benchmarks/evaluate_throughput.py``
measures the harness on them; tests feed them to ``jobs/evaluate.py``.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from pathlib import Path
from typing import Any, Iterator

from udfs.runtime.paths import DATA_DIR

SAMPLES = DATA_DIR / "html" / "extruct-samples"
HOST = "http://extruct-samples.example/"
ROWS_PER_FILE = 5_000  # pages per input Parquet file: a 100k-page table is 20 files


def base_pages() -> list[dict[str, Any]]:
    """The demo pages the evaluation can judge (status ok, text, human markup), extracted from the
    extruct samples with the pages job's own code, under the URLs ``data/demo/make_demo_warc.py``
    gives them; each page's first typed root entity (``FIRST_TYPED_ROOT_ONLY``: the corpora and
    the figures measured on them were made so)."""
    from urllib.parse import quote

    from udfs.corpus.html import PageConfig, process_html
    from udfs.corpus.main_entity import FIRST_TYPED_ROOT_ONLY
    from udfs.runtime.config import load_config

    cfg = PageConfig.of(load_config().pages)
    out = []
    for path in sorted(p for p in SAMPLES.rglob("*.html") if p.is_file()):
        r = process_html(path.read_bytes(), "text/html", None, cfg, main_entity=FIRST_TYPED_ROOT_ONLY)
        if r["status"] == "ok" and (r["text"] or "").strip() and r["human_markup"]:
            out.append(
                {
                    "page_url": HOST + quote(path.relative_to(SAMPLES).as_posix()),
                    "status": "ok",
                    "text": r["text"],
                    "human_markup": r["human_markup"],
                    "root_types": r["root_types"],
                }
            )
    if not out:
        raise SystemExit(f"no usable page among {SAMPLES}")
    return out


_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})(.*)$", re.S)
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")


STEP = 1_000_000  # a number's offset per copy: larger than any number of one page, so copies never meet
LABELS = ("name", "headline", "alternateName", "description")  # what a claim about a node shows


def _vary(value: Any, i: int, depth: int = 0, nodes: list[int] | None = None) -> Any:
    """A markup value made unique to copy ``i`` while keeping its kind (so validity keeps its
    verdict). A nested node without a label gets an IRI of its own: a claim about it shows the
    node's IRI, where a blank node's would read the same on every copy."""
    nodes = [0] if nodes is None else nodes
    if isinstance(value, dict):
        out = {k: (v if k.startswith("@") else _vary(v, i, depth + 1, nodes)) for k, v in value.items()}
        if depth and "@type" in out and "@id" not in out and not any(out.get(k) for k in LABELS):
            nodes[0] += 1
            out["@id"] = f"urn:copy:{i}:{nodes[0]}"
        return out
    if isinstance(value, list):
        return [_vary(v, i, depth, nodes) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value + i * STEP
    if isinstance(value, float):
        return round(value + i * 1e-6, 9)
    if not isinstance(value, str):
        return value
    m = _DATE.match(value)
    if m:
        try:
            day = dt.date.fromisoformat(m.group(1)) + dt.timedelta(days=i)
            return day.isoformat() + m.group(2)
        except (ValueError, OverflowError):
            pass
    if _NUMBER.match(value):
        if "." not in value:
            return str(int(value) + i * STEP)
        return f"{float(value) + i * STEP:.{len(value.split('.')[1])}f}"
    if "://" in value:
        return f"{value}{'-' if '#' in value else '#'}copy-{i}"
    return f"{value} {i}"


def synthetic_pages(n: int, base: list[dict[str, Any]], text_chars: int = 0) -> Iterator[dict[str, Any]]:
    """``n`` pages: copy ``i`` of base page ``i % len(base)``, under its own URL; with
    ``text_chars``, its text padded to that length by repeating it (a long page's size)."""
    for i in range(n):
        b = base[i % len(base)]
        markup = _vary(json.loads(b["human_markup"]), i)
        yield {
            "page_url": f"{b['page_url']}?copy={i}",
            "status": "ok",
            "selected": True,
            "feature": "n_properties",
            "stratum": "copy",
            "sample_rank": i,
            "text": _padded(f"Copy {i}.\n{b['text']}", text_chars),
            "human_markup": json.dumps(markup, ensure_ascii=False),
            "root_types": list(b["root_types"]),
        }


def _padded(text: str, chars: int) -> str:
    if len(text) >= chars:
        return text
    return (text + "\n\n") * (chars // (len(text) + 2)) + text[: chars % (len(text) + 2)]


def write_pages(folder: Path, n: int, text_chars: int = 0) -> Path:
    """The pages table of ``n`` synthetic pages under ``folder`` (files of ROWS_PER_FILE pages),
    written once and reused; ``text_chars`` as in ``synthetic_pages``."""
    import pyarrow as pa

    from udfs.runtime.io import Folder

    target = folder / (f"pages-{n}" + (f"-{text_chars}chars" if text_chars else ""))
    done = target / "_DONE"
    if done.exists():
        return target
    shutil.rmtree(target, ignore_errors=True)
    out = Folder(target)
    base = base_pages()
    rows: list[dict[str, Any]] = []
    part = 0
    for row in synthetic_pages(n, base, text_chars):
        rows.append(row)
        if len(rows) == ROWS_PER_FILE:
            out.write_parquet(f"part-{part:05d}.parquet", pa.Table.from_pylist(rows))
            rows, part = [], part + 1
    if rows:
        out.write_parquet(f"part-{part:05d}.parquet", pa.Table.from_pylist(rows))
    done.write_text("")
    return target
