"""The import graph of the project's code, read from the sources (``ast``, nothing is imported).

The rules, with the reasons behind them, are in ``docs/architecture.md``; the table of which
``udfs`` subpackage may import which is read from that document (section "Who may import whom"),
so the document and this test cannot disagree. Checked here:

* every project-internal import names a module that exists, and ``from M import x`` names a
  submodule of ``M`` or something ``M`` defines (a broken import in a function body only fails
  when that function first runs, perhaps hours into a job);
* inside ``udfs``, a subpackage imports only itself and what the table allows it;
* ``udfs`` imports nothing outside ``udfs``; ``shapes/`` and ``jobs/`` import only ``udfs``
  (a job does not import another job: what two jobs share belongs in the library);
* ``testkit/`` (test and benchmark support) is imported by no module of the product (``udfs/``,
  ``jobs/``, ``shapes/``, ``cluster/``) and imports only ``udfs`` and itself;
* no import cycle among ``udfs`` modules, within a subpackage or across;
* ``udfs/`` holds ``__init__.py`` and subpackages only, each subpackage has its ``__init__.py``
  (packaging finds packages by it) and a row in the table, and every row names a subpackage;
* every ``udfs`` and ``testkit`` module is named in ``docs/architecture.md`` (the newcomer's map
  stays whole).

Imports inside functions count the same as top-level ones: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
# folders whose modules are checked
SCANNED = ("udfs", "shapes", "jobs", "cluster", "benchmarks", "experiments", "testkit")
PRODUCT = ("udfs", "jobs", "shapes", "cluster")  # what ships; it never imports the support below
SUPPORT = "testkit"  # test and benchmark support: fuzzers, stub engine, synthetic corpora, capacity model
INTERNAL = SCANNED + ("tests",)  # top-level names an import must start with to be project-internal
TABLE_HEADING = "who may import whom"
NOTHING = {"nothing", "-", "—", ""}


# ---- reading the table ---------------------------------------------------------------------------
def read_table(doc: Path) -> dict[str, set[str]]:
    """The import table of ``doc``: the first Markdown table after the heading "Who may import
    whom", one row per ``udfs`` subpackage, first cell the subpackage, second cell the subpackages
    it may import (comma-separated, backticks allowed; "nothing" for none)."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    start = next(
        (
            i
            for i, line in enumerate(lines)
            if line.startswith("#") and line.lstrip("#").strip().lower() == TABLE_HEADING
        ),
        None,
    )
    if start is None:
        raise AssertionError(f"{doc}: no heading 'Who may import whom' (the import table goes under it)")
    rows = []
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        if line.strip().startswith("|"):
            rows.append(line)
        elif rows:
            break
    if len(rows) < 3:
        raise AssertionError(f"{doc}: no Markdown table under 'Who may import whom'")
    table: dict[str, set[str]] = {}
    for line in rows[2:]:  # header, then the |---|---| line
        cells = [c.strip().replace("`", "") for c in line.strip().strip("|").split("|")]
        if len(cells) < 2:
            raise AssertionError(f"{doc}: import table row without two cells: {line!r}")
        pkg = cells[0]
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", pkg):
            raise AssertionError(f"{doc}: import table row names {pkg!r}, not a subpackage name")
        if pkg in table:
            raise AssertionError(f"{doc}: import table lists {pkg!r} twice")
        allowed = {a.strip() for a in cells[1].split(",")} - NOTHING
        table[pkg] = allowed
    return table


# ---- reading the sources -------------------------------------------------------------------------
@dataclass(frozen=True)
class Edge:
    importer: str  # module name, e.g. udfs.evaluation.evaluator
    target: str  # resolved module name (a submodule when ``from pkg import submodule``)
    where: str  # path:line

    def __str__(self) -> str:
        return f"{self.importer} -> {self.target} ({self.where})"


@dataclass
class Graph:
    modules: dict[str, Path] = field(default_factory=dict)  # module name -> file
    namespaces: set[str] = field(default_factory=set)  # folders of modules without __init__.py
    edges: list[Edge] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def top_level_names(tree: ast.Module) -> set[str] | None:
    """Names a module binds outside functions and classes; None when it cannot be known statically
    (a star import or a module ``__getattr__``)."""
    names: set[str] = set()

    def targets(t):
        if isinstance(t, ast.Name):
            names.add(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                targets(e)
        elif isinstance(t, ast.Starred):
            targets(t.value)

    def visit(body) -> bool:
        for n in body:
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(n.name)
            elif isinstance(n, ast.Assign):
                for t in n.targets:
                    targets(t)
            elif isinstance(n, (ast.AnnAssign, ast.AugAssign)):
                targets(n.target)
            elif isinstance(n, ast.Import):
                for a in n.names:
                    names.add(a.asname or a.name.split(".")[0])
            elif isinstance(n, ast.ImportFrom):
                for a in n.names:
                    if a.name == "*":
                        return False
                    names.add(a.asname or a.name)
            elif isinstance(n, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
                for part in ("body", "orelse", "finalbody"):
                    if not visit(getattr(n, part, [])):
                        return False
                for h in getattr(n, "handlers", []):
                    if not visit(h.body):
                        return False
                if isinstance(n, ast.For):
                    targets(n.target)
                if isinstance(n, ast.With):
                    for item in n.items:
                        if item.optional_vars is not None:
                            targets(item.optional_vars)
        return True

    if not visit(tree.body) or "__getattr__" in names:
        return None
    return names


def read_graph(root: Path) -> Graph:
    """Every project-internal import of the modules under ``root``'s scanned folders."""
    g = Graph()
    trees: dict[str, ast.Module] = {}
    for folder in SCANNED:
        for path in sorted((root / folder).rglob("*.py")):
            name = module_name(path, root)
            g.modules[name] = path
            trees[name] = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            # cluster/ has no __init__.py, yet ``from cluster import local`` works (namespace package)
            for parent in path.relative_to(root).parents:
                if parent != Path(".") and not (root / parent / "__init__.py").exists():
                    g.namespaces.add(".".join(parent.parts))
    bound = {name: top_level_names(tree) for name, tree in trees.items()}

    for name, tree in trees.items():
        path = g.modules[name]
        is_pkg = path.name == "__init__.py"
        rel = path.relative_to(root)
        for node in ast.walk(tree):
            where = f"{rel}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] not in INTERNAL:
                        continue
                    known = a.name in g.modules or a.name in g.namespaces
                    if not known and a.name.split(".")[0] != "tests":
                        g.unresolved.append(f"{name}: import {a.name} ({where}): no such module")
                    g.edges.append(Edge(name, a.name, where))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    package = name.split(".") if is_pkg else name.split(".")[:-1]
                    if node.level - 1 > len(package) - 1:
                        g.unresolved.append(f"{name}: relative import beyond the top package ({where})")
                        continue
                    base_parts = package[: len(package) - (node.level - 1)]
                    base = ".".join(base_parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                if base.split(".")[0] not in INTERNAL:
                    continue
                if base.split(".")[0] == "tests":  # forbidden wherever it appears; no need to resolve it
                    g.edges.append(Edge(name, base, where))
                    continue
                if base not in g.modules and base not in g.namespaces:
                    g.unresolved.append(f"{name}: from {base} import ... ({where}): no such module")
                    g.edges.append(Edge(name, base, where))
                    continue
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    if sub in g.modules or sub in g.namespaces:
                        g.edges.append(Edge(name, sub, where))
                        continue
                    names = bound.get(base, set())  # a namespace package binds no names
                    if a.name != "*" and names is not None and a.name not in names:
                        g.unresolved.append(
                            f"{name}: from {base} import {a.name} ({where}): "
                            f"{base} neither defines {a.name} nor has a submodule of that name"
                        )
                    g.edges.append(Edge(name, base, where))
    return g


# ---- the rules -----------------------------------------------------------------------------------
def subpackage(module: str) -> str | None:
    """The ``udfs`` subpackage a ``udfs`` module belongs to (None for ``udfs`` itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def table_violations(g: Graph, table: dict[str, set[str]]) -> list[str]:
    out = []
    for e in g.edges:
        if not (e.importer.startswith("udfs.") and e.target.startswith("udfs")):
            continue
        src, dst = subpackage(e.importer), subpackage(e.target)
        if dst is None or src == dst or src not in table or dst not in table:
            continue  # the namespace package itself; within a subpackage; unknown ones: layout rule
        if dst not in table[src]:
            out.append(f"{e}: {src} may import {sorted(table[src]) or 'nothing'} in udfs, not {dst}")
    out += [
        f"{e}: udfs/__init__.py imports nothing (importing udfs.x must stay cheap)"
        for e in g.edges
        if e.importer == "udfs" and e.target != "udfs"
    ]
    return out


def boundary_violations(g: Graph) -> list[str]:
    """udfs imports only udfs; shapes and jobs import only udfs."""
    out = []
    for e in g.edges:
        src, dst = e.importer.split(".")[0], e.target.split(".")[0]
        if src == "udfs" and dst != "udfs":
            out.append(f"{e}: the library imports nothing outside udfs")
        elif src == "shapes" and dst != "udfs":
            out.append(f"{e}: shapes/ imports only udfs (shared code belongs in udfs.schemaorg)")
        elif src == "jobs" and dst != "udfs":
            out.append(f"{e}: a job imports only udfs (what jobs share belongs in the library)")
    return out


def support_violations(g: Graph) -> list[str]:
    """The product never imports the test and benchmark support; the support imports only the
    library and itself (so tests, benchmarks and experiments share it, and it never reaches into
    them or into a job)."""
    out = []
    for e in g.edges:
        src, dst = e.importer.split(".")[0], e.target.split(".")[0]
        if src in PRODUCT and dst == SUPPORT:
            out.append(f"{e}: {src}/ is product; it never imports {SUPPORT} (test and benchmark support)")
        elif src == SUPPORT and dst not in ("udfs", SUPPORT):
            out.append(f"{e}: {SUPPORT} imports only udfs and itself")
    return out


def cycles(g: Graph) -> list[list[str]]:
    """The strongly connected components of the udfs module graph that hold a cycle (Tarjan)."""
    succ: dict[str, set[str]] = {m: set() for m in g.modules if m.split(".")[0] == "udfs"}
    for e in g.edges:
        if e.importer in succ and e.target in succ:
            succ[e.importer].add(e.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def strongconnect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(succ[v]):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in succ[v]:
                found.append(sorted(comp))

    for v in sorted(succ):
        if v not in index:
            strongconnect(v)
    return found


def cycle_report(g: Graph) -> list[str]:
    out = []
    for comp in cycles(g):
        members = set(comp)
        inside = sorted({str(e) for e in g.edges if e.importer in members and e.target in members})
        out.append("cycle among " + ", ".join(comp) + ":\n    " + "\n    ".join(inside))
    return out


def layout_violations(root: Path, table: dict[str, set[str]]) -> list[str]:
    udfs = root / "udfs"
    out = [
        f"udfs/{p.name}: every module lives in a subpackage (udfs/<package>/{p.name})"
        for p in sorted(udfs.glob("*.py"))
        if p.name != "__init__.py"
    ]
    packages = sorted(d.name for d in udfs.iterdir() if d.is_dir() and d.name != "__pycache__" and any(d.rglob("*.py")))
    for name in packages:
        if name not in table:
            out.append(
                f"udfs/{name}/: a subpackage without a row in docs/architecture.md's import table "
                "(add it there, with what it may import)"
            )
    for d in sorted({p.parent for p in udfs.rglob("*.py")}):
        if d != udfs and not (d / "__init__.py").exists() and "__pycache__" not in d.parts:
            out.append(
                f"{d.relative_to(root)}/: Python modules without an __init__.py "
                "(setuptools' package discovery leaves it out of the install)"
            )
    for name in sorted(table):
        if name not in packages:
            out.append(f"import table row {name!r}: no such subpackage under udfs/")
        for dep in sorted(table[name] - set(table)):
            out.append(f"import table row {name!r}: may import {dep!r}, which has no row of its own")
        if name in table[name]:
            out.append(f"import table row {name!r}: lists itself (a subpackage always imports itself)")
    return out


def table_cycles(table: dict[str, set[str]]) -> list[str]:
    """The table itself must be a layering: following "may import" never comes back."""
    out = []

    def reach(start: str) -> set[str]:
        seen, todo = set(), list(table.get(start, ()))
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo.extend(table.get(n, ()))
        return seen

    for name in sorted(table):
        if name in reach(name):
            out.append(f"import table: {name} may import itself through {sorted(table[name])}")
    return out


def fail(what: str, problems: list[str]) -> None:
    assert not problems, f"{what} ({len(problems)}):\n  " + "\n  ".join(problems)


# ---- the tests on this project -------------------------------------------------------------------
@pytest.fixture(scope="module")
def graph() -> Graph:
    return read_graph(ROOT)


@pytest.fixture(scope="module")
def table() -> dict[str, set[str]]:
    return read_table(DOC)


def test_the_table_in_the_doc_is_a_layering_of_the_udfs_subpackages(table):
    assert {"runtime", "schemaorg", "corpus", "llm", "agents", "scores", "evaluation", "agents_bench"} <= set(table)
    assert table["runtime"] == set(), "runtime is the bottom layer: it imports nothing in udfs"
    fail("import table problems", table_cycles(table) + layout_violations(ROOT, table))


def test_every_internal_import_resolves(graph):
    fail("imports of project modules or names that do not exist", graph.unresolved)


def test_udfs_subpackages_import_only_what_the_table_allows(graph, table):
    fail("imports the table in docs/architecture.md does not allow", table_violations(graph, table))


def test_udfs_shapes_and_jobs_import_only_the_library(graph):
    fail("imports across the project's boundaries", boundary_violations(graph))


def test_the_product_never_imports_the_test_and_benchmark_support(graph):
    assert any(m.startswith(SUPPORT + ".") for m in graph.modules), f"no {SUPPORT} modules read"
    fail(f"imports of {SUPPORT} by the product, or by {SUPPORT} of what is not udfs", support_violations(graph))


def test_no_import_cycles_among_udfs_modules(graph):
    fail("import cycles in udfs", cycle_report(graph))


def test_the_architecture_doc_names_every_udfs_and_testkit_module(graph):
    text = DOC.read_text(encoding="utf-8")
    missing = [
        str(p.relative_to(ROOT))
        for m, p in sorted(graph.modules.items())
        if (m.startswith("udfs.") and p.name != "__init__.py" or m.startswith(SUPPORT + "."))
        and str(p.relative_to(ROOT)) not in text
    ]
    fail("udfs and testkit modules docs/architecture.md does not name (by their path)", missing)


# ---- the checker itself, on a small tree with one of each fault ------------------------------------
def test_the_checker_finds_each_kind_of_fault(tmp_path):
    files = {
        "udfs/__init__.py": "",
        "udfs/loose.py": "",
        "udfs/runtime/__init__.py": "",
        "udfs/runtime/base.py": "X = 1\n",
        "udfs/runtime/up.py": "def f():\n    from udfs.corpus import reader\n",  # upward, in a function
        "udfs/corpus/__init__.py": "",
        "udfs/corpus/reader.py": "from udfs.corpus import cyc\nfrom udfs.runtime.base import X, Y\n",
        "udfs/corpus/cyc.py": "from . import reader\nimport jobs.one\n",
        "udfs/extra/__init__.py": "",
        "udfs/nopkg/mod.py": "",
        "shapes/__init__.py": "",
        "shapes/gen.py": "from udfs.runtime import base\nimport shapes\n",
        "jobs/__init__.py": "",
        "jobs/one.py": "from udfs.runtime.base import X\n",
        "jobs/two.py": "from jobs.one import *\nimport tests.helpers\n",
        "cluster/x.py": "from cluster import y\n",  # a namespace package: no __init__.py
        "cluster/z.py": "from cluster import nothere\n",
        "cluster/y.py": "",
        "benchmarks/b.py": "from udfs.corpus.reader import X\nfrom testkit import kit\n",
        "testkit/__init__.py": "",
        "testkit/kit.py": "from udfs.runtime.base import X\nimport jobs.one\n",  # support reaching into a job
        "jobs/three.py": "from testkit.kit import X\n",  # the product importing the support
        "cluster/w.py": "def f():\n    import testkit.kit\n",
    }
    for rel, src in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(src)
    (tmp_path / "doc.md").write_text(
        "# Map\n\n## Who may import whom\n\n| package | may import |\n"
        "|---|---|\n| `runtime` | nothing |\n| `corpus` | `runtime` |\n"
        "| `gone` | `runtime`, `nowhere` |\n\n## Next\n"
    )
    table = read_table(tmp_path / "doc.md")
    assert table == {"runtime": set(), "corpus": {"runtime"}, "gone": {"runtime", "nowhere"}}
    g = read_graph(tmp_path)

    assert sorted(g.unresolved) == [
        "cluster.z: from cluster import nothere (cluster/z.py:1): "
        "cluster neither defines nothere nor has a submodule of that name",
        "udfs.corpus.reader: from udfs.runtime.base import Y (udfs/corpus/reader.py:2): "
        "udfs.runtime.base neither defines Y nor has a submodule of that name",
    ]
    assert [v.split(":")[0] for v in table_violations(g, table)] == [
        "udfs.runtime.up -> udfs.corpus.reader (udfs/runtime/up.py"
    ]
    assert sorted(v.split(" (")[0] for v in boundary_violations(g)) == [
        "jobs.three -> testkit.kit",
        "jobs.two -> jobs.one",
        "jobs.two -> tests.helpers",
        "shapes.gen -> shapes",
        "udfs.corpus.cyc -> jobs.one",
    ]
    assert sorted(v.split(" (")[0] for v in support_violations(g)) == [
        "cluster.w -> testkit.kit",
        "jobs.three -> testkit.kit",
        "testkit.kit -> jobs.one",
    ]
    assert cycles(g) == [["udfs.corpus.cyc", "udfs.corpus.reader"]]
    layout = layout_violations(tmp_path, table)
    assert any(v.startswith("udfs/loose.py:") for v in layout)
    assert any(v.startswith("udfs/extra/:") for v in layout)
    assert any(v.startswith("udfs/nopkg/:") and "subpackage without a row" in v for v in layout)
    assert any(v.startswith("udfs/nopkg/:") and "__init__.py" in v for v in layout)
    assert any("row 'gone': no such subpackage" in v for v in layout)
    assert any("'nowhere', which has no row" in v for v in layout)
    assert table_cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [
        "import table: a may import itself through ['b']",
        "import table: b may import itself through ['a']",
    ]
