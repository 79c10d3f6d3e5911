"""The configuration reference: every setting the project reads, as Markdown tables of key, type,
default and meaning, generated from the typed configuration so that no value is written twice.

- ``conf/pipeline.toml``: the keys and types come from :mod:`udfs.runtime.config`'s section
  dataclasses, the defaults from the file itself (it is their only home), and the meaning from the
  comment block right above each key (every key has one: ``tests/runtime/test_reference.py``).
- ``conf/serving*.toml``: the keys, types, defaults and meanings come from the serving dataclasses
  (:func:`udfs.llm.serving.config.config_reference`, rows of the same shape).

The documentation site renders both with :func:`section_markdown` in place of the marker
``<!-- config-reference -->`` of ``docs/configuration.md`` (``docs/hooks/config_reference.py``),
so ``mkdocs build`` always shows the configuration as the code reads it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from udfs.runtime.config import SECTIONS, ConfigKey, describe_section, load_config
from udfs.runtime.paths import DEFAULT_CONF

MARKER = "<!-- config-reference -->"

_SECTION = re.compile(r"^\[([A-Za-z0-9_.]+)\]\s*$")
_KEY = re.compile(r"^([A-Za-z0-9_]+)\s*=")


def toml_comments(path: str | Path) -> dict[tuple[str, str], str]:
    """(section, key) -> the comment block right above the key in a TOML file, as one line of text
    ("" for a key with none). A comment block followed by a blank line describes what follows in
    general (the file, a section) and belongs to no key."""
    comments: dict[tuple[str, str], str] = {}
    section = ""
    block: list[str] = []
    for raw in Path(path).read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if m := _SECTION.match(line):
            section, block = m.group(1), []
        elif line.startswith("#"):
            block.append(line.lstrip("#").strip())
        elif not line:
            block = []
        elif (m := _KEY.match(line)) and section:
            comments[(section, m.group(1))] = " ".join(block)
            block = []
    return comments


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return str(value)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def pipeline_rows(path: str | Path = DEFAULT_CONF) -> list[ConfigKey]:
    """Every key of the pipeline file, in the dataclasses' order (:func:`describe_section`); the
    default is the file's value and the meaning its comment."""
    config = load_config(path)
    comments = toml_comments(path)
    return [
        row._replace(default=getattr(getattr(config, name), row.key), doc=comments.get((name, row.key), ""))
        for name, cls in SECTIONS.items()
        for row in describe_section(cls, name)
    ]


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
            out.append(f"| `{k.key}` | {k.type} | {default} | {_cell(k.doc)}{choices} |")
        out.append("")
    return "\n".join(out)
