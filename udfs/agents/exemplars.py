"""The values schema.org's own examples give each property, shown to a verdict agent beside the
property ("values of isbn in schema.org's examples: 0316769487, ...") so that it knows what kind
of value the property takes: a product name under ``gtin13`` or a telephone number under
``addressLocality`` looks like none of them.

``exemplars(prop, value=..., text=...)`` picks up to ``k`` distinct values of ``prop`` from the
bundled examples (``udfs.agents.prompts.load_examples``), in a fixed sha256 order, never the
claim's own value and never one from an example whose text is ``text``: judged against a
schema.org example's text (the benchmark's ground truth is built from them), the agent does not
see that example's markup. Pure apart from reading the bundled examples once.
"""
from __future__ import annotations

import functools
import hashlib

from udfs.agents.prompts import load_examples
from udfs.schemaorg.markup import Literal, MarkupError, parse_markup

MAX_CHARS = 60  # an exemplar longer than this is cut: it shows a kind of value, not a text


def _norm(s: str) -> str:
    return " ".join((s or "").split()).casefold()


@functools.lru_cache(maxsize=2)
def _index(path: str | None = None) -> dict[str, tuple[tuple[str, frozenset[str]], ...]]:
    """property -> ((value, the texts of the examples that give it), ...): literal values, and a
    described node by its name."""
    found: dict[str, dict[str, set[str]]] = {}
    for ex in load_examples(path):
        try:
            m = parse_markup(ex.jsonld)
        except MarkupError:
            continue
        for t in m.triples():
            v = t.value
            if isinstance(v, Literal):
                text = v.text
            else:
                ent = m.entities.get(v.id)
                names = [x.text for x in (ent.properties.get("name", ()) if ent else ()) if isinstance(x, Literal)]
                if not names:
                    continue
                text = names[0]
            text = " ".join(text.split())
            if text:
                found.setdefault(t.property, {}).setdefault(text, set()).add(ex.text)
    return {p: tuple(sorted(((v, frozenset(ts)) for v, ts in vals.items()),
                            key=lambda vt: hashlib.sha256(f"{p}\x1f{vt[0]}".encode()).hexdigest()))
            for p, vals in found.items()}


def exemplars(prop: str, *, value: str = "", text: str | None = None, k: int = 3,
              path: str | None = None) -> list[str]:
    """Up to ``k`` values of ``prop`` from schema.org's examples (module docstring), each cut to
    ``MAX_CHARS``; [] for a property no example uses."""
    out: list[str] = []
    seen = {_norm(value)}
    for v, texts in _index(path).get(prop, ()):
        if _norm(v) in seen or (text is not None and text in texts):
            continue
        seen.add(_norm(v))
        out.append(v if len(v) <= MAX_CHARS else v[:MAX_CHARS].rstrip() + "...")
        if len(out) == k:
            break
    return out


def shown(prop: str, **kw) -> str:
    """The exemplars as the prompts show them: quoted, comma-separated; "(none)" without any."""
    found = exemplars(prop, **kw)
    return ", ".join(f'"{v}"' for v in found) if found else "(none)"
