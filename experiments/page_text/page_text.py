"""Which page text holds what the human markup says: the measurement behind ``[pages]
text_extractor`` and ``judge_text_extractor``.

    .venv/bin/python experiments/page_text/page_text.py [--microdata] [--budget-tokens N] [--pages]

Pages: every HTML response record of the bundled WARC files, read the way jobs/pages.py reads
them (``udfs.corpus.warc.read_record``, ``udfs.corpus.encoding.decode_html``), in two corpora: the
demo corpus (data/demo/extruct-samples.warc.gz, the extruct sample pages ``make demo`` evaluates)
and the Common Crawl records (data/warc/). A page counts when its readable JSON-LD blocks (with
``--microdata`` also its microdata items) hold at least one literal value; its values are the
distinct literal texts of those markups (HTML entities decoded, at most 200 characters).

For each text extractor of ``udfs.corpus.text.TEXT_EXTRACTORS`` the table gives how many values
the text states:

* found: as a whole word sequence after the ground truth's normalisation (case, spacing;
  ``udfs.agents_bench.groundtruth.mentions``, the rule that decides "the text states the value");
* loose: the same after punctuation is also turned into spaces on both sides ("4.5/5" states
  "4.5"; Markdown's ``_Title_`` states "Title");
* word values: the values with a letter and at least four characters, and how many of them the
  text states: a small number such as a list position ("7") is found in almost any long text by
  chance, a name or a street address is not;
* in budget: found within the first ``--budget-tokens`` tokens of the text, what one factuality
  request reads (default: ``[evaluate] context_window`` minus the factuality prompt and the
  answer, as jobs/evaluate.py's chunking computes it);

and the mean text length in characters and tokens. Tokens are tiktoken's ``cl100k_base`` (the
paper's counter, available offline through the ``dev`` extra): the served model's tokenizer needs
the service, and the two differ by a few percent on English text.
"""

from __future__ import annotations

import argparse
import html as htmllib
import re
import sys
from pathlib import Path

from udfs.agents_bench.groundtruth import mentions
from udfs.corpus import html as P
from udfs.corpus import text as T
from udfs.corpus import warc as W
from udfs.corpus.encoding import decode_html
from udfs.schemaorg.markup import Literal, parse_markup

ROOT = Path(__file__).resolve().parents[2]  # the project root

CORPORA = {
    "demo (extruct samples)": sorted((ROOT / "data" / "demo").glob("*.warc.gz")),
    "Common Crawl (data/warc)": sorted((ROOT / "data" / "warc").glob("*.warc.gz")),
}
MAX_VALUE_CHARS = 200
LIMIT = 50_000_000
_PUNCT = re.compile(r"[^\w\s]|_")
_LETTER = re.compile(r"[^\W\d_]")


def is_word_value(v: str) -> bool:
    return len(v) >= 4 and _LETTER.search(v) is not None


def html_pages(paths) -> list[tuple[str, str]]:
    """(url, decoded HTML) of every HTML response record of the WARC files."""
    out = []
    for path in paths:
        for row in W.index_warc(str(path)):
            if (
                row["warc_record_type"] != "response"
                or row["fetch_status"] != 200
                or not (row["content_mime_type"] or "").startswith(("text/html", "application/xhtml"))
            ):
                continue
            rec = W.read_record(str(path), row["warc_record_offset"], row["warc_record_length"], max_record_bytes=LIMIT)
            out.append((row["url"], decode_html(rec.payload, rec.content_type)))
    return out


def markup_values(html: str, microdata: bool) -> set[str]:
    """The distinct literal values of the page's readable markups."""
    blocks = P.jsonld_blocks(html)
    if microdata:
        try:
            blocks += P.microdata_blocks(html, len(blocks))
        except Exception:  # noqa: BLE001 - a page whose microdata extruct cannot read keeps its JSON-LD
            pass
    values = set()
    for b in blocks:
        if b.data is None:
            continue
        try:
            m = parse_markup(b.data)
        except Exception:  # noqa: BLE001 - a block the reader refuses states no values
            continue
        for t in m.triples():
            if isinstance(t.value, Literal):
                v = htmllib.unescape(t.value.text).strip()
                if v and len(v) <= MAX_VALUE_CHARS:
                    values.add(v)
    return values


def loose(text: str) -> str:
    return _PUNCT.sub(" ", text)


def budget_tokens(tokenizer, context_window: int, judge) -> int:
    """What jobs/evaluate.py leaves for page text in one factuality request of ``judge``
    (``udfs.agents.judge.Judge.probe_messages``, what the evaluation's chunks leave room for)."""
    from udfs.agents import prompts

    probe = judge.probe_messages()
    overhead = sum(tokenizer.count(m["content"]) for m in probe) + prompts.TEMPLATE_TOKENS
    return context_window - 8 - overhead


def head_tokens(tokenizer, text: str, n: int) -> str:
    toks = tokenizer.token_bytes(text)
    return b"".join(toks[:n]).decode("utf-8", "ignore")


def extraction_cpu_ms(pages, extractors, repeat: int = 2) -> dict[str, float]:
    """CPU milliseconds per page of each extractor (every page, with markup or not), and of the
    pages job's default pair (``text`` and ``judge_text``)."""
    import time

    from udfs.runtime.config import load_config

    conf = load_config().pages
    sets = {x: [x] for x in extractors}
    sets["text + judge_text (defaults)"] = [conf.text_extractor, conf.judge_text_extractor]
    out = {}
    for name, xs in sets.items():
        t0 = time.process_time()
        for _ in range(repeat):
            for _, html in pages:
                T.extract_texts(html, xs)
        out[name] = (time.process_time() - t0) / repeat / max(1, len(pages)) * 1000
    return out


def measure(pages, extractors, tokenizer, budget: int, microdata: bool, per_page: bool):
    rows = {
        x: {"values": 0, "found": 0, "loose": 0, "words": 0, "words_found": 0, "budget": 0, "chars": 0, "tokens": 0}
        for x in extractors
    }
    n_pages = 0
    for url, html in pages:
        values = markup_values(html, microdata)
        if not values:
            continue
        n_pages += 1
        line = []
        for x in extractors:
            text = T.extract_text(html, x)
            head = head_tokens(tokenizer, text, budget)
            r = rows[x]
            found = sum(mentions(text, v) for v in values)
            r["values"] += len(values)
            r["found"] += found
            r["loose"] += sum(mentions(loose(text), loose(v)) for v in values)
            words = [v for v in values if is_word_value(v)]
            r["words"] += len(words)
            r["words_found"] += sum(mentions(text, v) for v in words)
            r["budget"] += sum(mentions(head, v) for v in values)
            r["chars"] += len(text)
            r["tokens"] += tokenizer.count(text)
            line.append(f"{x} {found}")
        if per_page:
            print(f"  {url[:90]}: {len(values)} values; " + ", ".join(line))
    return n_pages, rows


def main(argv: list[str] | None = None) -> int:
    from udfs.agents.judge import build_judge
    from udfs.llm.chunking import TiktokenTokenizer
    from udfs.runtime.config import load_config

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--microdata", action="store_true", help="also count microdata items' values")
    ap.add_argument(
        "--budget-tokens",
        type=int,
        default=0,
        help="tokens of one factuality request's page text (0: from [evaluate] context_window)",
    )
    ap.add_argument("--pages", action="store_true", help="also print each page's counts")
    args = ap.parse_args(argv)
    conf = load_config()
    tok = TiktokenTokenizer()
    budget = args.budget_tokens or budget_tokens(
        tok, conf.evaluate.context_window, build_judge(conf.judge, config_file=conf.path)
    )
    extractors = list(T.TEXT_EXTRACTORS)
    print(
        f"values: literal values of the pages' JSON-LD{' and microdata' if args.microdata else ''}; "
        f"budget: first {budget} tokens (cl100k_base)\n"
    )
    print(
        "| corpus | extractor | pages | values | found | share | loose | share | in budget | share "
        "| word values | found | share | mean chars | mean tokens |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    every = []
    for corpus, paths in CORPORA.items():
        if args.pages:
            print(f"{corpus}:", file=sys.stderr)
        pages = html_pages(paths)
        every += pages
        n, rows = measure(pages, extractors, tok, budget, args.microdata, args.pages)
        for x in extractors:
            r = rows[x]
            v = max(1, r["values"])
            print(
                f"| {corpus} | {x} | {n} | {r['values']} | {r['found']} | {r['found'] / v:.1%} | {r['loose']} "
                f"| {r['loose'] / v:.1%} | {r['budget']} | {r['budget'] / v:.1%} | {r['words']} | {r['words_found']} "
                f"| {r['words_found'] / max(1, r['words']):.1%} | {r['chars'] / max(1, n):,.0f} "
                f"| {r['tokens'] / max(1, n):,.0f} |"
            )
    cpu = extraction_cpu_ms(every, extractors)
    print(f"\nCPU per page over all {len(every)} HTML pages: " + ", ".join(f"{k} {v:.1f} ms" for k, v in cpu.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
