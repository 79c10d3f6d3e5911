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

The file (JSON, :func:`write` / :func:`read`): ``{"version": 1, "entries": [...]}``, one entry per
key, each with its threshold, knots, seed, fit fraction, ground-truth hash, fit and test sizes and
test metrics. Writing replaces the entries of the keys written and keeps the others.
:func:`match` picks the entries of one judge (its verdict models, strategy, questions and
prompts) and says why an agent has none; ``udfs.agents.judge.build_judge`` applies them. Pure apart
from reading and writing that file (through ``udfs.runtime.io.Folder``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from udfs.runtime.io import Folder
from udfs.runtime.paths import shown_path

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
def _scored(labels: Sequence[bool], scores: Sequence[float | None]) -> tuple[np.ndarray, np.ndarray]:
    pairs = [(bool(y), float(s)) for y, s in zip(labels, scores) if s is not None and s == s]
    return np.array([y for y, _ in pairs], dtype=bool), np.array([s for _, s in pairs], dtype=float)


def _f1(tp: int, fp: int, fn: int) -> float:
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def fit_threshold(labels: Sequence[bool], scores: Sequence[float | None]) -> tuple[float, float]:
    """(threshold, its class-balanced F1 on these items): the highest F1 of the pass class with
    both classes weighted equally, ties to the middle (module docstring). Items without a score
    are left out; no positive: (0.5, 0.0); no negative: plain F1 (passing everything)."""
    y, s = _scored(labels, scores)
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
    y, s = _scored(labels, scores)
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


def auroc(labels: Sequence[bool], scores: Sequence[float | None]) -> float | None:
    """P(a random true item scores above a random false one), ties half; None without both."""
    y, s = _scored(labels, scores)
    pos, neg = s[y], s[~y]
    if not len(pos) or not len(neg):
        return None
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(wins / (len(pos) * len(neg)))


def measure(labels: Sequence[bool], scores: Sequence[float | None], threshold: float) -> dict[str, Any]:
    """The test-split figures at ``threshold``: sizes, confusion counts (pass class positive),
    precision, recall, F1, sensitivity, specificity, AUROC; items without a score counted apart."""
    y, s = _scored(labels, scores)
    p = s >= threshold
    tp, fp = int((p & y).sum()), int((p & ~y).sum())
    fn, tn = int((~p & y).sum()), int((~p & ~y).sum())
    return {
        "n": int(len(y)),
        "positives": int(y.sum()),
        "negatives": int((~y).sum()),
        "unanswered": len(labels) - int(len(y)),
        "tp": tp,
        "fp": fp,
        "tn": tn,
        "fn": fn,
        "precision": tp / (tp + fp) if tp + fp else 0.0,
        "recall": tp / (tp + fn) if tp + fn else 0.0,
        "f1": _f1(tp, fp, fn),
        "sensitivity": tp / (tp + fn) if tp + fn else None,
        "specificity": tn / (tn + fp) if tn + fp else None,
        "balanced_accuracy": (tp / (tp + fn) + tn / (tn + fp)) / 2 if tp + fn and tn + fp else None,
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
def read(path: str) -> dict[str, Any]:
    """The calibration file at ``path`` (``{"version", "entries"}``); a missing file is no entry."""
    f = Folder.of(path)
    if not f.parent.isfile(f.name):
        return {"version": VERSION, "entries": []}
    doc = json.loads(f.parent.read_text(f.name))
    if not isinstance(doc, dict) or not isinstance(doc.get("entries"), list):
        raise ValueError(f"{path}: not a calibration file (no entries list)")
    return doc


def sha256(path: str) -> str | None:
    f = Folder.of(path)
    if not f.parent.isfile(f.name):
        return None
    return hashlib.sha256(f.parent.read_bytes(f.name)).hexdigest()


def write(path: str, entries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Add ``entries`` to the file at ``path``, replacing those with the same key; returns the file."""
    doc = read(path)
    new = {entry_key(e["model"], e["agent"], e["strategy"], e["layout"]): e for e in entries}
    kept = [e for e in doc["entries"] if entry_key(e["model"], e["agent"], e["strategy"], e["layout"]) not in new]
    doc = {
        "version": VERSION,
        "entries": sorted(
            [*kept, *new.values()], key=lambda e: entry_key(e["model"], e["agent"], e["strategy"], e["layout"])
        ),
    }
    f = Folder.of(path)
    f.parent.write_text(f.name, json.dumps(doc, indent=1, sort_keys=True) + "\n")
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
        "test": {k: e["test"].get(k) for k in ("n", "tp", "fn", "tn", "fp", "precision", "recall", "f1", "auroc")},
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
    entry fitted on other prompts is not taken. ``path`` "": no file configured."""
    out = Match(path=path)

    def none(why: str) -> Match:
        out.why = {a: why for a in AGENTS}
        return out

    if not path:
        return none("no calibration file configured")
    if sha256(path) is None:
        return none(f"calibration file {shown_path(path)} not found")
    if not models or any(m is None for m in models):
        return none(
            "the verdict model is the service's default, whose id this run does not know "
            "(name it in verdict_models to use the calibration)"
        )
    key = model_key(list(models), judge)
    for agent in AGENTS:
        want = (key, agent, strategy, layouts[agent])
        found = [e for e in read(path)["entries"] if (e["model"], e["agent"], e["strategy"], e["layout"]) == want]
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
