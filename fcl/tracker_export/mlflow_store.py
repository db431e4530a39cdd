"""Stored studies as MLflow runs (the tracking client, `mlflow-skinny` or `mlflow`): one
experiment per study, named by where it lies ("results-pretrained/noniid"), one run per trial
with every config key as a param, the round metrics and each task's accuracy as histories
(step = round), the summary metrics at the last round, provenance tags (`fcl.*`) and the
trial's status (TERMINATED: FINISHED, EARLY_STOPPED: KILLED, ERROR: FAILED). An earlier export of a trial (the same
`fcl.trial_id` in that experiment) is deleted first, so exporting again does not double runs."""
from __future__ import annotations

import logging
import os
import time

from fcl.results_io import EARLY_STOPPED, TERMINATED
from fcl.tracker_export.stored import StoredStudy

BATCH_METRICS, BATCH_PARAMS = 1000, 100       # MLflow's log_batch limits
# a trial's status as an MLflow run's; one a scheduler stopped early is KILLED (else FAILED)
RUN_STATUS = {TERMINATED: "FINISHED", EARLY_STOPPED: "KILLED"}


def tracking_uri(dest: str) -> str:
    """A tracking URI as given; a plain path as an SQLite store there (MLflow 3 refuses its
    old file store unless told to)."""
    return dest if "://" in dest else "sqlite:///" + os.path.abspath(dest)


def write(studies: list[StoredStudy], dest: str) -> int:
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient
    logging.getLogger("mlflow").setLevel(logging.WARNING)    # its store's set-up lines
    client = MlflowClient(tracking_uri=tracking_uri(dest))
    now = int(time.time() * 1000)
    written = 0
    for study in studies:
        found = client.get_experiment_by_name(study.name)
        exp = found.experiment_id if found else client.create_experiment(study.name)
        for run in client.search_runs([exp], max_results=50000):
            if "fcl.trial_id" in run.data.tags:
                client.delete_run(run.info.run_id)
        for trial in study.trials:
            run = client.create_run(exp, run_name=trial.trial_id, tags=trial.tags)
            last = trial.history[-1][0] if trial.history else 0
            metrics = [Metric(k, float(v), now, step)
                       for step, values in trial.history for k, v in values.items()]
            metrics += [Metric(f"summary.{k}", float(v), now, last)
                        for k, v in trial.summary.items()]
            params = [Param(k, str(v)) for k, v in trial.config.items()]
            for i in range(0, len(params), BATCH_PARAMS):
                client.log_batch(run.info.run_id, params=params[i:i + BATCH_PARAMS])
            for i in range(0, len(metrics), BATCH_METRICS):
                client.log_batch(run.info.run_id, metrics=metrics[i:i + BATCH_METRICS])
            client.set_terminated(run.info.run_id, RUN_STATUS.get(trial.status, "FAILED"))
            written += 1
    return written


def viewer(dest: str) -> str:
    """The command that shows what `write` put at `dest`."""
    return f"mlflow ui --backend-store-uri {tracking_uri(dest)}"
