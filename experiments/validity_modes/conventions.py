"""schema.org's own conventions in the schemaorg validity mode: what the Action annotations change,
and what else of schema.org's documentation that mode calls invalid.

    .venv/bin/python experiments/validity_modes/conventions.py [../shared/data/llm4schemaorg-pset]

Markups: every readable JSON-LD markup of the schema.org documentation examples and of the extruct
samples (the demo's pages; ``testkit.markup_corpus.real_markups``) and, given the paper's bundle or
checkout, every markup of the paper's Table 7 (human, GPT-3.5, GPT-4; ``results.csv``).

Table 1, per corpus: the triples (verdicts of the default mode), those whose property is written
``<property>-input`` / ``<property>-output``, and how many of them the default mode calls valid
without and with the Action-annotation reading (``udfs.agents.validity.findings.action_annotations``).
Table 2: every triple the default mode calls invalid, per corpus, in the classes of
:func:`convention`: the conventions of schema.org's own documentation that the mode rejects (the
Role pattern, another vocabulary beside schema.org, nested entities without a type), and the rest
by cause. Table 3: the rest in schema.org's own examples, by cause, property and entity type.
Prints Markdown tables.
"""

from __future__ import annotations

import argparse
import collections

from testkit.markup_corpus import real_markups
from udfs.agents.validity import ValidityAgent
from udfs.agents.validity.findings import ANNOTATION, verdicts
from udfs.runtime.config import load_config
from udfs.schemaorg.markup import MarkupError, parse_markup


def corpora(pset: str | None):
    for c in real_markups():
        if c.ok_json:
            yield ("schema.org examples" if c.source.startswith("examples:") else "extruct samples (demo pages)"), c
    if pset:
        from udfs.corpus.pset import open_pset, results_rows

        src = open_pset(pset)
        for r in results_rows(src):
            yield f"paper, {r.source}", src.read(r.markup).decode("utf-8")


def _role(model, types) -> bool:
    from udfs.agents.validity.findings import _is_a

    return any(t and _is_a(model, t, "Role") for t in types)


def convention(markup, v, model) -> str:
    """The class of one invalid verdict: a convention of schema.org's documentation, or its cause."""
    ents = markup.entities
    value_types = ents[v.value].types if v.value_kind == "entity" and v.value in ents else []
    if _role(model, [v.entity_type, *value_types]):
        return "Role pattern (schema.org/Role: a Role stands for the value it qualifies)"
    foreign = [x for x in (v.property, v.entity_type) if x and ":" in x]
    if foreign:
        return "another vocabulary beside schema.org (a type or property IRI outside it)"
    if v.cause == "untyped entity":
        return "nested entity without @type"
    return f"other: {v.cause}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pset", nargs="?", help="the paper's checkout or pset-history.bundle")
    args = ap.parse_args()
    conf = load_config().validity
    agent = ValidityAgent("compiled", conf.strict, conf.vocab, "schemaorg")
    counts = collections.defaultdict(collections.Counter)
    invalid_examples = collections.Counter()
    classes = collections.defaultdict(collections.Counter)
    for corpus, item in corpora(args.pset):
        text = item if isinstance(item, str) else item.text
        try:
            m = parse_markup(text)
        except MarkupError:
            counts[corpus]["unreadable"] += 1
            continue
        f = agent.findings_many([m])[0]
        before = verdicts(m, f, agent.model, agent.strict)
        after = agent.validate(m).verdicts
        c = counts[corpus]
        c["markups"] += 1
        c["triples"] += len(after)
        for b, a in zip(before, after):
            if ANNOTATION.match(a.property):
                c["annotation triples"] += 1
                c["valid before"] += b.valid
                c["valid now"] += a.valid
            if not a.valid:
                cls = convention(m, a, agent.model)
                classes[cls][corpus] += 1
                if corpus == "schema.org examples" and cls.startswith("other"):
                    invalid_examples[(a.cause, a.property, a.entity_type)] += 1
    print(
        "| corpus | markups | triples | `-input`/`-output` triples | valid without the reading | valid with it | triples that change |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for corpus, c in counts.items():
        print(
            f"| {corpus} | {c['markups']:,} | {c['triples']:,} | {c['annotation triples']:,} | {c['valid before']:,} "
            f"| {c['valid now']:,} | {c['valid now'] - c['valid before']:,} |"
        )
    names = list(counts)
    print("\nInvalid triples (default mode) by class:\n")
    print("| class | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for cls, per in sorted(classes.items(), key=lambda kv: -sum(kv[1].values())):
        print(f"| {cls} | " + " | ".join(f"{per[n]:,}" for n in names) + " |")
    print("\nThe rest in schema.org's own examples, by cause, property and entity type:\n")
    print("| cause | property | entity type | triples |")
    print("|---|---|---|---:|")
    for (cause, p, t), n in invalid_examples.most_common():
        print(f"| {cause} | {p} | {t} | {n} |")


if __name__ == "__main__":
    main()
