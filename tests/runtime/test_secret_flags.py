"""A mistyped or unknown flag never echoes a secret (udfs/runtime/cli.py ``ArgumentParser``): argparse
quotes the words it could not use ("unrecognized arguments: --api-k sk-..."), and stderr goes to CI
logs. Every command line of the project is run with mistyped key flags and their values must not
appear in what it prints; the flags themselves do, so the user sees what was wrong."""

from __future__ import annotations

import importlib
import subprocess
import sys
import tomllib

import pytest

from udfs.runtime.cli import REDACTED, ArgumentParser, redact, secret_values
from udfs.runtime.paths import CONF_DIR, PROJECT_ROOT

SCRIPTS = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
# Mistyped or unknown key flags, each with the value it must not echo.
MISTYPED = [
    ("--api-k", "sk-secret123"),
    ("--api_key", "secret-underscore-value"),
    ("--key", "secret-key-value"),
    ("--token", "secret-token-value"),
    ("--password", "secret-password-value"),
]
SECRET_ARGS = [w for flag, value in MISTYPED for w in (flag, value)] + ["--apikey=secret-equals-value"]
SECRETS = [v for _, v in MISTYPED] + ["secret-equals-value"]
# What each command needs besides the mistyped flags so that argparse gets as far as the words it
# cannot use (a missing required argument is reported first, and echoes nothing).
REQUIRED = {
    "llm4schema-serve": ["status"],
    "llm4schema-validity": ["markup.jsonld"],
    "llm4schema-memr": ["human.jsonld", "model.jsonld"],
    "llm4schema-model-files": [],
    "llm4schema-summary": ["out"],
    "llm4schema-agents-bench": ["run", "--input", "gt", "--output", "out"],
}
JOB_ARGS = ["--input", "in", "--output", "out"]
# The commands run as modules (python -m ...), beside the installed scripts.
MODULES = {
    "udfs.llm.serving": ["status"],
    "udfs.agents.validity": ["markup.jsonld"],
    "udfs.report.paper_pages": ["bundle"],
    "udfs.scores.memr": ["human.jsonld", "model.jsonld"],
    "udfs.runtime.summary": ["out"],
    "udfs.llm.model_files": [],
    "udfs.runtime.reference": ["--check"],
}


def assert_no_secret(code, out: str, err: str) -> None:
    assert code == 2, (code, err)
    assert "unrecognized arguments" in err, err
    for flag, _ in MISTYPED:
        assert flag in err, err  # what was wrong is shown
    for secret in SECRETS:
        assert secret not in err and secret not in out, err
    assert REDACTED in err


def module_commands() -> set[str]:
    """Every module of the library a user runs with ``python -m``: a package's ``__main__.py``, or a
    module with a ``__main__`` guard."""
    out = set()
    for path in (PROJECT_ROOT / "udfs").rglob("*.py"):
        name = ".".join(path.relative_to(PROJECT_ROOT).with_suffix("").parts)
        if path.name == "__main__.py":
            out.add(name.removesuffix(".__main__"))
        elif 'if __name__ == "__main__"' in path.read_text(encoding="utf-8"):
            out.add(name)
    return out


def test_every_command_of_the_project_is_checked():
    """A new command is checked too: its module is listed here with the arguments it needs."""
    assert module_commands() == set(MODULES)
    jobs = {p.stem for p in (PROJECT_ROOT / "jobs").glob("*.py") if p.stem != "__init__"}
    assert jobs == {ep.partition(":")[0].removeprefix("jobs.") for ep in SCRIPTS.values() if ep.startswith("jobs.")}
    assert all(s in REQUIRED for s, ep in SCRIPTS.items() if not ep.startswith("jobs."))


def test_every_parser_of_what_ships_is_the_redacting_one():
    """udfs/, jobs/, shapes/ and cluster/ build no plain argparse parser: a command added later (a
    cluster script run by hand) gets the redaction too. ``argparse.ArgumentParser(`` stands only in
    the class that extends it."""
    plain = [
        f"{path.relative_to(PROJECT_ROOT)}:{n}"
        for top in ("udfs", "jobs", "shapes", "cluster")
        for path in sorted((PROJECT_ROOT / top).rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if "argparse.ArgumentParser(" in line and path != PROJECT_ROOT / "udfs" / "runtime" / "cli.py"
    ]
    assert plain == []


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_an_installed_command_does_not_echo_a_mistyped_key(script, monkeypatch, capsys):
    """The console script's entry point, called as the script calls it (``sys.argv``)."""
    module, _, attr = SCRIPTS[script].partition(":")
    entry = importlib.import_module(module)
    for part in attr.split("."):
        entry = getattr(entry, part)
    monkeypatch.setattr(sys, "argv", [script, *REQUIRED.get(script, JOB_ARGS), *SECRET_ARGS])
    monkeypatch.setenv("SPARK_CONF_DIR", str(CONF_DIR))  # build_spark sets it for the JVM it starts
    with pytest.raises(SystemExit) as stop:
        entry()
    out, err = capsys.readouterr()
    assert_no_secret(stop.value.code, out, err)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_module_command_does_not_echo_a_mistyped_key(module, tmp_path):
    """``python -m`` in a process of its own, as a user (or CI) runs it."""
    done = subprocess.run(
        [sys.executable, "-m", module, *MODULES[module], *SECRET_ARGS],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert_no_secret(done.returncode, done.stdout, done.stderr)


def test_a_job_file_run_as_a_script_does_not_echo_a_mistyped_key(tmp_path):
    done = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "jobs" / "evaluate.py"), *JOB_ARGS, *SECRET_ARGS],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert_no_secret(done.returncode, done.stdout, done.stderr)


# ---- the rule itself -----------------------------------------------------------------------------


def test_values_of_secret_looking_flags_and_key_shaped_words_are_hidden():
    argv = ["--api-k", "sk-a1", "--API_TOKEN=t0k", "--input", "in", "hf_abcdef", "--keys", "k"]
    assert secret_values(argv) == ["sk-a1", "t0k", "hf_abcdef", "k"]
    assert redact("unrecognized arguments: --api-k sk-a1 --API_TOKEN=t0k hf_abcdef", argv) == (
        f"unrecognized arguments: --api-k {REDACTED} --API_TOKEN={REDACTED} {REDACTED}"
    )
    # a short value is hidden where it stands as a word, not inside other words
    assert redact("argument --x: invalid choice: 'k' (choose from 'kb', 'mk')", ["--key", "k"]) == (
        f"argument --x: invalid choice: '{REDACTED}' (choose from 'kb', 'mk')"
    )
    # a plain flag's value is shown as argparse shows it
    assert redact("unrecognized arguments: --inptu in", ["--inptu", "in"]) == "unrecognized arguments: --inptu in"


def test_ambiguous_abbreviation_and_subcommands_hide_the_value(capsys):
    p = ArgumentParser(prog="x")
    p.add_argument("--api-key")
    p.add_argument("--api-base")
    with pytest.raises(SystemExit):
        p.parse_args(["--api=sk-zzz"])  # "ambiguous option: --api=... could match ..."
    err = capsys.readouterr().err
    assert "ambiguous option" in err and "sk-zzz" not in err
    sub = ArgumentParser(prog="y").add_subparsers(dest="cmd")
    run = sub.add_parser("run")
    assert isinstance(run, ArgumentParser)
    with pytest.raises(SystemExit):
        run.parse_args(["--tokn", "s3cr3t"])
    err = capsys.readouterr().err
    assert "--tokn" in err and "s3cr3t" not in err
