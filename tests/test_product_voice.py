"""The product speaks about itself only: its texts say what fcl does and what was measured on
which machine, never where a writer sat or which tools a writer had.

Scanned (the sources with `ast`, without importing them; about a second in all):
- the Markdown pages: README.md and docs/**/*.md (`test_readme_and_docs`, whichever exist), and
  every README.md under results*/, fcl/, analysis/, studies/, benchmarks/, and figures/*.md;
- every docstring of a module, class or function under fcl/, analysis/, studies/, benchmarks/;
- every string literal of those files (printed messages, errors, the `help=`, `description=`
  and `epilog=` of every argparse flag, so the study scripts' `--help` too), and as a second
  net the texts as users read them: `fcl run --help` and `fcl --help` as printed, every config
  key's help (`fcl.config.key_rows`, also the documentation's configuration reference) and the
  study presets' descriptions that a study's `--preset` help lists.

Rejected everywhere: absolute paths of a machine (/work/, /root/, /home/NAME, /opt/, /Users/,
C:\\, a `shared/data` folder outside the repository), "here" (as a place: the word is refused
outright, "in this module" or "on a 2-core AMD EPYC" says which), and "was lent". Rejected in
docstrings and help texts only: commit hashes (7-40 hex digits with a digit and a letter; a
results table may cite the commit a study ran at).
"""
from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CODE_DIRS = ("fcl", "analysis", "studies", "benchmarks")

MACHINE_PATH = re.compile(r"(?<![\w.~$-])(/work/|/root/|/home/\w+|/opt/|/Users/\w+)"
                          r"|\b[A-Za-z]:\\|(?<![\w/$.-])(\.\./)*shared/data\b")
# "here" in quotes on both sides is the word mentioned, not used
HERE = re.compile(r"(?<![\"'`])\bhere\b|\bhere\b(?![\"'`])", re.IGNORECASE)
LENT = re.compile(r"\bwas lent\b", re.IGNORECASE)
COMMIT = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")

EVERYWHERE = {"an absolute machine path": MACHINE_PATH, "'here'": HERE, "'was lent'": LENT}
PROSE = {**EVERYWHERE, "a commit hash": COMMIT}
HELP_KEYWORDS = ("help", "description", "epilog", "usage")


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _faults(text: str, where: str, first_line: int, patterns: dict,
            line_of=None) -> list[str]:
    """One line per match: `where:LINE: <what> ('<match>') in: <the line>`. `line_of(i,
    pattern)` gives (LINE, the line) where the text's lines are not the file's."""
    out = []
    for i, line in enumerate(text.splitlines()):
        for what, pattern in patterns.items():
            m = pattern.search(line)
            if m:
                at, shown = line_of(i, pattern) if line_of else (first_line + i, line)
                out.append(f"{where}:{at}: {what} ({m.group(0)!r}) in: {shown.strip()[:160]}")
    return out


def _python_files() -> list[Path]:
    return sorted(p for d in CODE_DIRS for p in (ROOT / d).rglob("*.py")
                  if "__pycache__" not in p.parts)


def _markdown_files() -> list[Path]:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for d in (*sorted(ROOT.glob("results*")), *(ROOT / d for d in CODE_DIRS)):
        if d.is_dir():
            pages += sorted(d.rglob("README.md"))
    pages += sorted((ROOT / "figures").glob("*.md"))
    return [p for p in pages if p.is_file()]


def _rewritten_elsewhere(path: Path) -> bool:
    """README.md and docs/ belong to the documentation's own rewrite."""
    rel = _rel(path)
    return rel == "README.md" or rel.startswith("docs/")


def _strings(tree: ast.AST):
    """(node, is_prose) for every str literal: prose = a docstring or a help/description text."""
    docstrings, helps = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                docstrings.add(id(body[0].value))
        elif isinstance(node, ast.keyword) and node.arg in HELP_KEYWORDS:
            helps.update(id(n) for n in ast.walk(node.value) if isinstance(n, ast.Constant))
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "opt" \
                and len(node.args) > 1:           # fcl.config's opt(default, help, ...)
            helps.update(id(n) for n in ast.walk(node.args[1]) if isinstance(n, ast.Constant))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node, id(node) in docstrings or id(node) in helps


def _literal_faults(path: Path) -> list[str]:
    source = path.read_text()
    lines = source.splitlines()
    tree = ast.parse(source, filename=str(path))
    out = []
    for node, prose in _strings(tree):
        line_of = None
        if node.end_lineno - node.lineno > node.value.count("\n"):     # "..." "..." on lines
            def line_of(i, pattern, node=node):
                n = next((n for n in range(node.lineno, node.end_lineno + 1)
                          if pattern.search(lines[n - 1])), node.lineno)
                return n, lines[n - 1]
        out += _faults(node.value, _rel(path), node.lineno, PROSE if prose else EVERYWHERE,
                       line_of)
    return out


PAGES = _markdown_files()
SOURCES = _python_files()


@pytest.mark.parametrize("page", [p for p in PAGES if _rewritten_elsewhere(p)], ids=_rel)
def test_readme_and_docs(page):
    assert not (faults := _faults(page.read_text(), _rel(page), 1, EVERYWHERE)), \
        "\n".join(faults)


@pytest.mark.parametrize("page", [p for p in PAGES if not _rewritten_elsewhere(p)], ids=_rel)
def test_stored_results_and_package_pages(page):
    assert not (faults := _faults(page.read_text(), _rel(page), 1, EVERYWHERE)), \
        "\n".join(faults)


def test_docstrings_messages_and_help_literals():
    faults = [f for path in SOURCES for f in _literal_faults(path)]
    assert not faults, f"{len(faults)} spots:\n" + "\n".join(faults)


def _field_lines() -> dict[str, int]:
    """config key -> the line of its field in fcl/config.py."""
    from fcl.config import RunConfig
    tree = ast.parse((ROOT / "fcl" / "config.py").read_text())
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    lines = {}
    for name, node in (("", classes["RunConfig"]),
                       *((f.name + ".", classes[type(getattr(RunConfig(), f.name)).__name__])
                         for f in dataclasses.fields(RunConfig)
                         if type(getattr(RunConfig(), f.name)).__name__ in classes)):
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                lines[name + stmt.target.id] = stmt.lineno
    return lines


def test_config_key_help():
    from fcl.config import key_rows
    lines = _field_lines()
    faults = [f for key, _, allowed, help_ in key_rows()
              for f in _faults(f"{help_} (allowed: {allowed})",
                               f"fcl/config.py key {key}", lines.get(key, 0), PROSE)]
    assert not faults, "\n".join(faults)


@pytest.mark.parametrize("argv", [["run", "--help"], ["--help"]], ids=" ".join)
def test_fcl_help(argv, capsys):
    """`fcl run --help` (its flags, and every config key with the local preset's defaults) and
    `fcl --help` as printed."""
    from fcl.cli import main
    with pytest.raises(SystemExit):
        main(argv)
    text = capsys.readouterr().out
    assert "usage: fcl" in text
    faults = _faults(text, f"`fcl {' '.join(argv)}` output, line", 1, PROSE)
    assert not faults, "\n".join(faults)


def test_study_presets_help():
    """The `--preset` help of every study script lists these descriptions."""
    from fcl.presets import STUDY_PRESETS
    faults = [f for name, p in STUDY_PRESETS.items()
              for f in _faults(" ".join(map(str, [p.what, *p.families.values()])),
                               f"fcl/presets.py STUDY_PRESETS[{name!r}]", 0, PROSE)]
    assert not faults, "\n".join(faults)


@pytest.mark.parametrize("text, bad", [
    ("measured here on 2 cores", True), ("Here each trial", True), ("no GPU was lent", True),
    ("python /work/shared/data/x.py", True), ("see /home/alice/x", True),
    ("python ../shared/data/cifar10_jpg_to_torchvision.py data", True),
    ("at commit 308e575", True), ("C:\\Users\\x", True), ("here's why", True),
    ('keeps "here" out of the docs', False),
    ("where there is one", False), ("mkdir /tmp/fcl-demo", False), ("RESULTS/.tune", False),
    ("$OUT/results", False), ("deadbeef", False), ("1234567", False),
    ("fcl/data/cifar.py reads data/cifar-10-batches-py", False),
])
def test_patterns(text, bad):
    assert bool(_faults(text, "x", 1, PROSE)) is bad
