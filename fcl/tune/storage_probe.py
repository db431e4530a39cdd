"""Before the first trial of a multi-node study: can every live node reach `--storage`?

Tune keeps the study's state and checkpoints there, from the driver and from each trial's
node; a node that cannot reach it fails every trial it runs ("Unable to set up cluster
storage"), and a local path that is not shared looks fine on the driver and on the head.
So the driver's node writes a marker through pyarrow's filesystem (what Tune uses), a task
of no CPU on every node reads it and writes its own, and the driver's node reads those back;
the nodes that fail a step are named in one line (exit 2) before any trial."""
from __future__ import annotations

import uuid

import pyarrow.fs
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from fcl.config import ConfigError
from fcl.tune.nodes import Node

TIMEOUT_S = 60


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


_remote_step = ray.remote(num_cpus=0, max_retries=0)(_step)


def _on(node_id: str, *args):
    strategy = NodeAffinitySchedulingStrategy(node_id, soft=False)
    return _remote_step.options(scheduling_strategy=strategy).remote(*args)


def _answers(refs: list) -> list[str]:
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=TIMEOUT_S)
    return [_answer(r) if r in ready else f"no answer in {TIMEOUT_S} s" for r in refs]


def _answer(ref) -> str:
    try:
        return ray.get(ref)
    except ray.exceptions.RayError as e:      # e.g. the node left while it was asked
        return f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"


def check_storage(storage: str, nodes: list[Node]) -> None:
    """Refuse (one line) a `storage` that some of `nodes` cannot read or write."""
    token = uuid.uuid4().hex[:12]
    here = ray.get_runtime_context().get_node_id()
    first, mine = f".fcl-probe-{token}", [f".fcl-probe-{token}-{i}" for i in range(len(nodes))]
    why = _answers([_on(here, storage, [], first)])[0]
    if why:
        raise ConfigError("--storage", storage, f"the driver's node cannot write there ({why})",
                          "a path every node can write, or s3://... / gs://...")
    wrote = _answers([_on(n.node_id, storage, [first], m) for n, m in zip(nodes, mine)])
    why = dict(enumerate(wrote))
    ok = [i for i, w in why.items() if not w]
    seen = _answers([_on(here, storage, [mine[i]], None, True) for i in ok]) if ok else []
    for i, w in zip(ok, seen):
        why[i] = w and "what it wrote does not reach the driver's node"
    _answers([_on(here, storage, [first], None, True)])
    bad = [f"{nodes[i].ip} ({w})" for i, w in why.items() if w]
    if bad:
        raise ConfigError("--storage", storage, f"{len(bad)} of {len(nodes)} nodes cannot "
                          f"share it: {', '.join(bad)}", "a path every node shares (NFS, ...) "
                          "or s3://... / gs://...")
