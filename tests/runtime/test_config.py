"""Each setting is declared once (udfs/runtime/config.py: name, type, range, default, help, section),
and the TOML reader, the jobs' flags, the reference and the run record read that declaration: the
file is read once into typed, frozen sections, every key read by something, each job's flags exactly
its sections' settings, a shared key one declaration, every value (in a file or on a command line)
checked before any work with a one-line error naming the file, section and key or the flag, and no
default of a setting anywhere but its declaration."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

from udfs.runtime import config as C
from udfs.runtime.config import ConfigError, load_config
from udfs.runtime.paths import DEFAULT_CONF

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
    "import_pset": "ImportPsetJob",
}
LIBRARY_SECTIONS = ("scores", "validity")  # sections that configure library objects, not one job's flags
SHARED = {"judge": ("evaluate", "agents_bench")}  # sections whose flags several jobs take, and those jobs


def job_class(name: str):
    return getattr(importlib.import_module(f"jobs.{name}"), JOBS[name])


def conf_with(
    tmp_path: Path,
    section: str,
    *,
    drop: str | None = None,
    add: str | None = None,
    replace: tuple[str, str] | None = None,
) -> Path:
    """The bundled conf file with one edit inside ``[section]``: a key's line dropped, a line added,
    or a key's value replaced."""
    text = DEFAULT_CONF.read_text()
    head, sep, rest = text.partition(f"\n[{section}]\n")
    assert sep, section
    body, nxt, tail = rest.partition("\n[")
    lines = body.split("\n")
    if drop:
        assert any(line.startswith(f"{drop} =") for line in lines), drop
        lines = [line for line in lines if not line.startswith(f"{drop} =")]
    if replace:
        key, value = replace
        assert any(line.startswith(f"{key} =") for line in lines), key
        lines = [f"{key} = {value}" if line.startswith(f"{key} =") else line for line in lines]
    if add:
        lines.append(add)
    path = tmp_path / "pipeline.toml"
    path.write_text(head + sep + "\n".join(lines) + nxt + tail)
    return path


def parse_error(job: str, argv: list[str], capsys) -> str:
    """The one-line stderr of a job whose command line or conf cannot be used (exit status 2)."""
    with pytest.raises(SystemExit) as exc:
        job_class(job)(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


# ---- (a) every key is read by something ----------------------------------------------------------


def test_the_sections_are_the_jobs_and_the_library_objects():
    conf = load_config()
    assert set(C.SECTIONS) == set(JOBS) | set(LIBRARY_SECTIONS) | set(SHARED)
    for name, cls in C.SECTIONS.items():
        assert isinstance(getattr(conf, name), cls)


@pytest.mark.parametrize("job", sorted(JOBS))
def test_each_job_section_holds_exactly_the_jobs_setting_flags(job):
    conf = load_config()
    cls = job_class(job)
    parser = cls.__new__(cls).build_parser(conf)  # the command line only: nothing parsed yet
    shared = [s for s, jobs in SHARED.items() if job in jobs]
    assert tuple(shared) == cls.shared_sections
    defaults = {k: v for s in (job, *shared) for k, v in C.as_defaults(conf.section(s)).items()}
    assert set(parser.setting_dests) == set(defaults)
    assert parser.setting_sections == {k: s for s in (job, *shared) for k in C.as_defaults(conf.section(s))}
    # and the parsed defaults are the file's values
    args = vars(parser.parse_args(["--input", "x", "--output", "y"] + (["build"] if job == "agents_bench" else [])))
    assert {k: args[k] for k in defaults} == defaults


@pytest.mark.parametrize("job", sorted(SHARED["judge"]))
def test_the_judge_flags_default_to_the_judge_section_and_the_judge_says_where_a_value_came_from(job, tmp_path):
    """Both judging jobs take [judge]'s flags; a key of [judge] written in the job's own section is
    refused (one home per setting). The judge the job builds (``build_judge`` with the job's
    ``given`` and config path) says, as typed origins, the flag where the command line gave a
    threshold, the file where it holds a number, the calibration entry where it says "calibrated"."""
    from udfs.agents.judge import build_judge

    head = ["--input", "x", "--output", str(tmp_path)] + (["run"] if job == "agents_bench" else [])
    path = conf_with(tmp_path, "judge", replace=("factuality_threshold", "0.4"))
    j = job_class(job)(head + ["--config", str(path), "--compliance-threshold", "0.7"])
    assert (j.args.factuality_threshold, j.args.compliance_threshold) == (0.4, 0.7)
    assert j.given == {"compliance_threshold"}
    model = "qwen2.5-coder-1.5b"  # the shipped calibration file's model: its entries match
    # the checked section is handed on as it is: the file's, the flag given in its place
    assert j.sections["judge"] == dataclasses.replace(j.config.judge, compliance_threshold=0.7)
    judge = build_judge(j.sections["judge"], config_file=j.config.path, given=j.given, served_model=model).record
    fact, comp = judge.agents["factuality"].threshold, judge.agents["compliance"].threshold
    assert (comp.value, comp.origin.kind, comp.origin.flag) == (0.7, "command_line", "--compliance-threshold")
    assert (fact.value, fact.origin.kind, fact.origin.file) == (0.4, "config_file", str(path))
    default = job_class(job)(head)
    assert default.given == frozenset() and default.sections["judge"] is default.config.judge
    shipped = build_judge(default.sections["judge"], config_file=default.config.path, served_model=model).record
    origin = shipped.agents["factuality"].threshold.origin
    assert origin.kind == "calibration" and origin.file == "conf/calibration.json" and model in origin.entry
    # "calibrated" on the command line takes the entry over a number in the file
    back = job_class(job)(head + ["--config", str(path), "--factuality-threshold", "calibrated"])
    again = build_judge(back.sections["judge"], config_file=back.config.path, given=back.given, served_model=model)
    assert again.record.agents["factuality"].threshold.origin.kind == "calibration"
    with pytest.raises(SystemExit):
        job_class(job)(head + ["--factuality-threshold", "sure"])
    twice = conf_with(tmp_path, job, add='strategy = "direct"')
    with pytest.raises(ConfigError, match=r"\[" + job + r"\] has unknown key strategy \("):
        load_config(twice)


def test_a_threshold_setting_is_a_number_in_0_1_or_calibrated(tmp_path):
    """[judge]'s thresholds take a number (used as written) or "calibrated"; any other value is a
    ConfigError naming the key."""
    assert load_config().judge.factuality_threshold == C.CALIBRATED
    assert (
        load_config(conf_with(tmp_path, "judge", replace=("compliance_threshold", "1"))).judge.compliance_threshold
        == 1.0
    )
    # a string holding a number is not a number: "0.3" is refused, not read as 0.3
    for bad in ('"calibrate"', "1.5", "true", '"0.3"', "nan", "inf", "-0.2"):
        with pytest.raises(ConfigError, match=r"\[judge\] factuality_threshold must be a number in \[0, 1\]"):
            load_config(conf_with(tmp_path, "judge", replace=("factuality_threshold", bad)))


def test_the_jobs_checked_sections_are_the_files_with_the_given_flags_in_place():
    """``Job.sections``: each of the job's sections as the file gives it (the same object where no
    flag changed it), a given flag's value typed and checked in its place; ``args`` agrees."""
    j = job_class("evaluate")(["--input", "x", "--output", "y", "--factuality-questions", "plain", "--limit", "7"])
    assert j.sections["judge"] == dataclasses.replace(j.config.judge, factuality_questions=("plain",))
    assert j.settings is j.sections["evaluate"] and j.settings == dataclasses.replace(j.config.evaluate, limit=7)
    assert (j.args.limit, j.args.factuality_questions, j.given) == (7, ["plain"], {"limit", "factuality_questions"})
    assert job_class("pages")(["--input", "x", "--output", "y"]).settings == load_config().pages


def _attribute_names(folders: tuple[str, ...]) -> set[str]:
    names = set()
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py"):
            if path == ROOT / "udfs" / "runtime" / "config.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Attribute):
                    names.add(node.attr)
    return names


def test_every_scores_and_validity_setting_is_read_by_the_code():
    read = _attribute_names(("udfs", "jobs"))
    for section in LIBRARY_SECTIONS:
        for f in dataclasses.fields(C.SECTIONS[section]):
            assert f.name in read, f"[{section}] {f.name} is read nowhere in udfs/ or jobs/"


def test_the_scores_settings_reach_the_scores():
    from udfs.scores import matching

    s = load_config().scores
    assert matching.settings(s) == {
        "threshold": s.match_threshold,
        "batch_size": s.embedding_batch_size,
        "threads": s.embedding_threads,
    }
    # the evaluation's key scores and validity agent take [scores] and [validity] (test below)
    from udfs.evaluation.evaluator import EvalConfig

    assert {f.name for f in dataclasses.fields(EvalConfig)} >= {
        "scores",
        "validity_engine",
        "validity_strict",
        "validity_vocab",
    }


def test_the_validity_command_takes_its_defaults_from_the_conf(tmp_path):
    path = conf_with(tmp_path, "validity", replace=("strict", "true"))
    run = subprocess.run(
        [sys.executable, "-m", "udfs.agents.validity", "--config", str(path), "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert re.search(r"--strict, --no-strict\s.*\(default:\s+True\)", run.stdout, re.S)
    bad = conf_with(tmp_path, "validity", replace=("engine", "3"))
    run = subprocess.run(
        [sys.executable, "-m", "udfs.agents.validity", "--config", str(bad), "x.json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert f"{bad}: [validity] engine must be a string, not int 3" in run.stderr


# ---- (b) a bad file is an error naming the key ---------------------------------------------------


def test_a_file_may_leave_keys_and_sections_out_they_take_the_declared_defaults(tmp_path):
    """The declaration holds the default: a --config file gives only what it changes."""
    dropped = load_config(conf_with(tmp_path, "csets", drop="top"))
    assert dropped.csets.top == C.CsetsConf().top == load_config().csets.top
    own = tmp_path / "own.toml"
    own.write_text("[pages]\nmax_html_bytes = 123\n")
    job = job_class("pages")(["--input", "x", "--output", "y", "--config", str(own)])
    assert job.args.max_html_bytes == job.settings.max_html_bytes == 123
    assert job.settings == dataclasses.replace(C.PagesConf(), max_html_bytes=123)
    assert load_config(own).judge == C.JudgeConf() == load_config().judge


def test_a_bad_key_stops_a_real_job_with_one_line_before_any_work(tmp_path):
    path = conf_with(tmp_path, "csets", add="topp = 3")
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "jobs" / "csets.py"),
            "--input",
            "x",
            "--output",
            str(tmp_path / "out"),
            "--config",
            str(path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.strip() == f"csets.py: error: {path}: [csets] has unknown key topp (did you mean top?)"
    assert not (tmp_path / "out").exists()  # refused before anything was written


def test_an_unknown_key_a_wrong_type_and_a_bad_choice_name_the_key(tmp_path, capsys):
    argv = ["--input", "x", "--output", str(tmp_path / "out"), "--config"]
    path = conf_with(tmp_path, "sample", add="colour = 'red'")
    assert "[sample] has unknown key colour (known: " in parse_error("sample", argv + [str(path)], capsys)
    path = conf_with(tmp_path, "sample", replace=("strata", '"3"'))
    assert "[sample] strata must be an integer, not str '3'" in parse_error("sample", argv + [str(path)], capsys)
    path = conf_with(tmp_path, "sample", replace=("features", '["n_instances", 4]'))
    assert "[sample] features[1] must be a string, not int 4" in parse_error("sample", argv + [str(path)], capsys)
    path = conf_with(tmp_path, "pages", replace=("microdata", "1"))
    assert "[pages] microdata must be a boolean" in parse_error("sample", argv + [str(path)], capsys)
    path = conf_with(tmp_path, "evaluate", replace=("order", '"random"'))
    err = parse_error("evaluate", argv + [str(path)], capsys)
    assert "[evaluate] order must be one of 'sample', 'shortest', not 'random'" in err
    path = conf_with(tmp_path, "judge", replace=("factuality_questions", '["plain", "plane"]'))
    err = parse_error("evaluate", argv + [str(path)], capsys)
    assert "[judge] factuality_questions[1] must be one of 'plain', " in err and err.endswith("not 'plane'")
    # a section of another job or of the library is checked too: the file is read whole, once
    path = conf_with(tmp_path, "scores", replace=("bleu_max_order", "0"))
    err = parse_error("warc_index", argv + [str(path)], capsys)
    assert err.endswith("[scores] bleu_max_order must be an integer >= 1, not 0")
    path = tmp_path / "none.toml"
    assert f"{path}: no such configuration file" in parse_error("warc_index", argv + [str(path)], capsys)
    path.write_text("[csets\n")
    assert "not valid TOML" in parse_error("warc_index", argv + [str(path)], capsys)


def test_unknown_sections_name_the_nearest_and_missing_ones_take_their_defaults(tmp_path):
    text = DEFAULT_CONF.read_text()
    (tmp_path / "extra.toml").write_text(text + "\n[widgets]\nred = 1\n")
    with pytest.raises(ConfigError, match=r"unknown section \[widgets\] \(known: \[csets\], \[sample\], "):
        load_config(tmp_path / "extra.toml")
    (tmp_path / "typo.toml").write_text("[judg]\nstrategy = 'direct'\n")
    with pytest.raises(ConfigError, match=r"typo.toml: unknown section \[judg\] \(did you mean \[judge\]\?\)$"):
        load_config(tmp_path / "typo.toml")
    head, _, rest = text.partition("\n[report]\n")
    (tmp_path / "short.toml").write_text(head + "\n[" + rest.partition("\n[")[2])
    assert "[report]" not in (tmp_path / "short.toml").read_text()
    assert load_config(tmp_path / "short.toml").report == C.ReportConf()


def test_a_jobs_setting_flags_are_derived_and_its_own_flags_state_their_defaults():
    """A setting's flag comes from its declaration; a flag a job adds itself (``add_arguments``) is
    not a setting and must state its default: one without is refused, naming where settings are
    declared; a setting's flag written again is refused by argparse."""
    from udfs.runtime.job import Job

    class Bare(Job):
        name = "warc_index"

    class Undeclared(Job):
        name = "warc_index"

        def add_arguments(self, p):
            p.add_argument("--colour", help="meant as a setting, declared nowhere")

    class Again(Job):
        name = "warc_index"

        def add_arguments(self, p):
            p.add_argument("--warc-base", default="", help="a setting written again")

    conf = load_config()
    parser = Bare.__new__(Bare).build_parser(conf)
    assert set(parser.setting_dests) == {f.name for f in dataclasses.fields(C.WarcIndexConf)}
    with pytest.raises(TypeError, match=r"--colour has no default: declare a setting in udfs/runtime/config.py"):
        Undeclared.__new__(Undeclared).build_parser(conf)
    with pytest.raises(argparse.ArgumentError, match="conflicting option string: --warc-base"):
        Again.__new__(Again).build_parser(conf)


def test_the_config_is_frozen_and_its_lists_are_tuples():
    conf = load_config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        conf.evaluate.limit = 7
    assert conf.sample.features == ("n_instances", "n_properties") and isinstance(conf.evaluate.stages, tuple)
    assert isinstance(conf.extract_quads.time_limit_s, float)


# ---- (c) --help shows the file's values ----------------------------------------------------------


def test_help_shows_the_values_of_the_conf_file(tmp_path, capsys):
    path = conf_with(tmp_path, "sample", replace=("per_stratum", "17"))
    with pytest.raises(SystemExit) as exc:
        job_class("sample")(["--help", "--config", str(path)])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert re.search(r"--per-stratum PER_STRATUM\s+C-sets drawn per stratum \(>= 1\) \(default:\s+17\)", out)
    assert re.search(r"--strata STRATA\s+quantile strata per feature \(>= 1\) \(default:\s+3\)", out)
    with pytest.raises(SystemExit):
        job_class("evaluate")(["--help"])
    out = capsys.readouterr().out
    assert re.search(r"--order \{sample,shortest\}.*?\(default:\s+shortest\)", out, re.S)
    assert re.search(r"--factuality-threshold T.*?\(default:\s+calibrated\)", out, re.S)


# ---- (d) the evaluation takes [validity] and [scores] --------------------------------------------


def test_evaluate_takes_validity_and_scores_from_the_conf(tmp_path):
    path = conf_with(tmp_path, "validity", replace=("strict", "true"))
    path.write_text(
        path.read_text()
        .replace('engine = "compiled"', 'engine = "pyshacl"')
        .replace('mode = "schemaorg"', 'mode = "paper"')
    )
    job = job_class("evaluate")(["--input", "x", "--output", str(tmp_path / "out"), "--config", str(path)])
    cfg = job.eval_config(["m"])
    assert (cfg.validity_strict, cfg.validity_engine, cfg.validity_vocab) == (True, "pyshacl", "30.0")
    assert cfg.validity_mode == "paper"
    assert cfg.scores == load_config(path).scores and cfg.sources == ["human", "m"]
    default = job_class("evaluate")(["--input", "x", "--output", str(tmp_path / "out")])
    assert default.eval_config([]).validity_strict is False
    # --order has one default: the file's
    assert default.args.order == load_config().evaluate.order
    flipped = conf_with(tmp_path, "evaluate", replace=("order", '"sample"'))
    assert job_class("evaluate")(["--input", "x", "--output", "y", "--config", str(flipped)]).args.order == "sample"


# ---- (e) no default of a setting in the code -----------------------------------------------------


def _no_default(cls, names):
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for name in names:
        f = fields[name]
        assert f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING, (cls, name)


def _required(fn, names):
    params = inspect.signature(fn).parameters
    for name in names:
        assert params[name].default is inspect.Parameter.empty, (fn.__qualname__, name)


def test_the_code_holds_no_default_of_a_setting():
    from udfs.agents import judge, validity, verdicts
    from udfs.agents_bench import groundtruth, runner
    from udfs.corpus import csets, html, sampling
    from udfs.evaluation.evaluator import EvalConfig
    from udfs.scores import keys, matching

    for module, name in [
        (verdicts, "DEFAULT_THRESHOLD"),
        (matching, "DEFAULT_THRESHOLD"),
        (matching, "DEFAULT_BATCH_SIZE"),
        (matching, "DEFAULT_THREADS"),
        (keys, "DEFAULT_IGNORE_KEYS"),
        (groundtruth, "DEFAULT_SEED"),
        (groundtruth, "DEFAULT_DISTANT_MAX"),
        (groundtruth, "DEFAULT_MAX_VALUE_CHARS"),
    ]:
        assert not hasattr(module, name), f"{module.__name__}.{name}"
    # a section's defaults are its declarations' (the declaration is their one home)
    for cls in C.SECTIONS.values():
        for f in dataclasses.fields(cls):
            assert C.declaration(f) is not None and f.default == C.declaration(f).default, (cls, f.name)
    _no_default(
        EvalConfig,
        [
            "stages",
            "judge",
            "context_window",
            "max_tokens",
            "max_claims",
            "validity_engine",
            "validity_strict",
            "validity_vocab",
            "validity_mode",
            "scores",
        ],
    )
    _no_default(runner.VerdictConfig, ["models", "judge"])
    # how a page is read is [pages] itself: no field (nor default) of its own
    assert dataclasses.fields(html.PageConfig) == dataclasses.fields(C.PagesConf)
    _no_default(
        csets.CsetConfig, ["subject_scope", "sample_urls", "reject_raw_chars", "max_line_bytes", "strict_nquads"]
    )
    # the judge's settings come from [judge] through build_judge, its one maker
    _required(judge.build_judge, ["conf", "config_file"])
    for fn in (judge.Judge.factuality, judge.Judge.correct, judge.Judge.voter, judge.Judge.verdicts):
        _required(fn, ["early_exit"])
    _required(validity.ValidityAgent, ["engine", "strict", "vocab", "mode"])
    _required(validity.agent, ["engine", "strict", "vocab", "mode"])
    _required(
        sampling.sample_csets,
        ["n_strata", "per_stratum", "seed", "replacement_urls", "replacement_csets", "reject_raw_chars"],
    )
    _required(keys.key_scores, ["ignore_keys", "max_order"])
    _required(matching.match_pairs, ["threshold", "batch_size", "threads"])
    _required(groundtruth.build_ground_truth, ["seed", "distant_max", "intrinsic", "max_value_chars", "distance"])


# ---- (f) the shared checking: a default, choices, a table of strings, the reference rows ------------------


def test_parse_section_and_describe_section_on_a_small_dataclass():
    @dataclasses.dataclass(frozen=True)
    class Small:
        colour: str = dataclasses.field(metadata={"doc": "the colour", "choices": ("red", "blue")})
        env: dict[str, str] = dataclasses.field(metadata={"doc": "variables"})
        size: int = dataclasses.field(default=3, metadata={"doc": "how big"})

    got = C.parse_section(Small, "small", {"colour": "red", "env": {"A": "1"}}, "f.toml")
    assert got == Small("red", {"A": "1"}, 3)
    with pytest.raises(ConfigError, match=r"^f.toml: \[small\] colour must be one of 'red', 'blue', not 'green'$"):
        C.parse_section(Small, "small", {"colour": "green", "env": {}}, "f.toml")
    with pytest.raises(ConfigError, match=r"^f.toml: <x> env.A must be a string, not int 1$"):
        C.parse_section(Small, "small", {"colour": "red", "env": {"A": 1}}, "f.toml", label="<x>")
    with pytest.raises(ConfigError, match=r"^f.toml: \[small\] is missing key env$"):
        C.parse_section(Small, "small", {"colour": "red"}, "f.toml")
    assert C.describe_section(Small, "small") == [
        C.ConfigKey("small", "colour", "string", True, None, ("red", "blue"), "the colour"),
        C.ConfigKey("small", "env", "table of str", True, None, (), "variables"),
        C.ConfigKey("small", "size", "integer", False, 3, (), "how big"),
    ]


# ---- (g) every value checked before any work, in a file and on a command line ----------------------

# (section, key, value as TOML, the end of the one error line): NaN, inf, out of range, a string
# where a number belongs, a bool where an integer belongs, an unknown key with the nearest named
BAD_FILE_VALUES = [
    (
        "judge",
        "factuality_threshold",
        "nan",
        'factuality_threshold must be a number in [0, 1] or "calibrated", not nan',
    ),
    ("judge", "factuality_gate", "1.7", "factuality_gate must be a number in [0, 1], not 1.7"),
    ("judge", "fallback_threshold", "-inf", "fallback_threshold must be a finite number in [0, 1], not -inf"),
    ("pages", "max_html_bytes", "-5", "max_html_bytes must be an integer >= 1, not -5"),
    ("pages", "max_html_bytes", '"5000"', "max_html_bytes must be an integer, not str '5000'"),
    ("pages", "max_html_bytes", "true", "max_html_bytes must be an integer, not bool True"),
    ("pages", "time_limit_s", "inf", "time_limit_s must be a finite number > 0, not inf"),
    ("evaluate", "temperature", "nan", "temperature must be a finite number in [0, 2], not nan"),
    ("scores", "match_threshold", '"0.8"', "match_threshold must be a number, not str '0.8'"),
]


@pytest.mark.parametrize("section,key,value,message", BAD_FILE_VALUES)
def test_a_bad_value_in_the_file_is_one_line_naming_file_section_and_key(
    section, key, value, message, tmp_path, capsys
):
    path = conf_with(tmp_path, section, replace=(key, value))
    argv = ["--input", "x", "--output", str(tmp_path / "out"), "--config", str(path)]
    err = parse_error("evaluate", argv, capsys)
    assert err == f"evaluate.py: error: {path}: [{section}] {message}"
    assert not (tmp_path / "out").exists()


def test_an_unknown_key_names_the_nearest_known_one(tmp_path, capsys):
    own = tmp_path / "own.toml"
    own.write_text("[pages]\nmax_htm_bytes = 5\n")
    err = parse_error("pages", ["--input", "x", "--output", "y", "--config", str(own)], capsys)
    assert err == f"pages.py: error: {own}: [pages] has unknown key max_htm_bytes (did you mean max_html_bytes?)"
    own.write_text("[judge]\nfactuality_treshold = 0.5\n")
    err = parse_error("evaluate", ["--input", "x", "--output", "y", "--config", str(own)], capsys)
    assert err.endswith("[judge] has unknown key factuality_treshold (did you mean factuality_threshold?)")


# (job, flags, the end of the one error line): the flags' values are checked as the file's are
BAD_FLAG_VALUES = [
    (
        "evaluate",
        ["--factuality-threshold", "nan"],
        '--factuality-threshold must be a number in [0, 1] or "calibrated", not nan',
    ),
    (
        "evaluate",
        ["--compliance-threshold", "1.7"],
        '--compliance-threshold must be a number in [0, 1] or "calibrated", not 1.7',
    ),
    ("evaluate", ["--factuality-gate", "inf"], "--factuality-gate must be a finite number in [0, 1], not inf"),
    ("evaluate", ["--limit", "-1"], "--limit must be an integer >= 0, not -1"),
    ("evaluate", ["--timeout-s", "0"], "--timeout-s must be a number > 0, not 0.0"),
    ("pages", ["--max-html-bytes", "abc"], "--max-html-bytes must be an integer, not 'abc'"),
    ("pages", ["--max-html-bytes", "true"], "--max-html-bytes must be an integer, not 'true'"),
    ("pages", ["--time-limit-s", "nan"], "--time-limit-s must be a finite number > 0, not nan"),
    ("csets", ["--reject-raw-chars", "0"], "--reject-raw-chars must be an integer >= 1, not 0"),
    ("agents_bench", ["run", "--fit-fraction", "1"], "--fit-fraction must be a number in (0, 1), not 1.0"),
]


@pytest.mark.parametrize("job,flags,message", BAD_FLAG_VALUES)
def test_a_bad_flag_value_is_one_line_naming_the_flag(job, flags, message, tmp_path, capsys):
    err = parse_error(job, ["--input", "x", "--output", str(tmp_path / "out"), *flags], capsys)
    assert err == f"{job}.py: error: {message}"
    assert not (tmp_path / "out").exists()


def test_a_bad_flag_value_stops_a_real_job_before_any_work(tmp_path):
    """As a user runs it: exit 2, one line on stderr, nothing written (the check is in the job's
    constructor, before main: no Spark session, model request or output write comes first)."""
    run = subprocess.run(
        [sys.executable, str(ROOT / "jobs" / "evaluate.py"), "--input", "x", "--output", str(tmp_path / "out")]
        + ["--base-url", "http://127.0.0.1:9/v1", "--factuality-threshold", "nan"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2, run.stderr
    assert run.stderr.splitlines() == [
        'evaluate.py: error: --factuality-threshold must be a number in [0, 1] or "calibrated", not nan'
    ]
    assert not (tmp_path / "out").exists()


# ---- (h) one declaration per setting -------------------------------------------------------------

# Keys of the same name in several sections that mean different things, each declared apart.
DISTINCT = {
    "seed": "[sample] orders C-sets; [agents_bench] draws the ground truth's negatives",
    "limit": "[evaluate] pages; [agents_bench] items per task",
    "per_stratum": "[sample] C-sets drawn; [import_pset] a subset of the paper's pages",
}


def test_a_key_several_sections_take_is_one_declaration():
    by_key: dict[str, list[tuple[str, dataclasses.Field]]] = {}
    for name, cls in C.SECTIONS.items():
        for f in dataclasses.fields(cls):
            by_key.setdefault(f.name, []).append((name, f))
    shared = {k: v for k, v in by_key.items() if len(v) > 1}
    assert set(shared) >= {"reject_raw_chars", "max_record_bytes", "max_html_bytes", "warc_base", "vocab"}
    for key, uses in shared.items():
        declarations = {id(f) for _, f in uses}
        if key in DISTINCT:
            assert len(declarations) == len(uses), key
        else:
            assert len(declarations) == 1, f"{key} is declared {len(declarations)} times: {[s for s, _ in uses]}"
    # reject_raw_chars: six sections, one declaration object (RejectRows')
    (rejects,) = [f for f in dataclasses.fields(C.RejectRows)]
    uses = by_key["reject_raw_chars"]
    assert len(uses) == 6 and all(f is rejects for _, f in uses)
    assert {s for s, _ in uses} == {"csets", "sample", "warc_index", "extract_quads", "pages", "import_pset"}
    # the page limits: [pages] and [extract_quads] take PageLimits' declarations
    limits = {f.name: f for f in dataclasses.fields(C.PageLimits)}
    for name in ("pages", "extract_quads"):
        fields = {f.name: f for f in dataclasses.fields(C.SECTIONS[name])}
        assert all(fields[k] is f for k, f in limits.items()), name


def _page_config_calls() -> list[str]:
    """Where the code calls ``PageConfig(...)`` (or ``P.PageConfig(...)``) directly."""
    calls = []
    for folder in ("udfs", "jobs", "testkit", "tests", "benchmarks", "experiments"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                if isinstance(node, ast.Call):
                    f = node.func
                    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
                    if name == "PageConfig":
                        calls.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return calls


def test_page_config_is_built_one_way_from_the_checked_section():
    from jobs.pages import PagesJob
    from udfs.corpus import html

    assert _page_config_calls() == []  # only PageConfig.of builds one
    job = PagesJob(["--input", "x", "--output", "y", "--max-html-bytes", "123", "--microdata"])
    cfg = html.PageConfig.of(job.settings)
    assert (cfg.max_html_bytes, cfg.microdata) == (123, True)
    assert cfg == html.PageConfig.of(dataclasses.replace(load_config().pages, max_html_bytes=123, microdata=True))
    assert cfg.generator_rules == str(ROOT / load_config().pages.generator_rules)
    assert "PageConfig.of(self.settings)" in (ROOT / "jobs" / "pages.py").read_text(encoding="utf-8")
