"""Calibrated verdicts: per (model, agent, strategy, prompt layout), the decision threshold and a
score-to-probability map fitted on one split of a labelled ground truth and measured on the other,
and the calibration file that carries them to the evaluation.

* Split (:func:`split_of`): by group, never by item. A group is what must not be on both sides
  (the example whose text a factuality item shows; for a ground truth without example ids, the
  text's hash). A group's side is a seeded sha256 draw compared with ``fit_fraction``, so the
  split depends only on the seed, the fraction and the group, not on the order of the rows.
* Threshold (:func:`fit_threshold`): the one with the highest F1 of the pass class on the fit
  split (a claim passes at score >= threshold, the agents' rule), with the two classes weighted
  equally: the F1 the judge would have where half the claims are true. Unweighted, F1 rewards
  passing everything when true items outnumber false ones (the compliance ground truth holds 97
  swapped values beside thousands of true ones, and "pass everything" reaches F1 0.86 there with
  a specificity of 0), and the correction of corpus rates (``udfs.scores.correction``) needs a
  judge that rejects. Every threshold in
  (previous distinct score, best score] gives the same decisions; when several scores tie for the
  best F1 the run of tied scores around the median one is taken, and the threshold is the middle
  of the interval that run spans, so it does not sit on a fitted item's score.
* Probability (:func:`isotonic_fit`): isotonic regression of the label on the score by the
  pool-adjacent-violators algorithm; the map is its knots (each pooled block's lowest and highest
  score, at the block's share of true labels), linear between knots and flat outside them.
* Test metrics (:func:`measure`): P / R / F1 of the pass class at the fitted threshold, AUROC
  (ties count half), the confusion counts (sensitivity and specificity for
  ``udfs.scores.correction``). Figures on the fit split are kept only as sizes: a threshold
  measured on the items it was fitted on is not a result.

The file (JSON, :func:`write` / :func:`load_calibration`): ``{"version": 1, "entries": [...]}``, one
entry per key, each with its threshold, knots, seed, fit fraction, ground-truth hash, fit and test
sizes and test metrics. Every reader reads it through :func:`load_calibration`, which checks it
against one schema (:data:`ENTRY_FIELDS`) and refuses what breaks it with a ConfigError naming the
file, the entry and the field; a path that does not exist is such an error, never a fallback.
Writing replaces the entries of the keys written and keeps the others.
:func:`match` picks the entries of one judge (its verdict models, strategy, questions and
prompts) and says why an agent has none; ``udfs.agents.judge.build_judge`` applies them. Pure apart
from reading and writing that file (through ``udfs.runtime.io.Folder``).
"""

from __future__ import annotations

import datetime as dt
import difflib
import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from udfs.runtime.config import ConfigError
from udfs.runtime.io import Folder
from udfs.runtime.paths import project_file, shown_path
from udfs.scores.confusion import at_threshold, auroc, scored

VERSION = 1
AGENTS = ("factuality", "compliance")
SHARED_PREFIX = "shared_prefix"  # the layout of udfs.agents.verdicts.factuality_messages


def layout_key(questions: str = "plain", layout: str = SHARED_PREFIX) -> str:
    """How an entry names the prompts its scores came from: the layout alone for an agent's plain
    question, else the layout and the name of the agent's questions (``udfs.agents.prompts.
    questions_key``: "shared_prefix:plain+claim+extract-soft-all-near"; "shared_prefix:plain+claim^complies-ranged"
    where factuality questions about the text and about the property are combined): scores of
    other questions, or of the same combined otherwise, are another scale, with a threshold of
    their own. Each agent's key names its own questions, so one compliance entry serves every
    factuality configuration."""
    return layout if questions == "plain" else f"{layout}:{questions}"


def model_key(models: Sequence[str | None], judge: str | None = None) -> str:
    """How a verdict configuration's models are named in the file: one model id, or the voters
    joined by "+" and the judge that breaks their ties."""
    key = "+".join(str(m) for m in models)
    return f"{key} judge:{judge}" if judge and len(models) > 1 else key


def entry_key(model: str, agent: str, strategy: str, layout: str) -> tuple[str, str, str, str]:
    return (model, agent, strategy, layout)


# ---- split --------------------------------------------------------------------------------------
def split_of(group: str, seed: int, fit_fraction: float) -> str:
    """ "fit" or "test" for every item of ``group`` (module docstring)."""
    h = hashlib.sha256(f"{seed}\x1fsplit\x1f{group}".encode()).digest()
    u = int.from_bytes(h[:8], "big") / 2**64
    return "fit" if u < fit_fraction else "test"


# ---- fitting ------------------------------------------------------------------------------------
def fit_threshold(labels: Sequence[bool], scores: Sequence[float | None]) -> tuple[float, float]:
    """(threshold, its class-balanced F1 on these items): the highest F1 of the pass class with
    both classes weighted equally, ties to the middle (module docstring). Items without a score
    are left out; no positive: (0.5, 0.0); no negative: plain F1 (passing everything)."""
    y, s = scored(labels, scores)
    if not y.any():
        return 0.5, 0.0
    # each false item counts n_true / n_false times, so both classes weigh the same
    w_neg = float(y.sum()) / float((~y).sum()) if (~y).any() else 1.0
    distinct = np.unique(s)
    # passes at threshold distinct[i]: every score >= distinct[i]
    f1 = []
    for t in distinct:
        p = s >= t
        tp = float((p & y).sum())
        fp, fn = w_neg * float((p & ~y).sum()), float((~p & y).sum())
        f1.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    f1 = np.array(f1)
    best = float(f1.max())
    tied = np.flatnonzero(np.isclose(f1, best))
    mid = tied[len(tied) // 2]
    lo_i, hi_i = mid, mid
    while lo_i - 1 in tied:
        lo_i -= 1
    while hi_i + 1 in tied:
        hi_i += 1
    below = float(distinct[lo_i - 1]) if lo_i > 0 else max(0.0, float(distinct[0]) - 1e-6)
    threshold = (below + float(distinct[hi_i])) / 2
    return threshold, best


def isotonic_fit(scores: Sequence[float | None], labels: Sequence[bool]) -> dict[str, list[float]]:
    """The knots of the isotonic (non-decreasing) regression of label on score, by the
    pool-adjacent-violators algorithm: ``{"x": [...], "y": [...]}`` (module docstring)."""
    y, s = scored(labels, scores)
    if not len(s):
        return {"x": [], "y": []}
    order = np.argsort(s, kind="stable")
    s, y = s[order], y[order].astype(float)
    # one block per distinct score to start (equal scores must get one value)
    blocks: list[list[float]] = []  # [sum of labels, count, lowest score, highest score]
    for x in np.unique(s):
        m = s == x
        blocks.append([float(y[m].sum()), float(m.sum()), float(x), float(x)])
    merged: list[list[float]] = []
    for b in blocks:
        merged.append(b)
        while len(merged) > 1 and merged[-2][0] / merged[-2][1] > merged[-1][0] / merged[-1][1]:
            top = merged.pop()
            prev = merged[-1]
            prev[0] += top[0]
            prev[1] += top[1]
            prev[3] = top[3]
    xs, ys = [], []
    for total, count, lo, hi in merged:
        for x in (lo,) if lo == hi else (lo, hi):
            xs.append(round(x, 6))
            ys.append(round(total / count, 6))
    return {"x": xs, "y": ys}


def apply_map(knots: dict[str, list[float]] | None, score: float | None) -> float | None:
    """The calibrated probability of a score (None for no score or no map)."""
    if score is None or not knots or not knots.get("x"):
        return None
    return float(np.interp(float(score), knots["x"], knots["y"]))


def measure(labels: Sequence[bool], scores: Sequence[float | None], threshold: float) -> dict[str, Any]:
    """The test-split figures at ``threshold``: sizes, confusion counts (pass class positive),
    precision, recall, F1, sensitivity, specificity, balanced accuracy, AUROC
    (``udfs.scores.confusion``); items without a score counted apart."""
    c = at_threshold(labels, scores, threshold)
    return {
        "n": c.n,
        "positives": c.tp + c.fn,
        "negatives": c.tn + c.fp,
        "unanswered": c.unanswered,
        "tp": c.tp,
        "fp": c.fp,
        "tn": c.tn,
        "fn": c.fn,
        "precision": c.precision,
        "recall": c.recall,
        "f1": c.f1,
        "sensitivity": c.sensitivity,
        "specificity": c.specificity,
        "balanced_accuracy": c.balanced_accuracy,
        "auroc": auroc(labels, scores),
    }


@dataclass
class Item:
    """One judged ground-truth item: its group (for the split), label, score and the tasks it
    belongs to (a factuality positive belongs to both factuality tasks)."""

    group: str
    label: bool
    score: float | None
    tasks: tuple[str, ...] = ()


def fit_entry(
    items: Sequence[Item],
    *,
    model: str,
    agent: str,
    strategy: str,
    layout: str,
    seed: int,
    fit_fraction: float,
    ground_truth_sha256: str,
    tasks: Iterable[str] = (),
    prompts_sha256: str | None = None,
) -> dict[str, Any]:
    """One calibration entry: threshold and map fitted on the fit split of ``items``, figures on the
    test split (the agent's, and per task for the ``tasks`` named). ``prompts_sha256``: the
    fingerprint of the prompts the scores came from (``udfs.agents.verdicts.prompt_fingerprint``)."""
    fit = [it for it in items if split_of(it.group, seed, fit_fraction) == "fit"]
    test = [it for it in items if split_of(it.group, seed, fit_fraction) == "test"]
    threshold, _ = fit_threshold([i.label for i in fit], [i.score for i in fit])
    knots = isotonic_fit([i.score for i in fit], [i.label for i in fit])
    per_task = {}
    for t in tasks:
        sub = [i for i in test if t in i.tasks]
        per_task[t] = measure([i.label for i in sub], [i.score for i in sub], threshold)
    return {
        "model": model,
        "agent": agent,
        "strategy": strategy,
        "layout": layout,
        "threshold": round(threshold, 6),
        "knots": knots,
        "seed": seed,
        "fit_fraction": fit_fraction,
        "ground_truth_sha256": ground_truth_sha256,
        "prompts_sha256": prompts_sha256,
        "fit": {"n": len(fit), "groups": len({i.group for i in fit}), "positives": sum(i.label for i in fit)},
        "test": {
            **measure([i.label for i in test], [i.score for i in test], threshold),
            "groups": len({i.group for i in test}),
            "tasks": per_task,
        },
        "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }


# ---- the file -----------------------------------------------------------------------------------
FIX = (
    'fix the file, or fit the entry again (jobs/agents_bench.py calibrate --install); --calibration "" runs without one'
)
FIX_FORMAT = 'write it in the format of conf/calibration.json, or give --calibration "" to run without one'
REQUIRED = ("model", "agent", "strategy", "layout", "threshold")
FIT_COUNTS = ("n", "groups", "positives")
COUNTS = ("n", "positives", "negatives", "unanswered", "tp", "fp", "tn", "fn", "groups")
RATES = ("precision", "recall", "f1", "sensitivity", "specificity", "balanced_accuracy", "auroc")
# one model id: no space (an entry's id joins its parts with spaces) and no "+" (it joins voters)
_MODEL_KEY = re.compile(r"[^\s+]+(?:\+[^\s+]+)*(?: judge:[^\s+]+)?")


@dataclass(frozen=True)
class Calibration:
    """A calibration file as read and checked (:func:`load_calibration`): its entries, each a dict
    with the fields :func:`fit_entry` writes. ``path``: the file ("" none)."""

    path: str = ""
    entries: tuple[dict[str, Any], ...] = ()
    version: int = VERSION

    def doc(self) -> dict[str, Any]:
        return {"version": self.version, "entries": list(self.entries)}


class _Constant:
    """A JSON ``NaN``, ``Infinity`` or ``-Infinity`` token (which Python's json reads as floats
    by default): kept as itself, so the field's check refuses it by name."""

    def __init__(self, token: str):
        self.token = token

    def __repr__(self) -> str:
        return self.token


class _Bad(Exception):
    """One field of the file that breaks the schema: what is wrong with it (the caller says where)."""


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else repr(value)


def _number(value: Any) -> bool:
    """A finite JSON number: not a bool, a string, NaN or an infinity."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _unit(value: Any, *, null: bool = False) -> Any:
    if (null and value is None) or (_number(value) and 0.0 <= value <= 1.0):
        return value
    raise _Bad(f"must be a finite number in [0, 1]{' or null' if null else ''}, not {_shown(value)}")


def _count(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise _Bad(f"must be a count (an integer >= 0), not {_shown(value)}")


def _text(value: Any, *, null: bool = False) -> Any:
    if (null and value is None) or (isinstance(value, str) and value.strip()):
        return value
    raise _Bad(f"must be a non-empty string{' or null' if null else ''}, not {_shown(value)}")


def _keys(obj: Any, known: Sequence[str], what: str) -> dict[str, Any]:
    """``obj`` as an object whose keys are all ``known``; an unknown one is named with the nearest
    known key."""
    if not isinstance(obj, dict):
        raise _Bad(f"{what or 'it'} must be a JSON object, not {_shown(obj)}")
    for k in obj:
        if k not in known:
            near = difflib.get_close_matches(k, known, n=1)
            hint = f"did you mean {near[0]!r}?" if near else f"known: {', '.join(known)}"
            raise _Bad(f"{what + ': ' if what else ''}unknown key {k!r} ({hint})")
    return obj


def _model(value: Any) -> str:
    """An entry's model: the ids the service answered as (any id a service may serve, so its form
    is checked, not a list of names; ``udfs.llm.model_files`` lists only the embedded models):
    one id, or voters joined by "+" and " judge:" the one breaking ties (:func:`model_key`)."""
    if not isinstance(value, str) or not _MODEL_KEY.fullmatch(value):
        raise _Bad(
            f'must be a model id without spaces, or several joined by "+" and " judge:<id>", not {_shown(value)}'
        )
    if " judge:" in value and "+" not in value:
        raise _Bad(f"names a judge breaking ties for one model only: {value!r}")
    return value


def _choice(value: Any, known: Sequence[str]) -> str:
    if value in known and isinstance(value, str):
        return value
    near = difflib.get_close_matches(str(value), known, n=1) if isinstance(value, str) else []
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    raise _Bad(f"must be one of {', '.join(known)}, not {_shown(value)}{hint}")


def _layout(value: Any, agent: str) -> str:
    """An entry's layout: :func:`layout_key` of known questions of ``agent`` (the registry,
    ``udfs.agents.questions``) named as ``questions_key`` names them, with their gate."""
    from udfs.agents.questions import REGISTRY, check_questions, questions_key

    head, _, key = _text(value).partition(":")
    if head != SHARED_PREFIX:
        raise _Bad(f'must be "{SHARED_PREFIX}" or "{SHARED_PREFIX}:<questions>", not {_shown(value)}')
    names, at, gate_text = (key or "plain").partition("@")
    known = list(REGISTRY[agent])
    for q in names.replace("^", "+").split("+"):
        if q not in known:
            near = difflib.get_close_matches(q, known, n=1)
            hint = f"did you mean {near[0]!r}?" if near else f"known: {', '.join(known)}"
            raise _Bad(f"names a question kind {q!r} that {agent} does not ask ({hint})")
    try:
        gate = float(gate_text) if at else 0.0
        questions = check_questions(names.replace("^", "+").split("+"), agent)
    except ValueError as exc:
        raise _Bad(f"{value!r}: {exc}") from None
    if not (math.isfinite(gate) and 0.0 <= gate <= 1.0):
        raise _Bad(f"{value!r}: its gate must be a finite number in [0, 1]")
    canonical = layout_key(questions_key(questions, agent, gate))
    if canonical != value:
        raise _Bad(f"{value!r} is not how these questions are named: {canonical!r}")
    return value


def _knots(value: Any) -> dict[str, list[float]]:
    """The map: x and y of equal length, finite, x non-decreasing (``np.interp`` needs it), y
    probabilities."""
    knots = _keys(value, ("x", "y"), "knots")
    x, y = knots.get("x", []), knots.get("y", [])
    if not isinstance(x, list) or not isinstance(y, list) or len(x) != len(y):
        raise _Bad("knots: x and y must be lists of the same length")
    for axis, values in (("x", x), ("y", y)):
        for i, v in enumerate(values):
            if not _number(v) or (axis == "y" and not 0.0 <= v <= 1.0):
                want = "a finite number in [0, 1]" if axis == "y" else "a finite number"
                raise _Bad(f"knots {axis}[{i}] must be {want}, not {_shown(v)}")
    if any(b < a for a, b in zip(x, x[1:])):
        raise _Bad("knots x must not decrease")
    return knots


def _metrics(value: Any, what: str, *, tasks: bool) -> dict[str, Any]:
    """Test-split figures (:func:`measure`): counts, rates in [0, 1] (null where undefined) and,
    for the agent's figures, the same per task."""
    m = _keys(value, (*COUNTS, *RATES, *(("tasks",) if tasks else ())), what)
    for k, v in m.items():
        try:
            if k == "tasks":
                for task, figures in _keys(v, list(v) if isinstance(v, dict) else (), f"{what} tasks").items():
                    _metrics(figures, f"{what} tasks {task}", tasks=False)
            else:
                _count(v) if k in COUNTS else _unit(v, null=True)
        except _Bad as exc:
            raise _Bad(str(exc) if k == "tasks" else f"{what} {k} {exc}") from None
    return m


def _counts(value: Any, known: Sequence[str], what: str) -> dict[str, int]:
    """What an entry was fitted on: counts of known names."""
    counts = _keys(value, known, what)
    for k, v in counts.items():
        try:
            _count(v)
        except _Bad as exc:
            raise _Bad(f"{what} {k} {exc}") from None
    return counts


ENTRY_FIELDS: dict[str, Any] = {
    "model": _model,
    "agent": lambda v: _choice(v, AGENTS),
    "strategy": lambda v: _choice(v, _strategies()),
    "layout": None,  # checked against the entry's agent (:func:`_layout`)
    "threshold": _unit,
    "knots": _knots,
    "seed": lambda v: _count(v),
    "fit_fraction": _unit,
    "ground_truth_sha256": _text,
    "prompts_sha256": lambda v: _text(v, null=True),
    "fit": lambda v: _counts(v, FIT_COUNTS, "fit"),
    "test": lambda v: _metrics(v, "test", tasks=True),
    "created_at": _text,
}


def _strategies() -> tuple[str, ...]:
    from udfs.agents.prompts import STRATEGIES

    return STRATEGIES


def check_entry(e: Any) -> dict[str, Any]:
    """One entry against the schema (:data:`ENTRY_FIELDS`), or a ConfigError-to-be (``_Bad``)
    saying which field is wrong and how."""
    _keys(e, list(ENTRY_FIELDS), "")
    missing = [k for k in REQUIRED if k not in e]
    if missing:
        raise _Bad(f"lacks {', '.join(missing)}")
    for k in (k for k in ENTRY_FIELDS if k in e):  # the agent before the layout named for it
        v = e[k]
        try:
            _layout(v, e["agent"]) if k == "layout" else ENTRY_FIELDS[k](v)
        except _Bad as exc:
            raise _Bad(f"{k} {exc}" if not str(exc).startswith(k) else str(exc)) from None
    return e


def _entry_name(k: int, e: Any) -> str:
    try:
        return f"entry {k} ({entry_id(e)})"
    except (KeyError, TypeError):
        return f"entry {k}"


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for k, _ in pairs:
        if k in seen:
            raise _Bad(f"key {k!r} is given twice in one object")
        seen.add(k)
    return dict(pairs)


def parse_calibration(text: str, path: str) -> Calibration:
    """The calibration file whose text is ``text`` (read from ``path``), checked against the
    schema: ``{"version": 1, "entries": [...]}``, every entry's fields known and of their type,
    its threshold a finite number in [0, 1] (JSON's NaN and Infinity tokens are refused, a string
    is not a number), its knots and figures finite, its agent, strategy and question kinds the
    registry's and its model an id's form (:func:`check_entry`); no two entries with one key.
    Anything else is a ConfigError naming the file, the entry, the field and what to do."""
    shown = shown_path(path)
    try:
        doc = json.loads(text, parse_constant=_Constant, object_pairs_hook=_pairs)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"calibration file {shown} is not JSON ({exc.msg}: line {exc.lineno} column {exc.colno}): {FIX_FORMAT}"
        ) from None
    except _Bad as exc:
        raise ConfigError(f"calibration file {shown}: {exc}: {FIX}") from None
    try:
        _keys(doc, ("version", "entries"), "the file")
        if doc.get("version", VERSION) != VERSION or isinstance(doc.get("version"), bool):
            raise _Bad(f"version must be {VERSION}, not {_shown(doc.get('version'))}")
        if not isinstance(doc.get("entries"), list):
            raise _Bad(f"entries must be a list, not {_shown(doc.get('entries'))}")
    except _Bad as exc:
        raise ConfigError(f"calibration file {shown}: {exc}: {FIX}") from None
    first: dict[tuple[str, ...], int] = {}
    for k, e in enumerate(doc["entries"], 1):
        try:
            check_entry(e)
        except _Bad as exc:
            raise ConfigError(f"calibration file {shown}, {_entry_name(k, e)}: {exc}: {FIX}") from None
        key = (*entry_key(e["model"], e["agent"], e["strategy"], e["layout"]),)
        if key in first:
            raise ConfigError(
                f"calibration file {shown}, {_entry_name(k, e)}: the same key as entry {first[key]}: keep one of them"
            )
        first[key] = k
    return Calibration(path, tuple(doc["entries"]), VERSION)


def load_calibration(path: str, *, missing_ok: bool = False) -> Calibration:
    """The calibration file at ``path`` (a local path or URL, as given), read and checked
    (:func:`parse_calibration`): the one way every reader reads it. A path that does not exist is a
    ConfigError naming it (never a fallback: ``[judge] calibration = ""`` is how a run goes
    without one), unless ``missing_ok`` (a file about to be written): no entry. A directory, a
    file that cannot be read or is not UTF-8 is a ConfigError naming it."""
    shown = shown_path(path)
    f = Folder.of(path)
    try:
        if f.isdir():
            raise ConfigError(f'calibration file {shown} is a directory: name the JSON file in it, or "" for none')
        if not f.isfile():
            if missing_ok:
                return Calibration(path)
            raise ConfigError(
                f"calibration file {shown} not found: name an existing file in --calibration "
                '([judge] calibration), or "" to run without one'
            )
        text = f.read_text()
    except OSError as exc:
        raise ConfigError(f"calibration file {shown} cannot be read ({exc.strerror or exc}): check the path") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"calibration file {shown} is not UTF-8 text ({exc.reason}): {FIX_FORMAT}") from None
    return parse_calibration(text, path)


def check_calibration(setting: str) -> Calibration | None:
    """The calibration file a ``[judge] calibration`` setting (or ``--calibration``) names,
    resolved as :func:`udfs.agents.judge.build_judge` resolves it (from the project root), read
    and checked: None for "" (no calibration). For a job's preflight, so a bad file is refused
    before any model request; raises ConfigError."""
    return load_calibration(project_file(setting)) if setting else None


def read(path: str) -> dict[str, Any]:
    """The calibration file at ``path`` as ``{"version", "entries"}`` (:func:`load_calibration`)."""
    return load_calibration(path).doc()


def sha256(path: str) -> str | None:
    f = Folder.of(path)
    if not f.parent.isfile(f.name):
        return None
    return hashlib.sha256(f.parent.read_bytes(f.name)).hexdigest()


def write(path: str, entries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Add ``entries`` to the file at ``path`` (made where missing), replacing those with the
    same key; returns the file. The file there and the result are checked
    (:func:`parse_calibration`): a file the evaluation would refuse is not written."""
    doc = load_calibration(path, missing_ok=True).doc()
    new = {entry_key(e["model"], e["agent"], e["strategy"], e["layout"]): e for e in entries}
    kept = [e for e in doc["entries"] if entry_key(e["model"], e["agent"], e["strategy"], e["layout"]) not in new]
    doc = {
        "version": VERSION,
        "entries": sorted(
            [*kept, *new.values()], key=lambda e: entry_key(e["model"], e["agent"], e["strategy"], e["layout"])
        ),
    }
    text = json.dumps(doc, indent=1, sort_keys=True) + "\n"
    parse_calibration(text, path)
    f = Folder.of(path)
    f.parent.write_text(f.name, text)
    return doc


def entry_id(e: dict[str, Any]) -> str:
    """How an entry is named in run records: its key's parts, "model agent strategy layout"."""
    return " ".join(entry_key(e["model"], e["agent"], e["strategy"], e["layout"]))


def summary(e: dict[str, Any]) -> dict[str, Any]:
    """What a run record keeps of a taken entry beside the threshold it gave: its id, seed, ground
    truth and the test-split counts (the corrected rates use them)."""
    return {
        "id": entry_id(e),
        "seed": e.get("seed"),
        "ground_truth_sha256": e.get("ground_truth_sha256"),
        "test": {
            k: (e.get("test") or {}).get(k) for k in ("n", "tp", "fn", "tn", "fp", "precision", "recall", "f1", "auroc")
        },
    }


@dataclass
class Match:
    """The entries of a calibration file for one judge: per agent the entry whose model, strategy,
    layout and prompts are the judge's (``entries``), and for an agent without one, why
    (``why``). ``path``: the file read ("" none)."""

    path: str = ""
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    why: dict[str, str] = field(default_factory=dict)


def match(
    path: str,
    models: Sequence[str | None],
    strategy: str,
    layouts: dict[str, str],
    prompts: dict[str, str],
    judge: str | None = None,
) -> Match:
    """The entries of the file at ``path`` for these verdict models (``judge`` breaking their
    ties), strategy, and per agent its layout (:func:`layout_key` of its questions) and prompts'
    fingerprint. A model left to the service (None) matches nothing: its id is not known here. An
    entry fitted on other prompts is not taken. ``path`` "": no file configured; a path that is not
    a calibration file (:func:`load_calibration`) is a ConfigError, never a fallback."""
    out = Match(path=path)

    def none(why: str) -> Match:
        out.why = {a: why for a in AGENTS}
        return out

    if not path:
        return none("no calibration file configured")
    calibration = load_calibration(path)  # a path that is not a calibration file is an error, never a fallback
    if not models or any(m is None for m in models):
        return none(
            "the verdict model is the service's default, whose id this run does not know "
            "(name it in verdict_models to use the calibration)"
        )
    key = model_key(list(models), judge)
    for agent in AGENTS:
        want = (key, agent, strategy, layouts[agent])
        found = [e for e in calibration.entries if (e["model"], e["agent"], e["strategy"], e["layout"]) == want]
        fresh = [e for e in found if not e.get("prompts_sha256") or e["prompts_sha256"] == prompts.get(agent)]
        if fresh:
            out.entries[agent] = fresh[0]
        else:
            out.why[agent] = (
                f"entry {' '.join(want)} fitted on other prompts than these"
                if found
                else f"no entry {' '.join(want)} in {shown_path(path)}"
            )
    return out
