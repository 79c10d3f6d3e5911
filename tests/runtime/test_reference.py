"""The generated configuration reference (docs/configuration.md): every setting has a meaning and
its default is the value the code reads."""

from __future__ import annotations

from udfs.runtime.config import SECTIONS, load_config
from udfs.runtime.reference import pipeline_rows, toml_comments


def test_every_pipeline_key_has_its_own_comment():
    undocumented = [f"[{r.section}] {r.key}" for r in pipeline_rows() if not r.doc]
    assert undocumented == []


def test_reference_defaults_are_the_values_the_code_reads():
    config = load_config()
    rows = pipeline_rows()
    assert [r.section for r in rows if r.section in SECTIONS] == [r.section for r in rows]
    for r in rows:
        assert r.default == getattr(getattr(config, r.section), r.key)


def test_comments_belong_to_the_key_below_them(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text('# the file\n\n[a]\n# one\n# two\nk = 1\nj = 2\n\n# general\n\n# three\nm = "x"\n')
    assert toml_comments(path) == {("a", "k"): "one two", ("a", "j"): "", ("a", "m"): "three"}
