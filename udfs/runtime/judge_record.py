"""The judge's block of a run record: its one schema, written by ``udfs.agents.judge.Judge.record``
and read by everything that shows a run's judge (the demo summary, the report) through
:func:`read_judge`.

A run record holds the judge once, under ``evaluation.judge`` (``jobs/evaluate.py``) or ``judge``
(``jobs/agents_bench.py``): the strategy, the verdict models, per agent its questions as configured and in the
order they are asked, their fingerprint and the threshold applied, and the calibration entries taken.
Each threshold is one value with a typed :class:`Origin`: the command line (the flag), a
configuration file (its path), a calibration entry (the file, the entry's id and its fit) or the
configured fallback for an agent left to a calibration that has no entry for it. Beside it, the
sources that did not apply, each with the reason (``passed_over``). No code learns where a value
came from by reading prose: ``Origin.kind`` says it, ``Origin.describe`` only shows it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

AGENTS = ("factuality", "compliance")
# Where a threshold can come from, in order of precedence (the first that gives a number applies).
COMMAND_LINE, CONFIG_FILE, CALIBRATION, FALLBACK = "command_line", "config_file", "calibration", "fallback"
KINDS = (COMMAND_LINE, CONFIG_FILE, CALIBRATION, FALLBACK)


@dataclass(frozen=True)
class Origin:
    """Where an applied value came from. ``kind`` is one of :data:`KINDS`; ``flag`` names the
    command-line flag, ``file`` the configuration or calibration file, ``setting`` the key read
    (``[judge] factuality_threshold``, or ``[judge] fallback_threshold`` for the fallback),
    ``entry`` the calibration entry's id and ``fit`` what it was fitted on (items, groups, the
    ground truth's hash, the prompts' fingerprint, when)."""

    kind: str
    flag: str | None = None
    file: str | None = None
    setting: str | None = None
    entry: str | None = None
    fit: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"origin kind {self.kind!r}: one of {', '.join(KINDS)}")

    def describe(self) -> str:
        """One line for people (the report, the summary); never parsed back."""
        if self.kind == COMMAND_LINE:
            return f"command line ({self.flag})"
        if self.kind == CONFIG_FILE:
            return f"configuration file {self.file} ({self.setting})"
        if self.kind == CALIBRATION:
            fit = self.fit or {}
            return (
                f"calibration entry {self.entry} of {self.file}, fitted on {fit.get('n')} items in "
                f"{fit.get('groups')} groups of ground truth {str(fit.get('ground_truth_sha256'))[:12]}, "
                f"created {fit.get('created_at')}"
            )
        return f"fallback {self.setting} of {self.file} (no calibration entry applies)"

    def short(self) -> str:
        """A word or two: calibrated, command line, configured, fallback."""
        return {COMMAND_LINE: "command line", CONFIG_FILE: "configured", CALIBRATION: "calibrated"}.get(
            self.kind, "fallback"
        )


@dataclass(frozen=True)
class PassedOver:
    """A source of a value that did not apply, and why."""

    kind: str
    why: str


@dataclass(frozen=True)
class AppliedThreshold:
    """An agent's threshold as applied: the value, where it came from and why the sources above
    it did not apply (and, where a written value won over a matching calibration entry, that entry
    and why it was not taken)."""

    value: float
    origin: Origin
    passed_over: tuple[PassedOver, ...] = ()


@dataclass(frozen=True)
class AgentRecord:
    """One verdict agent of the judge: its questions as configured and in the order they are asked
    (``order``), their name in calibration files (``key``), the prompts' fingerprint, the
    factuality gate (0 for compliance), the threshold, and the calibration entry taken (its id and
    test-split counts) or None."""

    questions: tuple[str, ...]
    order: tuple[str, ...]
    key: str
    prompts_sha256: str
    gate: float
    threshold: AppliedThreshold
    entry: dict[str, Any] | None = None


@dataclass(frozen=True)
class JudgeRecord:
    """The judge's block (module docstring)."""

    strategy: str
    verdict_models: tuple[str, ...]
    judge_model: str | None
    calibration_file: str | None
    agents: dict[str, AgentRecord] = field(default_factory=dict)
    identity: str = ""
    # the model that answers where verdict_models names none (the service's first), when known
    served_model: str | None = None

    def threshold(self, agent: str) -> float:
        return self.agents[agent].threshold.value

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> JudgeRecord:
        agents = {}
        for name, a in (d.get("agents") or {}).items():
            t = a["threshold"]
            agents[name] = AgentRecord(
                questions=tuple(a["questions"]),
                order=tuple(a["order"]),
                key=a["key"],
                prompts_sha256=a["prompts_sha256"],
                gate=float(a["gate"]),
                threshold=AppliedThreshold(
                    float(t["value"]),
                    Origin(**t["origin"]),
                    tuple(PassedOver(**p) for p in t.get("passed_over") or ()),
                ),
                entry=a.get("entry"),
            )
        return cls(
            strategy=d["strategy"],
            verdict_models=tuple(d.get("verdict_models") or ()),
            judge_model=d.get("judge_model"),
            calibration_file=d.get("calibration_file"),
            agents=agents,
            identity=d.get("identity", ""),
            served_model=d.get("served_model"),
        )


def read_judge(run_record: dict[str, Any] | None) -> JudgeRecord | None:
    """The judge of a run record (an evaluation's ``evaluation.judge`` or the agents bench's
    ``judge``), or None where the record has none or one of another schema (a run older than
    this schema)."""
    rec = run_record or {}
    block = (rec.get("evaluation") or {}).get("judge") or rec.get("judge")
    if not isinstance(block, dict):
        return None
    try:
        return JudgeRecord.from_dict(block)
    except (KeyError, TypeError, ValueError):
        return None
