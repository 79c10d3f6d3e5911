"""The generated configuration reference (docs/configuration.md): every setting has a meaning and
its default is the value the code reads."""
from __future__ import annotations

from udfs.runtime.config import SECTIONS, load_config
from udfs.runtime.reference import pipeline_rows, toml_comments


def test_every_pipeline_key_has_its_own_comment():
    undocumented = [f"[{s}] {k}" for s, rows in pipeline_rows().items() for k, _, _, meaning in rows if not meaning]
    assert undocumented == []


def test_reference_defaults_are_the_values_the_code_reads():
    config = load_config()
    rows = pipeline_rows()
    assert list(rows) == list(SECTIONS)
    evaluate = dict((k, d) for k, _, d, _ in rows["evaluate"])
    assert evaluate["limit"] == str(config.evaluate.limit)
    assert evaluate["order"] == f'"{config.evaluate.order}"'


def test_comments_belong_to_the_key_below_them(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text('# the file\n\n[a]\n# one\n# two\nk = 1\nj = 2\n\n# general\n\n# three\nm = "x"\n')
    assert toml_comments(path) == {("a", "k"): "one two", ("a", "j"): "", ("a", "m"): "three"}
