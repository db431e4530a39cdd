"""No code of fcl outside a method's own folder branches on a method's name: it asks the
method's `Method` value (`fcl.methods.registry`). A branch is a comparison (`==`, `!=`, `in`,
`match`) with a string that is a registered method's name; the FLoCoRA figures in `analysis/`
name the paper's methods as the rows and curves they draw, and are not held to it.

`python tests/test_method_names.py [FOLDER]` prints every such line of a tree's fcl/ and
analysis/ (the count before and after a change)."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

from fcl.methods.registry import methods

ROOT = Path(__file__).resolve().parents[1]


def strings(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return set().union(set(), *(strings(e) for e in node.elts))
    return set()


def branches(path: Path, names: set[str]) -> list[int]:
    """The lines of `path` that compare something with one of `names`."""
    lines = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            if set().union(*(strings(x) for x in [node.left, *node.comparators])) & names:
                lines.add(node.lineno)
        elif isinstance(node, ast.MatchValue) and strings(node.value) & names:
            lines.add(node.lineno)
    return sorted(lines)


def branching_lines(root: Path, folders=("fcl", "analysis")) -> list[str]:
    names = set(methods())
    out = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root)
            if rel.parts[:2] == ("fcl", "methods"):
                continue
            text = path.read_text().splitlines()
            out += [f"{rel}:{n}: {text[n - 1].strip()}" for n in branches(path, names)]
    return out


def test_fcl_asks_the_registry_instead_of_comparing_method_names():
    assert branching_lines(ROOT, folders=("fcl",)) == []


def test_the_scan_sees_a_comparison_with_a_method_name(tmp_path):
    (tmp_path / "fcl").mkdir()
    (tmp_path / "fcl" / "x.py").write_text(
        'if cfg.model.adapter == "lora":\n    pass\nok = kind in ("other",)\n'
        'bad = adapter in ("full", "fedpara")\n')
    assert [line.split(":")[1] for line in branching_lines(tmp_path, ("fcl",))] == ["1", "4"]


if __name__ == "__main__":
    found = branching_lines(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT)
    print("\n".join(found))
    print(len(found), "lines branch on a method's name outside fcl/methods/")
