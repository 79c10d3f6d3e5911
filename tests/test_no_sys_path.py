"""No file of jobs/, benchmarks/ or cluster/ edits ``sys.path`` (issue 40): the project is installed
into the venv (``make setup``), so every entry point imports ``udfs`` as it is installed, and a
benchmark that reads another checkout gives a subprocess that checkout's ``PYTHONPATH``
(``benchmarks/jsonld_differential.py``, ``benchmarks/quads_differential.py``). Read from the
sources (``ast``), nothing is imported."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("jobs", "benchmarks", "cluster")
# list methods that change the list in place, and the assignments that replace it
_MUTATORS = {"append", "insert", "extend", "remove", "pop", "clear", "__setitem__", "__iadd__"}


def _is_sys_path(node: ast.AST) -> bool:
    """``sys.path`` (``sys`` imported as itself) or ``path`` imported from ``sys``."""
    if isinstance(node, ast.Attribute) and node.attr == "path":
        return isinstance(node.value, ast.Name) and node.value.id == "sys"
    return False


def sys_path_edits(source: str) -> list[int]:
    """Line numbers where ``source`` edits ``sys.path``: a call of a mutating list method on it
    (``sys.path.insert(0, ...)``), an assignment to it or to an item or slice of it, an augmented
    assignment (``sys.path += [...]``), ``del sys.path[...]``, ``site.addsitedir`` and ``from sys
    import path`` (whose list is then edited out of sight)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            f = node.func
            if f.attr in _MUTATORS and _is_sys_path(f.value):
                lines.append(node.lineno)
            elif f.attr == "addsitedir" and isinstance(f.value, ast.Name) and f.value.id == "site":
                lines.append(node.lineno)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for t in targets:
                if _is_sys_path(t) or (isinstance(t, ast.Subscript) and _is_sys_path(t.value)):
                    lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "sys" and any(a.name == "path" for a in node.names):
            lines.append(node.lineno)
    return sorted(lines)


def _files() -> list[Path]:
    return sorted(p for folder in FOLDERS for p in (ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize(
    "source",
    [
        "import sys\nsys.path.insert(0, 'x')\n",
        "import sys\nsys.path.append('x')\n",
        "import sys\nsys.path[:0] = ['x']\n",
        "import sys\nsys.path += ['x']\n",
        "import sys\nsys.path = ['x']\n",
        "import site\nsite.addsitedir('x')\n",
        "from sys import path\npath.append('x')\n",
    ],
)
def test_each_way_of_editing_sys_path_is_found(source):
    assert sys_path_edits(source)


def test_reading_sys_path_is_no_edit():
    assert sys_path_edits("import sys\nprint(sys.path)\nfor p in sys.path:\n    pass\n") == []


def test_no_file_in_jobs_benchmarks_or_cluster_edits_sys_path():
    files = _files()
    assert any(p.parts[-2] == "benchmarks" for p in files) and any(p.parts[-2] == "jobs" for p in files)
    found = {str(p.relative_to(ROOT)): edits for p in files if (edits := sys_path_edits(p.read_text(encoding="utf-8")))}
    assert found == {}, f"sys.path edited (file: lines): {found}"
