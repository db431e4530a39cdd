"""The `mlflow` tracker: Ray's MLflowLoggerCallback, logging what an fcl trial is and how it
ended, in one MLflow request per event.

- params: the trial's whole config, the study's base config under the keys Tune sampled (Ray
  logs only the sampled keys: preset, data set, backbone and rounds were nowhere);
- tags: `fcl.preset`, `fcl.dataset`, `fcl.searcher`, `fcl.objective`, `fcl.rounds`, and at
  the end `fcl.status`, trials.parquet's status: MLflow's own status says FINISHED for a trial
  ASHA stopped (Tune ends it without error) while Optuna stores it PRUNED;
- metrics: every numeric value of each report in one `log_batch`. Ray's callback sends one
  `log_metric` per key (about 20 per round, each a SQLite transaction and a run lookup): on a
  loaded machine that took over Tune's 0.5 s `warn_if_slow` threshold on most rounds
  (measured with 20 metrics into SQLite on 2 busy cores: 1.66 s a report per key, 0.04 s as
  one batch), and each printed "The `callbacks.on_trial_result` operation took ... s, which
  may be a performance bottleneck" (and its `process_trial_result` twin): the 114 warnings of
  a 12-trial search.
"""
from __future__ import annotations

import math
import time

from mlflow.entities import Metric, Param, RunTag
from ray.air.integrations.mlflow import MLflowLoggerCallback
from ray.tune.utils import flatten_dict

from fcl.results_io import EARLY_STOPPED, ERROR, TERMINATED
from fcl.tune.report import TrialReport

STATUS_TAG = "fcl.status"
MAX_PARAM = 6000             # MLflow's limit on a param value's length


def manifest_tags(manifest) -> dict[str, str]:
    """The study's identity as MLflow tags (a `fcl.manifest.Manifest`)."""
    return {"fcl.preset": manifest.preset, "fcl.dataset": manifest.dataset,
            "fcl.searcher": manifest.searcher or "grid", "fcl.objective": manifest.objective,
            "fcl.rounds": str(manifest.base.get("rounds", "")),
            "fcl.backbone": str(manifest.base.get("model.backbone", ""))}


def trial_params(base: dict, config: dict) -> dict[str, str]:
    """The trial's whole config as MLflow params: `base` with the trial's (flattened) values."""
    flat = {k.split("/")[-1]: v for k, v in flatten_dict(config).items()}
    return {k: str(v)[:MAX_PARAM] for k, v in {**base, **flat}.items()}


def numeric(result: dict) -> dict[str, float]:
    return {k: float(v) for k, v in result.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}


def end_status(last_result: dict | None, failed: bool) -> str:
    if failed:
        return ERROR
    report = TrialReport.from_tune(last_result)
    return TERMINATED if report is not None and report.finished else EARLY_STOPPED


class MLflowTracker(MLflowLoggerCallback):
    def __init__(self, base: dict, **kwargs):
        super().__init__(**kwargs)
        self.base = dict(base)

    def _client(self):
        if getattr(self, "_mlflow_client", None) is None:
            self._mlflow_client = self.mlflow_util._get_client()
        return self._mlflow_client

    def log_trial_start(self, trial) -> None:
        if trial in self._trial_runs:
            return
        tags = {**self.tags, "trial_name": str(trial)}
        run = self.mlflow_util.start_run(tags=tags, run_name=str(trial))
        self._trial_runs[trial] = run.info.run_id
        params = [Param(k, v) for k, v in trial_params(self.base, trial.config).items()]
        for i in range(0, len(params), 100):          # MLflow takes 100 params a batch
            self._client().log_batch(run.info.run_id, params=params[i:i + 100])

    def log_trial_result(self, iteration: int, trial, result: dict) -> None:
        now, step = int(time.time() * 1000), int(result.get("training_iteration", iteration))
        metrics = [Metric(k, v, now, step) for k, v in numeric(result).items()]
        self._client().log_batch(self._trial_runs[trial], metrics=metrics[:1000])

    def log_trial_end(self, trial, failed: bool = False) -> None:
        status = end_status(trial.last_result, failed)
        self._client().log_batch(self._trial_runs[trial], tags=[RunTag(STATUS_TAG, status)])
        super().log_trial_end(trial, failed)
