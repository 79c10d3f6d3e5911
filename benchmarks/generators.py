"""Precision and recall of the generator attribution (udfs/corpus/generators.py) against hand labels.

    .venv/bin/python benchmarks/generators.py [--labels data/generators/labels.csv]
        [--rules conf/generators.toml] [--split all|dev|heldout] [--kinds KIND ...] [--errors]
        [--pset ../shared/data/llm4schemaorg-pset]

Reads every labelled page (data/generators/README.md: the paper's pages from the history bundle,
read where they lie; the bundled WARC records), extracts its JSON-LD blocks as the pages job does
(``udfs.corpus.html``: decoded, parsed, the scripts in document order) and attributes each block.
Prints, per generator (the labels' and the rules' ids), the blocks labelled and predicted, true
positives, precision and recall, then the share of blocks the rules leave ``unknown`` beside the
share the labeller left ``unknown``. ``--errors`` lists every block where the two differ (tune the
rules on ``--split dev`` only). ``--kinds`` keeps only the rule entries whose conditions are all of
those kinds (``script_attribute``, ``section_start``, ... ``page_comment``; ``script_value`` and
``section_end`` go with theirs): what each kind of evidence finds on its own. A labelled block the extraction does not find is an error that
stops the run: the labels and the extraction must number blocks alike.
"""

from __future__ import annotations

import csv
import sys
from collections import Counter, defaultdict
from pathlib import Path

from udfs.corpus import generators as G
from udfs.corpus import html as P
from udfs.corpus.encoding import decode_html
from udfs.runtime.cli import ArgumentParser
from udfs.runtime.paths import CONF_DIR, DATA_DIR, PROJECT_ROOT

LABELS = DATA_DIR / "generators" / "labels.csv"
PSET_DATA = PROJECT_ROOT.parent / "shared" / "data" / "llm4schemaorg-pset"
WARCS = {"demo": [DATA_DIR / "demo" / "extruct-samples.warc.gz"], "warc": sorted((DATA_DIR / "warc").glob("*.warc.gz"))}


def read_labels(path: Path, split: str) -> dict[tuple[str, str], dict[int, tuple[str, str]]]:
    """{(source, page): {block: (generator, note)}} of the rows of ``split`` ("all": every row)."""
    out: dict[tuple[str, str], dict[int, tuple[str, str]]] = defaultdict(dict)
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if split in ("all", row["split"]):
                out[(row["source"], row["page"])][int(row["block"])] = (row["generator"], row["note"])
    return dict(out)


def warc_pages(source: str, urls: set[str]) -> dict[str, tuple[bytes, str | None]]:
    """{url: (payload, Content-Type)} of the response records of ``source``'s WARC files."""
    from warcio.archiveiterator import ArchiveIterator

    out = {}
    for path in WARCS[source]:
        with open(path, "rb") as fh:
            for rec in ArchiveIterator(fh):
                url = rec.rec_headers.get_header("WARC-Target-URI")
                if rec.rec_type == "response" and url in urls:
                    out[url] = (rec.content_stream().read(), rec.http_headers.get_header("Content-Type"))
    return out


def pset_pages(root: Path, ids: set[str]) -> dict[str, tuple[bytes, None]]:
    """{page id: (HTML, None)} of the paper's pages (``<feature>/stratum_<n>/corpus/<id>.html`` at
    the bundle's last commit); a page id found twice or not at all is an error."""
    from udfs.corpus.pset import PSET, open_pset

    src = open_pset(root)
    paths: dict[str, list[str]] = defaultdict(list)
    for f in src.files():
        parts = f[len(PSET) + 1 :].split("/")
        if len(parts) == 4 and parts[2] == "corpus" and parts[3].endswith(".html") and parts[3][:-5] in ids:
            paths[parts[3][:-5]].append(f)
    bad = sorted(i for i in ids if len(paths.get(i, [])) != 1)
    if bad:
        raise SystemExit(f"paper pages not found once in {root}: {', '.join(bad[:5])}")
    return {i: (src.read(paths[i][0]), None) for i in ids}


def rules_of_kinds(path: str, kinds: list[str]) -> G.GeneratorRules:
    """The rules of ``path`` with only the evidence entries whose conditions are all of ``kinds``
    (a generator left without an entry is dropped)."""
    from udfs.runtime.config import read_toml

    data = read_toml(Path(path))
    bad = sorted(set(kinds) - set(G.STRENGTH))
    if bad:
        raise SystemExit(f"unknown evidence kinds {', '.join(bad)}: any of {', '.join(G.STRENGTH)}")
    partner = {"script_value": "script_attribute", "section_end": "section_start"}
    kept = []
    for entry in data["generator"]:
        items = [e for e in entry["evidence"] if all(partner.get(k, k) in kinds for k in e)]
        if items:
            kept.append({**entry, "evidence": items})
    return G.parse_rules({"generator": kept}, f"{path} ({', '.join(kinds)} only)")


def attribute(payload: bytes, content_type: str | None, rules: G.GeneratorRules) -> list[G.Attribution]:
    """The attributions of a page's JSON-LD blocks, extracted as ``udfs.corpus.html.process_html`` does."""
    html = decode_html(payload, content_type)
    tree = P.html_tree(html)
    blocks = P.jsonld_blocks(html, tree)
    found = G.attribute_page(html, tree.root, P.jsonld_scripts(tree.root), rules, blocks)
    if len(found) != len(blocks):
        raise RuntimeError(f"{len(found)} attributions for {len(blocks)} blocks")
    return found


def table(pairs: list[tuple[str, str]], ids: list[str]) -> list[str]:
    """Markdown rows: per generator, labelled, predicted, true positives, precision, recall; then
    the unknown shares. ``pairs``: (label, prediction) per block."""
    labelled = Counter(label for label, _ in pairs)
    predicted = Counter(pred for _, pred in pairs)
    hits = Counter(label for label, pred in pairs if label == pred)
    rows = ["| generator | labelled | predicted | correct | precision | recall |", "|---|---:|---:|---:|---:|---:|"]
    names = [g for g in ids if labelled[g] or predicted[g]] + sorted(
        g for g in set(labelled) | set(predicted) if g not in ids and g != G.UNKNOWN
    )
    for g in names:
        prec = f"{hits[g] / predicted[g]:.3f}" if predicted[g] else "-"
        rec = f"{hits[g] / labelled[g]:.3f}" if labelled[g] else "-"
        rows.append(f"| {g} | {labelled[g]} | {predicted[g]} | {hits[g]} | {prec} | {rec} |")
    named = [(label, pred) for label, pred in pairs if label != G.UNKNOWN]
    n_named, n_named_hit = len(named), sum(label == pred for label, pred in named)
    n_assigned = sum(pred != G.UNKNOWN for _, pred in pairs)
    n_assigned_hit = sum(label == pred for label, pred in pairs if pred != G.UNKNOWN)
    rows.append(
        f"| all named generators | {n_named} | {n_assigned} | {n_named_hit} | "
        f"{n_assigned_hit / n_assigned:.3f} | {n_named_hit / n_named:.3f} |"
        if n_named and n_assigned
        else f"| all named generators | {n_named} | {n_assigned} | {n_named_hit} | - | - |"
    )
    n = len(pairs)
    rows.append(
        f"| `unknown` | {labelled[G.UNKNOWN]} ({labelled[G.UNKNOWN] / n:.1%}) | "
        f"{predicted[G.UNKNOWN]} ({predicted[G.UNKNOWN] / n:.1%}) | {hits[G.UNKNOWN]} | "
        + (f"{hits[G.UNKNOWN] / predicted[G.UNKNOWN]:.3f}" if predicted[G.UNKNOWN] else "-")
        + " | "
        + (f"{hits[G.UNKNOWN] / labelled[G.UNKNOWN]:.3f}" if labelled[G.UNKNOWN] else "-")
        + " |"
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--labels", default=str(LABELS))
    ap.add_argument("--rules", default=str(CONF_DIR / "generators.toml"))
    ap.add_argument("--split", choices=["all", "dev", "heldout"], default="all")
    ap.add_argument("--pset", default=str(PSET_DATA), help="the paper's bundle folder (its pages skipped if absent)")
    ap.add_argument("--errors", action="store_true", help="list the blocks where rules and labels differ")
    ap.add_argument("--kinds", nargs="+", help="only rule entries whose conditions are all of these kinds")
    args = ap.parse_args(argv)
    rules = rules_of_kinds(args.rules, args.kinds) if args.kinds else G.load_rules(args.rules)
    labels = read_labels(Path(args.labels), args.split)
    pages: dict[tuple[str, str], tuple[bytes, str | None]] = {}
    for source in sorted({s for s, _ in labels}):
        wanted = {p for s, p in labels if s == source}
        if source == "pset":
            if not (Path(args.pset) / "pset-history.bundle").is_file():
                print(f"the paper's pages skipped: no bundle in {args.pset}", file=sys.stderr)
                continue
            got = pset_pages(Path(args.pset), wanted)
        elif source in WARCS:
            got = warc_pages(source, wanted)
        else:
            raise SystemExit(f"unknown source {source!r} in {args.labels}")
        missing = sorted(wanted - set(got))
        if missing:
            raise SystemExit(f"{source}: labelled pages not found: {', '.join(missing[:5])}")
        pages.update({(source, p): v for p, v in got.items()})
    pairs, errors = [], []
    for (source, page), (payload, ctype) in sorted(pages.items()):
        found = attribute(payload, ctype, rules)
        for block, (label, note) in sorted(labels[(source, page)].items()):
            if block >= len(found):
                raise SystemExit(f"{source} {page}: block {block} labelled, the page has {len(found)} JSON-LD blocks")
            pred = found[block]
            pairs.append((label, pred.generator))
            if label != pred.generator:
                errors.append(
                    f"{source} {page} #{block}: label {label} ({note}); rules {pred.generator} ({pred.evidence})"
                )
    n_pages = len(pages)
    print(f"{len(pairs)} labelled blocks on {n_pages} pages (split {args.split}); rules {rules.path}")
    print("\n".join(table(pairs, rules.ids())))
    if args.errors:
        print(f"\n{len(errors)} blocks where the rules and the labels differ:")
        print("\n".join(errors))
    return 0


if __name__ == "__main__":
    sys.exit(main())
