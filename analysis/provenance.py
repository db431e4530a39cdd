"""Whether every commit that stored results cite resolves: each must be an ancestor of HEAD (on
main's history) and name a clean tree.

Citations: a stored study's `study.json` (`fcl_git`, each extended part's and each copied
source's), the footer line of a committed table (`figures/*.md`: `drawn from ... · commit A +
B`), and a commit quoted in backticks in a results folder's README. A study whose commit was
lost from history, or that ran from a dirty tree, keeps its rows with `fcl_git` = `unknown` and
a `provenance` note that names the id it recorded and why it does not resolve; its README cites
it as unknown.

    python -m analysis provenance      # one line per citation that does not resolve; exit 1
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

UNKNOWN = "unknown"
DIRTY = "-dirty"
QUOTED = re.compile(r"`([0-9a-f]{7,40}(?:-dirty)?)`")
FOOTER = re.compile(r"^drawn from .* · commit (.+)$")
HEX = re.compile(r"[0-9a-f]{7,40}")


NOTE = re.compile(r"^fcl_git recorded as (\S+?):")


def recorded(fcl_git: str, note: str) -> str:
    """The commit a study (or an extended part) recorded: its `fcl_git`, or, where that is
    `unknown`, the id its provenance note names ("fcl_git recorded as X: why")."""
    hit = NOTE.match(note or "")
    return hit.group(1) if fcl_git == UNKNOWN and hit else fcl_git


def note(commit: str, dirty: bool) -> str:
    """The provenance note of a study whose recorded `commit` does not resolve."""
    why = ("it ran from a working tree with uncommitted changes" if dirty else
           "a commit that never reached main's history")
    return (f"fcl_git recorded as {commit}: {why}, so the code it ran is not exactly known; "
            "its rows are kept as they were measured")


def _commits(text: str) -> list[str]:
    """The commit ids in `text` (hex words with a digit and a letter: not a number, not a word)."""
    return [t for t in (text.split(" + ") if text else ())
            if t == UNKNOWN or (HEX.fullmatch(t.removesuffix(DIRTY))
                                and re.search(r"\d", t) and re.search(r"[a-f]", t))]


def citations(repo: Path) -> list[tuple[str, str]]:
    """(where, commit) for every commit the stored results cite."""
    found = []
    for manifest in sorted(repo.glob("results*/**/study.json")):
        if any(part.startswith(".") for part in manifest.relative_to(repo).parts):
            continue                                 # Tune's own state, not a stored study
        m = json.loads(manifest.read_text())
        where = str(manifest.relative_to(repo))
        found += [(where, m.get("fcl_git", ""))]
        found += [(f"{where} (extended)", part.get("fcl_git", ""))
                  for part in m.get("extended", [])]
        found += [(f"{where} (copied from {part.get('study')})", commit)
                  for part in m.get("copied", [])
                  for commit in str(part.get("fcl_git", "")).split(" + ")]
        if m.get("fcl_git") == UNKNOWN and not m.get("provenance"):
            found.append((f"{where}: fcl_git unknown without a provenance note", "?"))
    for table in sorted(repo.glob("figures*/**/*.md")):
        for line in table.read_text().splitlines():
            hit = FOOTER.match(line.strip())
            if hit:
                found += [(str(table.relative_to(repo)), c) for c in hit.group(1).split(" + ")]
    for readme in sorted(repo.glob("results*/**/README.md")):
        found += [(str(readme.relative_to(repo)), c)
                  for c in QUOTED.findall(readme.read_text()) if _commits(c)]
    return found


def problems(repo: Path) -> list[str]:
    """One phrase per citation that does not resolve: a dirty tree, a commit not in HEAD's
    history, or no commit at all ("unknown" resolves where a provenance note says why)."""
    out, ancestors = [], {}
    for where, commit in citations(repo):
        if commit == UNKNOWN:
            continue
        if not commit or commit == "?":
            out.append(f"{where}: no commit recorded")
        elif commit.endswith(DIRTY):
            out.append(f"{where}: {commit}: a dirty tree")
        else:
            if commit not in ancestors:
                ancestors[commit] = is_ancestor(repo, commit)
            if not ancestors[commit]:
                out.append(f"{where}: {commit}: not in the history of HEAD")
    return out


def is_ancestor(repo: Path, commit: str) -> bool:
    return subprocess.run(["git", "merge-base", "--is-ancestor", commit, "HEAD"], cwd=repo,
                          capture_output=True).returncode == 0


def main(argv: list[str] | None = None, prog: str = "python -m analysis provenance") -> int:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    p.add_argument("repo", nargs="?", default=".", help="the checkout (default: .)")
    repo = Path(p.parse_args(argv).repo)
    inside = subprocess.run(["git", "rev-parse", "--git-dir"], cwd=repo, capture_output=True)
    if inside.returncode != 0:
        print(f"error: {repo}: not a git checkout; the check needs its history", file=sys.stderr)
        return 2
    found = problems(repo)
    for line in found:
        print(line)
    print(f"{len(citations(repo))} citations, {len(found)} that do not resolve",
          file=sys.stderr)
    return 1 if found else 0
