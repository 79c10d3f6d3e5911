"""Is the claimed value's likelihood under the text a verdict? (experiments/judge_likelihood/README.md)

One request per entity: the page text, the entity's properties numbered (values hidden, as
``judge_batching``'s ``values``), and a grammar that forces the answer to be the claimed values,
one ``N: value`` line each. The engine reports each forced token's log-probability before the
grammar (llama.cpp's ``n_probs``), so a claim's score is log P(its value, then the end of its
line | the text, the property, the lines before it): the value read off the text, scored without
generating it. Only the lines up to an item's own are forced, which is what a per-entity request
would give that item (later lines cannot change it).

On the calibration items and the held-out items of the per-question runs (``judge_gate``'s flags),
each threshold fitted on the fit split as ``calibrate`` fits an entry, it prints AUROC and F1 per
task for the shipped judge and for each reading of the forced line (:func:`features`): alone,
combined with the recorded ``complies-ranged`` answers as the judge combines a text score with a
property score (the judge's ``combined_score``; the judge is the configuration's, ``--config``,
with its gate), and with ``plain`` too; and what the requests sent. Answers go through the request
cache, so a rerun asks nothing again.

    python experiments/judge_likelihood/likelihood.py --ground-truth $OUT/agents_bench/ground_truth \\
        --runs $OUT/gate --held-out $OUT/held --cache $OUT/likelihood.sqlite --output $OUT/likelihood.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import time
from pathlib import Path

import pyarrow.parquet as pq

from experiments.judge_batching.judge_batching import VALUES_SYSTEM, entity_batches
from experiments.judge_gate.gate import (
    TASKS,
    answered,
    combined,
    f1s,
    gated_answers,
    gated_score,
    per_question_arguments,
    replayed_judge,
)
from udfs.agents import calibration as cal
from udfs.agents.prompts import fence, unfence
from udfs.llm.client import LLMClient
from udfs.scores.confusion import auroc

MOST_CHARS = 120  # a value's forced prefix; a longer value's line is scored without its end


def one_line(value: str) -> str:
    return " ".join(unfence(value).split())


def forced_grammar(values: list[str]) -> str:
    """GBNF (llama.cpp) and xgrammar EBNF alike: exactly ``1: v1`` ... ``n: vn``."""
    return "root ::= " + ' "\\n" '.join(json.dumps(f"{k}: {v}", ensure_ascii=False) for k, v in enumerate(values, 1))


# the value's prior: the same answer lines, the same properties, no page text
PRIOR_SYSTEM = (
    "You write the values of properties of one schema.org entity. For each numbered property, answer on its own "
    "line: the number, a colon, then a value for it, as short as it can be."
)


def messages(text: str | None, entity_type: str | None, props: list[str]) -> list[dict]:
    """``judge_batching``'s ``values`` request; without ``text``, the prior's."""
    lines = "\n".join(f"{k}. {p}" for k, p in enumerate(props, 1))
    asked = f"Properties of the {entity_type or 'entity'}:\n{lines}"
    if text is None:
        return [{"role": "system", "content": PRIOR_SYSTEM}, {"role": "user", "content": asked}]
    return [{"role": "system", "content": VALUES_SYSTEM}, {"role": "user", "content": f"{fence(text)}\n\n{asked}"}]


def line_logprobs(logprobs: list[dict] | None, line: int) -> list[float]:
    """The log-probabilities of the tokens of answer line ``line`` (0-based) after its ``N:``, the
    token that ends it included (the newline, or the end of the answer)."""
    out, seen = [], ""
    head = len(f"{line + 1}:")
    for tok in logprobs or []:
        start, seen = seen, seen + tok.get("token", "")
        n = start.count("\n")
        if n > line:
            break
        if n == line and len(start) - (start.rfind("\n") + 1) >= head:
            out.append(tok["logprob"])
    return out


async def forced_line(
    client: LLMClient, text: str | None, it: dict, claims: list[dict], k: int
) -> tuple[list[float], str | None]:
    """The log-probabilities of line ``k``'s tokens, the claims' values forced up to it."""
    values = [one_line(c["value"])[:MOST_CHARS] for c in claims[: k + 1]]
    c = await client.chat(
        messages(text, it["entity_type"], [c["property"] for c in claims]),
        max_tokens=48 * (k + 1),
        logprobs=True,
        top_logprobs=1,
        extra={"structured_outputs": {"grammar": forced_grammar(values)}},
    )
    lps = line_logprobs(c.logprobs, k)
    if len(one_line(it["value"])) > MOST_CHARS and lps:
        lps = lps[:-1]  # a truncated value's line does not end there
    return lps, c.error


async def score_items(items, contexts, client: LLMClient) -> list[dict]:
    """Each item's forced line against its text, and its prior (no text, :data:`PRIOR_SYSTEM`)."""
    out = []
    t0 = time.monotonic()
    for n, (it, (claims, k)) in enumerate(zip(items, contexts), 1):
        lps, error = await forced_line(client, it["text"], it, claims, k)
        prior, prior_error = await forced_line(client, None, it, claims, k)
        out.append(
            {
                "id": it["item_id"],
                "kind": it["kind"],
                "line": k,
                "tokens": len(lps),
                "sum": sum(lps) if lps else None,
                "prior": sum(prior) if prior else None,
                "error": error or prior_error,
            }
        )
        if n % 25 == 0:
            print(f"  {n}/{len(items)} items, {time.monotonic() - t0:.0f} s", flush=True)
    return out


def features(s: dict) -> dict[str, float]:
    """Scores in [0, 1] (higher: more likely stated) from one item's forced line: its probability
    under the text, per token, and the text's gain over the prior (pointwise mutual information,
    as a logistic of its log-ratio per token), alone and with the per-token probability."""
    if s["sum"] is None or s["prior"] is None:
        return dict.fromkeys(("likelihood", "per-token", "gain", "likelihood and gain"), 0.0)
    n = max(1, s["tokens"])
    gain = 1 / (1 + math.exp(-(s["sum"] - s["prior"]) / n))
    return {
        "likelihood": math.exp(s["sum"]),
        "per-token": math.exp(s["sum"] / n),
        "gain": gain,
        "likelihood and gain": math.sqrt(math.exp(s["sum"] / n) * gain),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    per_question_arguments(p)
    p.add_argument("--cache", required=True, help="request cache (SQLite)")
    p.add_argument("--output", default="", help="the per-item scores as JSON lines")
    p.add_argument("--base-url", default="http://127.0.0.1:8000/v1")
    p.add_argument("--batch", type=int, default=12, help="most claims of an entity in one request")
    a = p.parse_args()
    judge = replayed_judge(a.config)
    items, answers, held, held_answers = answered(a)
    rows = pq.read_table(Path(a.ground_truth) / "factuality.parquet").to_pylist()
    by_id = {r["item_id"]: r for r in rows}
    wanted = [by_id[it["id"]] for it in items + held]
    # requests about one text and entity one after another: the engine reuses their prefix
    wanted.sort(key=lambda r: (r["text"], r["entity_type"] or "", r["subject"] or ""))
    contexts = entity_batches(rows, wanted, a.batch)
    client = LLMClient(a.base_url, cache_path=a.cache, max_concurrency=1)
    t0 = time.monotonic()
    scored = asyncio.run(score_items(wanted, contexts, client))
    st = client.stats
    print(
        f"{len(scored)} items in {time.monotonic() - t0:.0f} s: {st.http_requests} requests sent, "
        f"{st.prompt_tokens} prompt tokens ({st.prompt_tokens - st.cached_prompt_tokens} uncached); "
        f"errors {sum(bool(s['error']) for s in scored)}, no line {sum(s['sum'] is None for s in scored)}"
    )
    if a.output:
        Path(a.output).write_text("".join(json.dumps(s) + "\n" for s in scored))
    lik = {s["id"]: features(s) for s in scored}
    answers = answers | held_answers  # the recorded answers of every item

    def judges(i: str) -> dict[str, float | None]:
        ans = gated_answers(judge, answers.get(i, {}))
        fits = ans.get("complies-ranged")
        out = {"shipped": gated_score(judge, answers.get(i, {}))}
        for f, v in lik[i].items():
            out[f] = v
            if fits is not None:  # the forced line's score as a text question's, as the judge combines them
                out[f + " ^ complies-ranged"] = combined(judge, [v], fits)
            if ans.get("plain") is not None and fits is not None:
                out[f + " + plain ^ complies-ranged"] = combined(judge, [v, ans["plain"]], fits)
        return out

    scores = {it["id"]: judges(it["id"]) for it in items + held}
    fit = [it for it in items if it["split"] == "fit"]
    test = [it for it in items if it["split"] == "test"]
    names = list(scores[items[0]["id"]])
    print(f"\n{len(fit)} fit, {len(test)} test, {len(held)} held-out items\n")
    print("| judge | threshold | test AUROC | test F1 | held-out AUROC | held-out F1 |\n|---|---|---|---|---|---|")
    for name in names:
        thr, _ = cal.fit_threshold([it["label"] for it in fit], [scores[it["id"]].get(name) for it in fit])
        cells = [name, f"{thr:.4g}"]
        judged = {i: sc.get(name) or 0.0 for i, sc in scores.items()}
        for part in (test, held):
            rocs = []
            for t in TASKS:
                sub = [it for it in part if t in it["tasks"]]
                rocs.append(auroc([it["label"] for it in sub], [judged[it["id"]] for it in sub]))
            cells += [" / ".join("-" if x is None else f"{x:.3f}" for x in xs) for xs in (rocs, f1s(part, judged, thr))]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
