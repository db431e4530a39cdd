"""Experiment trackers as Ray Tune logger callbacks (`--callback NAME`, repeatable).

- `tensorboard`: Tune's TBXLoggerCallback; one event file per trial under its folder in
  `--storage` (`tensorboard --logdir results/.tune/<study>`).
- `mlflow`: Ray's MLflowLoggerCallback; one MLflow run per trial in the experiment named after
  the study, at `$MLFLOW_TRACKING_URI` (default: a local SQLite store, `results/mlflow.db`, so
  `mlflow ui --backend-store-uri sqlite:///$PWD/results/mlflow.db` shows it; MLflow 3 keeps
  the older `./mlruns` file store in maintenance mode and refuses it unless
  MLFLOW_ALLOW_FILE_STORE=true).
  Each run's params are the trial's whole config (the study's base config under the sampled
  keys), its tags the study's preset, data set, searcher and objective (`fcl.*`), and at its
  end `fcl.status`: trials.parquet's status (TERMINATED, EARLY_STOPPED, ERROR), since MLflow
  shows a trial ASHA stopped as FINISHED while Optuna has it PRUNED (`fcl.tune.mlflow_tracker`).
- `wandb`: Ray's WandbLoggerCallback; project = the study (`WANDB_MODE=offline` to log locally).

A tracker's package is imported only when asked for; a missing one is one line naming the extra
that installs it.
"""
from __future__ import annotations

import importlib
import os

from fcl.config import ConfigError

# name -> (the module it needs, the fcl extra that installs it)
TRACKERS = {"tensorboard": ("tensorboardX", "viz"), "mlflow": ("mlflow", "mlflow"),
            "wandb": ("wandb", "wandb")}


def check(names: tuple[str, ...]) -> None:
    """One ConfigError line for an unknown tracker or one whose package is missing."""
    for name in names:
        if name not in TRACKERS:
            raise ConfigError("--callback", name, "unknown tracker", ", ".join(TRACKERS))
        module, extra = TRACKERS[name]
        try:
            importlib.import_module(module)
        except ImportError:
            raise ConfigError("--callback", name, f"the {module} package is not installed",
                              f"pip install 'fcl[{extra}]'") from None


def mlflow_uri(results: str) -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or (
        "sqlite:///" + os.path.abspath(os.path.join(results, "mlflow.db")))


def callbacks(names: tuple[str, ...], study: str, results: str, manifest=None) -> list:
    """The Tune callbacks for `names` (checked with `check` first); `manifest` (the study's
    `fcl.manifest.Manifest`) gives MLflow the base config and the study's tags."""
    out = []
    for name in dict.fromkeys(names):
        if name == "tensorboard":
            from ray.tune.logger import TBXLoggerCallback
            out.append(TBXLoggerCallback())
        elif name == "mlflow":
            from fcl.tune.mlflow_tracker import MLflowTracker, manifest_tags
            out.append(MLflowTracker(
                base=manifest.base if manifest is not None else {},
                tracking_uri=mlflow_uri(results), experiment_name=study,
                tags={"study": study, **(manifest_tags(manifest) if manifest else {})}))
        elif name == "wandb":
            from ray.air.integrations.wandb import WandbLoggerCallback
            out.append(WandbLoggerCallback(project=study))
    return out
