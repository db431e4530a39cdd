"""A disk that fills up during a study (a 256 KiB tmpfs as `--results`) ends it in one line,
exit 2, Tune's state kept; after the disk grows, `--resume` finishes with exactly the rows of
a study that never stopped (Tune's experiment state, truncated on the full disk, is restored
from its staging copy, or at `--resume` from the driver's copy of it: `fcl.tune.disk_full`; in CI
it once resumed as 1 trial of 2 and exit 0 before that copy). Needs root (mount); skipped, with
the reason, where not permitted."""
import os
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

from tmpfs import tmpfs

ray = pytest.importorskip("ray")

from fcl.tune import Study, StudyOptions, grid, run_study  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPACE = {"client.lr": grid(0.02, 0.1)}
TIMING = ("wall_s", "samples_per_s", "tune_trial_id", "tune_trial_dir")
SCRIPT = """
from fcl.tune import Study, grid, main
STUDY = Study("full", {space!r})
if __name__ == "__main__":
    main(STUDY)
"""


@pytest.fixture
def small_disk(tmp_path):
    with tmpfs(tmp_path / "disk", "size=256k") as disk:
        yield disk


def frames(results):
    return {n: pd.read_parquet(os.path.join(results, "full", f"{n}.parquet"))
            for n in ("trials", "rounds", "tasks")}


def test_disk_full_mid_study_ends_in_one_line_and_resume_loses_nothing(local_ray, tmp_path,
                                                                       small_disk):
    script = tmp_path / "full.py"
    script.write_text(textwrap.dedent(SCRIPT.format(space=SPACE)))
    cmd = [sys.executable, str(script), "--preset", "smoke", "--seeds", "1",
           "--results", str(small_disk), "--address", local_ray]
    env = {**os.environ, "PYTHONPATH": REPO}
    full = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    lines = [line for line in full.stderr.splitlines() if line.startswith("error:")]
    assert full.returncode == 2, full.stderr[-3000:]
    assert len(lines) == 1 and "the disk filled up" in lines[0] and "--resume" in lines[0]
    assert "Traceback" not in full.stderr, full.stderr[-3000:]
    assert not (small_disk / "full" / "study.json").exists()
    subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)
    resumed = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, env=env,
                             timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    whole = tmp_path / "whole"
    outcome = run_study(Study("full", SPACE), StudyOptions(preset="smoke", seeds=1,
                                                           results=str(whole)))
    assert (outcome.finished, outcome.failed) == (2, 0)
    a, b = frames(whole), frames(small_disk)
    pd.testing.assert_frame_equal(a["trials"].drop(columns=list(TIMING)),
                                  b["trials"].drop(columns=list(TIMING)))
    pd.testing.assert_frame_equal(a["rounds"].drop(columns="wall_s"),
                                  b["rounds"].drop(columns="wall_s"))
    pd.testing.assert_frame_equal(a["tasks"], b["tasks"])


def test_restore_experiment_state_replaces_a_truncated_snapshot(tmp_path):
    from fcl.tune.disk_full import restore_experiment_state
    staging, storage = tmp_path / "staging", tmp_path / "storage"
    staging.mkdir(), storage.mkdir()
    (staging / "experiment_state-x.json").write_text('{"trial_data": [1, 2]}')
    (storage / "experiment_state-x.json").write_text('{"trial_data": [1')      # truncated
    (storage / "trial_0").mkdir()
    assert restore_experiment_state(str(staging), str(storage))
    assert (storage / "experiment_state-x.json").read_text() == '{"trial_data": [1, 2]}'
    assert sorted(p.name for p in storage.iterdir()) == ["experiment_state-x.json", "trial_0"]
    (staging / "experiment_state-x.json").write_text('{"trial_data": [1')      # nothing whole
    assert not restore_experiment_state(str(staging), str(storage))
    assert not restore_experiment_state(str(staging), "s3://bucket/study")


def test_resume_repairs_a_truncated_state_from_the_drivers_copy_or_refuses(tmp_path):
    """`--resume` never hands Tune an experiment state it cannot read (Tune would restart the
    study with the trials it still finds and report success): it restores the copy kept at a
    full-disk stop, or refuses in one line naming --fresh."""
    from fcl.config import ConfigError
    from fcl.tune import disk_full
    from fcl.tune.disk_full import ensure_resumable
    from fcl.tune.state import remove_experiment
    path = tmp_path / ".tune" / "s"
    path.mkdir(parents=True)
    whole = '{"trial_data": [1, 2]}'
    (path / "experiment_state-2026-01-01.json").write_text('{"trial_data": [1')
    with pytest.raises(ConfigError, match="does not read back whole.*--fresh"):
        ensure_resumable("s", str(path))
    staging = tmp_path / "staging"
    staging.mkdir()
    (staging / "experiment_state-2026-01-01.json").write_text(whole)
    kept = disk_full.stash(str(staging), str(path))
    assert kept == disk_full.stash_folder(str(path)) and os.path.isdir(kept)
    ensure_resumable("s", str(path))
    assert (path / "experiment_state-2026-01-01.json").read_text() == whole
    assert not os.path.exists(kept)                   # used up: a later damage is refused
    ensure_resumable("s", str(path))                      # whole: nothing to do
    (path / "tuner.pkl").write_text("older")          # whole but older than the stop's copy
    (staging / "tuner.pkl").write_text("newer")
    disk_full.stash(str(staging), str(path))
    ensure_resumable("s", str(path))
    assert (path / "tuner.pkl").read_text() == "newer" and not os.path.exists(kept)
    disk_full.stash(str(staging), str(path))
    remove_experiment(str(path))                      # --fresh drops the copy too
    assert not os.path.exists(kept) and not path.exists()


def test_resume_refuses_an_emptied_search_state_naming_the_file(tmp_path):
    """A kill while Tune writes `basic-variant-state-*.json` can leave it empty; resumed, Tune
    would create only the trials it still finds and report success. Refused in one line."""
    from fcl.config import ConfigError
    import pickle

    from fcl.tune.disk_full import damaged_search_state, ensure_resumable
    path = tmp_path / ".tune" / "s"
    path.mkdir(parents=True)
    (path / "experiment_state-2026-01-01.json").write_text('{"trial_data": [1, 2]}')
    (path / "basic-variant-state-2026-01-01.json").write_bytes(pickle.dumps({"_iterators": []}))
    (path / "tuner.pkl").write_bytes(b"\x80\x04.")
    assert damaged_search_state(str(path)) == ""
    ensure_resumable("s", str(path))
    (path / "basic-variant-state-2026-01-02.json").write_text("")          # the newest: empty
    with pytest.raises(ConfigError, match=r"basic-variant-state-2026-01-02\.json is empty or "
                                          r"cut short .*--fresh"):
        ensure_resumable("s", str(path))
    whole = pickle.dumps({"_iterators": list(range(100))})
    (path / "basic-variant-state-2026-01-02.json").write_bytes(whole[:len(whole) // 2])
    with pytest.raises(ConfigError, match="cut short"):
        ensure_resumable("s", str(path))
    (path / "basic-variant-state-2026-01-02.json").unlink()
    (path / "tuner.pkl").write_bytes(b"")
    assert damaged_search_state(str(path)) == "tuner.pkl is empty"


def test_a_study_that_ran_fewer_trials_than_planned_is_not_exported(tmp_path):
    from types import SimpleNamespace

    from fcl.config import ConfigError
    from fcl.tune.plan import StudyPlan
    from fcl.tune.run import check_all_ran
    from fcl.tune.space import grid
    study = SimpleNamespace(searcher=None, name="s")
    opts = SimpleNamespace(num_samples=1, resume=True, results=str(tmp_path))
    plan = SimpleNamespace(study=study, name="s", opts=opts,
                           space={"client.lr": grid(0.1, 0.2), "seed": grid(0, 1, 2)})
    plan.planned_trials = StudyPlan.planned_trials.fget(plan)
    state = SimpleNamespace(path=str(tmp_path / ".tune" / "s"))
    assert plan.planned_trials == 6
    check_all_ran(plan, state, [object()] * 6, "")                 # all there
    check_all_ran(plan, state, [object()] * 2, "SIGINT")           # interrupted: its own line
    with pytest.raises(ConfigError, match="Tune ran 1 of the 6 planned trials of study s: .*"
                                          "nothing was exported"):
        check_all_ran(plan, state, [object()], "")
