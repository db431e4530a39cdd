"""Stored studies as Optuna studies (for optuna-dashboard), one per study, named
"<where it lies>-<objective>": a trial per row with the study's varying keys as its params
(each key's distribution spans the values the study ran: a grid's points, a search's draws),
its objective's value, `mean_acc` per round as intermediate values, the seed and provenance as
user attributes, and its state (TERMINATED: COMPLETE, EARLY_STOPPED: PRUNED, else FAIL). An
Optuna study of that name is replaced."""
from __future__ import annotations

import os
import warnings

import optuna

from fcl.results_io import EARLY_STOPPED, TERMINATED
from fcl.tracker_export.stored import StoredStudy, finite

State = optuna.trial.TrialState


def distributions(study: StoredStudy) -> dict:
    """Per varying key, the distribution its stored values come from."""
    values: dict[str, list] = {}
    for trial in study.trials:
        for key, value in trial.params.items():
            if key != "seed" and value is not None:
                values.setdefault(key, []).append(value)
    out = {}
    for key, vals in values.items():
        if all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
            out[key] = optuna.distributions.IntDistribution(min(vals), max(vals))
        elif all(finite(v) for v in vals):
            out[key] = optuna.distributions.FloatDistribution(min(vals), max(vals))
        else:
            out[key] = optuna.distributions.CategoricalDistribution(
                sorted(set(vals), key=lambda v: (type(v).__name__, str(v))))
    return out


def write(studies: list[StoredStudy], dest: str) -> int:
    from fcl.tune.optuna_storage import (METRIC_NAMES, OBJECTIVES, open_storage, parse_storage,
                                         storage_file)
    url = parse_storage(dest)
    path = storage_file(url)
    if path is not None:            # an SQLite or journal file: its folder, as for the others
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    storage = open_storage(url)
    optuna.logging.set_verbosity(optuna.logging.WARNING)     # a line per study created
    written = 0
    for study in studies:
        objective = study.manifest.get("objective") or "acc"
        metrics, modes = OBJECTIVES[objective]
        name = f"{study.name}-{objective}"
        if name in optuna.get_all_study_names(storage):
            optuna.delete_study(study_name=name, storage=storage)
        target = optuna.create_study(storage=storage, study_name=name, directions=[
            "maximize" if m == "max" else "minimize" for m in modes])
        with warnings.catch_warnings():     # experimental since Optuna 3.2
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            target.set_metric_names([METRIC_NAMES.get(m, m) for m in metrics])
        dists = distributions(study)
        for trial in study.trials:
            values = [trial.summary.get(METRIC_NAMES.get(m, m)) for m in metrics]
            done = trial.status == TERMINATED and all(v is not None for v in values)
            state = (State.COMPLETE if done else
                     State.PRUNED if trial.status == EARLY_STOPPED else State.FAIL)
            params = {k: v for k, v in trial.params.items() if k in dists and v is not None}
            target.add_trial(optuna.trial.create_trial(
                params=params, distributions={k: dists[k] for k in params},
                values=values if done else None, state=state,
                intermediate_values={step: v["mean_acc"] for step, v in trial.history
                                     if "mean_acc" in v} if len(metrics) == 1 else None,
                user_attrs={**trial.tags, "seed": trial.params.get("seed")}))
            written += 1
    return written


def viewer(dest: str) -> str:
    """The command that shows what `write` put at `dest`."""
    return f"optuna-dashboard {dest}"
