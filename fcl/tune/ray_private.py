"""Where fcl reaches into Ray's private API, because Ray has no public one for it: reading a
running Ray's state, muting the workers' output the driver prints (`mute_worker_output`) or
dropping Ray's own SIGTERM tracebacks from it (`drop_sigterm_tracebacks`); the other such place
is `fcl.tune.ray_connect`: what joining a cluster asks of its GCS. tests/test_tune_ray_private.py
fails loudly on a Ray that moves or renames either (the study itself would just read "no
autoscaler", or print the tracebacks)."""
from __future__ import annotations

import logging

import ray._private.ray_logging as _ray_logging
import ray._private.state

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


_MUTED: list = []                      # the driver's handlers of worker output, while muted


def mute_worker_output() -> None:
    """Stop printing what Ray's workers write (Ray's `ray_print_logs` handler of the driver):
    after Ctrl-C, Tune's SIGTERM to a trial can end in an "Exception ignored" traceback on the
    worker, which Ray would forward to the user's terminal."""
    dispatcher = _ray_logging.global_worker_stdstream_dispatcher
    if not _MUTED:
        _MUTED.append(dispatcher.handlers)
        dispatcher.remove_handler("ray_print_logs")     # replaces the list: the saved one stays


def unmute_worker_output() -> None:
    if _MUTED:
        _ray_logging.global_worker_stdstream_dispatcher.handlers = _MUTED.pop()


def drop_sigterm_tracebacks() -> None:
    """Wrap the driver's printer of worker output (Ray's `ray_print_logs` handler) so that the
    traceback Ray's SIGTERM handler leaves in a worker Tune ends is not printed
    (`fcl.tune.worker_noise`). Idempotent; nothing to wrap on a Ray Client or without
    log_to_driver."""
    dispatcher = _ray_logging.global_worker_stdstream_dispatcher
    # one assignment of a new list (Ray's own way to remove a handler): the dispatcher's emit
    # goes on over the list it holds, so its private lock is not needed
    dispatcher.handlers = [(name, _filtered(handle)) if name == "ray_print_logs" and
                           not getattr(handle, "fcl_filtered", False) else (name, handle)
                           for name, handle in dispatcher.handlers]


def quiet_token_notice() -> None:
    """Ray's default token auth stays on (a token under ~/.ray); only its notice, logged by a
    private module at INFO and WARNING, is silenced."""
    logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(
        logging.ERROR)


def _filtered(handle):
    drop = SigtermTracebacks()

    def print_logs(data):
        lines = drop((data.get("ip"), data.get("pid"), data.get("is_err")), data["lines"])
        if lines:
            handle({**data, "lines": lines})

    print_logs.fcl_filtered = True
    return print_logs
