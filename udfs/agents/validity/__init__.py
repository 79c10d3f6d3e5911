"""The validity agent: which property values of a markup break schema.org's rules.

One verdict per (subject, property, value, entity type) triple of a markup (see
:meth:`udfs.schemaorg.markup.Markup.triples`), with the rule it breaks and a reason:

1. the entity type is defined in schema.org (an untyped subject breaks it too);
2. the property is defined for the type or inherited from one of its ancestors;
3. the value matches the property's expected types (subtypes of a range type included).

Values are read *leniently* by default, as in the paper's runs (a literal is never rejected, an
untyped IRI is a link; only entity values of the wrong type and untyped blank entities are);
``strict=True`` reads them strictly (literals must match a datatype of the range, enumeration
members must be IRIs). ``shapes/README.md`` details both readings.

Two engines give the same findings: ``pyshacl`` validates an RDF view of the markup against the
generated shapes (``shapes/schemaorg-<release>[.strict].shapes.ttl``), the reference; ``compiled``
evaluates the same shape model (:func:`udfs.schemaorg.shapes.build_model`) from in-memory indexes, for
the pipeline. Both report *findings*; one shared function turns findings into verdicts and the
cleaned markup (a property value is kept when it is valid for at least one of its subject's types).

Two modes (``[validity] mode``, ``--validity-mode``):

* ``schemaorg`` (default), schema.org's rules as above: an entity of several types has the union
  of their properties; only the offending triple goes (a node value takes its subtree with it); a
  property whose range includes ``URL`` takes any IRI, also one the markup describes as a typed
  node;
* ``paper``, the paper's filter exactly (:func:`.paper.paper_removals`): each type of a multi-typed
  entity closes it, an entity of an undefined type goes whole, a non-string literal no datatype of
  the range accepts is flagged, and a flagged value removes every equal leaf of the markup (a
  flagged blank node: its property, from every node). :func:`paper_triples` counts the paper's way.

Retired terms (schema.org's "attic": ``hasProductReturnPolicy``, ``ProductReturnPolicy``, ...) are
named by the release's context but absent from its vocabulary, so they have no domain or range to
check: both modes reject them like undefined terms, with their own cause (``retired term``) and a
reason that says so (:func:`.findings.retired_terms`).

Command line: ``python -m udfs.agents.validity [--engine compiled|pyshacl] [--strict]
[--validity-mode schemaorg|paper] [--compare-modes] FILE...`` prints one JSON object per line per
triple (``-`` reads standard input); ``--compare-modes`` prints the triples the modes disagree on
and a summary line with both shares.

The modules, by concern:

* :mod:`.findings`: what the engines report (:class:`Findings`), the verdicts and causes, the
  schemaorg reading's verdicts and cleaned markup;
* :mod:`.engines`: the compiled engine and the pySHACL reference;
* :mod:`.paper`: the paper mode (its filter and its way of counting triples);
* :mod:`.compare`: the two modes compared (``--compare-modes``);
* :mod:`.validator`: :class:`ValidityAgent` and the cached :func:`agent` / :func:`validate`;
* :mod:`.cli`: the command (``__main__`` runs it).

This package re-exports what the rest of the project imports from it.
"""

from __future__ import annotations

from udfs.agents.validity.compare import ModeComparison
from udfs.agents.validity.findings import MODES
from udfs.agents.validity.paper import counted_keys, paper_triples
from udfs.agents.validity.validator import ValidityAgent, agent, validate

__all__ = ["MODES", "ModeComparison", "ValidityAgent", "agent", "counted_keys", "paper_triples", "validate"]
