"""Where fcl reaches into Ray's private API, because Ray has no public one for it: reading a
running Ray's state, and one fix to Tune's checkpoint rotation (the other such place is
`fcl.tune.ray_connect`: what joining a cluster asks of its GCS). tests/test_tune_ray_private.py
fails loudly on a Ray that moves or renames either (the study itself would just read "no
autoscaler", or lose the fix)."""
from __future__ import annotations

import ray._private.state
import ray.train._internal.checkpoint_manager as _checkpoint_manager


def autoscaler_node_groups() -> list:
    """The node groups an autoscaler (KubeRay, autoscaler v2) publishes in the connected
    cluster's config, each with `resources`, `min_count` and `max_count` (-1: unbounded);
    [] where there is none, or this Ray has no such call."""
    try:
        config = ray._private.state.state.get_cluster_config()
    except Exception:                                   # noqa: BLE001  (no such call: none)
        return []
    return list(getattr(config, "node_group_configs", None) or [])


def tolerate_deleted_checkpoints() -> None:
    """Make Tune's rotation of a trial's old checkpoints (`CheckpointConfig(num_to_keep)`) take
    an already deleted one as deleted, instead of failing the trial.

    Why: Tune's experiment snapshot lags its trials' checkpoints. A driver killed after it had
    rotated a checkpoint away but before its next snapshot resumes with that checkpoint still
    on the trial's list; the next rotation then raised `FileNotFoundError: Path not found` and
    turned a healthy trial into ERROR (seen in CI: `kill -9` of the driver, then `--resume`
    ended "3 trials finished, 1 failed"). Idempotent; the driver calls it before each study."""
    delete = _checkpoint_manager._delete_fs_path
    if getattr(delete, "fcl_tolerant", False):
        return

    def delete_if_there(fs, fs_path: str) -> None:
        try:
            delete(fs=fs, fs_path=fs_path)
        except FileNotFoundError:
            pass                           # gone already: what the rotation wanted

    delete_if_there.fcl_tolerant = True
    _checkpoint_manager._delete_fs_path = delete_if_there
