"""Where fcl reads a running Ray's state through a private API, because Ray has no public one
for it (the other such place is `fcl.tune.ray_connect`: what joining a cluster asks of its GCS).
tests/test_tune_ray_private.py fails loudly on a Ray that moves or renames it (the study itself
would just read "no autoscaler")."""
from __future__ import annotations

import ray._private.state


def autoscaler_node_groups() -> list:
    """The node groups an autoscaler (KubeRay, autoscaler v2) publishes in the connected
    cluster's config, each with `resources`, `min_count` and `max_count` (-1: unbounded);
    [] where there is none, or this Ray has no such call."""
    try:
        config = ray._private.state.state.get_cluster_config()
    except Exception:                                   # noqa: BLE001  (no such call: none)
        return []
    return list(getattr(config, "node_group_configs", None) or [])
