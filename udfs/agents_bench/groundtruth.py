"""Ground truth for the verdict agents, built from the schema.org documentation examples (the
LLM4Schema.org paper's Tables 1 and 3): each example pairs a short text with its JSON-LD, so every
triple of the JSON-LD is a fact the text states, and negatives are made by moving values where
they do not belong.

* factuality positives: every distinct claim (property, value, entity type) of an example's
  markup whose value the example's text states (as a whole-word match after normalisation;
  ``require_stated=False`` keeps them all: many example texts are a placeholder such as "See
  JSON example." or state a value in another form than the markup's), with that example's text.
  A claim is what the evaluation asks (``udfs.agents.verdicts.claim_value``): a literal's text, a
  node by its name, an IRI readably; a node without a name is no claim (the claims inside it
  are), so the benchmark measures the judge on the questions the evaluation puts. A named node's
  type is kept beside its name (``value_type``, ``udfs.agents.verdicts.claim_value_type``), and
  every claim's subject as the ``subject`` question says it (``subject``, ``subject_of``);
* intrinsic negatives: a literal value of the markup replaced by the literal value of a
  semantically distant property of the same markup (same text, so the value is on the page but
  not as that property: the claim contradicts the text). Which one (``intrinsic``): ``distant``, a
  seeded choice among the properties whose name+definition embeddings are distant; or ``paper``,
  the authors' rule (LLM4SchemaOrg's ``generate_negative_examples``): among the properties whose
  value is of the same kind (both properties take Text, or both values are numbers, or both
  strings, or both booleans), the one whose *name* embedding is furthest from the claim's. In
  both, the candidates are the values the example's text states (the authors had GPT-4 write a
  text stating every value where an example's own text shared little with its markup; this
  build keeps the examples' texts and the values they state);
* extrinsic negatives: a triple paired with the text of another example whose markup shares no
  value with its own, and whose text does not mention the triple's value (unsupported);
* compliance positives: every positive triple against its property's definition;
* compliance negatives: the values of two semantically distant textual properties (range Text) of
  one markup swapped, each value judged against the other property's definition.

Every row keeps ``true_value``, the value its property has in its text: a positive's own value, the
value an intrinsic negative (or a swap) replaced, none for an extrinsic negative (its text states no
value for the claim): what a correction of the claim should propose (GraphCorrect, ``run --correct``).

"Semantically distant" is the cosine of all-MiniLM-L6-v2 embeddings of the two properties' names
and definitions (``udfs.scores.matching``) below ``distant_max``; ``paper`` embeds the names
alone. Every random choice is a ranking by sha256 of (seed, what is chosen for, candidate), so a
build is deterministic for a seed and does not depend on the order of the examples. Pure:
examples and the vocabulary in, rows out; the embedding function can be passed in. The seed,
``distant_max``, ``intrinsic`` and ``max_value_chars`` are ``[agents_bench]`` settings of
conf/pipeline.toml and the embeddings' batch size and threads ``[scores]`` ones, all passed in by
the caller: this module holds no default for them.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import html
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from udfs.agents.prompts import Example
from udfs.agents.verdicts import claim_value, claim_value_type, holders, properties_by_subject, siblings_of, subject_of
from udfs.runtime.config import ScoresConf
from udfs.runtime.rejects import reject_row
from udfs.schemaorg.markup import Literal, Markup, MarkupError, parse_markup
from udfs.scores.matching import normalise

# distant_max: property pairs whose name+definition embeddings have a cosine below it are
# "distant". At 0.25, name / telephone / startDate / recipeYield pairs are distant, name /
# alternateName (0.6) and description / disambiguatingDescription (0.7) are not.
# Properties whose definition admits any text ("The name of the item."): a value swapped into one
# of them is not a compliance error, so they take no part in the swaps.
GENERIC_PROPERTIES = (
    "name",
    "alternateName",
    "description",
    "disambiguatingDescription",
    "text",
    "headline",
    "alternativeHeadline",
    "abstract",
    "identifier",
    "keywords",
    "comment",
    "about",
)

POSITIVE, INTRINSIC, EXTRINSIC, SWAPPED = "positive", "intrinsic", "extrinsic", "swapped"
# How an intrinsic negative's value is chosen. "distant" draws among every distant property, so
# the benchmark holds the hard swaps (name / location) beside the easy ones (name / telephone);
# "paper" takes the single furthest, as the paper's figures were measured.
INTRINSIC_CHOICES = ("distant", "paper")
FACTUALITY_KINDS = (POSITIVE, INTRINSIC, EXTRINSIC)
COMPLIANCE_KINDS = (POSITIVE, SWAPPED)
# The tasks the paper reports (Tables 2 and 4): positives with one kind of negative each.
TASKS = {
    "intrinsic": ("factuality", INTRINSIC),
    "extrinsic": ("factuality", EXTRINSIC),
    "compliance": ("compliance", SWAPPED),
}
# What the paper built from the examples of its time (Tables 1 and 3).
PAPER_COUNTS = {
    ("factuality", POSITIVE): 785,
    ("factuality", INTRINSIC): 498,
    ("factuality", EXTRINSIC): 630,
    ("compliance", POSITIVE): 785,
    ("compliance", SWAPPED): 147,
}

_NUMBER = re.compile(r"^[+-]?\d+(?:[.,]\d+)?$")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_MD_LINK = re.compile(r"\[\[([^\]]+)\]\]|\[([^\]]+)\]\([^)]*\)|<[^>]+>")


def rank_key(seed: int, *parts: Any) -> str:
    """A seeded pseudo-random sort key that depends only on what it is computed for."""
    return hashlib.sha256("\x1f".join(map(str, (seed, *parts))).encode()).hexdigest()


def item_id(*parts: Any) -> str:
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:16]


def mentions(text: str, value: str) -> bool:
    """Whether a (normalised) text states a value as a whole word sequence: "5" is not in "2015"."""
    t, v = normalise(text), normalise(value)
    if not v:
        return False
    return re.search(rf"(?<!\w){re.escape(v)}(?!\w)", t) is not None


def value_kind(markup: Markup, v) -> str:
    if isinstance(v, Literal):
        if isinstance(v.value, bool):
            return "boolean"
        if isinstance(v.value, (int, float)) or _NUMBER.match(str(v.value).strip()):
            return "number"
        return "text"
    return "entity" if v.id in markup.entities else "iri"


def surfaces(markup: Markup, v) -> list[str]:
    """The strings through which a text could state a value's claim (``claim_value``): a
    literal's text or an IRI, as written and as the claim words it; a node's name."""
    claim = claim_value(markup, v)
    raw = v.text if isinstance(v, Literal) else (None if v.id in markup.entities else v.id)
    return list(dict.fromkeys(s for s in (claim, raw) if s))


def node_literals(markup: Markup, v) -> list[str]:
    """The literal values of a node of the markup (its name, address, ...); none for a literal or
    an outside IRI."""
    ent = None if isinstance(v, Literal) else markup.entities.get(v.id)
    return [x.text for vs in ent.properties.values() for x in vs if isinstance(x, Literal)] if ent else []


def property_text(prop: str, vocab) -> str:
    """What a property is embedded as: its name in words and the start of its definition."""
    words = _CAMEL.sub(" ", prop).lower()
    comment = _MD_LINK.sub(lambda m: m.group(1) or m.group(2) or " ", vocab.comments.get(prop, ""))
    comment = " ".join(comment.split())[:300]
    return f"{words}: {comment}" if comment else words


def property_name(prop: str, vocab) -> str:
    """What the paper's rule embeds a property as: its name's words ("startDate": "start date").
    The authors embed them with spaCy's en_core_web_md word vectors, which no package registry
    carries; this build embeds the same words with the model of ``distance``."""
    return _CAMEL.sub(" ", prop).lower()


class PropertyDistance:
    """Cosine similarity of properties by the embeddings of what ``text_of`` makes of them (by
    default their name and definition, :func:`property_text`), each property embedded once
    (``embed`` returns unit vectors, one row per text)."""

    def __init__(
        self, vocab, embed: Callable[[Sequence[str]], Any], text_of: Callable[[str, Any], str] = property_text
    ):
        self.vocab = vocab
        self._embed = embed
        self._text_of = text_of
        self._vec: dict[str, Any] = {}

    def prepare(self, props: Iterable[str]) -> None:
        todo = sorted(set(props) - set(self._vec))
        if not todo:
            return
        vectors = self._embed([self._text_of(p, self.vocab) for p in todo])
        self._vec.update(zip(todo, vectors))

    def cosine(self, p: str, q: str) -> float:
        if p not in self._vec or q not in self._vec:
            self.prepare((p, q))
        return float(self._vec[p] @ self._vec[q])


@dataclass
class Built:
    """The ground truth rows, the rejected triples and examples with reasons, and the counters
    (triples read = positives + unnamed nodes + duplicates + rejected)."""

    factuality: list[dict[str, Any]] = field(default_factory=list)
    compliance: list[dict[str, Any]] = field(default_factory=list)
    rejects: list[dict[str, Any]] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=dict)

    def counts(self) -> dict[tuple[str, str], int]:
        out = {(t, k): 0 for t, ks in (("factuality", FACTUALITY_KINDS), ("compliance", COMPLIANCE_KINDS)) for k in ks}
        for task, rows in (("factuality", self.factuality), ("compliance", self.compliance)):
            for r in rows:
                out[(task, r["kind"])] += 1
        return out


@dataclass
class _Fact:
    example: Example
    markup: Markup
    property: str
    value: Any  # Literal | Ref
    entity_type: str | None
    described: str
    kind: str  # value kind
    surfaces: list[str]
    value_type: str | None  # a named node's type (claim_value_type)
    siblings: tuple[str, ...]  # the subject's other properties (siblings_of)
    subject: str | None  # which node the claim is about (subject_of)


def _row(
    f: _Fact,
    kind: str,
    label: bool,
    *,
    text: str,
    text_example: str,
    value: str,
    value_kind_: str,
    value_surfaces: Sequence[str],
    value_type: str | None,
    source_property: str | None = None,
    distance: float | None = None,
    definition: str | None = None,
    seed: int,
) -> dict[str, Any]:
    row = {
        "item_id": item_id(kind, f.example.id, text_example, f.property, value, f.entity_type),
        "example_id": f.example.id,
        "text_example_id": text_example,
        "text": text,
        "property": f.property,
        "value": value,
        # the true value the claim's property has in the claim's text: a positive's own value, the
        # value an intrinsic negative or a swap replaced; none for an extrinsic negative, whose
        # text is another example's and states no value for the claim (GraphCorrect's target)
        "true_value": None if kind == EXTRINSIC else f.described,
        "value_kind": value_kind_,
        "value_type": value_type,
        "siblings": list(f.siblings),
        "subject": f.subject,
        "entity_type": f.entity_type,
        "label": label,
        "kind": kind,
        "source_property": source_property,
        "cosine": distance,
        "value_in_text": any(mentions(text, s) for s in [value, *value_surfaces]),
        "seed": seed,
    }
    if definition is not None:
        row["definition"] = definition
    return row


def _values_by_property(markup: Markup) -> dict[str, set[str]]:
    """Every value the markup gives each property (stated in the text or not), normalised: a
    negative must not be a value the markup itself holds for that property."""
    out: dict[str, set[str]] = {}
    for t in markup.triples():
        out.setdefault(t.property, set()).update(normalise(s) for s in surfaces(markup, t.value))
    return out


def embedding_distance(
    vocab, scores: ScoresConf, text_of: Callable[[str, Any], str] = property_text
) -> PropertyDistance:
    """PropertyDistance over the BLINKG embedding model (``udfs.scores.matching.embed``) with the
    batch size and threads of ``[scores]``, embedding what ``text_of`` makes of a property."""
    from udfs.scores.matching import embed

    return PropertyDistance(
        vocab,
        functools.partial(embed, batch_size=scores.embedding_batch_size, threads=scores.embedding_threads),
        text_of,
    )


def same_kind(f: "_Fact", g: "_Fact", vocab) -> bool:
    """The paper's test of a swap candidate ``g`` for ``f``: both properties take Text, or both
    values are of one kind (number, boolean, string)."""
    return (
        "Text" in vocab.ranges.get(f.property, ()) and "Text" in vocab.ranges.get(g.property, ())
    ) or f.kind == g.kind


READ_COUNTERS = (
    "examples",
    "examples_unreadable",
    "triples_read",
    "unnamed_nodes",
    "rejected_not_schemaorg",
    "rejected_long_value",
    "rejected_not_stated",
    "duplicates",
)


def build_ground_truth(
    examples: Sequence[Example],
    vocab,
    *,
    seed: int,
    distant_max: float,
    max_value_chars: int,
    distance: PropertyDistance,
    intrinsic: str,
    name_distance: PropertyDistance | None = None,
    generic_properties: Sequence[str] = GENERIC_PROPERTIES,
    require_stated: bool = True,
) -> Built:
    """The ground truth's rows (module docstring). ``intrinsic`` is one of ``INTRINSIC_CHOICES``;
    ``paper`` needs ``name_distance``, the distance of the properties' names alone."""
    if intrinsic not in INTRINSIC_CHOICES:
        raise ValueError(f"intrinsic negatives {intrinsic!r}: one of {', '.join(INTRINSIC_CHOICES)}")
    if intrinsic == "paper" and name_distance is None:
        raise ValueError("intrinsic negatives 'paper' need name_distance (the properties' name embeddings)")
    out = Built()
    facts, markups = _read_facts(examples, vocab, out, max_value_chars=max_value_chars, require_stated=require_stated)
    by_example: dict[str, list[_Fact]] = {}
    for f in facts:
        by_example.setdefault(f.example.id, []).append(f)
    # every fact's property embedded in one batch, before any distance is asked
    distance.prepare(f.property for f in facts)
    for f in facts:
        out.factuality.append(_positive(f, seed))
        out.compliance.append(_positive(f, seed, definition=vocab.comments.get(f.property, "")))
    # the order of the steps is the order the distances embed their properties in (name_distance
    # embeds pairs as they are asked)
    if intrinsic == "paper":
        pick = functools.partial(_furthest_name_of_same_kind, vocab=vocab, name_distance=name_distance, seed=seed)
    else:
        pick = functools.partial(_seeded_distant, distance=distance, distant_max=distant_max, seed=seed)
    out.factuality += _intrinsic_negatives(by_example, markups, pick, seed)
    out.factuality += _extrinsic_negatives(facts, by_example, seed)
    out.compliance += _swapped_values(by_example, markups, vocab, distance, distant_max, generic_properties, seed)
    _drop_duplicate_claims(out)
    out.counters["factuality_positive"] = sum(r["kind"] == POSITIVE for r in out.factuality)
    return out


def _read_facts(
    examples: Sequence[Example], vocab, out: Built, *, max_value_chars: int, require_stated: bool
) -> tuple[list[_Fact], dict[str, Markup]]:
    """The positives' facts of ``examples``, in order: every distinct claim about one text whose
    property schema.org defines, whose value is short enough and (``require_stated``) stated in
    the text; and the markup of every example id. Every other triple and every unreadable example
    is a reject of ``out``, counted in ``out.counters`` (``READ_COUNTERS``)."""
    c = out.counters
    c.update(dict.fromkeys(READ_COUNTERS, 0))
    facts: list[_Fact] = []
    markups: dict[str, Markup] = {}
    seen: set[tuple] = set()

    def reject(ex: Example, counter: str, reason: str, raw: str) -> None:
        c[counter] += 1
        out.rejects.append(reject_row(ex.id, None, reason, raw, raw_chars=max_value_chars))

    for ex in examples:
        c["examples"] += 1
        # The examples' pre-markup keeps HTML entities ("Beachwear &amp; Giftware"); the text a
        # reader (and the model) sees has them decoded, and so must the "is it stated" test.
        ex = dataclasses.replace(ex, text=html.unescape(ex.text))
        try:
            m = parse_markup(ex.jsonld)
        except MarkupError as exc:
            c["examples_unreadable"] += 1
            out.rejects.append(reject_row(ex.id, None, f"unreadable markup: {exc.reason}"))
            continue
        markups[ex.id] = m
        properties, held = properties_by_subject(m), holders(m)
        for t in m.triples():
            c["triples_read"] += 1
            desc = claim_value(m, t.value)
            if desc is None:
                reject(
                    ex,
                    "unnamed_nodes",
                    "a node without a name is no claim (the claims inside it are)",
                    f"{t.property} of {t.entity_type}",
                )
                continue
            if t.property not in vocab.properties:
                reject(
                    ex, "rejected_not_schemaorg", "property outside the schema.org vocabulary", f"{t.property} = {desc}"
                )
                continue
            if len(desc) > max_value_chars:
                reject(
                    ex,
                    "rejected_long_value",
                    f"value longer than {max_value_chars} characters",
                    f"{t.property} = {desc}",
                )
                continue
            # one positive per distinct claim about one text (the same example text is documented
            # under several ids)
            key = (ex.text, t.property, desc, t.entity_type)
            if key in seen:
                c["duplicates"] += 1
                continue
            seen.add(key)
            f = _Fact(
                ex,
                m,
                t.property,
                t.value,
                t.entity_type,
                desc,
                value_kind(m, t.value),
                surfaces(m, t.value),
                claim_value_type(m, t.value),
                siblings_of(properties, t.subject, t.property),
                subject_of(m, held, t.subject, t.property),
            )
            if require_stated and not any(mentions(ex.text, s) for s in f.surfaces):
                reject(ex, "rejected_not_stated", "value not stated in the example text", f"{t.property} = {desc}")
                continue
            facts.append(f)
    return facts, markups


def _positive(f: _Fact, seed: int, definition: str | None = None) -> dict[str, Any]:
    """The positive row of a fact: its own value with its own text (``definition``: a compliance row)."""
    return _row(
        f,
        POSITIVE,
        True,
        text=f.example.text,
        text_example=f.example.id,
        value=f.described,
        value_kind_=f.kind,
        value_surfaces=f.surfaces,
        value_type=f.value_type,
        seed=seed,
        definition=definition,
    )


def _furthest_name_of_same_kind(
    f: _Fact, cands: list[_Fact], *, vocab, name_distance: PropertyDistance, seed: int
) -> tuple[_Fact, float] | None:
    """``intrinsic="paper"``: the candidate of the same kind (``same_kind``) whose property's name
    is furthest from ``f``'s, and its cosine; ties (one property, several values) by the seeded
    ranking. None without a candidate of the same kind."""
    cands = [g for g in cands if same_kind(f, g, vocab)]
    if not cands:
        return None
    g = min(
        cands,
        key=lambda g: (
            name_distance.cosine(f.property, g.property),
            rank_key(seed, "intrinsic", f.property, f.described, g.property, g.described),
        ),
    )
    return g, name_distance.cosine(f.property, g.property)


def _seeded_distant(
    f: _Fact, cands: list[_Fact], *, distance: PropertyDistance, distant_max: float, seed: int
) -> tuple[_Fact, float] | None:
    """``intrinsic="distant"``: the first in the seeded ranking of the candidates whose property is
    distant from ``f``'s (cosine below ``distant_max``), and its cosine; None without one."""
    cands = [g for g in cands if distance.cosine(f.property, g.property) < distant_max]
    if not cands:
        return None
    g = min(cands, key=lambda g: rank_key(seed, "intrinsic", f.property, f.described, g.property, g.described))
    return g, distance.cosine(f.property, g.property)


def _intrinsic_negatives(
    by_example: dict[str, list[_Fact]],
    markups: dict[str, Markup],
    pick: Callable[[_Fact, list[_Fact]], tuple[_Fact, float] | None],
    seed: int,
) -> list[dict[str, Any]]:
    """A literal value replaced by the literal value of another property of the same markup that
    ``pick`` chooses among those the markup does not give the claim's property."""
    rows = []
    for ex_id, fs in by_example.items():
        values_of = _values_by_property(markups[ex_id])
        lits = [f for f in fs if isinstance(f.value, Literal)]
        for f in lits:
            cands = [
                g
                for g in lits
                if g.property != f.property and normalise(g.described) not in values_of.get(f.property, ())
            ]
            picked = pick(f, cands)
            if picked is None:
                continue
            g, cos = picked
            rows.append(
                _row(
                    f,
                    INTRINSIC,
                    False,
                    text=f.example.text,
                    text_example=ex_id,
                    value=g.described,
                    value_kind_=g.kind,
                    value_surfaces=g.surfaces,
                    value_type=g.value_type,
                    source_property=g.property,
                    distance=round(cos, 4),
                    seed=seed,
                )
            )
    return rows


def _extrinsic_negatives(facts: list[_Fact], by_example: dict[str, list[_Fact]], seed: int) -> list[dict[str, Any]]:
    """A triple with the text of an example whose markup shares no value with its own (its stated
    claims' surfaces and every literal inside their nodes) and whose text does not state it: the
    first such example in a seeded order."""
    surf = {
        ex_id: {normalise(s) for f in fs for s in [*f.surfaces, *node_literals(f.markup, f.value)]} - {""}
        for ex_id, fs in by_example.items()
    }
    texts = {ex_id: fs[0].example.text for ex_id, fs in by_example.items()}
    ids = sorted(by_example)
    disjoint: dict[tuple[str, str], bool] = {}
    # Each example gets a seeded order of the others; each of its triples starts reading that order
    # at its own seeded offset (one hash per triple instead of one per candidate).
    orders: dict[str, list[str]] = {}
    rows = []
    for f in facts:
        ex_id = f.example.id
        if ex_id not in orders:
            orders[ex_id] = sorted(
                (e for e in ids if texts[e] != f.example.text), key=lambda e: rank_key(seed, "extrinsic", ex_id, e)
            )
        order = orders[ex_id]
        start = int(rank_key(seed, "extrinsic", ex_id, f.property, f.described), 16) % max(1, len(order))
        for other in order[start:] + order[:start]:
            pair = (min(f.example.id, other), max(f.example.id, other))
            if pair not in disjoint:
                disjoint[pair] = not (surf[f.example.id] & surf[other])
            if disjoint[pair] and not any(mentions(texts[other], s) for s in [f.described, *f.surfaces]):
                rows.append(
                    _row(
                        f,
                        EXTRINSIC,
                        False,
                        text=texts[other],
                        text_example=other,
                        value=f.described,
                        value_kind_=f.kind,
                        value_surfaces=f.surfaces,
                        value_type=f.value_type,
                        seed=seed,
                    )
                )
                break
    return rows


def _swapped_values(
    by_example: dict[str, list[_Fact]],
    markups: dict[str, Markup],
    vocab,
    distance: PropertyDistance,
    distant_max: float,
    generic_properties: Sequence[str],
    seed: int,
) -> list[dict[str, Any]]:
    """Compliance negatives: the values of two distant textual properties (range Text, defined,
    not generic) of one markup swapped, each judged against the other's definition; a value the
    markup gives the other property too is no swap. Pairs are drawn in a seeded order, each fact
    in one pair at most."""
    rows = []
    for ex_id, fs in by_example.items():
        values_of = _values_by_property(markups[ex_id])
        textual = sorted(
            (
                f
                for f in fs
                if f.kind == "text"
                and "Text" in vocab.ranges.get(f.property, ())
                and vocab.comments.get(f.property)
                and f.property not in generic_properties
            ),
            key=lambda f: rank_key(seed, "swap", ex_id, f.property, f.described),
        )
        used: set[int] = set()
        for i, f in enumerate(textual):
            if i in used:
                continue
            for j in range(i + 1, len(textual)):
                g = textual[j]
                if j in used or g.property == f.property:
                    continue
                if normalise(g.described) in values_of.get(f.property, ()) or normalise(f.described) in values_of.get(
                    g.property, ()
                ):
                    continue
                cos = distance.cosine(f.property, g.property)
                if cos >= distant_max:
                    continue
                used.update((i, j))
                for a, b in ((f, g), (g, f)):
                    rows.append(
                        _row(
                            a,
                            SWAPPED,
                            False,
                            text=a.example.text,
                            text_example=ex_id,
                            value=b.described,
                            value_kind_=b.kind,
                            value_surfaces=b.surfaces,
                            value_type=b.value_type,
                            source_property=b.property,
                            distance=round(cos, 4),
                            definition=vocab.comments[a.property],
                            seed=seed,
                        )
                    )
                break
    return rows


def _drop_duplicate_claims(out: Built) -> None:
    """One row per claim, counted in ``<task>_duplicate_claims``. Positives come first, so a
    negative that repeats a true claim is dropped (a compliance claim does not involve the text: a
    swapped value that some example gives the property is compliant after all); then a canonical
    order, so which duplicate survives does not depend on the order of the examples."""
    for name, key in (
        ("factuality", ("text", "property", "value", "entity_type")),
        ("compliance", ("property", "value", "entity_type")),
    ):
        kept, seen_claims = [], set()
        out.counters[f"{name}_duplicate_claims"] = 0
        for r in sorted(getattr(out, name), key=lambda r: (r["kind"] != POSITIVE, r["item_id"])):
            k = tuple(r[x] for x in key)
            if k in seen_claims:
                out.counters[f"{name}_duplicate_claims"] += 1
                continue
            seen_claims.add(k)
            kept.append(r)
        setattr(out, name, kept)


def stratified_subset(
    rows: Sequence[dict[str, Any]], kinds: Sequence[str], limit: int, seed: int
) -> list[dict[str, Any]]:
    """Up to ``limit`` rows: half positives, half of the negative kind (the other half when one
    side runs short), each the first in a seeded ranking of item ids, so the positives picked for
    two factuality tasks with the same seed and limit are the same rows."""
    pos_kind, neg_kind = kinds
    pools = {
        k: sorted((r for r in rows if r["kind"] == k), key=lambda r: rank_key(seed, "subset", r["item_id"]))
        for k in kinds
    }
    if not limit or limit <= 0:
        return pools[pos_kind] + pools[neg_kind]
    n_neg = min(len(pools[neg_kind]), limit // 2)
    n_pos = min(len(pools[pos_kind]), limit - n_neg)
    n_neg = min(len(pools[neg_kind]), limit - n_pos)
    return pools[pos_kind][:n_pos] + pools[neg_kind][:n_neg]
