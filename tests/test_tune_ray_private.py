"""`fcl.tune.ray_private`: the private Ray call it wraps still exists on the installed Ray
(where it is gone the study silently reads "cannot autoscale", so this test is what notices)."""
import inspect

import pytest

ray = pytest.importorskip("ray")
import ray._private.state  # noqa: E402

from fcl.tune import ray_private  # noqa: E402


def test_the_private_cluster_config_call_exists():
    call = getattr(ray._private.state.state, "get_cluster_config", None)
    assert callable(call), f"Ray {ray.__version__}: no ray._private.state.get_cluster_config"
    assert list(inspect.signature(call).parameters) == []


def test_a_local_ray_publishes_no_node_groups(local_ray):
    assert ray_private.autoscaler_node_groups() == []


def test_checkpoint_rotation_takes_an_already_deleted_checkpoint_as_deleted(tmp_path):
    """What a driver killed between a rotation and its snapshot resumes into: Tune's list names
    a checkpoint that is gone. Without `tolerate_deleted_checkpoints`, FileNotFoundError."""
    import ray.train._internal.checkpoint_manager as manager_module
    from ray.train import Checkpoint, CheckpointConfig
    from ray.train._internal.session import _TrainingResult

    ray_private.tolerate_deleted_checkpoints()
    ray_private.tolerate_deleted_checkpoints()        # idempotent: wrapped once
    assert manager_module._delete_fs_path.fcl_tolerant
    assert not getattr(manager_module._delete_fs_path.__closure__[0].cell_contents,
                       "fcl_tolerant", False)
    manager = manager_module._CheckpointManager(CheckpointConfig(num_to_keep=2))
    dirs = [tmp_path / f"checkpoint_00000{i}" for i in range(3)]
    for d in dirs:
        d.mkdir()
    dirs[0].rmdir()                                   # rotated away before the kill
    for d in dirs:
        manager.register_checkpoint(_TrainingResult(Checkpoint(str(d)), {}))
    assert [r.checkpoint.path for r in manager.best_checkpoint_results] == \
        [str(d) for d in dirs[1:]]
    assert not dirs[0].exists() and dirs[1].exists() and dirs[2].exists()
