"""`fcl.tune.checkpoints`: after the export, each exported trial keeps only its last checkpoint;
and the two things Ray 2.60 does with `CheckpointConfig(num_to_keep=None)` that fcl relies on
(it deletes no checkpoint, and forces no experiment snapshot per trial checkpoint)."""
import types

import pyarrow.fs
import pytest

pytest.importorskip("ray")

from fcl.tune.checkpoints import prune_checkpoints, pruned_line  # noqa: E402


def trial(tmp_path, name: str, checkpoints: int, last: int | None):
    folder = tmp_path / name
    folder.mkdir()
    for i in range(checkpoints):
        (folder / f"checkpoint_{i:06d}").mkdir(parents=True)
        (folder / f"checkpoint_{i:06d}" / "run_state.pt").write_bytes(b"x" * 100)
    (folder / "params.json").write_text("{}")
    ckpt = None if last is None else types.SimpleNamespace(
        path=str(folder / f"checkpoint_{last:06d}"))
    return types.SimpleNamespace(path=str(folder), filesystem=pyarrow.fs.LocalFileSystem(),
                                 checkpoint=ckpt)


def test_each_exported_trial_keeps_its_last_checkpoint_and_an_unexported_one_keeps_all(
        tmp_path):
    done, failed, never = (trial(tmp_path, "done", 3, 2), trial(tmp_path, "failed", 2, 1),
                           trial(tmp_path, "never", 0, None))
    running = trial(tmp_path, "running", 2, 1)
    grid = [done, failed, never, running]
    pruned = prune_checkpoints(grid, {done.path, failed.path, never.path})
    assert (pruned.checkpoints, pruned.bytes, pruned.kept, pruned.kept_bytes) == (3, 300, 2, 200)
    assert sorted(p.name for p in (tmp_path / "done").iterdir()) == ["checkpoint_000002",
                                                                     "params.json"]
    assert sorted(p.name for p in (tmp_path / "failed").iterdir()) == ["checkpoint_000001",
                                                                       "params.json"]
    assert len(list((tmp_path / "running").glob("checkpoint_*"))) == 2
    assert "deleted 3 older checkpoints" in pruned_line(pruned)
    again = prune_checkpoints(grid, {done.path, failed.path, never.path})   # a --resume
    assert (again.checkpoints, again.kept) == (0, 2)


def test_ray_keeps_every_checkpoint_and_forces_no_snapshot_without_num_to_keep(tmp_path):
    import ray.train._internal.checkpoint_manager as manager_module
    import ray.tune.execution.experiment_state as state_module
    from ray.train import Checkpoint, CheckpointConfig
    from ray.train._internal.session import _TrainingResult

    manager = manager_module._CheckpointManager(CheckpointConfig(num_to_keep=None))
    dirs = [tmp_path / f"checkpoint_00000{i}" for i in range(4)]
    for d in dirs:
        d.mkdir()
        manager.register_checkpoint(_TrainingResult(Checkpoint(str(d)), {}))
    assert all(d.exists() for d in dirs)
    assert manager.latest_checkpoint_result.checkpoint.path == str(dirs[-1])

    snapshots = state_module._ExperimentCheckpointManager(
        storage=None, checkpoint_period="auto", sync_every_n_trial_checkpoints=None)
    for _ in range(10):
        snapshots.on_trial_checkpoint(object())
    assert not snapshots._should_force_sync_up


def test_reading_a_stopped_study_holds_back_tunes_warning_about_unstarted_trials():
    """`--resume` reads Tune's state twice; Tune's logger warns there about every trial with no
    result yet (148 lines on a grid with 74 to go). Inside `unstarted_trials_quiet` its
    warnings are dropped, errors still pass, and afterwards its level is what it was."""
    import logging
    from fcl.tune.tuner import unstarted_trials_quiet
    log = logging.getLogger("ray.tune.analysis.experiment_analysis")
    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    log.addHandler(handler)
    before = log.level
    try:
        with unstarted_trials_quiet():
            log.warning("Failed to fetch metrics for 74 trial(s)")
            log.error("a real error")
        log.warning("after")
    finally:
        log.removeHandler(handler)
    assert seen == ["a real error", "after"] and log.level == before
