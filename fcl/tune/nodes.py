"""The cluster as nodes, not as one pool: a trial runs on one node, so what it asks for is
checked against the largest node (a trial larger than every node would wait forever), the
trials that run at once are counted node by node (a GPU share confines trials to GPU nodes),
and while a study runs `InfeasibleWatch` stops it in one line once no live node can hold a
trial (nodes left, or Ray reports the request infeasible)."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import ray
from ray import tune

from fcl.config import ConfigError
from fcl.tune import stop_request


@dataclass(frozen=True)
class Node:
    ip: str
    cpus: float
    gpus: float = 0.0
    head: bool = False
    node_id: str = ""


def alive_nodes() -> list[Node]:
    """The connected cluster's live nodes (`ray.nodes()`), head first."""
    out = [Node(n["NodeManagerAddress"], float(n["Resources"].get("CPU", 0)),
                float(n["Resources"].get("GPU", 0)),
                "node:__internal_head__" in n["Resources"], n["NodeID"])
           for n in ray.nodes() if n.get("Alive")]
    return sorted(out, key=lambda n: (not n.head, n.ip))


def one_node(have: dict) -> list[Node]:
    """A machine (a local Ray, or a cluster known only by its totals) as one node."""
    return [Node("local", float(have.get("CPU", 0)), float(have.get("GPU", 0)), True)]


def sizes(nodes: list[Node]) -> str:
    """The nodes' sizes in one phrase: `1, 2 and 2 CPUs` or `4 CPUs + 1 GPU, 2 CPUs`."""
    if not any(n.gpus for n in nodes):
        counts = [f"{n.cpus:g}" for n in nodes]
        head = ", ".join(counts[:-1])
        return (f"{head} and {counts[-1]}" if head else counts[-1]) + " CPUs"
    return ", ".join(f"{n.cpus:g} CPUs" + (f" + {n.gpus:g} GPU" if n.gpus else "")
                     for n in nodes)


def slots(node: Node, cpus: float, gpus: float) -> int:
    """How many trials of `cpus` CPUs and `gpus` GPUs `node` runs at once."""
    n = math.floor(node.cpus / cpus + 1e-9)
    if gpus:
        n = min(n, math.floor(node.gpus / gpus + 1e-9))
    return max(0, n)


def check_fits(nodes: list[Node], cpus: float, gpus: float) -> None:
    """Refuse (one line, exit 2) a trial that no node can hold."""
    if any(slots(n, cpus, gpus) for n in nodes):
        return
    where = f"no node has {cpus:g} CPUs" + (f" and {gpus:g} GPUs" if gpus else "")
    big_cpu = max(n.cpus for n in nodes)
    if any(n.cpus >= cpus for n in nodes):      # the CPUs fit somewhere; the GPUs do not
        big_gpu = max(n.gpus for n in nodes if n.cpus >= cpus)
        raise ConfigError("--gpus-per-trial", f"{gpus:g}", f"{where} (nodes: {sizes(nodes)})",
                          f"at most {big_gpu:g} with --cpus-per-trial {cpus:g}")
    raise ConfigError("--cpus-per-trial", f"{cpus:g}", f"a trial runs on one node and {where} "
                      f"(nodes: {sizes(nodes)})", f"0 < cpus <= {big_cpu:g}")


def placement(nodes: list[Node], cpus: float, gpus: float, max_concurrent: int | None
              ) -> list[tuple[Node, int]]:
    """Each node with the trials it runs at once (in order, until `max_concurrent`)."""
    out, left = [], max_concurrent or math.inf
    for node in nodes:
        n = int(min(slots(node, cpus, gpus), left))
        left -= n
        out.append((node, n))
    return out


def concurrency(nodes: list[Node], cpus: float, gpus: float, max_concurrent: int | None
                ) -> int:
    """How many trials run at once: the nodes' slots, at most `max_concurrent`."""
    return max(1, sum(n for _, n in placement(nodes, cpus, gpus, max_concurrent)))


def placement_line(nodes: list[Node], cpus: float, gpus: float, max_concurrent: int | None
                   ) -> str:
    """What the study prints at its start: how many trials run at once on which nodes, and,
    where a GPU share keeps trials off CPU nodes, how to use those too."""
    placed = placement(nodes, cpus, gpus, max_concurrent)
    total = sum(n for _, n in placed)
    share = f"{cpus:g} CPU" + (f" + {gpus:g} GPU" if gpus else "")
    line = (f"{total} trials at once ({share} each): " +
            ", ".join(f"{n} on {node.ip}" for node, n in placed if n))
    idle = [node for node, n in placed if not n and not node.gpus and node.cpus >= cpus]
    if gpus and idle:
        line += (f"; none on the CPU nodes {', '.join(n.ip for n in idle)} (each trial asks "
                 f"for {gpus:g} GPU): --gpus-per-trial 0 runs trials on every node's CPUs")
    return line


class InfeasibleWatch(tune.Callback):
    """Driver side: stops the study (as Ctrl-C does: Tune's state is kept for `--resume`) once
    no live node can hold a trial of `cpus` CPUs and `gpus` GPUs, instead of waiting on
    trials that can never be placed; the NO_NODE stop (`fcl.tune.stop_request`) then holds the
    one line to end with."""

    def __init__(self, cpus: float, gpus: float, every_s: float = 2.0):
        self.cpus, self.gpus, self.every_s = cpus, gpus, every_s
        self._last = 0.0

    def on_step_begin(self, iteration, trials, **info):
        now = time.monotonic()
        if stop_request.stops(stop_request.NO_NODE) or now - self._last < self.every_s:
            return
        self._last = now
        live = alive_nodes()
        if not any(slots(n, self.cpus, self.gpus) for n in live):
            waiting = sum(t.status in ("PENDING", "RUNNING", "PAUSED") for t in trials)
            stop_request.request_stop(stop_request.NO_NODE,
                                      infeasible_line(live, self.cpus, self.gpus, waiting))


def infeasible_line(nodes: list[Node], cpus: float, gpus: float, waiting: int) -> str:
    share = f"{cpus:g} CPUs" + (f" and {gpus:g} GPUs" if gpus else "")
    have = f"the live nodes have {sizes(nodes)}" if nodes else "no node is alive"
    return (f"stopped: no live node can hold a trial of {share} ({have}); {waiting} trials "
            "unfinished, kept for --resume. Add a node that size (or lower --cpus-per-trial "
            "/ --gpus-per-trial)")
