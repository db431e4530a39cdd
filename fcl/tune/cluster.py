"""Where trials run: a quiet local Ray, or a cluster reached by `--address` / `RAY_ADDRESS`;
and how much of it each trial asks for."""
from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import sys
import time
import warnings
from dataclasses import dataclass

import ray
import ray.util.client
import torch

from fcl.config import ConfigError
from fcl.provenance import COMMIT_ENV, fcl_git
from fcl.tune import ray_connect, ray_private, reaper, termination
from fcl.tune.nodes import Node, check_fits, one_node
from fcl.tune.ray_private import autoscaler_node_groups


TUNE_ENV = ("RAY_AIR_NEW_OUTPUT", "TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S")


def connect(address: str | None, num_cpus: int | None = None) -> bool:
    """Join the cluster at `address` (or `RAY_ADDRESS`), or start a local one with no dashboard,
    no usage statistics and no token prompt. Returns True when this call started Ray (the
    caller then shuts it down); an already initialised Ray (a test session) is reused."""
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")           # our table, not Ray's result boxes
    # Tune warns each time it forces a snapshot of the experiment state soon after the last
    # (one per `num_to_keep` checkpoints of a trial: none in fcl's studies, which keep every
    # checkpoint, but a Tuner of one's own around `fcl.tune.trainable` may set it).
    os.environ.setdefault("TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S", "0")
    if ray.is_initialized():
        return False
    address = address or os.environ.get("RAY_ADDRESS") or None
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray_private.quiet_token_notice()
    if address is None:
        # Ray starts workers at nice 15 to keep its own processes responsive; on a laptop the
        # trials are the work, and at 15 they crawl beside anything else running.
        os.environ.setdefault("RAY_worker_niceness", "0")
    elif address.startswith("ray://"):
        prepare_client()
    elif address != "auto":
        prepare_join(address)
    local = {"include_dashboard": False, "num_cpus": num_cpus} if address is None else {}
    if address is not None and not in_ray_job():
        local["runtime_env"] = ship_fcl()
    # the one line below says it; Ray's own warning before it would say it twice
    warnings.filterwarnings("ignore", message="Ray Client connection timed out")
    # "local": a new instance, even where `ray start` left one running (None would join it)
    init = functools.partial(ray.init, address=address or "local", configure_logging=True,
                             logging_level=logging.WARNING, log_to_driver=True, **local)
    try:
        with termination.across_ray_init():  # a SIGTERM meanwhile: the CLI's line, exit 143
            if (address or "").startswith("ray://"):
                client_init(init, address)
            else:
                init()
    except termination.Terminated:
        if address is None:      # what a local Ray had started ends with the driver
            reaper.watch_local_ray()
            with contextlib.suppress(Exception):
                ray.shutdown()
        raise
    ray_private.drop_sigterm_tracebacks()
    if address is None:
        reaper.watch_local_ray()       # its agents must not outlive a driver killed with -9
    return True


CLIENT_TRIES, CLIENT_PAUSE_S = 3, 5.0     # Ray Client: tries, and the pause before a retry


def client_init(init, address: str, tries: int = CLIENT_TRIES,
                pause_s: float = CLIENT_PAUSE_S) -> None:
    """`init()` through Ray Client, tried `tries` times: a head whose Ray Client server is still
    starting its worker (seen with the dashboard on: 2 connects of 5 failed, the next one
    worked) refuses a first connect. The one-line error says what was tried."""
    for attempt in range(1, tries + 1):
        try:
            init()
            return
        except ConnectionError as e:
            with contextlib.suppress(Exception):    # a half-made client before the next try
                ray.shutdown()
            if attempt == tries:
                raise ConfigError("--address", address, f"Ray Client could not connect in "
                                  f"{tries} tries, {pause_s:g} s apart (the last: {e})",
                                  "a head started with --ray-client-server-port PORT that "
                                  "the driver reaches; on a cluster with token auth, its "
                                  "~/.ray/auth_token beside the driver (or RAY_AUTH_TOKEN)"
                                  ) from None
            time.sleep(pause_s)


def ship_fcl() -> dict:
    """Ray's runtime_env that ships this driver's fcl package to every worker of the study (it
    is put first on their path), so a node with the dependencies (torch, Ray, ...) needs
    nothing else and every trial runs the driver's code; without it a worker imported
    whatever fcl it had, or, from another folder than the repo's, none. Only the package:
    results and data stay behind (the driver loads the data; Ray's object store carries it)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))     # fcl/
    # Tune's own settings travel too: under Ray Client its loop runs on the head, in an actor
    # that does not have this driver's environment (seen: Ray's result boxes and 'snapshotting
    # ... may become a bottleneck' warnings, 256 lines for a 5-trial smoke study)
    tune_env = {k: os.environ[k] for k in TUNE_ENV if k in os.environ}
    # the shipped copy has no .git: what runs there (Ray Client's rows) records this commit
    commit = {COMMIT_ENV: fcl_git()} if fcl_git() else {}
    return {"py_modules": [package], "env_vars": {**tune_env, **commit},
            "excludes": ["__pycache__", "*.pyc", "*.fclcache.pt"]}


def is_client() -> bool:
    """Whether this driver is on Ray Client (`--address ray://HEAD:10001`)."""
    return ray.util.client.ray.is_connected()


def in_ray_job() -> bool:
    """Whether this driver runs as a Ray job (`ray job submit`): its runtime_env (the
    uploaded working dir) is the job's, and its folder is Ray's temporary copy of it."""
    return "RAY_JOB_CONFIG_JSON_ENV_VAR" in os.environ


def check_job_paths(results: str, storage: str | None) -> None:
    """Inside a Ray job a relative `--results` / `--storage` would land in Ray's temporary
    copy of the working dir (lost with it, and reused by the next submit: "already has
    state"): refused in one line."""
    if not in_ray_job():
        return
    for flag, path in (("--results", results), ("--storage", storage)):
        if path and "://" not in path and not os.path.isabs(path):
            raise ConfigError(flag, path, "a relative path inside a Ray job resolves into "
                              f"Ray's temporary copy of the working dir ({os.getcwd()}), "
                              "lost when the job ends", "an absolute path every node shares "
                              "(e.g. /mnt/shared/fcl), or s3://... / gs://... for --storage")


def prepare_join(address: str) -> None:
    """Before `ray.init(address)`: send the token where the cluster wants one (token auth,
    on by default for `ray start` since Ray 2.52: `fcl.tune.ray_connect`), and refuse in one
    line a driver on a machine that is not one of the cluster's nodes (Ray would die in ~14 s
    with a C++ stack trace: it attaches a driver to a raylet on its own machine)."""
    if ray_connect.needs_token(address):
        path, have = token_at_hand()
        if not have:
            raise ConfigError("--address", address, "the cluster uses token auth and this "
                              f"machine has no token ({path})", "the head's ~/.ray/auth_token "
                              "copied to this machine, or RAY_AUTH_TOKEN / RAY_AUTH_TOKEN_PATH set")
        ray_connect.use_token()
    if ray_connect.local_node_ids(address) == []:
        raise ConfigError("--address", address, "this machine is not a node of that cluster "
                          "(a driver joins through a Ray node on its own machine)",
                          "run on the head node; or `RAY_AUTH_MODE=token ray job submit --address "
                          "http://HEAD:8265 --working-dir . -- python studies/NAME.py ...`; or "
                          "--address ray://HEAD:10001 (Ray Client)")


def prepare_client() -> None:
    """Before `ray.init("ray://...")`: Ray Client sends the token only with RAY_AUTH_MODE=token
    (without it, a head with token auth never answers: "ray client connection timeout" after
    30 s); a Ray Client server cannot be asked first as the GCS can, so the token goes where
    one is at hand (a head without token auth ignores it: tested)."""
    if "RAY_AUTH_MODE" not in os.environ and token_at_hand()[1]:
        ray_connect.use_token()


def token_at_hand() -> tuple[str, bool]:
    """(where Ray looks for the token file, whether this machine has a token: that file or
    RAY_AUTH_TOKEN)."""
    path = os.environ.get("RAY_AUTH_TOKEN_PATH") or os.path.expanduser("~/.ray/auth_token")
    return path, bool(os.environ.get("RAY_AUTH_TOKEN")) or os.path.isfile(path)


def can_autoscale() -> bool:
    """Whether the connected cluster can add nodes: Ray's cluster launcher leaves
    ~/ray_bootstrap_config.yaml on the head (what Tune itself checks), and an autoscaler
    (KubeRay, autoscaler v2) publishes node groups that may grow in the cluster config (read
    through Ray's private state: `fcl.tune.ray_private`)."""
    if os.path.exists(os.path.expanduser("~/ray_bootstrap_config.yaml")):
        return True
    return any(g.max_count == -1 or g.max_count > g.min_count
               for g in autoscaler_node_groups() if g.resources and g.max_count != 0)


def local_resources() -> dict:
    """What a local Ray would find on the driver's machine, without starting one (for
    `--dry-run`)."""
    return {"CPU": len(os.sched_getaffinity(0)), "GPU": torch.cuda.device_count()}


@dataclass(frozen=True)
class TrialResources:
    cpus: float
    gpus: float
    threads: int              # torch threads: the trial's CPU share, at least one

    def as_dict(self) -> dict:
        return {"cpu": self.cpus, "gpu": self.gpus}


def trial_resources(cluster: dict, cpus: float | None, gpus: float | None,
                    max_concurrent: int | None, autoscales: bool = False,
                    nodes: list[Node] | None = None) -> TrialResources:
    """Default: one CPU per trial, and the cluster's GPUs shared evenly by the trials that can
    run at once (none when it has none). A trial runs on one node, so what it asks for is
    checked against the largest of `nodes` (default: the cluster as one node): asking for more
    than any node has is an error, never a trial left pending forever, unless the cluster can
    autoscale (`can_autoscale`): then Ray adds nodes for the pending trials, and a warning
    says so."""
    nodes = nodes or one_node(cluster)
    have_cpus, have_gpus = float(cluster.get("CPU", 0)), float(cluster.get("GPU", 0))
    cpus = 1.0 if cpus is None else cpus
    if not 0 < cpus <= have_cpus:
        raise ConfigError("--cpus-per-trial", cpus, f"the cluster has {have_cpus:g} CPUs",
                          f"0 < cpus <= {have_cpus:g}")
    concurrency = max(1, math.floor(have_cpus / cpus))
    if max_concurrent:
        concurrency = min(concurrency, max_concurrent)
    if gpus is None:
        gpus = 0.0 if not have_gpus else min(1.0, have_gpus / concurrency,
                                             max(n.gpus for n in nodes))
    if gpus > 1 and gpus != int(gpus):
        raise ConfigError("--gpus-per-trial", gpus, "a trial asks for a fraction of one GPU "
                          "or whole GPUs", "fractions below 1, whole numbers above")
    if gpus > have_gpus and autoscales:
        print(f"warning: --gpus-per-trial={gpus:g}: the cluster has {have_gpus:g} GPUs now; "
              "trials wait until its autoscaler adds GPU nodes", file=sys.stderr)
    elif gpus < 0 or gpus > have_gpus:
        raise ConfigError("--gpus-per-trial", gpus, f"the cluster has {have_gpus:g} GPUs",
                          "0" if not have_gpus else f"0 <= gpus <= {have_gpus:g} (fractions "
                          "below 1, whole numbers above)")
    if not autoscales:
        check_fits(nodes, cpus, gpus)
    return TrialResources(cpus, gpus, max(1, math.floor(cpus)))
