"""Table 7 per generator and per type (udfs/report/groups.py, the report's sections, the paper's
pages' tables): the intervals, the pooling of groups whose intervals are too wide, counts that
reconcile, and on the paper's own pages (where ``../shared`` has them) the human markups traced to
their generators, adding up to the paper's Table 7."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

from tests.conftest import PSET_DATA, ROOT
from udfs.corpus import generators as G
from udfs.corpus.generators import Attribution
from udfs.report import groups as GR
from udfs.scores.confusion import Confusion


def _units(group: str, pages: int, judged: int, rejected_at: tuple[int, int, int]) -> list[GR.Unit]:
    """``pages`` pages of ``group``, each with ``judged`` triples in and the given numbers rejected
    by validity, factuality and compliance (alternately one more, so pages differ)."""
    out = []
    for i in range(pages):
        v, f, c = (r + (i % 2) for r in rejected_at)
        after_v = judged - v
        after_f = after_v - f
        out.append(GR.Unit(group, (judged, after_v, after_f, after_f - c)))
    return out


def test_observed_interval_holds_the_bootstrap_and_the_wilson_interval():
    judged, rejected = [20] * 10, [4, 6] * 5
    rate, low, high = GR.observed_interval(judged, rejected)
    assert rate == pytest.approx(0.25)
    w_low, w_high = GR.wilson(50, 200)
    assert low <= w_low and high >= w_high and low < rate < high
    # fewer pages than MIN_PAGES: a rate, no interval; no claim judged: nothing
    assert GR.observed_interval([20] * (GR.MIN_PAGES - 1), [5] * (GR.MIN_PAGES - 1))[1:] == (None, None)
    assert GR.observed_interval([0, 0], [0, 0]) == (None, None, None)


def test_groups_with_wide_intervals_are_pooled_and_counts_reconcile():
    units = (
        _units("yoast", 40, 20, (2, 5, 1))
        + _units("unknown", 60, 25, (4, 8, 2))
        + _units("wix", 2, 30, (20, 1, 1))  # two pages: no interval, pooled
        + _units("shopify", GR.MIN_PAGES, 6, (1, 1, 0))  # few claims: a wide interval, pooled
    )
    rows = GR.group_table(units, 0.25)
    assert [r.group for r in rows] == ["unknown", "yoast", GR.OTHER]
    assert rows[-1].pooled == ["shopify", "wix"]
    assert sum(r.pages for r in rows) == len(units)
    for i in range(4):
        assert sum(r.counts[i] for r in rows) == sum(u.counts[i] for u in units)
    # the shown rows' every interval is within the width; the pooled row is shown whatever its width
    assert all(r.width is not None and r.width <= 0.25 for r in rows[:-1])
    # a narrower width pools everything; a width of 1 shows every group with an interval
    assert [r.group for r in GR.group_table(units, 0.01)] == [GR.OTHER]
    assert [r.group for r in GR.group_table(units, 1.0)] == ["unknown", "yoast", "shopify", GR.OTHER]


def test_judged_agents_are_corrected_where_the_judge_was_measured():
    units = _units("yoast", 30, 20, (2, 5, 1))
    judge = {"factuality": Confusion(tp=90, fn=10, tn=80, fp=20)}
    rates = {r.agent: r for r in GR.group_rates(units, judge)}
    fact = rates["factuality"]
    # Rogan-Gladen for the rejected class: (obs + sens - 1) / (sens + spec - 1)
    assert fact.corrected == pytest.approx((fact.observed + 0.9 - 1) / (0.9 + 0.8 - 1))
    assert fact.corrected_low < fact.corrected < fact.corrected_high
    assert rates["compliance"].corrected is None and "no calibration matched" in rates["compliance"].why
    assert rates["validity"].corrected is None and rates["validity"].why is None  # rules, not a judge
    header, text, frame = GR.table_rows(GR.group_table(units, 1.0, judge))
    assert header[:2] == ["group", "pages"] and "corrected: factuality" in header
    assert text[0][header.index("corrected: compliance")] == "no calibration matched this agent: not corrected"
    assert frame[0]["factuality_corrected"] == fact.corrected


def test_the_reports_sections_group_the_human_pages_by_generator_and_every_source_by_type():
    from udfs.report.sections.by_generator import generator_table
    from udfs.report.sections.by_type import type_tables

    rows = []
    for i in range(12):
        gen = "yoast" if i < 6 else "unknown"
        for source in ("human", "m"):
            rows.append(
                {
                    "page_key": f"p{i}",
                    "source": source,
                    "status": "ok",
                    "human_generator": gen,
                    "root_types": ["Product"] if i % 2 else ["Organization"],
                    "n_triples": 20,
                    "n_valid": 18 - i % 2,
                    "n_factual": 14,
                    "n_compliant": 13,
                }  # fmt: skip
            )
    rows.append({**rows[0], "page_key": "w", "human_generator": "wix"})
    rows.append({**rows[0], "page_key": "x", "status": "markup_error", "human_generator": "shopify"})
    con = duckdb.connect()
    con.register("scores", pa.Table.from_pylist(rows))
    out = generator_table(con, list(rows[0]), {}, 0.5)
    gen = out["generator"]
    assert gen["source"] == "human"
    assert [r[0] for r in gen["rows"]] == ["unknown", "yoast", f"{GR.OTHER}: wix"]
    assert sum(f["pages"] for f in out["frame"]) == 13  # the human pages with status ok
    types, frame = type_tables(con, {}, 0.5)
    assert [t["source"] for t in types] == ["human", "m"]
    assert {f["group"] for f in frame} == {"Organization", "Product"}
    # a run before the column: the table says why it is absent
    old = generator_table(con, [c for c in rows[0] if c != "human_generator"], {}, 0.5)
    assert old["generator"] is None and "no human_generator column" in old["why"]


class _Block:
    def __init__(self, index, data):
        self.index, self.data = index, data


def test_a_kept_apart_markup_takes_the_generator_of_the_block_it_came_from():
    blocks = [
        _Block(0, {"@type": "WebSite", "name": "Acme", "url": "https://a.example/"}),
        _Block(1, {"@type": "Product", "name": "Mug", "sku": "M-1", "offers": {"price": "9.50"}}),
    ]
    found = [Attribution("yoast", "y"), Attribution("woocommerce", "w")]
    # block 0 holds one of its values, block 1 three of four: block 1's
    markup = {"@type": "Product", "name": "Mug", "sku": "M-1", "url": "https://a.example/"}
    got = G.markup_attribution(markup, blocks, found)
    assert got.generator == "woocommerce" and got.evidence.startswith("block 1 holds 3 of the markup's 4 values; w")
    # spread over blocks of one generator: that generator; of two: unknown, saying so
    spread = {"name": "Acme", "sku": "M-1", "gtin": "1", "brand": "B", "color": "red"}
    assert G.markup_attribution(spread, blocks, [Attribution("wix"), Attribution("wix")]).generator == "wix"
    mixed = G.markup_attribution(spread, blocks, found)
    assert mixed.generator == "unknown" and "of generators woocommerce, yoast" in mixed.evidence
    assert G.markup_attribution({"name": "Other"}, blocks, found).generator == "unknown"
    assert G.markup_attribution({"@type": "Thing"}, blocks, found).generator == "unknown"
    assert G.markup_attribution({}, blocks, found) is None


@pytest.fixture(scope="module")
def paper_src():
    from udfs.corpus.pset import open_pset

    if not (PSET_DATA / "pset-history.bundle").is_file():
        pytest.skip(f"the paper's data is not at {PSET_DATA} (no licence: never bundled)")
    return open_pset(PSET_DATA)


def test_the_papers_human_markups_per_generator_add_up_to_table7(paper_src):
    from udfs.report import paper, paper_pages

    parts = dict((name, frame) for name, _, frame in paper_pages.by_group(paper_src, None, 0.25))
    for name in ("paper_by_generator", "paper_by_type"):
        frame = parts[name]
        assert tuple(sum(r[s] for r in frame) for s in GR.STAGES) == paper.TABLE7["human"]
        assert sum(r["markups"] for r in frame) == 198  # results.csv's human markups, as the paper sums them
    gens = {r["group"]: r for r in parts["paper_by_generator"]}
    # the paper's human markups: unknown (hand-written, the sites' own) is the one group with enough
    # claims; every named generator is pooled, and all of them are rule ids
    assert set(gens) == {"unknown", GR.OTHER}
    named = set(gens[GR.OTHER]["pooled"].split())
    assert (
        "yoast" in named
        and "woocommerce" in named
        and named <= set(G.load_rules(ROOT / "conf" / "generators.toml").ids())
    )


def test_the_papers_human_markups_are_traced_to_the_labelled_block(paper_src):
    """Pages whose human markup comes from a block the labels name: the trace names the same."""
    from udfs.report import paper_pages

    docs = [d for d in paper_pages.paper_documents(paper_src) if d["source"] == "human"]
    traced = paper_pages.human_generators(paper_src, docs)
    assert traced["ce89c7b4c330becac4f8c11ec9b61a59"].generator == "rank-math"  # its only block
    assert traced["816811c4104b4e40c461a5c3daa47190"].generator == "woocommerce"  # not the Yoast graph beside it
    assert traced["a7ad45c132edec8f85b092f8d7aac611"].generator == "mediavine-create"  # the recipe, not Yoast's
    assert all(a is not None for a in traced.values()) and len(traced) == 182
