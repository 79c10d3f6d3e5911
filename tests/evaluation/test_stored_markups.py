"""jobs/evaluate.py --markups: markups made elsewhere, judged like generated ones.

The pages are the bundled demo pages through the pages job's extraction (plus a failed fetch);
the stored markups are real: another page's human markup, schema.org's own examples, and where
the paper's data is at hand (``../shared/data/llm4schemaorg-pset``) a GPT-4 markup of the paper.
The harness tests run the validity agent only (no model answers); the ``model`` test judges a
stored markup's factuality with the embedded model.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import ROOT, demo_pages_table
from tests.evaluation.test_evaluate_parts import record, stub_server, table

PSET = ROOT.parent / "shared" / "data" / "llm4schemaorg-pset" / "pset-history.bundle"


@pytest.fixture(scope="module")
def stub():
    with stub_server() as s:
        yield s


def example_markups(n: int) -> list[str]:
    """The first ``n`` schema.org example markups that the JSON-LD reader reads."""
    from testkit.markup_corpus import schemaorg_example_markups
    from udfs.schemaorg.markup import MarkupError, parse_markup

    out = []
    for m in schemaorg_example_markups():
        try:
            if any(True for _ in parse_markup(m.text).triples()):
                out.append(m.text)
        except MarkupError:
            continue
        if len(out) == n:
            return out
    raise AssertionError("too few readable schema.org examples")


def paper_markup(tmp: Path) -> str | None:
    """A GPT-4 markup of the paper's pages (its own file, from the bundle), or None without it."""
    if not PSET.exists():
        return None
    clone = tmp / "pset"
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(PSET), str(clone)], check=True, timeout=120)
    names = subprocess.run(
        ["git", "-C", str(clone), "ls-tree", "-r", "--name-only", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.split()
    path = next(
        n
        for n in names
        if "/GPT_4_Turbo_Preview/text2kg_prompt3/" in n
        and re.fullmatch(r"[0-9a-f]{32}_[A-Za-z]+\.jsonld", n.split("/")[-1])
    )
    return subprocess.run(
        ["git", "-C", str(clone), "show", f"HEAD:{path}"], check=True, capture_output=True, text=True
    ).stdout


def pages_table(folder: Path, *, page_id: bool) -> list[dict]:
    """The demo pages (two with text and human markup, one without text) and a failed fetch,
    written as a pages/ table; with ``page_id``, a page_id column (ids p0, p1...)."""
    rows = demo_pages_table().to_pylist()
    rows.append({**rows[0], "page_url": "http://failed.example/", "status": "fetch_failed", "text": None})
    if page_id:
        rows = [{"page_id": f"p{i}", **r} for i, r in enumerate(rows)]
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / "part-0.parquet")
    return rows


def argv(pages: Path, out: Path, url: str, markups: Path, *extra: str) -> list[str]:
    return [
        "--input",
        str(pages),
        "--output",
        str(out),
        "--base-url",
        url,
        "--markups",
        str(markups),
        "--stages",
        "validity",
        "--executor",
        "local",
        "--limit",
        "0",
        "--timeout-s",
        "30",
        *extra,
    ]


def test_stored_markups_are_judged_scored_and_rejected_with_reasons(stub, tmp_path, capsys):
    from jobs.evaluate import EvaluateJob
    from udfs.schemaorg.markup import parse_markup
    from udfs.scores.memr import memr

    pages = pages_table(tmp_path / "pages", page_id=False)
    a, b, no_text, failed = pages
    ex = example_markups(3)
    gpt = paper_markup(tmp_path)
    lines = [
        {"page_url": a["page_url"], "source": "other-page", "markup": b["human_markup"]},
        {"page_url": a["page_url"], "source": "examples", "markup": ex[0]},
        {"page_url": b["page_url"], "source": "examples", "markup": ex[1]},
        {"page_url": b["page_url"], "source": "other-page", "markup": "  "},
        {"page_url": b["page_url"], "source": "broken", "markup": ex[2][: len(ex[2]) // 2]},
        {"page_url": b["page_url"], "source": "examples-empty", "markup": "[]"},
        {"page_url": a["page_url"], "source": "twice", "markup": ex[1]},
        {"page_url": a["page_url"], "source": "twice", "markup": ex[2]},
        {"page_url": "http://nowhere.example/", "source": "examples", "markup": ex[0]},
        {"page_url": no_text["page_url"], "source": "examples", "markup": ex[0]},
        {"page_url": failed["page_url"], "source": "examples", "markup": ex[0]},
        {"page_url": a["page_url"], "markup": ex[0]},
    ]
    if gpt is not None:
        lines.append({"page_url": a["page_url"], "source": "gpt-4", "markup": gpt})
    markups = tmp_path / "markups.jsonl"
    markups.write_text("\n".join([json.dumps(x) for x in lines] + ["{not a json line"]) + "\n")

    out = tmp_path / "out"
    stub.handler.seen.clear()
    assert EvaluateJob(argv(tmp_path / "pages", out, stub.url, str(markups))).main() == 0
    assert stub.handler.seen == []  # nothing generated: --markups alone asks no model

    rec = record(out)
    judged = {"other-page", "examples"} | ({"gpt-4"} if gpt else set())
    assert rec["evaluation"]["sources"] == ["human", *sorted(judged)]
    scores = {(s["page_url"], s["source"]): s for s in table(out / "scores")}
    triples = table(out / "triples")
    # only the pages the table names are evaluated: both pages with text
    assert {u for u, _ in scores} == {a["page_url"], b["page_url"]}
    stored = {
        (a["page_url"], "other-page"): b["human_markup"],
        (a["page_url"], "examples"): ex[0],
        (b["page_url"], "examples"): ex[1],
        **({(a["page_url"], "gpt-4"): gpt} if gpt else {}),
    }
    for (url, src), text in stored.items():
        s = scores[(url, src)]
        rows = [t for t in triples if t["page_url"] == url and t["source"] == src]
        assert s["status"] == "ok" and s["generation_chunks"] is None
        assert s["n_triples"] == len(rows) == len(list(parse_markup(text).triples())) > 0
        assert s["n_valid"] == sum(t["valid"] for t in rows) and all(t["valid"] is not None for t in rows)
        human = pages[0 if url == a["page_url"] else 1]["human_markup"]
        raw = memr(parse_markup(human), parse_markup(text))
        assert (s["memr_raw_h"], s["memr_raw_l"]) == (raw.h, raw.l)
        assert s["memr_h"] is not None and s["key_f1"] is not None
    # the other page's human markup stored as a source: its triples are the human triples of that page
    same = [t for t in triples if t["page_url"] == a["page_url"] and t["source"] == "other-page"]
    theirs = [t for t in triples if t["page_url"] == b["page_url"] and t["source"] == "human"]
    assert sorted((t["property"], t["value"], t["valid"]) for t in same) == sorted(
        (t["property"], t["value"], t["valid"]) for t in theirs
    )
    # a source with no usable row for a page: a scores row that says so, never a judged markup
    gap = scores[(b["page_url"], "other-page")]
    assert gap["status"] == "no_markup" and gap["reason"] == "no stored markup of this source for this page"

    rejects = pq.read_table(out / "rejects" / "evaluate" / "markups.parquet").to_pylist()
    reasons = sorted(r["reason"] for r in rejects)
    assert all(r["source"] == str(markups) for r in rejects)
    assert reasons == sorted(
        [
            "markup is empty",
            "markup does not parse: no entity in markup",
            "2 rows give source 'twice' for this page: none is judged",
            "2 rows give source 'twice' for this page: none is judged",
            "no page with this page_url in the pages input",
            "page has no text",
            "page not evaluated: its status is not ok or it is not selected",
            "no source",
            "line is not JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
        ]
        + [next(x for x in reasons if x.startswith("markup does not parse: not JSON"))]
    )
    by_line = {r["position"]: r for r in rejects}
    assert by_line[len(lines) + 1]["raw"] is not None and set(by_line) <= set(range(1, len(lines) + 2))

    c = rec["counters"]
    assert c["markup_rows_read"] == len(lines) + 1 == c["markup_rows_judged"] + c["markup_rows_rejected"]
    assert c["markup_rows_judged"] == len(stored) and c["markup_rows_rejected"] == len(rejects)
    per = rec["markups"]["per_source"]
    assert rec["markups"]["reconciles"] and rec["markups"]["key"] == "page_url"
    assert per["examples"] == {
        "read": 5,
        "judged": 2,
        "rejected": 3,
        "over_limit": 0,
        "already_scored": 0,
        "failed": 0,
    }
    assert (
        c["input_rows"]
        == c["not_ok_or_not_selected"]
        + c["no_text"]
        + c["no_stored_markup"]
        + c["ambiguous_page_id_rows"]
        + c["conflicting_text_rows"]
        + c["duplicate_rows"]
        + c["over_limit"]
        + c["already_scored"]
        + c["evaluated"]
        + c["failed"]
    )

    # The same table again: every page already scored. Another table: refused, nothing mixed.
    assert EvaluateJob(argv(tmp_path / "pages", out, stub.url, str(markups))).main() == 0
    again = record(out)["counters"]
    assert again["already_scored"] == 2 and again["markup_rows_already_scored"] == len(stored)
    other = tmp_path / "other.jsonl"
    other.write_text(markups.read_text().replace("other-page", "other-page-2", 1))
    with pytest.raises(SystemExit) as exc:
        EvaluateJob(argv(tmp_path / "pages", out, stub.url, str(other))).main()
    assert exc.value.code == 2 and "other settings" in capsys.readouterr().err


def test_page_ids_a_stored_human_markup_and_generation_beside_stored_markups(stub, tmp_path):
    """A pages table with page_id and a Parquet markups table keyed by it: a stored ``human`` row
    replaces that page's own human markup (MeMR is against it), --generators given beside
    --markups generates for the same pages, a stored source named like a generator is refused."""
    from jobs.evaluate import EvaluateJob
    from udfs.schemaorg.markup import parse_markup
    from udfs.scores.memr import memr

    pages = pages_table(tmp_path / "pages", page_id=True)
    a, b = pages[0], pages[1]
    ex = example_markups(2)
    folder = tmp_path / "markups"
    folder.mkdir()
    rows = [
        {"page_id": a["page_id"], "source": "human", "markup": ex[0]},
        {"page_id": a["page_id"], "source": "examples", "markup": ex[1]},
        {"page_id": b["page_id"], "source": "examples", "markup": ex[0]},
        {"page_id": "p99", "source": "examples", "markup": ex[0]},
    ]
    pq.write_table(pa.Table.from_pylist(rows), folder / "part-0.parquet")
    out = tmp_path / "out"
    assert EvaluateJob(argv(tmp_path / "pages", out, stub.url, str(folder), "--generators", "stub-model")).main() == 0
    rec = record(out)
    assert rec["evaluation"]["sources"] == ["human", "stub-model", "examples"]
    assert rec["markups"]["key"] == "page_id"
    scores = {(s["page_url"], s["source"]): s for s in table(out / "scores")}
    human_a = scores[(a["page_url"], "human")]
    assert human_a["n_triples"] == len(list(parse_markup(ex[0]).triples()))
    raw = memr(parse_markup(ex[0]), parse_markup(ex[1]))
    assert (scores[(a["page_url"], "examples")]["memr_raw_h"], scores[(a["page_url"], "examples")]["memr_raw_l"]) == (
        raw.h,
        raw.l,
    )
    # page b keeps its own human markup; ex[0] is judged against it
    assert scores[(b["page_url"], "human")]["n_triples"] == len(list(parse_markup(b["human_markup"]).triples()))
    # generated beside: the stub's answer is no markup, a scores row with the generation's reason
    for page in (a, b):
        gen = scores[(page["page_url"], "stub-model")]
        assert gen["generation_chunks"] >= 1 and gen["status"] in ("ok", "generation_failed")
    [reject] = pq.read_table(out / "rejects" / "evaluate" / "markups.parquet").to_pylist()
    assert reject["reason"] == "no page with this page_id in the pages input" and reject["position"] == 3
    c = rec["counters"]
    assert c["markup_rows_read"] == 4 and c["markup_rows_judged"] == 3 and c["markup_rows_rejected"] == 1

    clash = tmp_path / "clash.jsonl"
    clash.write_text(json.dumps({"page_id": a["page_id"], "source": "stub-model", "markup": ex[0]}) + "\n")
    with pytest.raises(SystemExit) as exc:
        EvaluateJob(
            argv(tmp_path / "pages", tmp_path / "o2", stub.url, str(clash), "--generators", "stub-model")
        ).main()
    assert exc.value.code == 2


@pytest.mark.model
def test_a_stored_markup_is_judged_for_factuality_by_the_model(service, tmp_path):
    """One stored markup (a schema.org example) on a demo page through validity and factuality
    with the embedded model: its claims get factuality scores, nothing is generated."""
    from jobs.evaluate import EvaluateJob

    pages = pages_table(tmp_path / "pages", page_id=False)
    markups = tmp_path / "m.jsonl"
    markups.write_text(
        json.dumps({"page_url": pages[0]["page_url"], "source": "examples", "markup": example_markups(1)[0]}) + "\n"
    )
    out = tmp_path / "out"
    args = argv(tmp_path / "pages", out, service, str(markups), "--max-claims", "2", "--context-window", "2048")
    args[args.index("--timeout-s") + 1] = "900"
    args[args.index("validity") + 1 : args.index("validity") + 1] = ["factuality"]
    assert EvaluateJob(args).main() == 0
    scores = {s["source"]: s for s in table(out / "scores")}
    s = scores["examples"]
    assert s["status"] == "ok" and s["generation_chunks"] is None and s["verdict_requests"] > 0
    judged = [t for t in table(out / "triples") if t["source"] == "examples" and t["factual_score"] is not None]
    assert 1 <= len(judged) and all(0 <= t["factual_score"] <= 1 for t in judged)


def test_markups_alone_are_judged_with_the_calibration_of_the_services_default_model(stub, tmp_path):
    """No model generates, so the verdicts go to the service's default model: its id is asked of
    /v1/models and its calibration entry applies, as it does when the same model generates."""
    from jobs.evaluate import EvaluateJob
    from udfs.runtime.paths import PROJECT_ROOT

    shipped = json.loads((PROJECT_ROOT / "conf" / "calibration.json").read_text())
    for e in shipped["entries"]:
        e["model"] = "stub-model"  # what the stub's /v1/models lists
    calibration = tmp_path / "calibration.json"
    calibration.write_text(json.dumps(shipped))
    pages = pages_table(tmp_path / "pages", page_id=False)
    markups = tmp_path / "markups.jsonl"
    markups.write_text(
        json.dumps({"page_url": pages[0]["page_url"], "source": "x", "markup": pages[1]["human_markup"]})
    )
    out = tmp_path / "out"
    stub.handler.seen.clear()
    extra = ("--calibration", str(calibration), "--stages", "validity", "factuality", "compliance", "--max-claims", "2")
    assert EvaluateJob(argv(tmp_path / "pages", out, stub.url, str(markups), *extra)).main() == 0
    rec = record(out)["evaluation"]
    assert rec["models"] == [] and stub.handler.seen  # nothing generated; verdicts asked
    judge = rec["judge"]["agents"]
    for agent in ("factuality", "compliance"):
        applied = judge[agent]["threshold"]
        assert applied["origin"]["kind"] == "calibration" and applied["origin"]["file"] == str(calibration)
        assert applied["origin"]["entry"].startswith(f"stub-model {agent} direct") and applied["value"] < 0.5
        assert judge[agent]["entry"]["id"] == applied["origin"]["entry"]
