"""The runs behind a report's scores, and the rule that keeps them apart.

Each file of the scores belongs to its run folder: the folder that holds it, where
``jobs/evaluate.py`` wrote it beside its run record ``_run.json``. A run folder's settings hash is
the one its record names (``evaluation.settings_hash``; a record older than that field: the hash
computed from the settings it records, :func:`settings_hash`), and every row of the folder must
carry that hash in its ``settings_hash`` column (rows older than that column carry none, and then
so does their record). A folder without its record, with a record that is not an evaluation's or
one that names another hash than its rows carry, is a :class:`RunsError` naming the folder: the
report never guesses a run's settings.

Folders of one hash are one :class:`Settings` (a run resumed into two folders is still one run);
scores of more than one hash are refused (:func:`one_settings`) unless the report compares them, and
then each hash is reported on its own, never pooled.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from udfs.runtime.errors import UserError
from udfs.runtime.io import Folder, parquet_dataset
from udfs.runtime.judge_record import read_judge

HASH_CHARS = 12  # as udfs.evaluation.parts names a hash in its parts and messages
RECORD = "_run.json"
# what an older record's settings hash covered: the settings that change answers
ANSWER_KEYS = (
    "stages",
    "strategy",
    "factuality_threshold",
    "compliance_threshold",
    "verdict_models",
    "judge_model",
    "context_window",
    "max_tokens",
    "max_claims",
    "correct",
    "generators",
    "generation",
    "validity_engine",
    "validity_strict",
    "validity_vocab",
    "validity_mode",
    "scores",
)


class RunsError(UserError):
    """Scores the report cannot attribute to one run's settings: a run folder without its record,
    a record that disagrees with its rows, or (without ``--compare-settings``) more than one
    settings hash. One line naming the folders and hashes."""


def settings_hash(record: dict[str, Any]) -> str:
    """sha256 of the evaluation settings that change answers (models, stages, strategy, thresholds,
    context, validity and scores settings; not where the service ran or how many workers): the
    one the evaluation recorded (``evaluation.settings_hash``, also in every row), else computed
    from an older record's settings."""
    if record.get("evaluation", {}).get("settings_hash"):
        return record["evaluation"]["settings_hash"]
    merged = {**record.get("config", {}), **record.get("evaluation", {})}
    keep = {k: merged.get(k) for k in ANSWER_KEYS}
    return hashlib.sha256(json.dumps(keep, sort_keys=True, default=str).encode()).hexdigest()


@dataclass(frozen=True)
class RunFolder:
    """One folder of scores files and the record of the run that wrote them."""

    folder: Folder
    files: tuple[str, ...]
    record: dict[str, Any]
    rows: int
    hash: str


@dataclass(frozen=True)
class Settings:
    """The scores of one settings hash: the run folders that hold them (in the order given)."""

    hash: str
    folders: tuple[RunFolder, ...]

    @property
    def label(self) -> str:
        return self.hash[:HASH_CHARS]

    @property
    def record(self) -> dict[str, Any]:
        """The run record of these settings: the first folder's (the settings of every folder of
        one hash are the same; their counters are summed where the report shows them)."""
        return self.folders[0].record

    @property
    def files(self) -> list[str]:
        return [f for r in self.folders for f in r.files]

    @property
    def rows(self) -> int:
        return sum(r.rows for r in self.folders)

    def threshold(self, agent: str = "factuality") -> str:
        """The threshold ``agent`` applied, as its record says (or why there is none)."""
        judge = read_judge(self.record)
        stages = (self.record.get("evaluation") or {}).get("stages")
        if stages is not None and agent not in stages:
            return f"none ({agent} did not run)"
        if judge is None or agent not in judge.agents:
            return "not recorded"
        return f"{judge.agents[agent].threshold.value:g}"

    def describe(self) -> str:
        where = ", ".join(str(r.folder) for r in self.folders)
        return f"{self.label} ({self.rows} rows, factuality threshold {self.threshold()}, run folder {where})"


def run_folders(specs: list[str]) -> dict[Folder, list[str]]:
    """Each run folder of the ``--input`` specs and its Parquet files: a local file's folder is
    the one that holds it (a folder given is walked, each file in its own folder); a remote spec
    is its own folder (or, naming a file, the folder that holds it)."""
    from udfs.runtime.inputs import is_remote, resolve_inputs

    out: dict[Folder, list[str]] = {}
    for spec in specs:
        if is_remote(spec):
            f = Folder(spec)
            out.setdefault(f if f.isdir() else f.parent, []).append(spec)
            continue
        for path in resolve_inputs([spec], suffixes=(".parquet",)):
            out.setdefault(Folder(str(Path(path).parent)), []).append(path)
    return out


def read_record(folder: Folder) -> dict[str, Any]:
    """The run record of the evaluation that wrote ``folder``; RunsError when it is missing, not
    JSON or another job's."""
    path = folder / RECORD
    if not folder.isfile(RECORD):
        raise RunsError(
            f"{folder} holds scores but no {RECORD}, the record of the evaluate run that wrote them: the report does "
            f"not guess their settings; give the scores/ folder of an evaluate run, with its {RECORD}"
        )
    try:
        record = json.loads(folder.read_text(RECORD))
    except (ValueError, UnicodeDecodeError) as exc:
        raise RunsError(f"{path} is not a run record (not JSON: {exc}): give the one evaluate wrote") from None
    if not isinstance(record, dict) or record.get("job", "evaluate") != "evaluate":
        job = record.get("job") if isinstance(record, dict) else type(record).__name__
        raise RunsError(f"{path} is the record of {job!r}, not of evaluate: give the scores/ folder evaluate wrote")
    return record


def _hash_counts(files: list[str]) -> dict[str | None, int]:
    """settings_hash -> rows of the scores ``files`` (None: rows that carry none)."""
    ds = parquet_dataset(files)
    if "settings_hash" not in ds.schema.names:
        return {None: ds.count_rows()}
    counts: dict[str | None, int] = {}
    for h in ds.to_table(columns=["settings_hash"])["settings_hash"].to_pylist():
        counts[h] = counts.get(h, 0) + 1
    return counts


def read_folder(folder: Folder, files: list[str]) -> RunFolder:
    """``folder``'s record and the settings hash its rows share with it; RunsError when the rows
    carry another hash than the record names (or a hash where it names none, or none where it
    names one): the folder holds another run's rows, or the record is another run's."""
    record = read_record(folder)
    counts = _hash_counts(files)
    recorded = (record.get("evaluation") or {}).get("settings_hash")
    others = {h: n for h, n in counts.items() if h != recorded}
    if others:
        carried = ", ".join(
            f"{n} carry {h[:HASH_CHARS] if h else 'no hash'}"
            for h, n in sorted(others.items(), key=lambda kv: str(kv[0]))
        )
        names = f"settings hash {recorded[:HASH_CHARS]}" if recorded else "no settings hash (an older record)"
        raise RunsError(
            f"{folder / RECORD} names {names}, but of the {sum(counts.values())} rows of {folder} {carried}: the "
            "rows are not that run's; give each evaluate run's scores/ folder as it wrote it, with its own record"
        )
    return RunFolder(folder, tuple(files), record, sum(counts.values()), recorded or settings_hash(record))


def read_runs(specs: list[str]) -> list[Settings]:
    """The settings of the scores ``specs``: one per settings hash, in the order their first run
    folder was given. RunsError for a folder whose record is missing or disagrees with its rows."""
    groups: dict[str, list[RunFolder]] = {}
    for folder, files in run_folders(specs).items():
        run = read_folder(folder, files)
        groups.setdefault(run.hash, []).append(run)
    return [Settings(h, tuple(runs)) for h, runs in groups.items()]


def one_settings(runs: list[Settings]) -> None:
    """RunsError naming each hash (its rows, factuality threshold and run folders) when the scores
    hold more than one: one report of two settings would pool rows that answer different questions."""
    if len(runs) > 1:
        raise RunsError(
            f"the scores hold {len(runs)} settings hashes, which one report does not pool: "
            + "; ".join(r.describe() for r in runs)
            + "; give the scores of one run, or --compare-settings to report each hash on its own"
        )
