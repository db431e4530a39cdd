"""Every commit the stored results cite resolves (`analysis/provenance.py`): an ancestor of
HEAD, from a clean tree; a study whose commit does not resolve says `unknown` with a note."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from analysis import provenance

REPO = Path(__file__).resolve().parent.parent


def _history() -> bool:
    out = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=REPO,
                         capture_output=True, text=True)
    return out.returncode == 0 and out.stdout.strip() == "false"


@pytest.mark.skipif(not _history(), reason="needs the checkout's whole git history")
def test_every_cited_commit_is_on_main_and_clean():
    assert len(provenance.citations(REPO)) > 50
    assert provenance.problems(REPO) == []


def test_what_does_not_resolve_is_named(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-q", "--allow-empty", "-m", "root"], check=True)
    head = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()
    study = tmp_path / "results" / "a"
    study.mkdir(parents=True)
    (study / "study.json").write_text(json.dumps(
        {"fcl_git": head, "extended": [{"fcl_git": f"{head}-dirty"}]}))
    (tmp_path / "results" / "README.md").write_text(f"ran at `{head}`, then at `1234abc`; "
                                                     "`fcl_methods` and `deadbeef` are words")
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "t.md").write_text("| x |\n\ndrawn from results/a · preset p · "
                                               f"commit {head} + unknown\n")
    lost = tmp_path / "results" / "b"
    lost.mkdir()
    (lost / "study.json").write_text(json.dumps({"fcl_git": "unknown"}))
    assert sorted(provenance.problems(tmp_path)) == sorted([
        f"results/a/study.json (extended): {head}-dirty: a dirty tree",
        "results/README.md: 1234abc: not in the history of HEAD",
        "results/b/study.json: fcl_git unknown without a provenance note: no commit recorded"])
