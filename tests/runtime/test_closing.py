"""How every run ends (udfs/runtime/closing.py, issue 64): balances that must hold, the status a
run record gets, a run given units none of which succeeded never ending well, and a run where most
units failed saying so last, with the commonest reason."""

import pytest

from udfs.runtime.closing import Outcome, close, ending, unbalanced, verdict_line
from udfs.runtime.errors import NothingDone, UserError
from udfs.runtime.job import RunRecord

BALANCES = (("input_rows", ("selected_rows", "rejected_rows")),)


def test_a_balance_that_does_not_hold_or_is_not_counted_is_named():
    assert unbalanced({"input_rows": 5, "selected_rows": 3, "rejected_rows": 2}, BALANCES) == []
    assert unbalanced({"input_rows": 5, "selected_rows": 3, "rejected_rows": 1}, BALANCES) == [
        "input_rows 5 != selected_rows 3 + rejected_rows 1"
    ]
    # a balance cannot hold by omission
    assert unbalanced({"input_rows": 0, "selected_rows": 0}, BALANCES) == [
        "input_rows: counter rejected_rows not counted"
    ]


def test_counters_that_do_not_reconcile_are_a_bug_recorded_as_such():
    record = RunRecord("pages", [])
    outcome = Outcome({"input_rows": 5, "selected_rows": 3, "rejected_rows": 1}, checks={"per file": True})
    failed = close(outcome, BALANCES, record)
    assert record["counters"]["reconciles"] is False and record["status"] == "failed: counters do not reconcile"
    assert record["unreconciled"] == failed
    with pytest.raises(RuntimeError, match="counters do not reconcile: input_rows 5 != "):
        ending(outcome, failed)
    # a named check fails the same way
    record = RunRecord("pages", [])
    failed = close(
        Outcome({"input_rows": 1, "selected_rows": 1, "rejected_rows": 0}, checks={"per file": False}), BALANCES, record
    )
    assert failed == ["check per file fails"] and record["counters"]["reconciles"] is False


def test_a_run_given_units_none_of_which_succeeded_is_a_user_error_naming_the_commonest_reason():
    record = RunRecord("pages", [])
    outcome = Outcome(
        {"input_rows": 3, "selected_rows": 3, "rejected_rows": 0},
        units="input rows",
        given=3,
        done=0,
        failures={"fetch_error: WARC file not found": 2, "not_found: page URL not in the WARC index": 1},
    )
    failed = close(outcome, BALANCES, record)
    assert failed == [] and record["status"] == "failed: no input row succeeded"
    with pytest.raises(NothingDone) as err:
        ending(outcome, failed)
    assert isinstance(err.value, UserError)  # exit status 2, one line
    assert "none of 3 input rows succeeded; commonest reason: 'fetch_error: WARC file not found' (2)" in str(err.value)


def test_most_units_failing_is_the_last_line_and_half_is_not_most():
    most = Outcome({}, units="pages", given=10, done=4, failures={"timeout": 5, "no text": 1})
    assert verdict_line(most) == "warning: 6 of 10 pages failed; commonest reason: 'timeout' (5)"
    assert verdict_line(Outcome({}, units="pages", given=10, done=5)) is None
    assert verdict_line(Outcome({}, units="pages")) is None  # a job without the rule
    record = RunRecord("evaluate", [])
    assert close(most, (), record) == [] and record["status"] == "ok"
    ending(most, [])  # most failed, some succeeded: the run ends well, its last line says so
