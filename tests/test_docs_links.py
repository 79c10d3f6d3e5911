"""Links and section pointers that ``mkdocs build --strict`` does not check.

mkdocs checks the links of the pages under ``docs/`` (``mkdocs.yml``'s ``validation``: a missing
page or anchor fails the strict build, ``make docs``). It does not see the Markdown outside
``docs/``: the README (the front door, read on the forge and in the clone), the READMEs of
``experiments/``, ``cluster/``, ``shapes/`` and ``data/``. Nor does it see the pointers written as
prose in ``conf/*.toml``, ``conf/prompts/``, code comments, docstrings and any Markdown file: a
Markdown path (or the bare word README, the root README), then a heading in double quotes, as in
``docs/results/judge.md "The gate (the default judge)"``. Checked here:

* every relative link of a Markdown file outside ``docs/`` names a file or folder that exists,
  and its ``#anchor`` is the anchor of a heading of that Markdown file (a page under ``docs/``:
  the same anchor on the site, mkdocs' slug, and on the forge, GitHub's; any other file: GitHub's);
* every such pointer names a Markdown file that exists and a heading of it, word for word (case,
  backticks and runs of whitespace aside).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify  # the ids mkdocs gives headings

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "docs"  # mkdocs.yml's docs_dir: its links are the strict build's to check
# Text files that may hold a pointer to a section: sources, configuration, prompts, documentation.
POINTER_SUFFIXES = {".py", ".toml", ".md", ".txt", ".yml", ".yaml", ".sh", ".cfg", ".properties"}
POINTER_NAMES = {"Makefile"}
MAX_TEXT_BYTES = 1 << 20  # bundled data (the schema.org examples, 6 MB) is not prose

FENCE = re.compile(r"^\s*(```|~~~)")
ATX_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# [text](target) and ![alt](target), an optional "title" after the target
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
# A section pointer: a Markdown path (or the bare word README), a comma or blanks (a comment's line
# break and its "#" included), then the heading in double or typographic quotes.
POINTER = re.compile(
    r"(?<![\w/.-])(?P<path>(?:[\w.-]+/)*(?:README|[\w.-]+\.md))"
    r"(?:'s)?(?:,\s*|\s+)(?:#\s*)?[\"“](?P<heading>[^\"”\n]{2,120})[\"”]"
)


@dataclass(frozen=True)
class Heading:
    text: str  # as written, inline Markdown removed
    line: int


def _plain(heading: str) -> str:
    """A heading's text as rendered: links reduced to their text, code spans and emphasis unmarked."""
    heading = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    heading = heading.replace("`", "")
    return re.sub(r"(\*\*|\*|__)(.+?)\1", r"\2", heading).strip()


def _outside_code(lines: list[str]):
    """(line number, line) of a Markdown file's lines outside fenced code blocks."""
    fence = None
    for number, line in enumerate(lines, 1):
        m = FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1) == fence:
                fence = None
            continue
        if fence is None:
            yield number, line


def headings(path: Path) -> list[Heading]:
    """The ATX headings of a Markdown file, those inside fenced code (a shell comment) left out."""
    found = []
    for number, line in _outside_code(path.read_text(encoding="utf-8").splitlines()):
        m = ATX_HEADING.match(line)
        if m:
            found.append(Heading(_plain(m.group(2)), number))
    return found


def github_anchor(text: str) -> str:
    """The id GitHub gives a heading: lower case, punctuation other than ``-`` and ``_`` dropped,
    each space a hyphen (runs are not merged)."""
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def _with_duplicates(ids: list[str], separator: str) -> set[str]:
    """Anchors of headings in order: a repeated id takes ``<separator>1``, ``<separator>2``..."""
    seen: dict[str, int] = {}
    out = set()
    for anchor in ids:
        if anchor in seen:
            seen[anchor] += 1
            out.add(f"{anchor}{separator}{seen[anchor]}")
        else:
            seen[anchor] = 0
            out.add(anchor)
    return out


def anchors(path: Path) -> set[str]:
    """The anchors a link into ``path`` may name: on the site (mkdocs) and on the forge (GitHub)
    for a page of ``docs/``, on the forge for any other Markdown file."""
    texts = [h.text for h in headings(path)]
    forge = _with_duplicates([github_anchor(t) for t in texts], "-")
    if SITE in path.parents:
        return forge & _with_duplicates([slugify(t, "-") for t in texts], "_")
    return forge


def project_files() -> list[Path]:
    """The project's files: tracked, or new and not ignored (a build's output and the venv are not
    the project's)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return sorted({ROOT / name for name in listed.split("\0") if name and (ROOT / name).is_file()})


def markdown_outside_site(files: list[Path]) -> list[Path]:
    return [f for f in files if f.suffix == ".md" and SITE not in f.parents]


def broken_links(path: Path) -> list[str]:
    """Every relative link of a Markdown file whose target or anchor does not exist, as
    ``file:line: target (why)``."""
    problems = []
    for number, line in _outside_code(path.read_text(encoding="utf-8").splitlines()):
        for target in LINK.findall(INLINE_CODE.sub("", line)):
            if SCHEME.match(target) or target.startswith("/"):
                continue  # a URL: not the project's to check here
            name, _, anchor = target.partition("#")
            dest = (path.parent / name).resolve() if name else path
            where = f"{path.relative_to(ROOT)}:{number}: {target}"
            if not dest.exists():
                problems.append(f"{where} (no such file)")
            elif anchor and dest.suffix != ".md":
                problems.append(f"{where} (an anchor into a file that is not Markdown)")
            elif anchor and anchor not in anchors(dest):
                problems.append(f"{where} (no heading with this anchor in {dest.relative_to(ROOT)})")
    return problems


def _normal(text: str) -> str:
    return " ".join(text.replace("`", "").split()).casefold()


def pointers(path: Path) -> list[tuple[int, str, str]]:
    """(line, Markdown path, heading) of each section pointer in a text file."""
    text = path.read_text(encoding="utf-8", errors="replace")
    return [(text.count("\n", 0, m.start()) + 1, m.group("path"), m.group("heading")) for m in POINTER.finditer(text)]


def pointer_target(source: Path, named: str) -> Path | None:
    """The Markdown file a pointer names: ``README`` is the root README; a path is read from the
    project root first (``docs/results/judge.md``), then from the pointing file's folder."""
    if named == "README":
        return ROOT / "README.md"
    for candidate in (ROOT / named, source.parent / named):
        if candidate.is_file():
            return candidate
    return None


def broken_pointers(path: Path) -> list[str]:
    problems = []
    for line, named, heading in pointers(path):
        where = f'{path.relative_to(ROOT)}:{line}: {named} "{heading}"'
        target = pointer_target(path, named)
        if target is None:
            problems.append(f"{where} (no such file)")
        elif _normal(heading) not in {_normal(h.text) for h in headings(target)}:
            problems.append(f"{where} (no such heading in {target.relative_to(ROOT)})")
    return problems


def _pointer_files(files: list[Path]) -> list[Path]:
    return [
        f
        for f in files
        if (f.suffix in POINTER_SUFFIXES or f.name in POINTER_NAMES) and f.stat().st_size <= MAX_TEXT_BYTES
    ]


@pytest.fixture(scope="module")
def files() -> list[Path]:
    return project_files()


def test_links_outside_the_site_resolve(files):
    pages = markdown_outside_site(files)
    assert ROOT / "README.md" in pages
    readme_links = [
        t
        for _, line in _outside_code((ROOT / "README.md").read_text().splitlines())
        for t in LINK.findall(INLINE_CODE.sub("", line))
    ]
    assert any("#" in t for t in readme_links), "the README's links were not read (no anchored link found)"
    problems = [p for page in pages for p in broken_links(page)]
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_section_pointers_name_existing_headings(files):
    scanned = _pointer_files(files)
    assert any(pointers(f) for f in scanned if f.parent == ROOT / "conf"), "no pointer read in conf/"
    problems = [p for f in scanned for p in broken_pointers(f)]
    assert not problems, "pointers to missing sections:\n" + "\n".join(problems)


def test_forge_anchors():
    # GitHub's ids of headings like the project's: a code span, an apostrophe and a dot, and where
    # it differs from mkdocs' (a dropped "&" leaves two hyphens), so a docs page's anchor must
    # suit both renderers.
    assert github_anchor(_plain("Throughput against `zcat`")) == "throughput-against-zcat"
    assert github_anchor("Table 7: every markup of the paper's results.csv") == (
        "table-7-every-markup-of-the-papers-resultscsv"
    )
    assert github_anchor("Spark & Ray") == "spark--ray" != slugify("Spark & Ray", "-")
