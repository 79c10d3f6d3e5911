"""Which entity the pages job keeps when no C-set types are given, on the real pages at hand: the
demo's WARC (extruct's samples), the Common Crawl excerpts of data/warc, and the paper's pages
(the LLM4Schema.org bundle in ../shared). For every page with at least one usable typed root it
writes one row (no page content: the source, the page's URL or the paper's document id, the
branch of conf/main_entity.toml that decided, the chosen entity's types and @id, and what the job
kept before the rule: the first typed root), then prints the count per branch and, against
experiments/main_entity/labels.csv, how often the chosen entity is the one a reader picks.

    PYTHONPATH=. python experiments/main_entity/measure.py [--pset ../shared/data/llm4schemaorg-pset/pset-history.bundle] [--rule FILE]
"""

from __future__ import annotations

import argparse
import collections
import csv
import sys
from pathlib import Path

from udfs.corpus import html as P
from udfs.corpus import main_entity as ME
from udfs.corpus.encoding import decode_html
from udfs.runtime.config import load_config

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OLD = ME.MainEntityRule(branches=(ME.FIRST_TYPED_ROOT,), furniture=frozenset(), furniture_with_subtypes=())


def warc_pages(path: Path):
    from udfs.corpus import warc as W

    with open(path, "rb") as fh:
        for rec in W.archive_iterator(fh):
            if rec.rec_type != "response":
                continue
            ctype = rec.http_headers.get_header("Content-Type") if rec.http_headers else None
            if ctype and "html" not in ctype.lower():
                continue
            yield rec.rec_headers.get_header("WARC-Target-URI"), rec.content_stream().read(), ctype


def pset_pages(bundle: str):
    from udfs.corpus.pset import open_pset

    src = open_pset(bundle)
    seen = set()
    for f in src.files():
        name = f.rsplit("/", 1)[-1]
        if not name.endswith(".html") or name in seen:
            continue
        seen.add(name)
        yield name[: -len(".html")], src.read(f), None


def first_label(sel: P.Selection, blocks) -> tuple[str, str, str]:
    """The chosen entity's types, @id ("" when blank) and place: "block:root" (the root's rank among
    its block's roots; a nested main entity: "block:nested")."""
    from udfs.schemaorg.markup import parse_markup

    if sel.human_markup is None:
        return "", "", ""
    m = parse_markup(sel.human_markup)
    rid = m.roots[0]
    block = next(b for b in blocks if b.index == sel.block_index)
    rank = next((i for i, d in enumerate(P._readable_roots(block.data)) if d == sel.human_markup), "nested")
    return "/".join(sel.root_types), "" if rid.startswith("_:") else rid, f"{sel.block_index}:{rank}"


def rows(pset: str | None, rule: ME.MainEntityRule):
    cfg = P.PageConfig.of(load_config(None).pages)
    sources = [("demo", warc_pages(ROOT / "data/demo/extruct-samples.warc.gz"))]
    for w in sorted((ROOT / "data/warc").glob("*.warc.gz")):
        sources.append(("cc", warc_pages(w)))
    if pset:
        sources.append(("pset", pset_pages(pset)))
    for source, pages in sources:
        for key, payload, ctype in pages:
            try:
                html = decode_html(payload, ctype)
                blocks = P.jsonld_blocks(html)
                P.read_markups(blocks, None, cfg)  # the blocks checked as the job checks them
                new = P.select_markup(blocks, None, key if source != "pset" else None, rule)
            except Exception as exc:  # noqa: BLE001 - a page the job would call parse_error
                print(f"skip {key}: {type(exc).__name__}", file=sys.stderr)
                continue
            if new.human_markup is None:
                continue
            old = P.select_markup(blocks, None, None, OLD)
            roots = sum(1 for b in blocks if b.error is None and b.data is not None for _ in P._readable_roots(b.data))
            t, i, at = first_label(new, blocks)
            ot, oi, oat = first_label(old, blocks)
            yield {
                "source": source,
                "page": key,
                "branch": new.main_entity_rule,
                "chosen_type": t,
                "chosen_id": i,
                "chosen_at": at,
                "old_type": ot,
                "old_id": oi,
                "old_at": oat,
                "changed": at != oat,
                "roots": roots,
            }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pset", default=None, help="the paper's bundle (or checkout); left out: the bundled pages only")
    ap.add_argument("--rule", default=None, help="a rule file (conf/main_entity.toml's format); default: that file")
    ap.add_argument("--out", default=str(HERE / "choices.csv"))
    a = ap.parse_args()
    out = list(rows(a.pset, ME.load_main_entity_rule(a.rule)))
    with open(a.out, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(out[0]))
        w.writeheader()
        w.writerows(out)
    by = collections.Counter((r["source"], r["branch"]) for r in out)
    print("source\tbranch\tpages")
    for (s, b), n in sorted(by.items()):
        print(f"{s}\t{b}\t{n}")
    for s in sorted({r["source"] for r in out}):
        rs = [r for r in out if r["source"] == s]
        print(f"{s}: {len(rs)} pages, {sum(r['changed'] for r in rs)} choose another entity than the first typed root")
    labels = HERE / "labels.csv"
    if labels.exists():
        got = {(r["source"], r["page"]): r for r in out}
        agree = old_agree = n = 0
        for lab in csv.DictReader(open(labels, encoding="utf-8")):
            r = got.get((lab["source"], lab["page"]))
            if r is None:
                continue
            n += 1
            agree += r["chosen_at"] == lab["reader_at"]
            old_agree += r["old_at"] == lab["reader_at"]
        print(f"labelled pages: {n}; the rule's entity is the reader's: {agree}; the first typed root is: {old_agree}")


if __name__ == "__main__":
    main()
