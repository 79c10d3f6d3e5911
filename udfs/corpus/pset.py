"""The LLM4Schema.org paper's evaluation folder (``data/WDC/Pset`` of GitHub GDD-Nantes/LLM4SchemaOrg),
read offline: from a checkout of that repository or from a git bundle of the folder's history.

    src = open_pset("/data/llm4schemaorg-pset/pset-history.bundle")   # or a checkout's root
    src.read("data/WDC/Pset/results.csv")                               # the last commit
    src.read(path, commit="434662f6871b672fc7c1f7bb1e911fc3c051be06")  # an original commit
    src.files()                                                         # every path under the folder

The bundle (one snapshot commit per original commit that touched the folder, in the original
order) comes with ``commits.tsv`` beside it (``original_commit``, ``snapshot_commit``); it is cloned
once into ``<cache>/<sha256 of the bundle>/`` (by default under the system temp dir), so a second
open costs a hash of the file. Paths are the paper repository's (``data/WDC/Pset/...``); commits
are always the original repository's, never the snapshots'. The repository publishes no licence:
its files are read where they lie, never copied into the project.
"""

from __future__ import annotations

import csv
import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

PSET = "data/WDC/Pset"
BUNDLE = "pset-history.bundle"
COMMITS = "commits.tsv"
# The paper's three markup sources as results.csv names them, the folder of each under
# <feature>/<stratum>/corpus/, and the names this project gives them.
SOURCES = {
    "human": "baseline",
    "GPT-3.5": "GPT_3_Turbo_16K/text2kg_prompt3",
    "GPT-4": "GPT_4_Turbo_Preview/text2kg_prompt3",
}
APPROACHES = {"GPT_3_Turbo_16K": "GPT-3.5", "GPT_4_Turbo_Preview": "GPT-4"}


class PsetError(Exception):
    """A source that is not the paper's folder, a commit it does not hold, a path absent there."""


@dataclass
class PsetSource:
    """The paper's folder at any of its commits. ``root`` is a working tree whose ``data/WDC/Pset``
    is the folder at the last commit (or at the checkout's own commit, for a checkout); ``git_dir``
    is set when older commits can be read; ``snapshots`` maps an original commit to the commit of
    ``git_dir`` that holds the folder as it stood there (identity for a checkout of the original
    repository)."""

    root: Path
    git_dir: Path | None = None
    snapshots: dict[str, str] | None = None  # None: the repository's own commits
    _listed: dict[str | None, list[str]] = field(default_factory=dict, repr=False)

    def _rev(self, commit: str) -> str:
        if self.git_dir is None:
            raise PsetError(f"{self.root} is no git checkout: only its own files can be read (commit=None)")
        if self.snapshots is None:
            return commit
        if commit not in self.snapshots:
            raise PsetError(f"commit {commit} did not touch {PSET}: {COMMITS} does not name it")
        return self.snapshots[commit]

    def read(self, path: str, commit: str | None = None) -> bytes:
        """The bytes of ``path`` (``data/WDC/Pset/...``) at original ``commit`` (None: the last)."""
        if not path.startswith(PSET + "/"):
            raise PsetError(f"{path} is not under {PSET}/")
        if commit is None:
            f = self.root / path
            if not f.is_file():
                raise PsetError(f"{path} is absent at the last commit")
            return f.read_bytes()
        run = subprocess.run(
            ["git", "--git-dir", str(self.git_dir), "cat-file", "blob", f"{self._rev(commit)}:{path}"],
            capture_output=True,
        )
        if run.returncode:
            raise PsetError(f"{path} is absent at commit {commit}")
        return run.stdout

    def exists(self, path: str, commit: str | None = None) -> bool:
        """Whether ``path`` is a file at ``commit``."""
        return path in set(self.files(commit))

    def files(self, commit: str | None = None) -> list[str]:
        """Every file path under ``data/WDC/Pset`` at original ``commit`` (None: the last), sorted."""
        if commit not in self._listed:
            if commit is None:
                base = self.root / PSET
                if not base.is_dir():
                    raise PsetError(f"{self.root} holds no {PSET}")
                out = sorted(p.relative_to(self.root).as_posix() for p in base.rglob("*") if p.is_file())
            else:
                run = subprocess.run(
                    ["git", "--git-dir", str(self.git_dir), "ls-tree", "-r", "--name-only", self._rev(commit), PSET],
                    capture_output=True,
                    text=True,
                )
                if run.returncode:
                    raise PsetError(f"commit {commit}: {run.stderr.strip()}")
                out = sorted(run.stdout.splitlines())
            self._listed[commit] = out
        return self._listed[commit]

    def original_commits(self) -> list[str]:
        """The original commits this source can read, oldest first (a checkout: only when it is a
        git repository, then its history of the folder)."""
        if self.git_dir is None:
            return []
        if self.snapshots is not None:
            order = _git(self.git_dir, "rev-list", "--reverse", "HEAD").split()
            back = {s: o for o, s in self.snapshots.items()}
            return [back[s] for s in order if s in back]
        return _git(self.git_dir, "rev-list", "--reverse", "HEAD", "--", PSET).split()


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(git_dir), *args], check=True, capture_output=True, text=True).stdout


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def default_cache() -> Path:
    """Where bundles are cloned unless told: ``<system temp dir>/llm4schema-pset``."""
    return Path(tempfile.gettempdir()) / "llm4schema-pset"


def read_commits(path: Path) -> dict[str, str]:
    """``commits.tsv``: original commit to snapshot commit."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    if not rows or set(rows[0]) != {"original_commit", "snapshot_commit"}:
        raise PsetError(f"{path}: expected the columns original_commit, snapshot_commit")
    return {r["original_commit"]: r["snapshot_commit"] for r in rows}


def open_pset(source: str | os.PathLike, cache: str | os.PathLike | None = None) -> PsetSource:
    """The paper's folder from ``source``: a checkout (a folder holding ``data/WDC/Pset``), the
    bundle file, or the folder holding the bundle and ``commits.tsv``. A bundle is cloned once into
    ``cache`` (default :func:`default_cache`) under its sha256; its ``commits.tsv`` must lie beside
    it."""
    src = Path(source)
    if src.is_dir() and (src / BUNDLE).is_file():
        src = src / BUNDLE
    if src.is_dir():
        if not (src / PSET).is_dir():
            raise PsetError(f"{src} holds neither {PSET} nor {BUNDLE}")
        git_dir = src / ".git" if (src / ".git").exists() else None
        return PsetSource(src, git_dir, None)
    if not src.is_file():
        raise PsetError(f"{src}: no such file or folder")
    commits = src.parent / COMMITS
    if not commits.is_file():
        raise PsetError(f"{commits} is missing: the bundle's commits cannot be mapped to the original ones")
    snapshots = read_commits(commits)
    dest = Path(cache) if cache is not None else default_cache()
    clone = dest / _sha256(src)
    if not (clone / PSET).is_dir():
        dest.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".clone-", dir=dest))
        try:
            run = subprocess.run(["git", "clone", "-q", str(src), str(work / "t")], capture_output=True, text=True)
            if run.returncode:
                raise PsetError(f"{src}: not a git bundle git can clone ({run.stderr.strip()})")
            try:
                os.replace(work / "t", clone)
            except OSError:
                if not (clone / PSET).is_dir():  # a concurrent clone won the rename: use it
                    raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
    heads = set(_git(clone / ".git", "rev-list", "HEAD").split())
    if not set(snapshots.values()) <= heads:
        raise PsetError(f"{commits} names snapshot commits that {src} does not hold")
    return PsetSource(clone, clone / ".git", snapshots)


@dataclass(frozen=True)
class ResultsRow:
    """One markup the paper scored (its ``results.csv``, metrics ``input`` and ``shacl``): the
    triples it counted in and after its validity filter, and where the markup and the filter's
    output lie. The same page under both features is two rows, as in the paper's sums."""

    source: str  # human | GPT-3.5 | GPT-4
    feature: str  # pset_length | count_sum
    stratum: int  # 0, 1, 2
    document_id: str
    classes: str  # the file name's types, joined by "_"
    triples_in: int
    triples_kept: int

    @property
    def markup(self) -> str:
        return f"{PSET}/{self.feature}/stratum_{self.stratum}/corpus/{SOURCES[self.source]}/{self.document_id}_{self.classes}.jsonld"

    @property
    def filtered(self) -> str:
        inst = "expected" if self.source == "human" else "pred"
        return self.markup[: -len(".jsonld")] + f"_shacl_{inst}_filtered.jsonld"


def results_rows(src: PsetSource, commit: str | None = None) -> list[ResultsRow]:
    """The markups of the paper's Table 7, from ``results.csv``: for each model approach its
    ``pred`` rows, and the human markup once (the ``expected`` rows of GPT-3.5's approach; GPT-4's
    repeat them)."""
    text = src.read(f"{PSET}/results.csv", commit).decode("utf-8")
    counts: dict[tuple, dict[str, int]] = {}
    for r in csv.DictReader(text.splitlines()):
        if r["metric"] not in ("input", "shacl") or r["approach"] not in APPROACHES:
            continue
        if r["instance"] == "expected":
            if r["approach"] != "GPT_3_Turbo_16K":
                continue
            source = "human"
        else:
            source = APPROACHES[r["approach"]]
        key = (
            source,
            r["sample_feature"],
            int(r["stratum"].removeprefix("stratum_")),
            r["document_id"],
            r["document_classes"],
        )
        counts.setdefault(key, {})[r["metric"]] = int(float(r["n_triples"]))
    return [ResultsRow(*k, c["input"], c["shacl"]) for k, c in sorted(counts.items())]
