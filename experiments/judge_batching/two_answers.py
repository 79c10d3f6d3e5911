"""Two questions in one request: ``plain`` and the compliance question about one claim, answered on
two grammar-forced lines (experiments/judge_batching/README.md, "Two answers in one request").

The judge asks ``plain`` and ``complies-ranged`` of every claim past the gate, two requests. Here one
request carries both: ``plain``'s page text and fact, then the property's definition and expected
types (as ``ranged`` gives them), and two numbered questions; a grammar forces ``1: yes|no`` and
``2: yes|no``, and each line's score is P(yes) / (P(yes) + P(no)) at its answer token. On a seeded
sample of the calibration items it prints each line's AUROC per task beside the recorded answers of
the separate questions (the per-question runs of experiments/judge_gate's commands).

    python experiments/judge_batching/two_answers.py --ground-truth $OUT/agents_bench/ground_truth \\
        --runs $OUT/gate --cache $OUT/two_answers.sqlite [--n 120]
"""

from __future__ import annotations

import argparse
import asyncio
import random
from pathlib import Path

import pyarrow.parquet as pq

from experiments.judge_batching.judge_batching import line_verdicts, numbered_grammar
from experiments.judge_gate.gate import answered, per_question_arguments
from udfs.agents.prompts import load_prompt, plain_definition
from udfs.agents.questions import FACTUALITY, Claim
from udfs.llm.client import LLMClient
from udfs.schemaorg.vocab import load_vocabulary
from udfs.scores.confusion import auroc

SYSTEM = (
    load_prompt("factuality_system").rsplit("\n", 1)[0]
    + "\nYou also check whether the value fits the definition of its property, from schema.org. A value fits when it "
    "is the kind of thing the definition describes; a value that belongs to another property, or is not what the "
    "definition asks for, does not fit.\nAnswer on two lines: 1, a colon, then yes or no for the first question; "
    "2, a colon, then yes or no for the second."
)


def messages(item: dict, ranges: dict) -> list[dict]:
    """``plain``'s messages with its question replaced by the two numbered ones."""
    claim = Claim(
        item["property"], item["value"], item["entity_type"], item["value_type"], tuple(item["siblings"] or ())
    )
    head = FACTUALITY["plain"].messages(item["text"], claim, "direct")[1]["content"].rpartition("\n")[0]
    expected = " or ".join(sorted(ranges.get(item["property"], ()))) or "(not given)"
    definition = plain_definition(item["property"]) or "(no schema.org definition)"
    return [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": f"{head}\nDefinition of {item['property']}: {definition}\nExpected type of its values: "
            f"{expected}\n1. Is this fact supported by the page text?\n2. Does the value fit the definition of "
            f"{item['property']}?",
        },
    ]


async def ask_all(client: LLMClient, batch: list[list[dict]]) -> list[list[float | None]]:
    async def one(msgs):
        c = await client.chat(
            msgs,
            max_tokens=12,
            logprobs=True,
            top_logprobs=20,
            extra={"structured_outputs": {"grammar": numbered_grammar(2, "ans", '"yes" | "no"')}},
        )
        return (line_verdicts(c.logprobs) + [None, None])[:2] if c.ok else [None, None]

    try:
        return await asyncio.gather(*(one(m) for m in batch))
    finally:
        await client.aclose()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    per_question_arguments(p)
    p.add_argument("--n", type=int, default=120, help="calibration items drawn (seed 7)")
    p.add_argument("--cache", required=True, help="request cache (SQLite)")
    p.add_argument("--base-url", default="http://127.0.0.1:8000/v1")
    a = p.parse_args()
    items, answers, _, _ = answered(a)
    gt = {r["item_id"]: r for r in pq.read_table(Path(a.ground_truth) / "factuality.parquet").to_pylist()}
    its = random.Random(7).sample(items, a.n)
    ranges = load_vocabulary().ranges
    client = LLMClient(a.base_url, cache_path=a.cache, max_concurrency=2)
    got = asyncio.run(ask_all(client, [messages(gt[it["id"]], ranges) for it in its]))
    print(f"{len(its)} items, {sum(None in g for g in got)} unanswered; {client.stats.http_requests} requests sent")
    print("| task | items | line 1 | `plain` alone | line 2 | `complies-ranged` alone |\n|---|---|---|---|---|---|")
    for task in ("intrinsic", "extrinsic"):
        sub = [(it, g) for it, g in zip(its, got) if task in it["tasks"]]
        labels = [it["label"] for it, _ in sub]
        cells = [
            auroc(labels, [g[0] or 0 for _, g in sub]),
            auroc(labels, [answers[it["id"]].get("plain") or 0 for it, _ in sub]),
            auroc(labels, [g[1] or 0 for _, g in sub]),
            auroc(labels, [answers[it["id"]].get("complies-ranged") or 0 for it, _ in sub]),
        ]
        print(f"| {task} | {len(sub)} | " + " | ".join(f"{x:.3f}" for x in cells) + " |")


if __name__ == "__main__":
    main()
