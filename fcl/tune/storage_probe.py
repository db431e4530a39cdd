"""Before the first trial of a multi-node study: can every live node reach `--storage`?

Tune keeps the study's state and checkpoints there, from the driver and from each trial's
node; a node that cannot reach it fails every trial it runs ("Unable to set up cluster
storage"), and a local path that is not shared looks fine on the driver and on the head.
So the driver's node writes a marker through pyarrow's filesystem (what Tune uses), a task
of no CPU on every node reads it and writes its own, and the driver's node reads those back;
the nodes that fail a step are named in one line (exit 2) before any trial.

The steps run in one actor per node, ended with `ray.kill`. A plain task's worker would exit
the graceful way once idle, and a worker that has used pyarrow's filesystems can abort in its
C++ destructors then (seen in 6 of 20 studies on a 3-node cluster, Ray 2.60: "Mutex corrupt", then
"Fatal Python error: Aborted" and the worker's modules, ~20 lines in the driver's output);
a killed actor's process ends at once, without them."""
from __future__ import annotations

import re
import uuid

import pyarrow.fs
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from fcl.config import ConfigError
from fcl.tune.nodes import Node

# How long a node may take to answer: a worker starts there first, at Ray's worker niceness,
# which took 58-90 s on a 2-core machine at load 7-9 (3 nodes of ray.cluster_utils, a study
# beside them; at 60 s the check as plain tasks refused the driver's own node); a node that
# answers nothing by then is named.
TIMEOUT_S = 180


def _fs(path: str) -> tuple[pyarrow.fs.FileSystem, str]:
    if "://" in path:
        return pyarrow.fs.FileSystem.from_uri(path)
    return pyarrow.fs.LocalFileSystem(), path


def _step(storage: str, read: list[str], write: str | None, remove: bool = False) -> str:
    """Read the markers `read`, write the marker `write`: "" if it went, else why not."""
    try:
        fs, root = _fs(storage)
        for name in read:
            with fs.open_input_stream(f"{root}/{name}") as f:
                f.read()
            if remove:
                fs.delete_file(f"{root}/{name}")
        if write:
            fs.create_dir(root, recursive=True)
            with fs.open_output_stream(f"{root}/{write}") as f:
                f.write(b"fcl storage probe")
    except Exception as e:           # noqa: BLE001  (the reason is what the user needs)
        return (f"{type(e).__name__}: {e}".splitlines() or [""])[0][:160]
    return ""


@ray.remote(num_cpus=0, max_restarts=0, max_task_retries=0)
class _Prober:
    """`_step` on one node."""

    def step(self, *args) -> str:
        return _step(*args)


class _Probers:
    """One `_Prober` per node, made on first use; `close` kills them all."""

    def __init__(self):
        self.actors: dict[str, ray.actor.ActorHandle] = {}

    def on(self, node_id: str, *args):
        if node_id not in self.actors:
            strategy = NodeAffinitySchedulingStrategy(node_id, soft=False)
            self.actors[node_id] = _Prober.options(scheduling_strategy=strategy).remote()
        return self.actors[node_id].step.remote(*args)

    def close(self) -> None:
        for actor in self.actors.values():
            ray.kill(actor, no_restart=True)


def _answers(refs: list) -> list[str]:
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=TIMEOUT_S)
    return [_answer(r) if r in ready else f"no answer in {TIMEOUT_S} s" for r in refs]


def _answer(ref) -> str:
    try:
        return ray.get(ref)
    except ray.exceptions.RayError as e:      # e.g. the node left while it was asked
        plain = re.sub(r"\x1b\[[0-9;]*m", "", str(e))     # Ray colours the task's name
        return f"{type(e).__name__}: {plain.splitlines()[0][:120]}"


def check_storage(storage: str, nodes: list[Node]) -> None:
    """Refuse (one line) a `storage` that some of `nodes` cannot read or write."""
    probers = _Probers()
    try:
        _check(storage, nodes, probers.on)
    finally:
        probers.close()


def _check(storage: str, nodes: list[Node], on) -> None:
    token = uuid.uuid4().hex[:12]
    here = ray.get_runtime_context().get_node_id()
    first, mine = f".fcl-probe-{token}", [f".fcl-probe-{token}-{i}" for i in range(len(nodes))]
    why = _answers([on(here, storage, [], first)])[0]
    if why:
        raise ConfigError("--storage", storage, f"the driver's node cannot write there ({why})",
                          "a path every node can write, or s3://... / gs://...")
    wrote = _answers([on(n.node_id, storage, [first], m) for n, m in zip(nodes, mine)])
    why = dict(enumerate(wrote))
    ok = [i for i, w in why.items() if not w]
    seen = _answers([on(here, storage, [mine[i]], None, True) for i in ok]) if ok else []
    for i, w in zip(ok, seen):
        why[i] = w and "what it wrote does not reach the driver's node"
    _answers([on(here, storage, [first], None, True)])
    bad = [f"{nodes[i].ip} ({w})" for i, w in why.items() if w]
    if bad:
        raise ConfigError("--storage", storage, f"{len(bad)} of {len(nodes)} nodes cannot "
                          f"share it: {', '.join(bad)}", "a path every node shares (NFS, ...) "
                          "or s3://... / gs://...")
