"""The private Ray names fcl uses: every one listed here, each in `fcl.tune.ray_private` or
`fcl.tune.ray_connect`, so a new one is a decision (and the Ray canaries in
tests/test_tune_ray_private.py and tests/test_cluster_faults.py cover it), never a drift.

A private name is a dotted path from `ray` with a component that starts with `_`, reached in
fcl's code by an attribute chain, an import or a logger's name (a string). `python
tests/test_ray_edge.py [FOLDER]` prints those of a tree (the count before and after a change).
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EDGE = {"fcl/tune/ray_private.py", "fcl/tune/ray_connect.py"}
# Where Ray has no public API for what fcl does (each module's docstring says what and why).
ALLOWED = {
    "ray._private.ray_logging.global_worker_stdstream_dispatcher",   # worker output printed
    "ray._private.state.state.get_cluster_config",                   # autoscaler node groups
    "ray._private.services.find_node_ids",                           # this machine's raylets
    "ray._raylet.Config.initialize",                                 # token auth, re-read
    "ray._raylet.GcsClient",                                         # the GCS, before ray.init
    "ray._private.authentication.authentication_token_setup",        # its notice (a logger)
}
RAY_STRING = re.compile(r"^ray(\.\w+)+$")


def private(path: str) -> bool:
    return path.split(".")[0] == "ray" and any(p.startswith("_") for p in path.split("."))


def dotted(node: ast.AST) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return [node.id, *reversed(parts)] if isinstance(node, ast.Name) else None


def names_in(tree: ast.AST) -> set[str]:
    """The private Ray paths one module reaches (longest attribute chains only)."""
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                aliases[a.asname or a.name.split(".")[0]] = a.asname and a.name or a.name.split(
                    ".")[0]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ray"):
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    for node in ast.walk(tree):          # a local bound to a Ray object: `d = ray_logging.d`
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            chain = dotted(node.value)
            if chain and chain[0] in aliases:
                aliases[node.targets[0].id] = ".".join([aliases[chain[0]], *chain[1:]])
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and RAY_STRING.match(node.value) and private(node.value):
            found.add(node.value)
        elif isinstance(node, (ast.Attribute, ast.Name)) and id(node) not in inner:
            chain = dotted(node)
            if chain and chain[0] in aliases:
                path = ".".join([aliases[chain[0]], *chain[1:]])
                if private(path):
                    found.add(path)
    return collapsed(found)


def collapsed(paths: set[str]) -> set[str]:
    """Without a path that only extends another by public names (`d.handlers` is `d`'s)."""
    def extends(path, base):
        rest = path[len(base) + 1:].split(".")
        return path.startswith(base + ".") and not any(p.startswith("_") for p in rest)
    return {p for p in paths if not any(extends(p, q) for q in paths if q != p)}


def private_ray_names(root: Path) -> dict[str, set[str]]:
    """{path: the private Ray names it uses} over every module of `root`/fcl."""
    out = {}
    for path in sorted((root / "fcl").rglob("*.py")):
        names = names_in(ast.parse(path.read_text()))
        if names:
            out[str(path.relative_to(root))] = names
    return out


def test_fcl_uses_only_the_listed_private_ray_names_and_only_in_its_ray_edge():
    used = private_ray_names(ROOT)
    assert set(used) <= EDGE, {p: n for p, n in used.items() if p not in EDGE}
    every = set().union(*used.values())
    assert every == ALLOWED, {"not listed": every - ALLOWED, "no longer used": ALLOWED - every}


def test_the_scan_finds_chains_aliases_imports_and_logger_names():
    code = ("import ray._private.state\nimport ray._private.ray_logging as rl\n"
            "from ray._raylet import GcsClient\nimport logging\n"
            "ray._private.state.state.get_cluster_config()\nrl.dispatcher.handlers\n"
            "GcsClient(address='x')\nlogging.getLogger('ray.train._internal.storage')\n"
            "ray.tune.report\nlogging.getLogger('ray.train')\n")
    code += "d = rl.dispatcher\nd._lock\nd.handlers\n"
    assert names_in(ast.parse(code)) == {
        "ray._private.state.state.get_cluster_config", "ray._private.ray_logging.dispatcher",
        "ray._private.ray_logging.dispatcher._lock", "ray._raylet.GcsClient",
        "ray.train._internal.storage"}


if __name__ == "__main__":
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT
    found = private_ray_names(root)
    for where, names in found.items():
        print(where, *sorted(names), sep="\n  ")
    print(len(set().union(*found.values())) if found else 0, "distinct private Ray names")
