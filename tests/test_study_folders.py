"""`fcl ls`: the stored studies at any depth, with their trial counts, seeds, commit and
whether their files still match study.json (a damaged one is named, and the exit is 1)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

from fcl.study_folders import list_studies, named_studies, seeds_text

REPO = Path(__file__).resolve().parents[1]


def stored(tmp_path: Path) -> Path:
    results = tmp_path / "results"
    shutil.copytree(REPO / "results" / "stragglers", results / "stragglers")
    shutil.copytree(REPO / "results" / "search", results / "nested" / "search")
    shutil.copytree(REPO / "results" / "search", results / ".tune" / "search")    # hidden
    return results


def test_every_study_at_any_depth_with_its_counts(tmp_path):
    results = stored(tmp_path)
    rows = {r.name: r for r in list_studies([str(results)])}
    assert sorted(rows) == ["results/nested/search", "results/stragglers"]
    trials = pd.read_parquet(results / "stragglers" / "trials.parquet")
    row = rows["results/stragglers"]
    assert (row.finished, row.failed, row.other) == (
        (trials.status == "TERMINATED").sum(), (trials.status == "ERROR").sum(), 0)
    assert row.status == "whole" and row.seeds == "0-2"
    search = pd.read_parquet(results / "nested" / "search" / "trials.parquet")
    assert rows["results/nested/search"].other == (search.status == "EARLY_STOPPED").sum() > 0
    # a study folder given alone is named from its results folder down
    assert named_studies(str(results / "stragglers")) == [
        (str(results / "stragglers"), "results/stragglers")]
    assert [seeds_text(s) for s in ([0], [0, 1], [0, 1, 2, 3], [1, 3])] == [
        "0", "0,1", "0-3", "1,3"]


def test_a_damaged_study_is_named_and_the_exit_is_one(tmp_path):
    results = stored(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    ls = [sys.executable, "-m", "fcl", "ls"]
    whole = subprocess.run(ls, cwd=tmp_path, capture_output=True, text=True, env=env,
                           timeout=300)
    assert whole.returncode == 0, whole.stderr
    lines = whole.stdout.splitlines()
    assert lines[0].split() == ["study", "date", "commit", "finished", "failed", "other",
                                "seeds", "status"] and len(lines) == 3
    rounds = results / "stragglers" / "rounds.parquet"
    rounds.write_bytes(rounds.read_bytes() + b"\0")
    damaged = subprocess.run(ls, cwd=tmp_path, capture_output=True, text=True, env=env,
                             timeout=300)
    assert damaged.returncode == 1
    assert [line.split()[0] for line in damaged.stdout.splitlines() if "damaged" in line] == [
        "results/stragglers"]
    (results / "nested" / "search" / "trials.parquet").write_bytes(b"not parquet")
    rows = {r.name: r.status for r in list_studies([str(results)])}
    assert rows["results/nested/search"].startswith("damaged: ")
    export = subprocess.run([sys.executable, "-m", "fcl", "export", str(results), "--to",
                             "optuna", "--dest", f"sqlite:///{tmp_path / 'o.db'}"],
                            capture_output=True, text=True, env=env, timeout=300)
    assert export.returncode == 2 and export.stderr.startswith(
        f"error: FOLDER={results / 'nested' / 'search'}: not a readable study (")
    assert len(export.stderr.strip().splitlines()) == 1
    missing = subprocess.run([*ls, str(tmp_path / "nope")], capture_output=True, text=True,
                             env=env, timeout=300)
    assert missing.returncode == 2 and missing.stderr.strip() == (
        f"error: FOLDER={tmp_path / 'nope'}: no such folder; allowed: a results folder or a "
        "study folder")


def test_a_study_run_with_seeds_auto_shows_its_seeds_per_setting_and_whether_it_ended(tmp_path):
    import dataclasses
    import json

    from fcl.manifest import read_manifest, write_manifest
    results = stored(tmp_path)
    folder = results / "stragglers"
    record = {"done": False, "seeds_per_setting": {"a": 3, "b": 5}}
    write_manifest(folder, dataclasses.replace(read_manifest(folder), seeds_auto=record))
    (row,) = [r for r in list_studies([str(results)]) if r.name == "results/stragglers"]
    assert row.seeds == "0-2 (auto: 3-5 a setting)"
    assert row.status == "whole so far: the seed rule goes on with --resume"
    assert json.loads((folder / "study.json").read_text())["seeds_auto"] == record
    write_manifest(folder, dataclasses.replace(read_manifest(folder),
                                               seeds_auto={**record, "done": True}))
    (row,) = [r for r in list_studies([str(results)]) if r.name == "results/stragglers"]
    assert row.status == "whole"
