"""The examples of README.md and docs/*.md, as commands a test can run at smoke size.

Every ```bash and ```python block is an example (```text blocks are printed output). A block is
run unless the line right after it says why not, `<!-- example: not run: why -->`; a block whose
last command should fail says `<!-- example: exits N -->`; a block of studies whose flags, keys
and plan are checked without training says `<!-- example: dry run -->` (each study command gets
`--dry-run`: what a test of its own runs for real, e.g. tests/test_tune_asha.py); a block that
shows a piece of the source says `<!-- example: excerpt of PATH -->`, and each of its code lines
(comments aside) must be a line of that file. A page's blocks run in order in one
working folder, so a model one block saves is the model the next block loads.

"At smoke size" is the same command on less work, by the rules of `smoke_command`: a run preset
becomes `smoke` (or keeps its own preset at 2 rounds), a study runs at study preset `smoke` with
one seed, a benchmark at one round of one workload, and every `/tmp/...` path lands in the test's
temporary folder.
"""
from __future__ import annotations

import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```[ \t]*\n(?:<!-- example: (.*?) -->)?", re.S | re.M)
RUN_LANGUAGES = ("bash", "python")
# what a test does not run because set-up and the suite itself do it (.ci/run)
SET_UP = (("python3", "-m", "venv"), (".",), ("source",), ("pip",), ("pytest",))
SMOKE_STUDY_PRESET = "smoke"


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    language: str
    code: str
    marker: str | None          # None: run it; "not run: why"; "exits N"; "dry run"

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def runs(self) -> bool:
        return (self.language in RUN_LANGUAGES and self.excerpt_of is None
                and not (self.marker or "").startswith("not run"))

    @property
    def excerpt_of(self) -> Path | None:
        match = re.fullmatch(r"excerpt of (\S+)", self.marker or "")
        return ROOT / match.group(1) if match else None

    @property
    def dry_run(self) -> bool:
        return self.marker == "dry run"

    @property
    def exit_code(self) -> int:
        match = re.fullmatch(r"exits (\d+)", self.marker or "")
        return int(match.group(1)) if match else 0


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    return [Block(page, text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2), m.group(3))
            for m in FENCE.finditer(text)]


def excerpt_lines(code: str) -> list[str]:
    """An excerpt's code lines, stripped of indentation and trailing comments."""
    return [line.split("  #")[0].strip() for line in code.splitlines() if line.strip()]


def commands(code: str) -> list[list[str]]:
    """The commands of a bash block as argument lists: continuation lines joined, comments
    dropped, `a && b` split."""
    out: list[list[str]] = []
    for line in code.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        while words:
            cut = words.index("&&") if "&&" in words else len(words)
            if words[:cut]:
                out.append(words[:cut])
            words = words[cut + 1:]
    return out


def is_set_up(words: list[str]) -> bool:
    return any(tuple(words[:len(prefix)]) == prefix for prefix in SET_UP)


def _option(words: list[str], flag: str) -> int | None:
    return words.index(flag) if flag in words else None


def _replace_value(words: list[str], flag: str, value: str) -> list[str]:
    i = _option(words, flag)
    return words[:i + 1] + [value] + words[i + 2:] if i is not None else words + [flag, value]


def smoke_command(words: list[str], tmp: Path) -> tuple[dict[str, str], list[str]]:
    """(environment additions, argv) of one documented command at smoke size."""
    env = {}
    while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    words = [str(tmp) + w[len("/tmp"):] if w.startswith("/tmp/") else w for w in words]
    if words[0] in ("fcl", "mkdocs"):
        words = [sys.executable, "-m", *words]
    elif words[0] in ("python", "python3"):
        words = [sys.executable, *words[1:]]
    tool = words[1:4]
    if tool[:3] == ["-m", "fcl", "run"] or tool[:3] == ["-m", "fcl", "pretrain"]:
        i = _option(words, "--preset")
        if i is not None and words[i + 1] == "local":
            words[i + 1] = "smoke"
        elif i is not None and words[i + 1] != "smoke":
            words += ["--set", "rounds=2"]
    elif tool[:3] == ["-m", "fcl", "bench"]:
        i = _option(words, "--preset")
        if i is not None:
            words[i + 1] = "smoke"
        elif "--workloads" not in words:
            words += ["--workloads", "nettailor-local"]
        if "--modes" not in words:
            words += ["--modes", "fp32"]
        words = _replace_value(words, "--rounds", "1")
    elif (len(words) > 1 and words[1].startswith("studies/")) or \
            (tool[:3] == ["-m", "fcl", "study"] and len(words) > 4):
        words = _replace_value(words, "--preset", SMOKE_STUDY_PRESET)
        if "--seeds" not in words:
            words += ["--seeds", "1"]
        if "--trials" in words:
            words = _replace_value(words, "--trials", "2")
    return env, words


def python_at_smoke_size(code: str, tmp: Path) -> str:
    """A Python block with its `/tmp/...` paths in the test's folder."""
    return code.replace('"/tmp/', f'"{tmp}/')
