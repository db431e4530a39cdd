"""The kind of machine (`fcl.machine_kind.Kind`) a study's trials will compute on: the driver's
machine's for a Ray the driver started; on a joined cluster, each live node that can hold a
trial says its own, from a task of no CPU (and the trial's GPU share) placed there. `--copy-from` copies a
stored trial only onto the kind that computed it (`fcl.tune.copies`)."""
from __future__ import annotations

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from fcl.machine_kind import Kind, this_kind
from fcl.tune import cluster
from fcl.tune.nodes import Node, alive_nodes, slots

# A worker starts on each node first (58-90 s on a 2-core machine under load, as for
# `fcl.tune.storage_probe`); a node that says nothing by then is named.
TIMEOUT_S = 180


def trial_kinds(on: list[Node] | None, cpus: float, gpus: float) -> dict[Kind, list[str]]:
    """{kind: the nodes (ip) of that kind} among `on`'s nodes that hold a trial of `cpus` CPUs
    and `gpus` GPUs; `on` None: the driver's machine (a Ray it started, or no Ray yet)."""
    if on is None:
        return {this_kind(gpus > 0): ["the driver's machine"]}
    able = [n for n in on if slots(n, cpus, gpus)]
    ask = ray.remote(num_cpus=0, num_gpus=gpus, max_retries=0)(this_kind)
    refs = [ask.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n.node_id, soft=False)
                        ).remote(gpus > 0) for n in able]
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=TIMEOUT_S)
    out: dict[Kind, list[str]] = {}
    for node, ref in zip(able, refs):
        kind = ray.get(ref) if ref in ready else Kind(f"no answer in {TIMEOUT_S} s", "", "")
        out.setdefault(kind, []).append(node.ip)
    return out


def study_kinds(address: str | None, cpus: float, gpus: float,
                on: list[Node] | None = None) -> dict[Kind, list[str]]:
    """`trial_kinds` for a study at `address` (None: a Ray on the driver's machine); `on`: the live
    nodes of the cluster the driver has joined, else it joins just to ask (the dry run)."""
    if address is None:
        return trial_kinds(None, cpus, gpus)
    if on is not None:
        return trial_kinds(on, cpus, gpus)
    started = cluster.connect(address)
    try:
        return trial_kinds(alive_nodes(), cpus, gpus)
    finally:
        if started:
            ray.shutdown()
