"""The shape the architecture issue asked for, kept: small modules (no file over 300 lines in
fcl/, analysis/ and studies/, no function over 60 there nor in benchmarks/), no import cycle anywhere in `fcl` or
`analysis` (imports inside functions count: a lazy import that hides a cycle is still one), and
the trial statuses named in one module."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
MAX_FILE_LINES, MAX_FUNCTION_LINES = 300, 60


def _rel(path: Path) -> str:
    return str(path.relative_to(REPO))


EVERY_MODULE = [p for d in ("fcl", "analysis", "studies") for p in sorted((REPO / d).rglob("*.py"))]
# the benchmarks are scripts of one measurement each: their functions are held to the rule
WITH_BENCHMARKS = EVERY_MODULE + sorted((REPO / "benchmarks").rglob("*.py"))


@pytest.mark.parametrize("path", EVERY_MODULE, ids=_rel)
def test_no_module_is_over_300_lines(path):
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_FILE_LINES, f"{_rel(path)}: {lines} lines"


@pytest.mark.parametrize("path", WITH_BENCHMARKS, ids=_rel)
def test_no_function_is_over_60_lines(path):
    """The function rule over every module of the package, its analysis, studies and
    benchmarks."""
    long = [f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, f"{_rel(path)}: {', '.join(long)}"


def test_trial_statuses_are_named_once():
    """`TERMINATED`, `ERROR`, `EARLY_STOPPED` as strings only in fcl/results_io.py."""
    files = [p for d in ("fcl", "analysis", "studies") for p in sorted((REPO / d).rglob("*.py"))
             if p != REPO / "fcl" / "results_io.py"]
    bad = [f"{_rel(p)}: {hit}" for p in files
           for hit in re.findall(r"[\"'](?:TERMINATED|ERROR|EARLY_STOPPED)[\"']", p.read_text())]
    assert bad == []


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The project modules `path` imports (`from a.b import c` counts a.b.c where that is a
    module, else a.b); TYPE_CHECKING-only imports left out (they never run)."""
    tree, name = ast.parse(path.read_text()), module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
            and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
    out = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1]
                                + ([node.module] if node.module else []))
            for a in node.names:
                full = f"{base}.{a.name}"
                out.add(full if full in modules else base)
    return {m for m in out if m in modules and m != name}


def test_no_import_cycle():
    paths = [*(REPO / "fcl").rglob("*.py"), *(REPO / "analysis").rglob("*.py")]
    modules = {module_name(p): p for p in paths}
    graph = {m: imports_of(p, set(modules)) for m, p in modules.items()}
    # a package's __init__ importing its own submodules is how packages export names, and a
    # submodule importing a sibling through the package is fine: only module -> module edges
    graph = {m: {d for d in deps if not m.startswith(d + ".")} for m, deps in graph.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                return stack[stack.index(d):] + [d]
            if d not in state and (cycle := visit(d)):
                return cycle
        state[m] = 2
        stack.pop()
        return None

    for m in sorted(graph):
        if m not in state:
            cycle = visit(m)
            assert cycle is None, "import cycle: " + " -> ".join(cycle)
