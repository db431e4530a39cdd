"""The shape of analysis/ (issue 19's rules): reading results imports no Ray, no function over
60 lines, no file over 300, no import cycle, no `sys.path` insert or `# noqa: E402`, no trial
status written as a literal (they are `fcl.results_io`'s)."""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FILES = sorted((REPO / "analysis").rglob("*.py"))
# Every module that reads results (the migration's manifest step reads study scripts: Ray).
READING = sorted(".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
                 for p in FILES if p.name not in ("stored_manifest.py", "__main__.py"))


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")


def test_reading_the_results_imports_no_ray():
    code = "import sys\n" + "".join(f"import {m}\n" for m in READING) + \
        "assert 'ray' not in sys.modules, sorted(m for m in sys.modules if m.startswith('ray'))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert len(READING) >= 20


def test_no_function_over_60_lines_no_file_over_300():
    long_files = [p.name for p in FILES if len(p.read_text().splitlines()) > 300]
    long_functions = [f"{p.name}:{node.name}" for p in FILES
                      for node in ast.walk(ast.parse(p.read_text()))
                      if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                      and node.end_lineno - node.lineno + 1 > 60]
    assert long_files == [] and long_functions == []


def test_no_path_inserts_noqa_e402_or_status_literals():
    bad = [f"{p.relative_to(REPO)}: {hit}" for p in FILES for hit in re.findall(
        r"sys\.path|noqa: E402|\"(?:TERMINATED|ERROR|EARLY_STOPPED)\"", p.read_text())]
    assert bad == []


def imports_of(path: Path) -> set[str]:
    """The analysis modules `path` imports (at any depth of the file)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("analysis"):
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("analysis"))
    return found


def test_no_import_cycle():
    modules = {module_name(p): p for p in FILES}
    graph = {m: sorted(imports_of(p) & set(modules) - {m}) for m, p in modules.items()}
    done, path = set(), []

    def visit(m):
        assert m not in path, "import cycle: " + " -> ".join([*path[path.index(m):], m])
        if m in done:
            return
        path.append(m)
        for dep in graph[m]:
            visit(dep)
        path.pop()
        done.add(m)

    for m in graph:
        visit(m)
