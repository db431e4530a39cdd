"""What analysis/ keeps apart from the rest (issue 19): reading results imports no Ray, and the
package runs as `python -m analysis` with no `sys.path` insert or `# noqa: E402`. Sizes, import
cycles and status literals: tests/test_layout.py, for fcl/ too."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FILES = sorted((REPO / "analysis").rglob("*.py"))
# Every module of analysis/ (all of them read results) and the contract they read.
READING = ["fcl.results_io", "fcl.manifest", *sorted(
    ".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
    for p in FILES if p.name != "__main__.py")]


def test_reading_the_results_imports_no_ray():
    code = "import sys\n" + "".join(f"import {m}\n" for m in READING) + \
        "assert 'ray' not in sys.modules, sorted(m for m in sys.modules if m.startswith('ray'))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert len(READING) >= 20


def test_no_path_inserts_or_noqa_e402():
    bad = [f"{p.relative_to(REPO)}: {hit}" for p in FILES
           for hit in re.findall(r"sys\.path|noqa: E402", p.read_text())]
    assert bad == []
