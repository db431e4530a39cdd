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
