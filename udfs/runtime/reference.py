"""The configuration reference and ``conf/pipeline.toml``, both generated from the settings'
declarations (:mod:`udfs.runtime.config`), so that no default or meaning is written twice.

- :func:`pipeline_rows`: every setting of the pipeline (section, key, type, range, default,
  choices, meaning), from the section dataclasses' declarations.
- :func:`pipeline_toml`: the text of ``conf/pipeline.toml``: every section and key with its
  default, each under its meaning as a comment. ``python -m udfs.runtime.reference --write-conf``
  writes it; ``--check`` exits 1 when the file differs (``tests/runtime/test_reference.py`` checks
  the same).
- ``conf/serving*.toml``: the rows come from the serving dataclasses
  (:func:`udfs.llm.serving.config.config_reference`, rows of the same shape).

The documentation site renders both with :func:`section_markdown` in place of the marker
``<!-- config-reference -->`` of ``docs/configuration.md`` (``docs/hooks/config_reference.py``),
so ``mkdocs build`` always shows the configuration as the code reads it.
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

from udfs.runtime.config import SECTIONS, ConfigKey, describe_section
from udfs.runtime.paths import DEFAULT_CONF

MARKER = "<!-- config-reference -->"
WIDTH = 100  # the project's line length (pyproject.toml)

HEADER = """\
The pipeline's settings: every job's section (the section name is the job's name; its keys are the
job's flags, --key-with-dashes), [judge] (the settings of both jobs that judge), and the settings of
the scores and of the validity agent, each key with its default and what it means.
GENERATED from the declarations in udfs/runtime/config.py (where each setting's type, range,
default and help live) by `python -m udfs.runtime.reference --write-conf`: edit those, not this file.
A flag on the command line wins over this file; `python jobs/<job>.py --help` shows the result.
Your own file: --config path/to/your.toml. It replaces this one, and every key or section it
leaves out takes its declared default (the value shown here); an unknown key, a value of the wrong
type or outside its range is an error naming it."""


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a TOML basic string
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return repr(value)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def pipeline_rows() -> list[ConfigKey]:
    """Every setting of the pipeline, section by section in the file's order, each in its
    section's declaration order (:func:`describe_section`)."""
    return [row for name, cls in SECTIONS.items() for row in describe_section(cls, name)]


def _plain(text: str) -> str:
    """A docstring's reStructuredText as plain text: ``x`` and :role:`x` become x."""
    return re.sub(r"(?::\w+:)?`+([^`]+)`+", r"\1", text)


def _comment(text: str) -> list[str]:
    return textwrap.wrap(text, WIDTH - 2, initial_indent="# ", subsequent_indent="# ", break_on_hyphens=False)


def pipeline_toml() -> str:
    """``conf/pipeline.toml`` as the declarations make it: the header, then per section its
    description (the dataclass's docstring) and each key under its meaning."""
    out = [line if line else "#" for line in (f"# {h}" if h else "" for h in HEADER.splitlines())]
    for name, cls in SECTIONS.items():
        out += ["", f"[{name}]"]
        intro = _plain(" ".join((cls.__doc__ or "").split()))
        if intro:
            out += _comment(intro) + [""]
        for row in describe_section(cls, name):
            doc = row.doc[:1].upper() + row.doc[1:] + ("" if row.doc.endswith(".") else ".")
            bounds = f" Range: {row.range}." if row.range else ""
            each = "Each item one of" if row.type.startswith("list") else "One of"
            choices = f" {each}: {', '.join(_toml_value(c) for c in row.choices)}." if row.choices else ""
            out += _comment(doc + bounds + choices)
            out.append(f"{row.key} = {_toml_value(row.default)}")
    return "\n".join(out) + "\n"


def section_markdown(title: str, intro: str, rows: list[ConfigKey], sections: list[str] = ()) -> str:
    """One file's part of the reference: a heading, an introduction, a table per section (in the
    order of ``sections``, then of the rows; a listed section without keys says so)."""
    by_section: dict[str, list[ConfigKey]] = {name: [] for name in sections}
    for row in rows:
        by_section.setdefault(row.section, []).append(row)
    out = [f"## {title}", "", intro, ""]
    for name, keys in by_section.items():
        out += [f"### `[{name}]`", ""]
        if not keys:
            out += ["(no settings)", ""]
            continue
        out += ["| key | type | default | meaning |", "|---|---|---|---|"]
        for k in keys:
            default = "(required)" if k.default is None and k.required else f"`{_cell(_toml_value(k.default))}`"
            choices = f" One of: {', '.join(f'`{_toml_value(c)}`' for c in k.choices)}." if k.choices else ""
            kind = f"{k.type}, {k.range}" if k.range else k.type
            out.append(f"| `{k.key}` | {kind} | {default} | {_cell(k.doc)}{choices} |")
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """``--write-conf``: write ``conf/pipeline.toml`` from the declarations; ``--check``: exit 1
    (naming the file) when it differs from them."""
    from udfs.runtime.cli import ArgumentParser, fail

    parser = ArgumentParser(prog="python -m udfs.runtime.reference", description=main.__doc__)
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--write-conf", action="store_true", default=False, help="write conf/pipeline.toml")
    what.add_argument("--check", action="store_true", default=False, help="is conf/pipeline.toml up to date?")
    args = parser.parse_args(argv)
    text = pipeline_toml()
    if args.write_conf:
        Path(DEFAULT_CONF).write_text(text, encoding="utf-8")
        print(f"wrote {DEFAULT_CONF}", file=sys.stderr)
        return 0
    if Path(DEFAULT_CONF).read_text(encoding="utf-8") != text:
        fail(parser.prog, f"{DEFAULT_CONF} differs from the declarations: run {parser.prog} --write-conf", code=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
