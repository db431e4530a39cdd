"""How many of fcl's functions a config value passes through, from the command a user types to
where the server optimizer reads it (`fcl.federated.server_opt.server_optimizer`), on the run
path (`fcl run --set server.lr=0.5`) and the study path (`python studies/optimizers.py`), and
at which of those hops it is a typed `RunConfig`.

A hop is a frame of fcl's own code (the package or a study script) on the call stack. The study
path is two stacks: the driver's, up to where it hands the search space to Tune
(`Tuner.fit`), and the trial's, from Tune's call of the trainable on (Ray's frames between
are not counted). Nothing is trained: each path stops where it is measured.

    python benchmarks/config_path.py
"""
from __future__ import annotations

import contextlib
import inspect
import runpy
import sys
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]


class Reached(Exception):
    """Raised where a path is measured, to stop it there."""


def fcl_frames() -> list[str]:
    """fcl's frames on the stack, outermost first, as `module.function`."""
    out = []
    for frame in reversed(inspect.stack()[2:]):
        path = Path(frame.filename).resolve()
        if Path(frame.filename).is_absolute() and ROOT in path.parents \
                and path.parent.name != "benchmarks":
            out.append(f"{path.relative_to(ROOT).with_suffix('')}".replace("/", ".") +
                       f".{frame.frame.f_code.co_qualname}")
    return out


def stop_at(target: str, seen: dict, key: str):
    """A stand-in for `target` that records the stack and stops."""
    def record(*args, **kwargs):
        seen[key] = fcl_frames()
        raise Reached
    return mock.patch(target, record)


@contextlib.contextmanager
def stop_at_server_optimizer(seen: dict, key: str):
    """`stop_at` for `server_optimizer` in every fcl module that imported it (the engine, or
    the module that builds the run's plan)."""
    import fcl.engine  # noqa: F401  (the modules that may hold it, imported)
    from fcl.federated import server_opt
    users = [m for n, m in list(sys.modules.items()) if n.startswith("fcl.")
             and getattr(m, "server_optimizer", None) is server_opt.server_optimizer]
    with contextlib.ExitStack() as stack:
        for m in users:
            stack.enter_context(stop_at(f"{m.__name__}.server_optimizer", seen, key))
        yield


def run_path(seen: dict) -> None:
    from fcl import cli
    with stop_at_server_optimizer(seen, "run"), \
            mock.patch.object(sys, "argv", ["fcl", "run", "--preset", "smoke", "--set",
                                            "server.lr=0.5"]):
        try:
            cli.main()
        except (Reached, SystemExit):
            pass


def study_driver(seen: dict, folder: str) -> None:
    script = ROOT / "studies" / "optimizers.py"
    with stop_at("ray.tune.Tuner.fit", seen, "driver"), \
            mock.patch.object(sys, "argv", [str(script), "--preset", "smoke", "--seeds", "1",
                                            "--results", folder]), \
            mock.patch("os._exit", lambda code: None):          # the script's last call
        try:
            runpy.run_path(str(script), run_name="__main__")
        except Reached:
            pass


def study_trial(seen: dict) -> None:
    from fcl.studies.optimizers import STUDY
    from fcl.tune import StudyOptions
    from fcl.tune.plan import base_config
    from fcl.tune import trial as trainable
    base = base_config(STUDY, StudyOptions(preset="smoke"))
    with stop_at_server_optimizer(seen, "trial"), \
            mock.patch.object(trainable.tune, "get_checkpoint", lambda: None):
        try:
            trainable.train_trial({"server.optimizer": "fedadam", "server.lr": 0.5}, base,
                                  {}, checkpoint_every=1)
        except Reached:
            pass


def typed_at(frames: list[str], where: str) -> int | None:
    return next((i + 1 for i, f in enumerate(frames) if f.endswith(where)), None)


def main() -> None:
    import tempfile
    seen: dict = {}
    run_path(seen)
    with tempfile.TemporaryDirectory(prefix="fcl-path-") as folder:
        study_driver(seen, folder)
    study_trial(seen)
    for key in ("run", "driver", "trial"):
        if key not in seen:
            sys.exit(f"the {key} path did not reach its end: nothing to count")
    for key, title in (("run", "fcl run"), ("driver", "study, driver to Tune"),
                       ("trial", "study, Tune's trial to the optimizer")):
        print(f"{title}: {len(seen[key])} hops\n  " + "\n  ".join(seen[key]))
    study = len(seen["driver"]) + len(seen["trial"])
    print(f"\nrun path {len(seen['run'])} hops; study path {study} hops "
          f"({len(seen['driver'])} in the driver, {len(seen['trial'])} in the trial); the "
          f"trial's config a RunConfig from hop "
          f"{len(seen['driver']) + (typed_at(seen['trial'], 'train_trial') or 0)} of the study "
          f"path (its trainable's first line)")


if __name__ == "__main__":
    main()
