"""The configuration reference (docs/configuration.md) and conf/pipeline.toml are generated from the
settings' declarations (udfs/runtime/config.py): every setting has a meaning, the shipped file is
in sync with the declarations, and its values are the defaults the code declares."""

from __future__ import annotations

import subprocess
import sys
import tomllib

from udfs.runtime import config as C
from udfs.runtime.paths import DEFAULT_CONF, PROJECT_ROOT
from udfs.runtime.reference import pipeline_rows, pipeline_toml, section_markdown


def test_every_pipeline_key_has_its_own_meaning():
    undocumented = [f"[{r.section}] {r.key}" for r in pipeline_rows() if not r.doc]
    assert undocumented == []


def test_the_shipped_conf_file_is_the_one_the_declarations_make():
    """conf/pipeline.toml is generated: a default changed in a declaration and not written out (or
    an edit of the file by hand) fails here, naming the command that writes it."""
    assert DEFAULT_CONF.read_text(encoding="utf-8") == pipeline_toml(), (
        "conf/pipeline.toml is out of date: python -m udfs.runtime.reference --write-conf"
    )
    check = subprocess.run(
        [sys.executable, "-m", "udfs.runtime.reference", "--check"], cwd=PROJECT_ROOT, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stderr


def test_the_conf_files_values_are_the_declared_defaults():
    data = tomllib.loads(pipeline_toml())
    assert list(data) == list(C.SECTIONS)
    declared = C.parse_config({}, "<declared>")  # a file with nothing in it: every default
    shipped = C.load_config()
    for name, cls in C.SECTIONS.items():
        assert getattr(shipped, name) == getattr(declared, name) == cls(), name
    rows = pipeline_rows()
    assert [(r.section, r.key) for r in rows] == [(s, k) for s, table in data.items() for k in table]
    for r in rows:
        assert r.default == getattr(getattr(shipped, r.section), r.key)


def test_a_key_comment_holds_its_meaning_range_and_choices():
    text = pipeline_toml().replace("\n# ", " ")  # comment blocks as one line each
    assert "Range: in [0, 1].\nfactuality_gate = 0.1" in text
    assert 'One of: "direct", "guided", "fewshot".\nstrategy = "direct"' in text
    table = section_markdown("t", "i", [r for r in pipeline_rows() if r.section == "judge"], ["judge"])
    assert "| `factuality_gate` | number, in [0, 1] | `0.1` |" in table
