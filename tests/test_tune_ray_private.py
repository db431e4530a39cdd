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


def test_muting_worker_output_drops_only_rays_print_handler_and_unmuting_restores_it():
    import ray._private.ray_logging as ray_logging
    dispatcher = ray_logging.global_worker_stdstream_dispatcher
    seen = []
    before, dispatcher.handlers = dispatcher.handlers, []      # a connected Ray's own, aside
    dispatcher.add_handler("ray_print_logs", lambda data: seen.append(("print", data)))
    dispatcher.add_handler("other", lambda data: seen.append(("other", data)))
    try:
        ray_private.mute_worker_output()
        ray_private.mute_worker_output()                  # twice: still one saved list
        dispatcher.emit("a")
        ray_private.unmute_worker_output()
        dispatcher.emit("b")
    finally:
        dispatcher.handlers = before
    assert seen == [("other", "a"), ("print", "b"), ("other", "b")]


# what a worker Tune ended printed in CI beside a failed trial's one-line report
SIGTERM_BLOCK = [
    "Exception ignored in: <function WeakSet.__init__.<locals>._remove at 0x7f4c2c1d2e80>",
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.11/_weakrefset.py", line 39, in _remove',
    "    def _remove(item, selfref=ref(self)):",
    "",
    '  File "/venv/lib/python3.11/site-packages/ray/_private/worker.py", line 1063, in '
    "sigterm_handler",
    "    raise_sys_exit_with_custom_error_message(",
    '  File "python/ray/_raylet.pyx", line 712, in '
    "ray._raylet.raise_sys_exit_with_custom_error_message",
    "SystemExit: 1",
]
OTHER_TRACEBACK = ["Traceback (most recent call last):", '  File "train.py", line 3, in <module>',
                   "ValueError: lr=-1"]


def test_rays_sigterm_traceback_is_dropped_and_every_other_line_kept():
    from fcl.tune.worker_noise import SigtermTracebacks

    drop = SigtermTracebacks()
    lines = ["round 3"] + SIGTERM_BLOCK + ["after"] + OTHER_TRACEBACK
    assert drop(("ip", 1), lines) == ["round 3", "after"] + OTHER_TRACEBACK
    # a block split between two of Ray's batches, and another worker's lines between them
    assert drop(("ip", 2), SIGTERM_BLOCK[:4]) == []
    assert drop(("ip", 3), ["other worker"]) == ["other worker"]
    assert drop(("ip", 2), SIGTERM_BLOCK[4:] + ["next"]) == ["next"]
    # an unrelated SystemExit (no sigterm_handler in it) is the user's: kept
    mine = ["Traceback (most recent call last):", '  File "a.py", line 1, in main', "SystemExit: 2"]
    assert drop(("ip", 1), mine) == mine


def test_the_drivers_printer_of_worker_output_is_wrapped_once(local_ray):
    from ray._private import ray_logging

    ray_private.drop_sigterm_tracebacks()                 # connect() did it; again: no-op
    handlers = dict(ray_logging.global_worker_stdstream_dispatcher.handlers)
    assert handlers["ray_print_logs"].fcl_filtered
    printed = []
    wrapped = ray_private._filtered(printed.append)
    wrapped({"ip": "ip", "pid": 7, "is_err": True, "lines": SIGTERM_BLOCK})
    wrapped({"ip": "ip", "pid": 7, "is_err": True, "lines": ["kept"]})
    assert printed == [{"ip": "ip", "pid": 7, "is_err": True, "lines": ["kept"]}]


@pytest.mark.parametrize("name", sorted(__import__("test_ray_edge").ALLOWED))
def test_every_private_ray_name_fcl_uses_is_on_the_installed_ray(name):
    """The canary of each private name (tests/test_ray_edge.py lists them): where a Ray moves
    one, this says which Ray, which name and which fcl module reaches it."""
    import importlib

    import test_ray_edge
    parts, module = name.split("."), None
    for i in range(len(parts), 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:i]))
            break
        except ImportError:
            continue
    value, missing = module, None
    for part in parts[i:]:
        if not hasattr(value, part):
            missing = part
            break
        value = getattr(value, part)
    users = [p for p, names in test_ray_edge.private_ray_names(test_ray_edge.ROOT).items()
             if name in names]
    assert missing is None, (f"Ray {ray.__version__} has no {name} ({missing!r} is gone); "
                             f"{', '.join(users)} reaches it")

