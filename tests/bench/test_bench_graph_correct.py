"""GraphCorrect measured on the agents benchmark (``jobs/agents_bench.py run --correct``): on a
constructed ground truth, a stub model answers each verdict and each correction request with what
the test chose for that claim, so the run's figures (correction.parquet, summary.md, the run
record's counters) have a hand computation; a rerun resumes from the correction parts (a failed
correction asked again), and a ground truth without ``true_value`` says "not measurable"."""

from __future__ import annotations

import contextlib
import http.server
import json
import re
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from udfs.agents_bench import runner as ab

TEXTS = {
    "T1": "Blue Bottle Cafe, a coffee bar. Call 555-0101.",
    "T2": "Rose Garden Inn, a bed and breakfast. Telephone 555-0202.",
    "T3": "Springfield Books, a bookshop in Springfield. Call 555-0303.",
    "T4": "Harbor Deli at 12 Elm Street.",
}
FAIL = object()  # the correction request is refused (HTTP 400)

# (item_id, text, entity_type, property, value, label, kind, true_value)
ITEMS = [
    ("P1", "T1", "Store", "name", "Blue Bottle Cafe", True, "positive", "Blue Bottle Cafe"),
    ("P2", "T1", "Store", "telephone", "555-0101", True, "positive", "555-0101"),
    ("P3", "T2", "Hotel", "name", "Rose Garden Inn", True, "positive", "Rose Garden Inn"),
    ("P4", "T2", "Hotel", "telephone", "555-0202", True, "positive", "555-0202"),
    ("P5", "T3", "PostalAddress", "addressLocality", "Springfield", True, "positive", "Springfield"),
    ("P6", "T3", "BookStore", "name", "Springfield Books", True, "positive", "Springfield Books"),
    ("P7", "T3", "BookStore", "telephone", "555-0303", True, "positive", "555-0303"),
    ("P8", "T4", "Restaurant", "name", "Harbor Deli", True, "positive", "Harbor Deli"),
    ("P9", "T4", "PostalAddress", "streetAddress", "12 Elm Street", True, "positive", "12 Elm Street"),
    ("I1", "T1", "Store", "telephone", "Blue Bottle Cafe", False, "intrinsic", "555-0101"),
    ("I2", "T2", "Hotel", "telephone", "Rose Garden Inn", False, "intrinsic", "555-0202"),
    ("I3", "T2", "Hotel", "name", "555-0202", False, "intrinsic", "Rose Garden Inn"),
    ("I4", "T3", "BookStore", "name", "Springfield", False, "intrinsic", "Springfield Books"),
    ("I5", "T3", "PostalAddress", "addressLocality", "Springfield Books", False, "intrinsic", "Springfield"),
    ("I6", "T4", "Restaurant", "name", "12 Elm Street", False, "intrinsic", "Harbor Deli"),
    ("I7", "T4", "PostalAddress", "streetAddress", "Harbor Deli", False, "intrinsic", "12 Elm Street"),
    ("E1", "T4", "Store", "name", "Blue Bottle Cafe", False, "extrinsic", None),
    ("E2", "T3", "Store", "telephone", "555-0101", False, "extrinsic", None),
    ("E3", "T1", "PostalAddress", "addressLocality", "Springfield", False, "extrinsic", None),
]
# The claims (text, property, value) the stub judges false: every other claim passes. A corrected
# claim is judged again as (text, property, proposed value).
JUDGED_FALSE = {
    ("T2", "name", "Rose Garden Inn"),  # P3: a true claim flagged
    ("T3", "addressLocality", "Springfield"),  # P5
    ("T3", "telephone", "555-0303"),  # P7
    ("T4", "streetAddress", "12 Elm Street"),  # P9
    ("T1", "telephone", "Blue Bottle Cafe"),  # I1 ... I7 but I4 (missed)
    ("T2", "telephone", "Rose Garden Inn"),
    ("T2", "name", "555-0202"),
    ("T3", "addressLocality", "Springfield Books"),
    ("T4", "name", "12 Elm Street"),
    ("T4", "streetAddress", "Harbor Deli"),
    ("T4", "name", "Blue Bottle Cafe"),  # E1, E2 (E3 missed)
    ("T3", "telephone", "555-0101"),
    ("T2", "telephone", "555-0202."),  # I2's correction does not pass again
}
# What the model reads off the text for a flagged claim (None: the text states none).
CORRECTIONS = {
    ("T2", "name", "Rose Garden Inn"): "rose garden inn.",  # P3: the same value, another form
    ("T3", "addressLocality", "Springfield"): None,  # P5
    ("T3", "telephone", "555-0303"): "555 0303",  # P7: changed, close (BLINKG: the same value)
    ("T4", "streetAddress", "12 Elm Street"): "Rosewood Hall",  # P9: changed to another value
    ("T1", "telephone", "Blue Bottle Cafe"): "555-0101",  # I1: the true value, passes
    ("T2", "telephone", "Rose Garden Inn"): "555-0202.",  # I2: the true value with a full stop, fails again
    ("T2", "name", "555-0202"): "Rose Garden Inns",  # I3: close to the true value (BLINKG only), passes
    ("T3", "addressLocality", "Springfield Books"): None,  # I5
    ("T4", "name", "12 Elm Street"): "42",  # I6: a wrong value that passes
    ("T4", "streetAddress", "Harbor Deli"): FAIL,  # I7
    ("T4", "name", "Blue Bottle Cafe"): "Harbor Deli",  # E1: the other entity's name, passes
    ("T3", "telephone", "555-0101"): None,  # E2: the text states none (right)
}
# The hand computation of each task's row (the positives P1-P9 are in both tasks).
TRUE_FLAGGED = {
    "true_flagged": 4,  # P3, P5, P7, P9
    "true_proposed": 3,
    "true_no_value": 1,
    "true_failed": 0,
    "damaged_exact": 2,  # P7 ("555 0303"), P9; P3's "rose garden inn." is the same exact form
    "damaged_exact_share": 2 / 4,
    "damaged_match": 1,  # P9; P7's is the same value to BLINKG
    "damaged_match_share": 1 / 4,
}
EXPECTED = {
    "intrinsic": {
        "true_value_known": True,
        "false_flagged": 6,  # I1 I2 I3 I5 I6 I7
        "false_proposed": 4,
        "false_no_value": 1,
        "false_failed": 1,
        "false_with_true_value": 6,
        "to_true_exact": 2,  # I1, I2
        "to_true_exact_share": 2 / 6,
        "to_true_match": 3,  # I1, I2, I3
        "to_true_match_share": 3 / 6,
        "false_passes": 3,  # I1, I3, I6
        "false_passes_share": 3 / 6,
        "mended": 2,  # I1, I3
        "mended_share": 2 / 6,
        **TRUE_FLAGGED,
    },
    "extrinsic": {
        "true_value_known": True,
        "false_flagged": 2,  # E1, E2
        "false_proposed": 1,
        "false_no_value": 1,
        "false_failed": 0,
        "false_with_true_value": 0,
        "to_true_exact": 0,
        "to_true_exact_share": None,
        "to_true_match": 0,
        "to_true_match_share": None,
        "false_passes": 1,  # E1
        "false_passes_share": 1 / 2,
        "mended": 0,
        "mended_share": None,
        **TRUE_FLAGGED,
    },
}
_CLAIM = re.compile(r"^(?:Unsupported fact|Fact): the .+? has (\w+) = (.*)$", re.M)
_PAGE = re.compile(r"<<<PAGE_TEXT\n(.*)\nPAGE_TEXT>>>", re.S)


class _Answers(http.server.BaseHTTPRequestHandler):
    """Verdicts from JUDGED_FALSE, corrections from CORRECTIONS; ``asked`` counts the requests."""

    asked: dict[str, int]

    def log_message(self, *args) -> None:
        pass

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._send(200, {"object": "list", "data": [{"id": "stub-model", "object": "model"}]})

    def do_POST(self) -> None:
        req = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        last = req["messages"][-1]["content"]
        text = {v: k for k, v in TEXTS.items()}[_PAGE.search(last).group(1)]
        prop, value = _CLAIM.search(last).groups()
        key = (text, prop, value)
        if "response_format" in req:
            self.asked["correction"] += 1
            proposed = CORRECTIONS[key]
            if proposed is FAIL:
                self._send(400, {"error": {"message": "refused"}})
                return
            content, logprobs = json.dumps({"value": proposed}), None
        else:
            self.asked["verdict"] += 1
            word, other = ("no", "yes") if key in JUDGED_FALSE else ("yes", "no")
            content = word
            top = [{"token": word, "logprob": -0.05}, {"token": other, "logprob": -3.0}]
            logprobs = {"content": [{"token": word, "logprob": -0.05, "top_logprobs": top}]}
        usage = {"prompt_tokens": len(last) // 4, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 0}}
        choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
        self._send(200, {"model": "stub-model", "choices": [{**choice, "logprobs": logprobs}], "usage": usage})


@contextlib.contextmanager
def answering():
    handler = type("Answers", (_Answers,), {"asked": {"verdict": 0, "correction": 0}})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        server.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        server.asked = handler.asked
        yield server
    finally:
        server.shutdown()
        server.server_close()


def ground_truth(path, with_true_value: bool = True):
    cols = ["item_id", "text", "text_example_id", "entity_type", "property", "value", "label", "kind", "true_value"]
    rows = [dict(zip(cols, (i, TEXTS[t], t, *rest))) for i, t, *rest in ITEMS]
    for r in rows:
        r["text_example_id"] = r["text_example_id"] if r["kind"] != "extrinsic" else "other-" + r["item_id"]
    keep = cols if with_true_value else cols[:-1]
    pq.write_table(pa.table({c: [r[c] for r in rows] for c in keep}), path)
    return path


def bench(gt, out, url: str) -> tuple[dict, dict, str]:
    """One run --correct: (correction.parquet's rows by task, the run record, summary.md)."""
    from jobs.agents_bench import AgentsBenchJob

    argv = ["run", "--input", str(gt), "--output", str(out), "--verdict-models", "stub-model", "--base-url", url]
    argv += ["--tasks", "intrinsic", "extrinsic", "--limit", "0", "--batch-size", "3", "--calibration", ""]
    argv += ["--factuality-questions", "plain", "--factuality-threshold", "0.5", "--compliance-threshold", "0.5"]
    assert AgentsBenchJob([*argv, "--correct"]).main() == 0
    [results] = (out / "agents_bench" / "results").iterdir()
    rows = {r["task"]: r for r in pq.read_table(results / "correction.parquet").to_pylist()}
    return rows, json.loads((results / "_run.json").read_text()), (results / "summary.md").read_text()


def figures(row: dict) -> dict:
    return {k: (pytest.approx(v) if isinstance(v, float) else v) for k, v in row.items() if k != "config"}


def test_correction_figures_match_a_hand_computation(tmp_path):
    gt = ground_truth(tmp_path / "gt.parquet")
    with answering() as stub:
        rows, record, summary = bench(gt, tmp_path / "out", stub.url)
        assert stub.asked["correction"] == 12  # every flagged item once: 8 false, 4 true claims
    assert {t: figures(r) for t, r in rows.items()} == {t: {"task": t, **e} for t, e in EXPECTED.items()}
    counters = record["counters"]
    assert counters["corrections_flagged"] == 12 and counters["corrections_asked_now"] == 12
    assert counters["corrections_failed"] == 1  # I7
    assert counters["correction_intrinsic_to_true_match"] == 3 and counters["correction_extrinsic_false_passes"] == 1
    assert "correction_extrinsic_false_with_true_value" in counters
    assert [r["task"] for r in record["correction"]] == ["intrinsic", "extrinsic"]
    section = summary[summary.index("## GraphCorrect") :]
    assert "| intrinsic | 6 | 4 / 1 / 1 | 2/6 (33.3%) | 3/6 (50.0%) | 3/6 (50.0%) | 2/6 (33.3%) | 4 |" in section
    assert "| extrinsic | 2 | 1 / 1 / 0 | – | – | 1/2 (50.0%) | – | 4 | 2/4 (50.0%) | 1/4 (25.0%) |" in section


def test_a_rerun_resumes_from_the_correction_parts(tmp_path):
    """Every correction is kept in a part: a rerun asks only the failed one again (its refusal is
    not cached); a part lost is asked again, from the request cache, and the figures stay."""
    gt = ground_truth(tmp_path / "gt.parquet")
    out = tmp_path / "out"
    with answering() as stub:
        first, _, _ = bench(gt, out, stub.url)
        asked = dict(stub.asked)
        again, record, _ = bench(gt, out, stub.url)
        assert stub.asked == {"verdict": asked["verdict"], "correction": asked["correction"] + 1}
        assert record["counters"]["corrections_resumed"] == 11 and record["counters"]["corrections_asked_now"] == 1
        [results] = (out / "agents_bench" / "results").iterdir()
        parts = sorted((results / "corrections").glob("part-*.parquet"))
        lost = {r["item_id"] for r in pq.read_table(parts[0]).to_pylist()} - {"I7"}
        assert lost
        parts[0].unlink()
        third, record, _ = bench(gt, out, stub.url)
        assert stub.asked["correction"] == asked["correction"] + 2  # I7 again; the lost ones from the cache
        assert record["counters"]["corrections_asked_now"] == len(lost) + 1
    assert first == again == third


def test_a_ground_truth_without_true_values_says_not_measurable(tmp_path):
    gt = ground_truth(tmp_path / "gt.parquet", with_true_value=False)
    with answering() as stub:
        rows, _, summary = bench(gt, tmp_path / "out", stub.url)
    unknown = dict.fromkeys(("false_with_true_value", "to_true_exact", "to_true_match", "mended"))
    unknown |= {f"{k}_share": None for k in ("to_true_exact", "to_true_match", "mended")}
    for task, e in EXPECTED.items():
        assert figures(rows[task]) == {"task": task, **e, "true_value_known": False, **unknown}
    assert "| intrinsic | 6 | 4 / 1 / 1 | not measurable | not measurable | 3/6 (50.0%) | not measurable |" in summary
    assert "the ground truth has no true_value column" in summary


def test_exact_form_strips_surrounding_punctuation_only():
    assert ab.exact_form("  «Springfield.»  ") == "springfield"
    assert ab.exact_form("555-0202.") == ab.exact_form("555-0202") != ab.exact_form("555 0202")
    assert ab.exact_form("Rose  Garden\tInn") == "rose garden inn"
