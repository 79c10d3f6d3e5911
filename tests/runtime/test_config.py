"""conf/pipeline.toml is the one home of every setting: read once into typed, frozen sections
(udfs/runtime/config.py), every key read by something, each job's flags exactly its section's keys,
a bad file a one-line error naming the key, and no default of a setting left in the code."""

from __future__ import annotations

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
    judge = build_judge(C.judge_of(j.args), config_file=j.config.path, given=j.given, served_model=model).record
    fact, comp = judge.agents["factuality"].threshold, judge.agents["compliance"].threshold
    assert (comp.value, comp.origin.kind, comp.origin.flag) == (0.7, "command_line", "--compliance-threshold")
    assert (fact.value, fact.origin.kind, fact.origin.file) == (0.4, "config_file", str(path))
    default = job_class(job)(head)
    assert default.given == frozenset()
    shipped = build_judge(C.judge_of(default.args), config_file=default.config.path, served_model=model).record
    origin = shipped.agents["factuality"].threshold.origin
    assert origin.kind == "calibration" and origin.file == "conf/calibration.json" and model in origin.entry
    # "calibrated" on the command line takes the entry over a number in the file
    back = job_class(job)(head + ["--config", str(path), "--factuality-threshold", "calibrated"])
    again = build_judge(C.judge_of(back.args), config_file=back.config.path, given=back.given, served_model=model)
    assert again.record.agents["factuality"].threshold.origin.kind == "calibration"
    with pytest.raises(SystemExit):
        job_class(job)(head + ["--factuality-threshold", "sure"])
    twice = conf_with(tmp_path, job, add='strategy = "direct"')
    with pytest.raises(ConfigError, match=r"\[" + job + r"\] has unknown key strategy"):
        load_config(twice)


def test_a_threshold_setting_is_a_number_in_0_1_or_calibrated(tmp_path):
    """[judge]'s thresholds take a number (used as written) or "calibrated"; any other value is a
    ConfigError naming the key."""
    assert load_config().judge.factuality_threshold == C.CALIBRATED
    assert (
        load_config(conf_with(tmp_path, "judge", replace=("compliance_threshold", "1"))).judge.compliance_threshold
        == 1.0
    )
    for bad in ('"calibrate"', "1.5", "true"):
        with pytest.raises(ConfigError, match=r"\[judge\] factuality_threshold must be a number in \[0, 1\]"):
            load_config(conf_with(tmp_path, "judge", replace=("factuality_threshold", bad)))


def test_a_judge_settings_object_is_made_from_the_flags():
    conf = load_config()
    assert C.judge_of(conf.judge) == conf.judge
    args = type("Args", (), {**C.as_defaults(conf.judge), "factuality_questions": ["plain"]})
    assert C.judge_of(args) == dataclasses.replace(conf.judge, factuality_questions=("plain",))


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


def test_a_missing_key_stops_a_real_job_with_one_line(tmp_path):
    path = conf_with(tmp_path, "csets", drop="top")
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
    assert run.stderr.strip() == f"csets.py: error: {path}: [csets] is missing key top"


def test_an_unknown_key_a_wrong_type_and_a_bad_choice_name_the_key(tmp_path, capsys):
    argv = ["--input", "x", "--output", str(tmp_path / "out"), "--config"]
    path = conf_with(tmp_path, "sample", add="colour = 'red'")
    assert "[sample] has unknown key colour" in parse_error("sample", argv + [str(path)], capsys)
    path = conf_with(tmp_path, "sample", replace=("strata", '"3"'))
    assert "[sample] strata must be an integer, not str '3'" in parse_error("sample", argv + [str(path)], capsys)
    path = conf_with(tmp_path, "sample", replace=("features", '["n_instances", 4]'))
    assert "[sample] features[1] must be a string, not int 4" in parse_error("sample", argv + [str(path)], capsys)
    path = conf_with(tmp_path, "pages", replace=("microdata", "1"))
    assert "[pages] microdata must be a boolean" in parse_error("sample", argv + [str(path)], capsys)
    path = conf_with(tmp_path, "evaluate", replace=("order", '"random"'))
    err = parse_error("evaluate", argv + [str(path)], capsys)
    assert "[evaluate] order = 'random': 'random' is not one of 'sample', 'shortest'" in err
    # a section of another job or of the library is checked too: the file is read whole, once
    path = conf_with(tmp_path, "scores", drop="bleu_max_order")
    assert "[scores] is missing key bleu_max_order" in parse_error("warc_index", argv + [str(path)], capsys)
    path = tmp_path / "none.toml"
    assert f"{path}: no such configuration file" in parse_error("warc_index", argv + [str(path)], capsys)
    path.write_text("[csets\n")
    assert "not valid TOML" in parse_error("warc_index", argv + [str(path)], capsys)


def test_unknown_and_missing_sections(tmp_path):
    text = DEFAULT_CONF.read_text()
    (tmp_path / "extra.toml").write_text(text + "\n[colours]\nred = 1\n")
    with pytest.raises(ConfigError, match=r"unknown section \[colours\]"):
        load_config(tmp_path / "extra.toml")
    (tmp_path / "short.toml").write_text(text.replace("\n[report]\n", "\n"))
    with pytest.raises(ConfigError, match=r"missing section \[report\]"):
        load_config(tmp_path / "short.toml")


def test_a_setting_flag_without_a_key_and_a_key_without_a_flag_are_errors():
    from udfs.runtime.job import Job

    class Extra(Job):
        name = "warc_index"

        def add_arguments(self, p):
            p.add_argument("--warc-base")
            p.add_argument("--max-record-bytes", type=int)
            p.add_argument("--reject-raw-chars", type=int)
            p.add_argument("--colour", help="a setting nobody put in the file")

    class Fewer(Job):
        name = "warc_index"

        def add_arguments(self, p):
            p.add_argument("--run-only", default="", help="not a setting: its default is in the code")

    conf = load_config()
    with pytest.raises(ConfigError, match=r"\[warc_index\] is missing key colour \(the default of --colour\)"):
        Extra.__new__(Extra).build_parser(conf)
    with pytest.raises(
        ConfigError,
        match=r"\[warc_index\] has keys max_record_bytes, reject_raw_chars, warc_base "
        r"that no flag of warc_index.py takes",
    ):
        Fewer.__new__(Fewer).build_parser(conf)


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
    assert re.search(r"--per-stratum PER_STRATUM\s+C-sets drawn per stratum \(default:\s+17\)", out)
    assert re.search(r"--strata STRATA\s+quantile strata per feature \(default:\s+3\)", out)
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
    for cls in C.SECTIONS.values():
        _no_default(cls, [f.name for f in dataclasses.fields(cls)])
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
    _no_default(html.PageConfig, [f.name for f in dataclasses.fields(html.PageConfig)])
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
