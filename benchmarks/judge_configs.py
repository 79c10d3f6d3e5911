"""Verdict configurations compared on the same ground-truth items, with every threshold and
combination fitted on one split and reported on the other.

    .venv/bin/python benchmarks/judge_configs.py --ground-truth OUT/agents_bench/ground_truth \\
        [--limit 40] [--configs direct defined paper] [--work OUT/judge_configs] [--base-url URL]

Items: ``--limit`` per task (intrinsic, extrinsic, compliance; half positive), the same seeded
picks as ``jobs/agents_bench.py run`` (``udfs.bench.groundtruth.stratified_subset``). Split: by
the example whose text the judge reads (``text_example_id``; compliance items by their example),
a seeded hash sends each example to the fit or the test split (``--fit-fraction``), so no text is
in both.

Model configurations (each asks the model; answers are appended to ``--work/<config>.jsonl`` as
they come, so a killed run resumes where it stopped and the latencies measured on the first pass
are kept; the request cache answers repeats):

* ``direct``: today's default, the shared-prefix layout (instructions, page text, then the
  question; ``udfs.agents.verdicts.factuality_messages``) and the compliance question;
* ``paper``: the paper's layout (the question before the text), factuality only;
* ``defined``: the shared-prefix layout with the property's schema.org definition in the
  question (``udfs.agents.prompts.factuality_question(..., "defined")``), factuality only;
* ``guided``: the shared-prefix layout with the ``guided`` strategy's verification steps in the
  system prompt (FactCheck's GIV-Z), and the compliance question under the same steps;
* ``fewshot``: ``guided`` plus the ``fewshot`` strategy's solved examples (FactCheck's GIV-F),
  for both agents;
* ``says``, ``claim``: the shared-prefix layout with a reworded factuality question
  (``conf/prompts/factuality_question_says.txt``, ``..._claim.txt``);
* ``direct-small``: ``direct`` asked of ``--small-model`` (the 0.5B), factuality only;
* ``extract``: the model is asked for the property's value in the text (its schema.org
  definition given, the claim's value not shown: ``conf/prompts/extract_{system,question}.txt``,
  up to ``udfs.agents.verdicts.EXTRACT_TOKENS`` tokens); the score is the word F1 of its answer against the claim's
  value (``udfs.agents.evidence.answer_match``), factuality only;
* ``complies``: the compliance question about a factuality item's claim (the property's schema.org
  definition, no page text), factuality only; ``complies-ranged`` the same with the property's
  expected types (the compliance question ``ranged``);
* ``excerpt``: the ``claim`` question asked of the stretches of the page text around the value
  only (``udfs.agents.evidence.excerpt``), factuality only; it does not apply to an item whose
  text does not state the value (logged as ``not_asked``; a mean leaves it out, as the agent does);
* ``where``, ``exemplified``: the shared-prefix layout with the factuality question warning that a
  page may state a value for another property (``conf/prompts/factuality_question_where.txt``), or
  showing values of the property from schema.org's examples (``udfs.agents.exemplars``: never the
  claim's value, never one from the example whose text is judged), factuality only;
* ``names``: the model names the property the text gives the claim's value as (the property not
  shown, ``conf/prompts/names_{system,question}.txt``); the score is its match with the claim's
  property (``udfs.agents.evidence.property_match``), factuality only;
* compliance only: ``fits`` (the compliance question reworded), ``c-exemplified`` (with values of
  the property from schema.org's examples), ``ranged`` (with the property's expected types,
  schema.org's ``rangeIncludes``) and ``property-of`` (the model names the entity type's property
  the value belongs to, neither the property nor any text shown, matched as ``names``).

Configurations made of those answers (no call of their own; asking for one asks its parts):

* ``phrasings``: the mean of ``direct``, ``says`` and ``claim`` (self-consistency over prompts);
* any ``+``-joined list of model configurations and ``phrasings`` (``parts_of``): the mean of its
  parts' scores, e.g. ``phrasings+extract+complies`` (``direct``, ``says``, ``claim``,
  ``extract``, ``complies``) or, of compliance scores, ``direct+ranged``;
* ``consensus``: ``udfs.agents.verdicts.consensus``'s rule with the 1.5B and the 0.5B voting at
  0.5 and the 1.5B judging a split vote (score 1 or 0 when they agree, the 1.5B's on a split);
* ``mean-1.5b-0.5b``: the mean of the two models' scores.

Configurations of one model are asked one request at a time, item by item, items of one text
together, and those sharing the system prompt and page text (``SHARED_PREFIX``) in turn within an
item, so the engine's prefix cache serves the text once for all of them; the two models' requests
go out concurrently (one stream each).

Combinations (no model call: the base configuration's scores and ``udfs.agents.evidence``):

* ``<base>+stated``: a value the text states (normalised, whole words) scores at least 0.5;
* ``<base>+logistic``: a logistic model over the score's logit and the evidence features, fitted
  on the fit split;
* ``evidence only``: the same logistic model without the score;
* ``<combination>+stacked``: a logistic model over the logits of the combination's parts' scores
  (a weighted mean rather than the plain one), fitted on the fit split.

Reported per configuration and task on the test split: P/R/F1 at 0.5 and at the threshold fitted
on the fit split (best F1, the classes weighted equally, over the agent's fit items of all its
tasks together, as ``calibrate`` fits it: one factuality threshold for intrinsic and extrinsic,
as the evaluation applies one), AUROC, seconds per verdict (mean after dropping IQR outliers,
fresh answers only) and prompt tokens per verdict. Positives of this ground truth are values
their text states verbatim (build's default) and extrinsic negatives values it does not state, so
"stated" separates the extrinsic task by construction; intrinsic negatives are stated too (a
value moved from another property of the same markup), which is where evidence has to look at
where a value is (``near``).
"""
from __future__ import annotations

import argparse
import asyncio
import functools
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from udfs.agents import evidence as E  # noqa: E402
from udfs.agents import prompts as PR  # noqa: E402
from udfs.agents import verdicts as V  # noqa: E402
from udfs.bench import metrics as bm  # noqa: E402
from udfs.bench.groundtruth import TASKS, rank_key, stratified_subset  # noqa: E402
from udfs.scores import calibration as cal  # noqa: E402

MODEL_CONFIGS = ("direct", "paper", "defined", "guided", "fewshot", "says", "claim", "direct-small", "extract",
                 "complies", "complies-ranged", "excerpt", "where", "names", "fits", "property-of", "exemplified",
                 "c-exemplified", "ranged", "typed", "claim-typed")
# Configurations made of others' answers (no call of their own): their parts are asked as configs.
COMBOS = {"phrasings": ("direct", "says", "claim"), "consensus": ("direct", "direct-small"),
          "mean-1.5b-0.5b": ("direct", "direct-small")}


def parts_of(config: str) -> tuple[str, ...]:
    """The model configurations a configuration asks: a combination of ``COMBOS``, any other
    ``+``-joined list of model configurations and ``phrasings`` (a mean of all their scores), or
    the configuration itself. An unknown part, or ``consensus`` (a vote) inside a mean, is a
    ValueError (argparse shows it)."""
    if config in COMBOS:
        return COMBOS[config]
    names = config.split("+")
    if "consensus" in names:
        raise ValueError(f"{config}: consensus is a vote, not a part of a mean")
    parts = tuple(dict.fromkeys(q for p in names for q in COMBOS.get(p, (p,))))
    bad = [p for p in parts if p not in MODEL_CONFIGS]
    if bad or not parts:
        raise ValueError(f"{config}: {', '.join(bad) or 'nothing'} is not one of {', '.join(MODEL_CONFIGS)}")
    return parts


def config_name(config: str) -> str:
    """``--configs``' check: the configuration, or argparse's error naming the unknown part."""
    try:
        parts_of(config)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return config


# The configurations that ask compliance too (the others reword or place the factuality question),
# and those that ask compliance only.
COMPLIANCE_ONLY = ("fits", "property-of", "c-exemplified", "ranged")
COMPLIANCE_CONFIGS = ("direct", "guided", "fewshot", *COMPLIANCE_ONLY)
# Configurations answered in words, scored as the agent scores them (``udfs.agents.verdicts.GENERATED``).
GENERATED = ("extract", "names", "property-of")
# Configurations whose prompts begin with the same system prompt and page text: asked item by item
# together, so the engine's prefix cache serves the text once for all of them.
SHARED_PREFIX = ("direct", "says", "claim", "defined", "where", "exemplified", "typed", "claim-typed")


def asks(config: str, agent: str) -> bool:
    """Whether a model configuration (or every part of a combination) asks ``agent``'s items."""
    return all((agent == "compliance" and p in COMPLIANCE_CONFIGS) or (agent == "factuality" and p not in COMPLIANCE_ONLY)
               for p in parts_of(config))


def load_items(folder: Path, limit: int, seed: int, tasks) -> dict[str, list[dict]]:
    import pyarrow.parquet as pq

    tables = {a: pq.read_table(folder / f"{a}.parquet").to_pylist() for a in ("factuality", "compliance")}
    return {t: stratified_subset(tables[TASKS[t][0]], ("positive", TASKS[t][1]), limit, seed) for t in tasks}


SWAP = {"on": False}  # --swap: the two halves trade places (two-fold cross-validation at 0.5)


def split_of(item: dict, seed: int, fit_fraction: float) -> str:
    """``calibrate``'s split (``udfs.scores.calibration.split_of``), the halves traded by ``--swap``."""
    group = item.get("text_example_id") or item.get("example_id") or item["item_id"]
    first = cal.split_of(str(group), seed, fit_fraction) == "fit"
    return "fit" if first != SWAP["on"] else "test"


def messages(config: str, agent: str, it: dict) -> list[dict]:
    strategy = config if config in ("guided", "fewshot") else "direct"
    claim = V.Claim(it["property"], it["value"], it["entity_type"], it.get("value_type"), tuple(it.get("siblings") or ()))
    if agent == "compliance":
        definition = it.get("definition") or PR.load_vocabulary().comments.get(it["property"], "")
        if config == "property-of":
            return V.property_of_messages(claim)
        question = {"fits": "fits", "c-exemplified": "exemplified", "ranged": "ranged"}.get(config, "plain")
        return V.compliance_messages(claim, definition, strategy, question=question, text=it.get("text"))
    if config == "paper":
        return V.paper_factuality_messages(it["text"], claim, strategy)
    if config in ("extract", "complies", "complies-ranged", "excerpt", "names", "exemplified"):
        return V.factuality_messages(it["text"], claim, "direct", None, config)
    variant = config if config in ("defined", "says", "claim", "where", "typed", "claim-typed") else "plain"
    question = PR.factuality_question(it["entity_type"], it["property"], it["value"], variant,
                                      value_type=it.get("value_type"))
    return [{"role": "system", "content": PR.system_prompt("factuality", strategy, None)},
            {"role": "user", "content": f"{PR.fence(it['text'])}\n\n{question}"}]


def answered(log: Path) -> set[tuple[str, str]]:
    if not log.exists():
        return set()
    return {(r["agent"], r["item_id"]) for r in map(json.loads, log.read_text().splitlines())}


async def ask(client, configs: list[str], todo: list[tuple[str, dict]], work: Path, deadline: float) -> int:
    """Ask each (agent, item) not yet in ``work/<config>.jsonl``, one request at a time, item by
    item and within an item config by config (configs sharing a prompt prefix then reuse the
    engine's cache of it); append each answer to its config's log. Compliance is asked by
    ``COMPLIANCE_CONFIGS`` only."""
    done = {c: answered(work / f"{c}.jsonl") for c in configs}
    fhs = {c: (work / f"{c}.jsonl").open("a") for c in configs}
    asked = 0
    try:
        for agent, it in todo:
            for config in configs:
                if (agent, it["item_id"]) in done[config] or not asks(config, agent):
                    continue
                if time.monotonic() > deadline:
                    return asked
                m = messages(config, agent, it)
                if m is None:  # the question does not apply (excerpt: the text does not state the value)
                    fhs[config].write(json.dumps({"agent": agent, "item_id": it["item_id"], "score": None,
                                                  "not_asked": True, "error": None, "latency_s": 0.0,
                                                  "from_cache": False, "prompt_tokens": 0,
                                                  "cached_prompt_tokens": 0}) + "\n")
                    done[config].add((agent, it["item_id"]))
                    continue
                if config in GENERATED:
                    max_tokens, score_of = V.GENERATED[config]
                    c = await client.chat(m, max_tokens=max_tokens)
                    claim = V.Claim(it["property"], it["value"], it["entity_type"])
                    score, extra = (score_of(c.text, claim) if c.ok else None), {"answer": c.text}
                else:
                    v = await client.verdict(m)
                    c, score, extra = v.completion, v.score, {}
                fhs[config].write(json.dumps({
                    "agent": agent, "item_id": it["item_id"], "score": score, "error": c.error, **extra,
                    "latency_s": c.latency_s, "from_cache": c.from_cache, "prompt_tokens": c.prompt_tokens,
                    "cached_prompt_tokens": c.cached_prompt_tokens}) + "\n")
                fhs[config].flush()
                done[config].add((agent, it["item_id"]))
                asked += 1
    finally:
        for fh in fhs.values():
            fh.close()
    return asked


def combine(name: str, parts: dict[str, dict]) -> dict:
    """The answers of a configuration made of its parts' answers (``COMBOS``), per (agent, item):
    every one but ``consensus`` averages the scores of the parts that apply to the item (as the
    agent does); ``consensus`` is
    ``udfs.agents.verdicts.consensus`` with two voters at 0.5 and the first part (the 1.5B) as
    judge: 1 when both say yes, 0 when both say no, the judge's score on a split vote. Latency and
    prompt tokens are the parts' sums; an item lacks a score when a part does."""
    out = {}
    for key in set().union(*parts.values()):
        rows = [p.get(key) for p in parts.values()]
        rows = [r for r in rows if not (r and r.get("not_asked"))] or rows  # the mean of those that apply
        scores = [r.get("score") if r else None for r in rows]
        if any(s is None for s in scores):
            score = None
        elif name == "consensus":
            yes = sum(s >= 0.5 for s in scores)
            score = scores[0] if 2 * yes == len(scores) else yes / len(scores)
        else:
            score = sum(scores) / len(scores)
        out[key] = {"agent": key[0], "item_id": key[1], "score": score,
                    "from_cache": any(r.get("from_cache") for r in rows if r),
                    "latency_s": sum(r.get("latency_s") or 0 for r in rows if r),
                    "prompt_tokens": sum(r.get("prompt_tokens") or 0 for r in rows if r),
                    "cached_prompt_tokens": sum(r.get("cached_prompt_tokens") or 0 for r in rows if r)}
    return out


def fitted_threshold(labels, scores) -> float:
    """The calibration's own fit (``udfs.scores.calibration.fit_threshold``: best F1 with the two
    classes weighted equally), so a configuration's figures here are what ``calibrate`` would give."""
    return cal.fit_threshold(labels, scores)[0]


def agent_pool(task_items, agent: str, score_of, seed: int, fit_fraction: float) -> tuple[list, list]:
    """(labels, scores) of an agent's fit-split items over all its tasks, each item once: one
    threshold per agent, as the evaluation applies it."""
    seen = {}
    for t, items in task_items.items():
        if TASKS[t][0] == agent:
            for it in items:
                if split_of(it, seed, fit_fraction) == "fit" and score_of(it) is not None:
                    seen[it["item_id"]] = (bool(it["label"]), score_of(it))
    return [y for y, _ in seen.values()], [s for _, s in seen.values()]


def report_rows(name: str, task: str, items, scores, answers, seed: int, fit_fraction: float,
                pool: tuple[list, list] | None = None) -> dict:
    """A configuration's figures on one task's test split; the threshold is fitted on ``pool``
    (the agent's fit items over its tasks), else on this task's fit items."""
    answers = [a if a and not a.get("not_asked") else None for a in answers]
    split = [split_of(it, seed, fit_fraction) for it in items]
    labels = [bool(it["label"]) for it in items]
    fit = [i for i, s in enumerate(split) if s == "fit" and scores[i] is not None]
    test = [i for i, s in enumerate(split) if s == "test" and scores[i] is not None]
    if pool is None:
        pool = ([labels[i] for i in fit], [scores[i] for i in fit])
    thr = fitted_threshold(*pool) if pool[0] else 0.5
    ly, sy = [labels[i] for i in test], [scores[i] for i in test]
    at05 = bm.at_threshold(ly, sy, 0.5)
    atf = bm.at_threshold(ly, sy, thr)
    fresh = [a for a in answers if a and not a["from_cache"] and a["latency_s"]]
    return {"config": name, "task": task, "fit": len(fit), "test": len(test),
            "p": at05.precision, "r": at05.recall, "f1": at05.f1, "thr": thr,
            "p_fit": atf.precision, "r_fit": atf.recall, "f1_fit": atf.f1, "auroc": bm.auroc(ly, sy),
            "s_per_verdict": bm.iqr_mean(a["latency_s"] for a in fresh).mean if fresh else None,
            "prompt_tokens": (sum(a["prompt_tokens"] for a in answers if a) / max(1, sum(1 for a in answers if a)))
            if any(answers) else None,
            "cached_tokens": (sum(a.get("cached_prompt_tokens") or 0 for a in answers if a)
                              / max(1, sum(1 for a in answers if a))) if any(answers) else None}


def combined(task_items, answers_of, seed: int, fit_fraction: float, base: str) -> list[dict]:
    """The evidence combinations of a base configuration's factuality scores; the logistic models
    are fitted on the fit split of both factuality tasks' items together."""
    out = []
    fact = {it["item_id"]: it for t in ("intrinsic", "extrinsic") for it in task_items.get(t, [])}
    ev = {i: E.evidence(it["text"], it["value"], it["property"]) for i, it in fact.items()}
    score = {i: (answers_of.get(("factuality", i)) or {}).get("score") for i in fact}
    fit_ids = [i for i, it in fact.items() if split_of(it, seed, fit_fraction) == "fit" and score[i] is not None]
    y = [bool(fact[i]["label"]) for i in fit_ids]
    with_score = E.fit_logistic([E.features(score[i], ev[i]) for i in fit_ids], y)
    only_ev = E.fit_logistic([E.features(0.5, ev[i])[1:] for i in fit_ids], y, names=E.FEATURES[1:])
    combos = {
        f"{base}+stated": lambda i: None if score[i] is None else E.floor(score[i], ev[i], 0.5),
        f"{base}+logistic": lambda i: None if score[i] is None else with_score.predict(E.features(score[i], ev[i])),
        "evidence only": lambda i: only_ev.predict(E.features(0.5, ev[i])[1:]),
    }
    for t in ("intrinsic", "extrinsic"):
        items = task_items.get(t, [])
        answers = [answers_of.get(("factuality", it["item_id"])) for it in items]
        for name, fn in combos.items():
            pool = agent_pool(task_items, "factuality", lambda it: fn(it["item_id"]), seed, fit_fraction)
            out.append(report_rows(name, t, items, [fn(it["item_id"]) for it in items],
                                   answers if name != "evidence only" else [None] * len(items),
                                   seed, fit_fraction, pool))
    out.append({"weights": {f"{base}+logistic": dict(zip(with_score.names, with_score.weights)),
                            "evidence only": dict(zip(only_ev.names, only_ev.weights))}})
    return out


def stacked(task_items, parts: dict[str, dict], seed: int, fit_fraction: float, base: str) -> list[dict]:
    """``<base>+stacked``: a logistic model over the logits of a combination's parts' scores
    (``udfs.agents.evidence.fit_logistic``, the classes weighted about equally by repeating each
    true fit item as many times as there are false ones per true one), fitted on the fit split of both factuality tasks'
    items together, reported on the test split: what a weighted mean of the same answers could
    reach beyond the plain mean."""
    fact = {it["item_id"]: it for t in ("intrinsic", "extrinsic") for it in task_items.get(t, [])}

    @functools.lru_cache(maxsize=None)
    def x_of(i):
        rows = [parts[p].get(("factuality", i)) or {} for p in parts]
        got = [0.5 if r.get("not_asked") else r.get("score") for r in rows]  # a question that does not apply: logit 0
        return None if any(s is None for s in got) else tuple(E.logit(s) for s in got)

    fit_ids = [i for i, it in fact.items() if split_of(it, seed, fit_fraction) == "fit" and x_of(i) is not None]
    y = [bool(fact[i]["label"]) for i in fit_ids]
    # equal class weights by repeating the smaller class's items (fit_logistic takes no weights)
    pos, neg = [i for i, l in zip(fit_ids, y) if l], [i for i, l in zip(fit_ids, y) if not l]
    k = max(1, round(len(neg) / max(1, len(pos))))
    ids = neg + pos * k
    model = E.fit_logistic([x_of(i) for i in ids], [bool(fact[i]["label"]) for i in ids], names=tuple(parts))
    name = f"{base}+stacked"
    out = []
    for t in ("intrinsic", "extrinsic"):
        items = task_items.get(t, [])
        fn = lambda i: None if x_of(i) is None else model.predict(x_of(i))  # noqa: E731
        pool = agent_pool(task_items, "factuality", lambda it: fn(it["item_id"]), seed, fit_fraction)
        out.append(report_rows(name, t, items, [fn(it["item_id"]) for it in items], [None] * len(items),
                               seed, fit_fraction, pool))
    out.append({"weights": {name: {"bias": model.bias, **dict(zip(model.names, model.weights))}}})
    return out


def _f(v) -> str:
    return "–" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))


def main(argv=None) -> int:
    from udfs.llm.client import LLMClient, first_model
    from udfs.llm.serving.config import base_url, load_serving_conf

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ground-truth", required=True, help="the folder jobs/agents_bench.py build writes")
    ap.add_argument("--limit", type=int, default=40, help="items per task, half positive")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--fit-fraction", type=float, default=0.5)
    ap.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    ap.add_argument("--configs", nargs="*", default=["direct", "defined"], type=config_name,
                    help="model configurations, combinations of COMBOS, or any +-joined list of model "
                    f"configurations and phrasings (a mean): {', '.join(MODEL_CONFIGS)}; {', '.join(COMBOS)}")
    ap.add_argument("--small-model", default="qwen2.5-coder-0.5b", help="the model of direct-small (the second "
                    "voter of consensus); serve it beside the first with conf/serving-consensus.toml")
    ap.add_argument("--work", default="out/judge_configs", help="answers per configuration (JSONL) and the request cache")
    ap.add_argument("--base-url", default="", help="OpenAI-compatible endpoint; default: conf/serving.toml's")
    ap.add_argument("--swap", action="store_true", help="fit on the test split and report on the fit split "
                    "(the second fold of a two-fold cross-validation)")
    ap.add_argument("--partial", action="store_true", help="report the items answered so far when some are not "
                    "(an unanswered item is left out of its configuration's figures)")
    ap.add_argument("--named-nodes", action="store_true", help="only the items whose value is a named node "
                    "(the ground truth's value_type is set): the only items the typed questions ask differently")
    ap.add_argument("--max-seconds", type=float, default=0, help="stop asking after this long (0: no limit); "
                    "a rerun resumes")
    args = ap.parse_args(argv)

    SWAP["on"] = args.swap
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    task_items = load_items(Path(args.ground_truth), args.limit, args.seed, args.tasks)
    if args.named_nodes:
        task_items = {t: [it for it in items if it.get("value_type")] for t, items in task_items.items()}
    deadline = time.monotonic() + args.max_seconds if args.max_seconds else float("inf")
    asked_configs = list(dict.fromkeys(p for c in args.configs for p in parts_of(c)))
    todo: dict[tuple[str, str], tuple[str, dict]] = {}
    for t, items in task_items.items():
        for it in items:
            todo.setdefault((TASKS[t][0], it["item_id"]), (TASKS[t][0], it))
    # Items of one text next to each other (the prefix cache), texts in a seeded order.
    order = sorted(todo.values(),
                   key=lambda ai: (rank_key(args.seed, "order", ai[1]["text"] or ""), ai[0], ai[1]["item_id"]))

    def expected(config: str) -> set:
        return {k for k in todo if asks(config, k[0])}

    missing = [c for c in asked_configs if expected(c) - answered(work / f"{c}.jsonl")]
    if missing:
        url = args.base_url or base_url(load_serving_conf())
        streams: dict[str, list[list[str]]] = {}
        first = first_model(url, timeout_s=30)
        for c in missing:
            groups = streams.setdefault(args.small_model if c == "direct-small" else first, [])
            shared = next((g for g in groups if c in SHARED_PREFIX and g[0] in SHARED_PREFIX), None)
            if shared:
                shared.append(c)
            else:
                groups.append([c])

        async def stream(model: str, groups: list[list[str]]) -> None:
            cache = work / ("llm.sqlite" if model == first else f"llm-{model}.sqlite")
            client = LLMClient(url, model, cache_path=str(cache), timeout_s=600, max_concurrency=1)
            try:
                for g in groups:
                    n = await ask(client, g, order, work, deadline)
                    print(f"{'+'.join(g)} ({model}): asked {n}", file=sys.stderr)
            finally:
                await client.aclose()
                if client.cache is not None:
                    client.cache.close()

        async def all_streams() -> None:
            await asyncio.gather(*(stream(m, g) for m, g in streams.items()))

        asyncio.run(all_streams())
    answers: dict[str, dict] = {}
    complete = True
    for c in asked_configs:
        log = work / f"{c}.jsonl"
        rows = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
        answers[c] = {(r["agent"], r["item_id"]): r for r in rows}
        have = set(answers[c]) & expected(c)
        print(f"{c}: {len(have)} of {len(expected(c))} answered", file=sys.stderr)
        complete = complete and have == expected(c)
    for c in args.configs:
        if c not in MODEL_CONFIGS:
            answers[c] = combine(c, {p: answers[p] for p in parts_of(c)})
    if not complete and not args.partial:
        print("not every item is answered yet: rerun to resume (or --partial to report what is)", file=sys.stderr)
        return 3

    table = []
    weights = {}
    shown = list(dict.fromkeys(list(args.configs) + asked_configs))
    for config in shown:
        for t, items in task_items.items():
            agent = TASKS[t][0]
            if not asks(config, agent):
                continue
            a = [answers[config].get((agent, it["item_id"])) for it in items]
            score_of = (lambda it, agent=agent, config=config:
                        (answers[config].get((agent, it["item_id"])) or {}).get("score"))
            pool = agent_pool(task_items, agent, score_of, args.seed, args.fit_fraction)
            table.append(report_rows(config, t, items, [x["score"] if x else None for x in a], a,
                                     args.seed, args.fit_fraction, pool))
        if config in args.configs and asks(config, "factuality") and any(TASKS[t][0] == "factuality" for t in task_items):
            for row in combined(task_items, answers[config], args.seed, args.fit_fraction, config):
                if "weights" in row:
                    weights.update(row["weights"])
                elif not (row["config"] == "evidence only" and config != args.configs[0]):
                    table.append(row)
            if config not in MODEL_CONFIGS and config != "consensus":
                for row in stacked(task_items, {p: answers[p] for p in parts_of(config)}, args.seed,
                                   args.fit_fraction, config):
                    if "weights" in row:
                        weights.update(row["weights"])
                    else:
                        table.append(row)
    print(f"{args.limit} items per task, seed {args.seed}; test split = examples not in the fit split "
          f"(fit fraction {args.fit_fraction}{', halves swapped' if args.swap else ''}); P/R/F1 on the test split\n")
    print("| configuration | task | fit / test | P | R | F1 at 0.5 | fitted thr. | P | R | F1 at fitted | AUROC "
          "| s/verdict | prompt tok | cached tok |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in table:
        print(f"| {r['config']} | {r['task']} | {r['fit']} / {r['test']} | {_f(r['p'])} | {_f(r['r'])} | {_f(r['f1'])} "
              f"| {r['thr']:.2f} | {_f(r['p_fit'])} | {_f(r['r_fit'])} | {_f(r['f1_fit'])} | {_f(r['auroc'])} "
              f"| {_f(r['s_per_verdict'])} | {_f(r['prompt_tokens'])} | {_f(r['cached_tokens'])} |")
    print("\nlogistic weights (fit split): " + json.dumps(
        {k: {n: round(w, 3) for n, w in v.items()} for k, v in weights.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
