"""jobs/evaluate.py --repeats: each page evaluated several times, the repeats distinct sources.

Against a stub engine (a test harness, not a model) whose yes/no answer to a prompt changes with the
number of times it has seen that prompt, so that a repeat which asks afresh (its own request-cache
scope) can answer otherwise: the repeats are distinct sources (``human#1..3``), each asks every
question once, a rerun resumes without a request, and the report's mean and spread over repeats are
the hand computation's.
"""

from __future__ import annotations

import collections
import hashlib
import json
import statistics

import duckdb
import pandas as pd
import pyarrow.parquet as pq
import pytest

from tests.evaluation.test_evaluate_parts import _Stub, argv, record, stub_server, table
from tests.evaluation.test_stored_markups import pages_table


class _Flipping(_Stub):
    """Answers a yes/no prompt by the hash of its text and of how often it was asked before."""

    asked: collections.Counter = collections.Counter()

    def do_POST(self) -> None:
        req = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path.endswith("/tokenize"):
            text = req.get("content", "")
            self._send({"tokens": [{"id": i, "piece": text[i : i + 4]} for i in range(0, len(text), 4)]})
            return
        last = req["messages"][-1]["content"]
        k = type(self).asked[last]
        type(self).asked[last] += 1
        yes = hashlib.sha256(f"{last}\x1f{k}".encode()).digest()[0] % 2 == 0
        word, other = ("yes", "no") if yes else ("no", "yes")
        top = [{"token": word, "logprob": -0.05}, {"token": other, "logprob": -3.0}]
        self._send(
            {
                "model": req.get("model") or "stub-model",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": word},
                        "logprobs": {"content": [{"token": word, "logprob": -0.05, "top_logprobs": top}]},
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 0}},
            }
        )


@pytest.fixture
def flipping():
    with stub_server() as s:
        handler = type("Flip", (_Flipping,), {"asked": collections.Counter(), "seen": [], "billed": []})
        s.RequestHandlerClass = handler
        s.handler = handler
        yield s


def _argv(pages, out, url, *extra):
    """The harness's command line (no generation, the three stages), every claim judged by ``plain``
    alone at fixed thresholds, three repeats."""
    fixed = ["--max-claims", "0", "--factuality-questions", "plain"]
    fixed += ["--factuality-threshold", "0.5", "--compliance-threshold", "0.5", "--repeats", "3"]
    return argv(pages, out, url, *fixed, *extra)


def test_repeats_are_distinct_sources_ask_afresh_and_resume(flipping, tmp_path):
    """A run of one repeat fills the request cache; a run of three on the same cache takes its first
    repeat from it (the same verdicts as the single run) and asks the other two afresh; a rerun of
    the three resumes without a request."""
    from jobs.evaluate import EvaluateJob

    pages = pages_table(tmp_path / "pages", page_id=False)
    usable = [p for p in pages if p.get("text") and p.get("status") == "ok"]
    cache = ["--cache", str(tmp_path / "llm.sqlite")]
    single = tmp_path / "single"
    assert EvaluateJob(_argv(tmp_path / "pages", single, flipping.url, "--repeats", "1", *cache)).main() == 0
    asked = flipping.handler.asked
    factuality = {q for q in asked if "PAGE_TEXT" in q}
    assert factuality and {asked[q] for q in factuality} == {1}
    out = tmp_path / "out"
    assert EvaluateJob(_argv(tmp_path / "pages", out, flipping.url, *cache)).main() == 0
    scores = table(out / "scores")
    assert sorted(r["source"] for r in scores) == sorted(f"human#{r}" for r in (1, 2, 3) for _ in usable)
    triples = table(out / "triples")
    by_repeat = collections.Counter(r["source"] for r in triples)
    assert set(by_repeat) == {"human#1", "human#2", "human#3"} and len(set(by_repeat.values())) == 1
    # every factuality question (every valid claim is asked it) was asked once more per later repeat:
    # the first repeat came from the single run's cache, the others asked past it
    assert {asked[q] for q in factuality} == {3} and max(asked.values()) <= 3

    def verdicts(rows, source):
        return {
            (r["page_key"], r["subject"], r["property"], r["value"]): r["factual"]
            for r in rows
            if r["source"] == source
        }

    assert verdicts(triples, "human#1") == verdicts(table(single / "triples"), "human")
    # the flipping answers make the repeats' verdicts differ somewhere
    assert verdicts(triples, "human#1") != verdicts(triples, "human#2") or verdicts(triples, "human#1") != verdicts(
        triples, "human#3"
    )
    rec = record(out)
    assert rec["evaluation"]["repeats"] == 3 and rec["counters"]["evaluated"] == len(usable)
    # a rerun resumes: every page already scored, no request sent
    sent = sum(asked.values())
    assert EvaluateJob(_argv(tmp_path / "pages", out, flipping.url, *cache)).main() == 0
    assert sum(asked.values()) == sent
    assert record(out)["counters"]["already_scored"] == len(usable)
    assert len(table(out / "scores")) == len(scores)


def test_the_report_gives_the_mean_and_spread_over_repeats_as_computed_by_hand(tmp_path):
    from udfs.report.build import repeat_rates, repeats_table

    t7 = pd.DataFrame(
        [
            # source, triples_in, after_validity, after_factuality, after_compliance
            ("human#1", 40, 40, 20, 18),
            ("human#2", 40, 40, 24, 22),
            ("human#3", 40, 40, 17, 17),
            ("m#1", 10, 8, 6, 6),
            ("m#2", 12, 9, 9, 8),
            ("m#3", 0, 0, 0, 0),
            ("plain", 5, 5, 5, 5),
        ],
        columns=["source", "triples_in", "after_validity", "after_factuality", "after_compliance"],
    )
    rates = repeat_rates(t7)
    assert set(rates) == {"human", "m"}  # a source without repeats is not one
    rows = {(r["source"], r["rate"]): r for r in repeats_table(rates)}
    fact = [1 - 20 / 40, 1 - 24 / 40, 1 - 17 / 40]
    row = rows[("human", "factuality")]
    assert row["mean"] == f"{statistics.mean(fact):.1%}" and row["sd"] == f"{statistics.stdev(fact):.1%}"
    assert row["range"] == f"{min(fact):.1%} – {max(fact):.1%}" and row["repeats"] == 3
    # a repeat with no triples has no rate: the mean is over the repeats that had input
    overall = [1 - 6 / 10, 1 - 8 / 12]
    m = rows[("m", "overall")]
    assert (m["repeats"], m["with_input"]) == (3, 2)
    assert m["mean"] == f"{statistics.mean(overall):.1%}" and m["sd"] == f"{statistics.stdev(overall):.1%}"
    assert rows[("human", "validity")]["sd"] == "0.0%"


def test_the_report_of_a_repeated_run_shows_the_repeats(flipping, tmp_path):
    from jobs.evaluate import EvaluateJob
    from udfs.report.build import repeat_rates, repeats_table, tables

    pages_table(tmp_path / "pages", page_id=False)
    out = tmp_path / "out"
    assert EvaluateJob(_argv(tmp_path / "pages", out, flipping.url)).main() == 0
    con = duckdb.connect()
    con.register("scores", pq.read_table(sorted((out / "scores").glob("part-*.parquet"))))
    con.execute("CREATE VIEW strata AS SELECT NULL::VARCHAR AS page_key, NULL AS feature, NULL AS stratum")
    t7 = tables(con)["table7"]
    got = {(r["source"], r["rate"]): r["mean"] for r in repeats_table(repeat_rates(t7))}
    per_repeat = []
    for r in (1, 2, 3):
        rows = [s for s in table(out / "scores") if s["source"] == f"human#{r}" and s["status"] == "ok"]
        valid, fact = sum(s["n_valid"] for s in rows), sum(s["n_factual"] for s in rows)
        per_repeat.append(1 - fact / valid)
    assert got[("human", "factuality")] == f"{statistics.mean(per_repeat):.1%}"
