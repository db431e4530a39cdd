"""Where fcl reaches into Ray's private API, because Ray has no public one for it: reading a
running Ray's state, muting the workers' output the driver prints (`mute_worker_output`) or
dropping Ray's own SIGTERM tracebacks from it (`drop_sigterm_tracebacks`), and one fix to Tune's
checkpoint rotation (`rotate_checkpoints_safely`; the other such place is `fcl.tune.ray_connect`:
what joining a cluster asks of its GCS). tests/test_tune_ray_private.py fails loudly on a Ray
that moves or renames either (the study itself would just read "no autoscaler", or lose the
fix)."""
from __future__ import annotations

import ray._private.ray_logging as _ray_logging
import ray._private.state
import ray.train._internal.checkpoint_manager as _checkpoint_manager
import ray.tune.execution.experiment_state as _experiment_state

from fcl.tune.worker_noise import SigtermTracebacks


def autoscaler_node_groups() -> list:
    """The node groups an autoscaler (KubeRay, autoscaler v2) publishes in the connected
    cluster's config, each with `resources`, `min_count` and `max_count` (-1: unbounded);
    [] where there is none, or this Ray has no such call."""
    try:
        config = ray._private.state.state.get_cluster_config()
    except Exception:                                   # noqa: BLE001  (no such call: none)
        return []
    return list(getattr(config, "node_group_configs", None) or [])


_DEFERRED: list[tuple] = []            # (fs, path) of checkpoints rotated away, not yet deleted
_DELETE = _checkpoint_manager._delete_fs_path


def rotate_checkpoints_safely() -> None:
    """Make Tune delete a trial's rotated-away checkpoint (`CheckpointConfig(num_to_keep)`)
    only once an experiment snapshot that no longer names it is on the storage, and take one
    already gone as deleted.

    Why: Tune deletes it the moment a newer checkpoint arrives, while its snapshot on the
    storage (what `--resume` restores) lags behind. A driver killed in between resumed with a
    trial whose list named deleted checkpoints (seen in CI, `kill -9` then `--resume`: "3 trials
    finished, 1 failed", once with `FileNotFoundError: Path not found` at the next rotation,
    once with "Could not recover from checkpoint as it does not exist on storage anymore" when
    the one to restore from was gone). With this patch, each deletion waits for the next
    snapshot's upload to land (`flush_rotated_checkpoints`); a driver killed first leaves those
    few checkpoint folders on the storage. Idempotent; the driver calls it before each study."""
    manager = _experiment_state._ExperimentCheckpointManager
    if getattr(manager.sync_up_experiment_state, "fcl_deferring", False):
        return
    _checkpoint_manager._delete_fs_path = _defer
    manager.sync_up_experiment_state = _snapshot_then_flush(manager.sync_up_experiment_state)


def _defer(fs, fs_path: str) -> None:
    _DEFERRED.append((fs, fs_path))


def flush_rotated_checkpoints(count: int | None = None) -> None:
    """Delete the first `count` (default: all) deferred checkpoints, each where still there."""
    n = len(_DEFERRED) if count is None else count
    for fs, fs_path in _DEFERRED[:n]:
        try:
            _DELETE(fs=fs, fs_path=fs_path)
        except FileNotFoundError:
            pass                           # gone already: what the rotation wanted
    del _DEFERRED[:n]


def _snapshot_then_flush(original):
    """Tune's experiment snapshot, then (where it launched an upload and that upload landed)
    the deletions queued before it: the snapshot no longer names them."""
    def sync_up(self, save_fn, force=False, wait=False):
        queued, synced = len(_DEFERRED), self._last_sync_time
        result = original(self, save_fn, force=force, wait=wait)
        if self._last_sync_time != synced:
            try:
                self._storage.syncer.wait()
            except Exception:              # noqa: BLE001  (not on the storage: keep them)
                return result
            flush_rotated_checkpoints(queued)
        return result

    sync_up.fcl_deferring = True
    return sync_up


_MUTED: list = []                      # the driver's handlers of worker output, while muted


def mute_worker_output() -> None:
    """Stop printing what Ray's workers write (Ray's `ray_print_logs` handler of the driver):
    after Ctrl-C, Tune's SIGTERM to a trial can end in an "Exception ignored" traceback on the
    worker, which Ray would forward to the user's terminal."""
    dispatcher = _ray_logging.global_worker_stdstream_dispatcher
    with dispatcher._lock:
        if not _MUTED:
            _MUTED.append(dispatcher.handlers)
            dispatcher.handlers = [h for h in dispatcher.handlers if h[0] != "ray_print_logs"]


def unmute_worker_output() -> None:
    dispatcher = _ray_logging.global_worker_stdstream_dispatcher
    with dispatcher._lock:
        if _MUTED:
            dispatcher.handlers = _MUTED.pop()


def drop_sigterm_tracebacks() -> None:
    """Wrap the driver's printer of worker output (Ray's `ray_print_logs` handler) so that the
    traceback Ray's SIGTERM handler leaves in a worker Tune ends is not printed
    (`fcl.tune.worker_noise`). Idempotent; nothing to wrap on a Ray Client or without
    log_to_driver."""
    dispatcher = _ray_logging.global_worker_stdstream_dispatcher
    with dispatcher._lock:
        dispatcher.handlers = [(name, _filtered(handle)) if name == "ray_print_logs" and
                               not getattr(handle, "fcl_filtered", False) else (name, handle)
                               for name, handle in dispatcher.handlers]


def _filtered(handle):
    drop = SigtermTracebacks()

    def print_logs(data):
        lines = drop((data.get("ip"), data.get("pid"), data.get("is_err")), data["lines"])
        if lines:
            handle({**data, "lines": lines})

    print_logs.fcl_filtered = True
    return print_logs
