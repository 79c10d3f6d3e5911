"""The validity agent's command: ``python -m udfs.agents.validity`` (console script
``llm4schema-validity``), one JSON object per line per triple, per file or per disagreement."""

from __future__ import annotations

import argparse
import json
import sys

from udfs.agents.validity.compare import ModeComparison
from udfs.agents.validity.engines import ENGINES
from udfs.agents.validity.findings import MODES
from udfs.agents.validity.paper import paper_triples
from udfs.agents.validity.validator import ValidityAgent
from udfs.schemaorg.markup import MarkupError, parse_markup


def main(argv: list[str] | None = None) -> int:
    from udfs.runtime.cli import ArgumentParser, HelpFormatter, check_config_value, fail
    from udfs.runtime.config import ConfigError, exit_on_config_error, load_config
    from udfs.runtime.paths import DEFAULT_CONF

    prog = "python -m udfs.agents.validity"
    pre = ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument("--config", default=str(DEFAULT_CONF))
    known, _ = pre.parse_known_args(argv)
    check_config_value(prog, known.config)
    try:
        conf = load_config(known.config).validity
    except ConfigError as exc:
        exit_on_config_error(prog, exc)
    ap = ArgumentParser(
        prog=prog,
        formatter_class=HelpFormatter,
        allow_abbrev=False,
        description="Validity verdicts of JSON-LD markups: one JSON object per line per "
        "(subject, property, value, entity type) triple. A markup without @context is read as "
        "schema.org; remote contexts are never fetched.",
    )
    ap.add_argument("files", nargs="+", metavar="FILE", help="JSON-LD files ('-' = standard input)")
    ap.add_argument(
        "--config", default=str(DEFAULT_CONF), help="pipeline configuration (TOML) whose [validity] gives the defaults"
    )
    ap.add_argument(
        "--engine",
        choices=ENGINES,
        default=conf.engine,
        help="compiled (fast, the pipeline's) or pyshacl (the reference)",
    )
    ap.add_argument(
        "--strict",
        action=argparse.BooleanOptionalAction,
        default=conf.strict,
        help="strict reading of literal values (false: lenient, the paper's)",
    )
    ap.add_argument("--vocab", default=conf.vocab, help="schema.org release")
    ap.add_argument(
        "--validity-mode",
        choices=MODES,
        default=conf.mode,
        help="schemaorg: schema.org's rules, one line per (subject, property, value, entity "
        "type); paper: the paper's filter, one line per triple as the paper counts them "
        "(the share of valid lines is its Table 7 share)",
    )
    ap.add_argument(
        "--compare-modes",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="read the files in both modes, counted the paper's way: one line per triple the "
        "modes disagree on (which mode removes it, and why), then one summary line with "
        "both shares and the disagreements by cause",
    )
    ap.add_argument(
        "--cleaned",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="print one line per file with the markup without its invalid property values instead",
    )
    args = ap.parse_args(argv)
    if args.compare_modes and args.cleaned:
        fail(prog, "--compare-modes and --cleaned exclude each other")
    va = ValidityAgent(args.engine, args.strict, args.vocab, args.validity_mode)
    comparison = ModeComparison() if args.compare_modes else None
    from udfs.runtime.cli import error, json_lines_out

    json_lines_out()  # a lone surrogate escaped in a file is written back, not a traceback
    status = 0
    for name in args.files:
        try:
            text = sys.stdin.read() if name == "-" else open(name, encoding="utf-8").read()
            if comparison is not None:
                m = parse_markup(text)
                seen = len(comparison.rows)
                comparison.add(m, va.findings_many([m])[0], va.model, name)
                for row in comparison.rows[seen:]:
                    print(json.dumps(row, ensure_ascii=False))
                continue
            res = va.validate(text)
        except (OSError, ValueError, RecursionError) as e:  # MarkupError and UnicodeDecodeError included
            # one bad file is a line on each stream (the JSON row keeps stdout one record per
            # file) and the others are still read; the exit status says one failed
            reason = e.reason if isinstance(e, MarkupError) else f"{type(e).__name__}: {e}"
            error(prog, f"{name}: {reason}")
            print(json.dumps({"file": name, "error": reason}, ensure_ascii=False))
            status = 1
            continue
        if args.cleaned:
            print(json.dumps({"file": name, "markup": res.cleaned}, ensure_ascii=False))
        elif va.mode == "paper":
            for row in paper_triples(res.markup, res.verdicts):
                print(json.dumps({"file": name, **row}, ensure_ascii=False))
        else:
            for v in res.verdicts:
                print(json.dumps({"file": name, **v.as_dict()}, ensure_ascii=False))
    if comparison is not None:
        print(json.dumps({"summary": comparison.summary()}, ensure_ascii=False))
    return status
