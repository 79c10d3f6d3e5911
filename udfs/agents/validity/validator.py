"""The validity agent's entry points: one mode, one engine, one release (:class:`ValidityAgent`),
and the cached agent per setting that the pipeline calls (:func:`agent`, :func:`validate`)."""

from __future__ import annotations

import functools
from typing import Sequence

from udfs.agents.validity.engines import ENGINES, CompiledChecker, PyShaclChecker
from udfs.agents.validity.findings import (
    MODES,
    Findings,
    ValidityResult,
    action_annotations,
    cleaned,
    removal_verdicts,
    verdicts,
)
from udfs.agents.validity.paper import paper_removals
from udfs.schemaorg.markup import Markup, parse_markup, to_jsonld
from udfs.schemaorg.shapes import build_model


class ValidityAgent:
    """Validate markups in one mode (``schemaorg`` or ``paper``) with one engine, strict or lenient,
    against the shapes of one schema.org release (``vocab``). Their values are conf/pipeline.toml's
    ``[validity]`` (``udfs.runtime.config.load_config().validity``); this package holds no default of
    its own. The paper mode is the paper's filter (:func:`udfs.agents.validity.paper.paper_removals`)
    computed from the shape model: ``engine`` and ``strict`` only shape the schemaorg reading."""

    def __init__(self, engine: str, strict: bool, vocab: str | None, mode: str):
        if engine not in ENGINES:
            raise ValueError(f"unknown engine {engine!r}: one of {', '.join(ENGINES)}")
        if mode not in MODES:
            raise ValueError(f"unknown validity mode {mode!r}: one of {', '.join(MODES)}")
        self.model = build_model(vocab)
        self.strict = strict
        self.engine = engine
        self.mode = mode
        self.checker = (
            CompiledChecker(self.model, strict) if engine == "compiled" else PyShaclChecker(self.model, strict)
        )

    def findings_many(self, markups: Sequence[Markup]) -> list[Findings]:
        if isinstance(self.checker, PyShaclChecker):
            return self.checker.findings_many(markups)
        return [self.checker.findings(m) for m in markups]

    def validate(self, markup: str | bytes | dict | list | Markup) -> ValidityResult:
        return self.validate_many([markup])[0]

    def validate_many(self, markups: Sequence[str | bytes | dict | list | Markup]) -> list[ValidityResult]:
        """Raises MarkupError for the first markup that cannot be read."""
        parsed = [m if isinstance(m, Markup) else parse_markup(m) for m in markups]
        out = []
        if self.mode == "paper":
            for m in parsed:
                removed, dead = paper_removals(m, self.model)
                out.append(
                    ValidityResult(
                        m,
                        removal_verdicts(m, removed, self.model),
                        to_jsonld(
                            m,
                            keep=lambda s, p, v, removed=removed: (s, p, v.key()) not in removed,
                            keep_type=lambda s, t, dead=dead: s not in dead,
                        ),
                    )
                )
            return out
        for m, f in zip(parsed, self.findings_many(parsed)):
            f = action_annotations(m, f, self.model)
            vs = verdicts(m, f, self.model, self.strict)
            out.append(ValidityResult(m, vs, cleaned(m, f)))
        return out


@functools.lru_cache(maxsize=8)
def agent(engine: str, strict: bool, vocab: str | None, mode: str) -> ValidityAgent:
    return ValidityAgent(engine, strict, vocab, mode)


def validate(
    markup: str | bytes | dict | list | Markup, engine: str, strict: bool, vocab: str | None, mode: str
) -> ValidityResult:
    """Verdicts and cleaned markup of one JSON-LD markup (text or parsed JSON). Fetches nothing."""
    return agent(engine, strict, vocab, mode).validate(markup)
