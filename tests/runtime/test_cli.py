"""Commands that behave like their ecosystem's (udfs/runtime/cli.py and every command line):
``--config`` for the TOML file (``--conf`` is Spark's), boolean flags with ``--x/--no-x``, a help
text for every flag, one meaning per flag name across jobs, usage examples kept as written, and
errors as one ``<prog>: error: <message>`` line on stderr with a non-zero exit status."""

from __future__ import annotations

import argparse
import collections
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from udfs.runtime.cli import HelpFormatter, config_hint, fail
from udfs.runtime.config import load_config

ROOT = Path(__file__).resolve().parents[2]
JOBS = {
    "csets": "CsetsJob",
    "sample": "SampleJob",
    "warc_index": "WarcIndexJob",
    "extract_quads": "ExtractQuadsJob",
    "pages": "PagesJob",
    "evaluate": "EvaluateJob",
    "report": "ReportJob",
    "agents_bench": "AgentsBenchJob",
}
# Flag names several jobs take with a different dest or type, each with the reason it is allowed.
# Empty: every shared flag name means one thing.
SHARED_FLAG_EXCEPTIONS: dict[str, str] = {}


def parsers() -> dict[str, argparse.ArgumentParser]:
    conf = load_config()
    out = {}
    for name, cls_name in JOBS.items():
        cls = getattr(importlib.import_module(f"jobs.{name}"), cls_name)
        out[name] = cls.__new__(cls).build_parser(conf)
    return out


def run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=300)


def assert_one_error_line(res: subprocess.CompletedProcess, prog: str, code: int = 2) -> str:
    assert res.returncode == code, (res.returncode, res.stderr)
    assert "Traceback" not in res.stderr
    errors = [line for line in res.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 1 and errors[0].startswith(f"{prog}: error: "), res.stderr
    return errors[0]


# ---- the helper ----------------------------------------------------------------------------------


def test_fail_prints_one_line_in_argparses_style(capsys):
    with pytest.raises(SystemExit) as exc:
        fail("x.py", "first line\nsecond line", code=3)
    assert exc.value.code == 3
    assert capsys.readouterr().err == "x.py: error: first line\n"
    # argparse's own errors look the same
    p = argparse.ArgumentParser(prog="x.py")
    with pytest.raises(SystemExit) as exc:
        p.parse_args(["--nope"])
    assert exc.value.code == 2 and capsys.readouterr().err.splitlines()[-1].startswith("x.py: error: ")


def test_the_help_formatter_keeps_usage_examples_and_shows_defaults():
    p = argparse.ArgumentParser(
        prog="x.py",
        formatter_class=HelpFormatter,
        description="Title.\n\n    python x.py --a 1\n    python x.py --no-b\n",
    )
    p.add_argument("--a", type=int, default=7, help="an a")
    p.add_argument("--b", action=argparse.BooleanOptionalAction, default=True, help="a b")
    p.add_argument("--c", help="no default")
    text = p.format_help()
    assert "\n    python x.py --a 1\n    python x.py --no-b\n" in text
    assert "an a (default: 7)" in text and "a b (default: True)" in text
    assert "no default (default" not in text


# ---- --config, not --conf --------------------------------------------------------------------------


def test_config_hint_only_for_settings():
    assert config_hint("conf/pipeline.toml") is None
    assert "--spark-conf KEY=VALUE" in config_hint("spark.executor.memory=4g")


def test_a_job_takes_config_and_refuses_conf_with_a_hint(tmp_path):
    out = str(tmp_path / "out")
    res = run("jobs/warc_index.py", "--input", "x", "--output", out, "--config", "spark.sql.shuffle.partitions=8")
    line = assert_one_error_line(res, "warc_index.py")
    assert "--spark-conf KEY=VALUE" in line
    res = run("jobs/warc_index.py", "--input", "x", "--output", out, "--conf", "conf/pipeline.toml")
    line = assert_one_error_line(res, "warc_index.py")
    assert "--config FILE" in line and "--spark-conf" in line
    res = run("jobs/warc_index.py", "--input", "x", "--output", out, "--config", str(tmp_path / "none.toml"))
    assert assert_one_error_line(res, "warc_index.py").endswith(f"{tmp_path / 'none.toml'}: no such configuration file")
    # no abbreviation of --config either: an old "--conf" never reaches it by prefix matching
    assert all(not p.allow_abbrev for p in parsers().values())


@pytest.mark.parametrize("module", ["udfs.agents.validity", "udfs.llm.serving"])
def test_the_library_commands_take_config(tmp_path, module):
    prog = f"python -m {module}"
    args = ["x.json"] if module.endswith("validity") else ["status"]
    res = run("-m", module, "--config", str(tmp_path / "none.toml"), *args)
    assert assert_one_error_line(res, prog).endswith("no such configuration file")
    res = run("-m", module, "--config", "spark.master=local", *args)
    assert "--spark-conf KEY=VALUE" in assert_one_error_line(res, prog)
    bad = tmp_path / "bad.toml"
    bad.write_text("[serving\n")
    assert "not valid TOML" in assert_one_error_line(run("-m", module, "--config", str(bad), *args), prog)


# ---- flags ---------------------------------------------------------------------------------------


def test_every_flag_of_every_job_has_help_and_booleans_have_a_no_form():
    for name, p in parsers().items():
        for action in p._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            what = f"{name}.py {action.option_strings or action.dest}"
            assert action.help and action.help.strip(), f"{what} has no help"
            assert not isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)), (
                f"{what}: a switch is a BooleanOptionalAction (--x / --no-x, its default shown)"
            )
            if isinstance(action, argparse.BooleanOptionalAction):
                assert isinstance(action.default, bool), f"{what}: a switch's default is True or False"


def test_a_flag_name_means_one_thing_in_every_job():
    seen: dict[str, dict[tuple, list[str]]] = collections.defaultdict(lambda: collections.defaultdict(list))
    for name, p in parsers().items():
        for action in p._actions:
            for flag in action.option_strings:
                meaning = (
                    action.dest,
                    getattr(action.type, "__name__", action.type),
                    type(action).__name__,
                    action.nargs,
                )
                seen[flag][meaning].append(name)
    shared = {flag for flag, meanings in seen.items() if sum(map(len, meanings.values())) > 1}
    assert {"--input", "--output", "--config", "--limit", "--judge-model", "--verdict-models"} <= shared
    for flag, meanings in seen.items():
        if len(meanings) > 1:
            assert flag in SHARED_FLAG_EXCEPTIONS, f"{flag} means different things: {dict(meanings)}"
    # the generators of the evaluation and the voters of the benchmark have their own names
    assert "--models" not in seen
    assert seen["--generators"] and list(seen["--generators"].values()) == [["evaluate"]]


def test_switches_keep_their_no_form_and_defaults():
    from jobs.csets import CsetsJob

    job = CsetsJob(["--input", "x", "--output", "y"])
    assert job.args.clean is True and job.args.ignore_corrupt_files is False
    assert CsetsJob(["--input", "x", "--output", "y", "--no-clean"]).args.clean is False
    help_text = parsers()["csets"].format_help()
    assert "--clean, --no-clean" in help_text


@pytest.mark.parametrize("job", list(JOBS))
def test_every_job_help_runs_and_keeps_its_usage_examples(job):
    res = run(f"jobs/{job}.py", "--help")
    assert res.returncode == 0, res.stderr
    doc = importlib.import_module(f"jobs.{job}").__doc__
    examples = [line for line in doc.splitlines() if line.lstrip().startswith(("python ", "spark-submit "))]
    for line in examples:
        assert line in res.stdout.splitlines(), f"{job}: usage example reflowed: {line!r}"


# ---- errors of bad input -------------------------------------------------------------------------


def test_a_missing_input_is_one_line(tmp_path):
    res = run("jobs/csets.py", "--input", str(tmp_path / "nowhere.nq"), "--output", str(tmp_path / "out"))
    line = assert_one_error_line(res, "csets.py")
    assert "nowhere.nq" in line and "no such file" in line


def test_evaluate_with_a_missing_input_says_which(tmp_path):
    # --no-generation: no model to ask the service for, so the input is the first thing read
    res = run(
        "jobs/evaluate.py",
        "--input",
        str(tmp_path / "pages"),
        "--output",
        str(tmp_path / "out"),
        "--no-generation",
        "--base-url",
        "http://127.0.0.1:9/v1",
    )
    line = assert_one_error_line(res, "evaluate.py")
    assert f"--input '{tmp_path / 'pages'}'" in line and "no such file" in line


def test_evaluate_with_the_service_down_says_so(tmp_path):
    # port 9 (discard) has no listener here: the service is down; the input path is there (a path
    # that is not is refused first, before any request)
    (tmp_path / "pages").mkdir()
    res = run(
        "jobs/evaluate.py",
        "--input",
        str(tmp_path / "pages"),
        "--output",
        str(tmp_path / "out"),
        "--base-url",
        "http://127.0.0.1:9/v1",
    )
    # a missing service is an error the user can act on (#64): exit status 2, one line
    line = assert_one_error_line(res, "evaluate.py")
    assert "http://127.0.0.1:9/v1" in line and "start the service" in line


def test_a_bad_vocabulary_for_the_shapes_command_is_one_line(tmp_path):
    res = run("-m", "shapes.generate", "--vocab", str(tmp_path / "none"), "--output", str(tmp_path / "x.ttl"))
    assert "not found" in assert_one_error_line(res, "python -m shapes.generate")
