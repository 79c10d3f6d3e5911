"""The calibration file's schema (``udfs.agents.calibration.load_calibration``): every reader reads
it through one check, and a file that breaks it is refused with one line naming the file, the
entry, the field and what to do, before any model is asked; a file named that is not there is an
error, never the fallback. The shipped file passes and gives the thresholds it always gave."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.conftest import ROOT, demo_pages_table
from udfs.agents import calibration as cal
from udfs.agents.judge import build_judge
from udfs.runtime.config import ConfigError, load_config

SHIPPED = (ROOT / "conf" / "calibration.json").read_text()
# the default judge's factuality entry, as the file writes it (json.dumps(indent=1, sort_keys=True))
FACTUALITY = '"threshold": 0.282352'
DEFAULT_ENTRY = (
    "entry 3 (qwen2.5-coder-1.5b factuality direct "
    "shared_prefix:plain+claim+extract-soft-all-near+extract-other^complies-ranged@0.1)"
)
COMPLIANCE_ENTRY = "entry 1 (qwen2.5-coder-1.5b compliance direct shared_prefix:ranged)"
FIX = "calibrate --install"


def edited(old: str, new: str, count: int = -1) -> str:
    """The shipped file with ``old`` replaced by ``new`` (``old`` must be there)."""
    assert old in SHIPPED, old
    return SHIPPED.replace(old, new, count)


# (name, the file's text, the entry named, what the message says about the field)
BAD_FILES = [
    (
        "nan",
        edited(FACTUALITY, '"threshold": NaN'),
        DEFAULT_ENTRY,
        "threshold must be a finite number in [0, 1], not NaN",
    ),
    ("infinity", edited(FACTUALITY, '"threshold": Infinity'), DEFAULT_ENTRY, "threshold must be a finite number"),
    (
        "above",
        edited(FACTUALITY, '"threshold": 1.7'),
        DEFAULT_ENTRY,
        "threshold must be a finite number in [0, 1], not 1.7",
    ),
    ("below", edited(FACTUALITY, '"threshold": -0.2'), DEFAULT_ENTRY, "not -0.2"),
    (
        "string",
        edited(FACTUALITY, '"threshold": "0.3"'),
        DEFAULT_ENTRY,
        "threshold must be a finite number in [0, 1], not the string '0.3'",
    ),
    (
        "bool",
        edited(FACTUALITY, '"threshold": true'),
        DEFAULT_ENTRY,
        "threshold must be a finite number in [0, 1], not true",
    ),
    (
        "huge",
        edited(FACTUALITY, '"threshold": 1e999'),
        DEFAULT_ENTRY,
        "threshold must be a finite number in [0, 1], not inf",
    ),
    (
        "unknown kind",
        edited("extract-other^complies", "extract-othr^complies"),
        "entry 3",
        "layout names a question kind 'extract-othr' that factuality does not ask (did you mean 'extract-other'?)",
    ),
    (
        "kind of the other agent",
        edited('"layout": "shared_prefix:ranged"', '"layout": "shared_prefix:plain"'),
        "entry 1",
        "layout names a question kind 'plain' that compliance does not ask",
    ),
    (
        "unknown agent",
        edited('"agent": "compliance"', '"agent": "complience"'),
        "entry 1",
        "did you mean 'compliance'?",
    ),
    ("unknown strategy", edited('"strategy": "direct"', '"strategy": "drect"', 1), "entry 1", "did you mean 'direct'?"),
    (
        "model not an id",
        edited('"model": "qwen2.5-coder-1.5b"', '"model": "qwen 2.5"', 1),
        "entry 1",
        "model must be a model id without spaces",
    ),
    ("model empty", edited('"model": "qwen2.5-coder-1.5b"', '"model": ""', 1), "entry 1", "model must be a model id"),
    (
        "unknown key",
        edited(FACTUALITY, '"treshold": 0.282352'),
        DEFAULT_ENTRY,
        "unknown key 'treshold' (did you mean 'threshold'?)",
    ),
    ("knot", edited("0.055667", "NaN", 1), COMPLIANCE_ENTRY, "knots x[0] must be a finite number, not NaN"),
    ("knot order", edited("0.055667", "0.9", 1), COMPLIANCE_ENTRY, "knots x must not decrease"),
    (
        "fit",
        edited('"n": 198', '"n": -Infinity', 1),
        COMPLIANCE_ENTRY,
        "fit n must be a count (an integer >= 0), not -Infinity",
    ),
    ("test figure", edited('"auroc": 0.9148162576288794', '"auroc": NaN', 1), COMPLIANCE_ENTRY, "test auroc must be"),
    ("twice", edited(FACTUALITY, FACTUALITY + ', "threshold": 0.9'), "", "key 'threshold' is given twice"),
    ("no entries", '{"version": 1, "entrys": []}', "", "unknown key 'entrys' (did you mean 'entries'?)"),
    ("not json", SHIPPED[:-40], "", "is not JSON (Unterminated string starting at: line 955 column 4)"),
    ("empty", "", "", "is not JSON"),
]


@pytest.mark.parametrize("name,text,entry,says", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_a_calibration_file_that_breaks_the_schema_is_refused_naming_the_file_entry_and_field(
    tmp_path, name, text, entry, says
):
    path = tmp_path / "calibration.json"
    path.write_text(text)
    with pytest.raises(ConfigError) as exc:
        cal.load_calibration(str(path))
    message = str(exc.value)
    assert message.startswith(f"calibration file {path}") and says in message
    assert entry in message and "\n" not in message
    assert FIX in message or "format of conf/calibration.json" in message  # what to do
    # the judge reads it through the same check, whether or not the entry would match
    with pytest.raises(ConfigError, match="calibration file"):
        build_judge(dataclasses.replace(load_config().judge, calibration=str(path)), config_file="conf/pipeline.toml")


def test_a_calibration_path_that_is_not_a_file_is_an_error_naming_it_never_the_fallback(tmp_path):
    missing = tmp_path / "none.json"
    with pytest.raises(ConfigError, match=f"calibration file {missing} not found: name an existing file"):
        cal.load_calibration(str(missing))
    with pytest.raises(ConfigError, match=f"calibration file {tmp_path} is a directory"):
        cal.load_calibration(str(tmp_path))
    with pytest.raises(ConfigError, match=f"calibration file {missing} not found"):
        cal.check_calibration(str(missing))
    with pytest.raises(ConfigError, match="not found"):  # a relative setting is the project's file
        cal.check_calibration("conf/no-such-calibration.json")
    # "" is no calibration (the fallback, as documented); a file about to be written may be missing
    assert cal.check_calibration("") is None
    assert cal.load_calibration(str(missing), missing_ok=True).entries == ()
    # an --install into a file that is not a calibration file does not overwrite it
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    entry = json.loads(SHIPPED)["entries"][0]
    with pytest.raises(ConfigError, match=f"calibration file {bad} is not JSON"):
        cal.write(str(bad), [entry])
    assert bad.read_text() == "not json"
    # nor does it write an entry the evaluation would refuse
    with pytest.raises(ConfigError, match="threshold must be a finite number"):
        cal.write(str(missing), [{**entry, "threshold": float("nan")}])
    assert not missing.exists()


def test_the_shipped_calibration_loads_and_gives_the_thresholds_it_gave():
    loaded = cal.check_calibration("conf/calibration.json")
    assert loaded.doc() == json.loads(SHIPPED)
    conf = load_config()
    judge = build_judge(conf.judge, config_file=conf.path, served_model="qwen2.5-coder-1.5b")
    assert (judge.threshold("factuality"), judge.threshold("compliance")) == (0.282352, 0.317921)


# ---- the job's command line -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def stub():
    from tests.evaluation.test_evaluate_parts import stub_server

    with stub_server() as s:
        yield s


def evaluate(tmp_path: Path, url: str, *extra: str) -> list[str]:
    pages = tmp_path / "pages"
    pages.mkdir(exist_ok=True)
    pq.write_table(demo_pages_table(), pages / "part-0.parquet")
    out = tmp_path / "out"
    return [
        "--input",
        str(pages),
        "--output",
        str(out),
        "--base-url",
        url,
        "--executor",
        "local",
        "--limit",
        "1",
        *extra,
    ]


def refused(job, capsys) -> str:
    """The one line a job that refuses prints (exit status 2, returned or raised)."""
    capsys.readouterr()
    try:
        code = job.main()
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    return err[0]


@pytest.mark.parametrize(
    "text",
    [
        # the stub's model, so the entry matches the default judge: the NaN would be its threshold
        edited('"model": "qwen2.5-coder-1.5b"', '"model": "stub-model"').replace(FACTUALITY, '"threshold": NaN'),
        None,  # no file there
    ],
    ids=["nan", "missing"],
)
def test_evaluate_refuses_a_bad_calibration_before_any_model_request_and_writes_nothing(stub, tmp_path, capsys, text):
    from jobs.evaluate import EvaluateJob

    calibration = tmp_path / "calibration.json"
    if text is not None:
        calibration.write_text(text)
    argv = evaluate(tmp_path, stub.url, "--calibration", str(calibration))
    stub.handler.seen.clear()
    line = refused(EvaluateJob(argv), capsys)
    assert line.startswith(f"evaluate.py: error: calibration file {calibration}")
    assert ("threshold must be a finite number in [0, 1], not NaN" if text else "not found") in line
    assert stub.handler.seen == []  # no verdict or generation asked
    assert not written(tmp_path / "out")


def written(out: Path) -> list[Path]:
    """What a run wrote under ``out`` that is work: tables, their rejects, the request cache (a
    lease or a log of the refused run is not)."""
    return [p for p in out.rglob("*") if p.is_file() and (p.suffix in (".parquet", ".sqlite", ".jsonl"))]


def test_a_users_config_file_naming_a_missing_calibration_is_refused(stub, tmp_path, capsys):
    from jobs.evaluate import EvaluateJob

    own = tmp_path / "my.toml"
    line = '\ncalibration = "conf/calibration.json"\n'
    shipped = (ROOT / "conf" / "pipeline.toml").read_text()
    assert shipped.count(line) == 1
    own.write_text(shipped.replace(line, f'\ncalibration = "{tmp_path / "gone.json"}"\n'))
    stub.handler.seen.clear()
    message = refused(EvaluateJob(evaluate(tmp_path, stub.url, "--config", str(own))), capsys)
    assert f"calibration file {tmp_path / 'gone.json'} not found" in message and stub.handler.seen == []


@pytest.mark.parametrize(
    "flag", ["--factuality-threshold", "--compliance-threshold", "--fallback-threshold", "--factuality-gate"]
)
@pytest.mark.parametrize("value", ["nan", "inf", "1.7", "-0.2"])
def test_a_threshold_flag_that_is_not_a_number_in_0_1_is_refused_by_the_parser(tmp_path, capsys, flag, value):
    from jobs.evaluate import EvaluateJob

    with pytest.raises(SystemExit) as exc:
        EvaluateJob(["--input", str(tmp_path), "--output", str(tmp_path / "out"), f"{flag}={value}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1 and flag in err[0] and value in err[0], err


def test_calibrate_install_into_a_bad_calibration_file_is_refused_before_the_run(stub, tmp_path, capsys):
    """``agents_bench calibrate --install`` writes into --calibration: a file there that breaks the
    schema is refused before the run asks the model anything, and is left as it was."""
    from jobs.agents_bench import AgentsBenchJob
    from tests.bench.test_calibrate import own_ground_truth, write_ground_truth

    gt = write_ground_truth(tmp_path / "gt.parquet", own_ground_truth())
    calibration = tmp_path / "calibration.json"
    calibration.write_text(edited(FACTUALITY, '"threshold": NaN'))
    argv = ["calibrate", "--input", str(gt), "--output", str(tmp_path / "out"), "--base-url", stub.url]
    argv += ["--verdict-models", "m", "--limit", "2", "--calibration", str(calibration), "--install"]
    stub.handler.seen.clear()
    line = refused(AgentsBenchJob(argv), capsys)
    assert line.startswith(f"agents_bench.py: error: calibration file {calibration}, {DEFAULT_ENTRY}: threshold")
    assert stub.handler.seen == [] and not written(tmp_path / "out")
    assert calibration.read_text() == edited(FACTUALITY, '"threshold": NaN')
