"""Optuna TPE behind Ray Tune, with its state in an Optuna storage (SQLite by default, so
`optuna-dashboard sqlite:///$PWD/results/optuna.db` shows the search while it runs and after).

Objectives: `acc` maximises ACC; `pareto` maximises ACC and minimises the bytes communicated
(up + down), a multi-objective TPE whose Pareto front Optuna keeps.

What Optuna stores is what happened to each trial (`FclOptunaSearch`):
- a finished trial is COMPLETE with its final value(s);
- a trial the scheduler stopped (ASHA) is PRUNED, with the ACC it reported at each round as its
  intermediate values (`trial.report(acc, step=round)`), so TPE ranks it below the finished
  ones instead of learning from a partial run as if it were final;
- a trial that failed for good is FAIL.
The space is define-by-run (`DefineByRun`): a key declared with `space.given(...)` is sampled
only in trials where its parent takes one of the given values (LoRA's rank and alpha only for
LoRA trials), so Optuna's importances and TPE never see a rank that did nothing.
"""
from __future__ import annotations

import math
import os

import optuna
from ray.tune.search import ConcurrencyLimiter
from ray.tune.search.optuna import OptunaSearch
from ray.tune.search.sample import Domain

from fcl.config import ConfigError
from fcl.tune.space import Given, Space, is_grid
from fcl.tune.trainable import FINISHED

OBJECTIVES = {"acc": (["acc"], ["max"]), "pareto": (["acc", "bytes"], ["max", "min"])}
TRIAL_NUMBER = "optuna_trial"   # key the searcher adds to each trial's config


def storage_url(results: str) -> str:
    return "sqlite:///" + os.path.abspath(os.path.join(results, "optuna.db"))


def dashboard_command(results: str) -> str:
    """The command that opens the search in optuna-dashboard (it wants a storage URL)."""
    return f"optuna-dashboard {storage_url(results)}"


def optuna_study_name(study: str, objective: str) -> str:
    return f"{study}-{objective}"


def optuna_study_exists(url: str, name: str) -> bool:
    if url.startswith("sqlite:///") and not os.path.exists(url[len("sqlite:///"):]):
        return False
    return name in optuna.get_all_study_names(storage=url)


def delete_optuna_study(url: str, name: str) -> None:
    if optuna_study_exists(url, name):
        optuna.delete_study(study_name=name, storage=url)


def _suggest(trial, key: str, domain: Domain):
    """Sample `domain` (a Tune domain) through Optuna's define-by-run API under `key`."""
    dist = OptunaSearch.convert_search_space({key: domain})[key]
    if isinstance(dist, optuna.distributions.CategoricalDistribution):
        return trial.suggest_categorical(key, dist.choices)
    if isinstance(dist, optuna.distributions.IntDistribution):
        return trial.suggest_int(key, dist.low, dist.high, step=dist.step, log=dist.log)
    return trial.suggest_float(key, dist.low, dist.high, step=dist.step, log=dist.log)


class DefineByRun:
    """A study's space as Optuna's define-by-run function: keys in declaration order, constants
    returned as they are, `Given` keys sampled only when their parent's value allows them.
    A class (not a closure), so Tune can pickle the searcher into its experiment state."""

    def __init__(self, space: Space):
        for key, value in space.items():
            if is_grid(value):
                raise ConfigError(key, "grid(...)", "a search samples its keys; it cannot grid",
                                  "a Tune domain (tune.choice, tune.loguniform, ...)")
        self.space = dict(space)

    def __call__(self, trial) -> dict:
        values, constants = {}, {}
        for key, value in self.space.items():
            if isinstance(value, Given):
                if values.get(value.parent) in value.values:
                    values[key] = _suggest(trial, key, value.domain)
            elif isinstance(value, Domain):
                values[key] = _suggest(trial, key, value)
            else:
                values[key] = constants[key] = value
        return constants


class FclOptunaSearch(OptunaSearch):
    """Ray's OptunaSearch that records early-stopped trials as PRUNED (with their per-round
    ACC as intermediate values), failed ones as FAIL, and tags each trial's config with its
    Optuna trial number (the join key between trials.parquet and optuna-dashboard)."""

    def suggest(self, trial_id: str) -> dict | None:
        config = super().suggest(trial_id)
        if config is not None:
            config[TRIAL_NUMBER] = self._ot_trials[trial_id].number
        return config

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        if isinstance(self.metric, list) or trial_id in self._completed_trials:
            return            # Optuna keeps no intermediate values of multi-objective trials
        value = result.get(self.metric)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return            # before the first evaluation: nothing to report
        step = int(result["round"])
        reported = self.__dict__.setdefault("_reported_steps", {}).setdefault(trial_id, set())
        if step not in reported:          # a trial resumed from a checkpoint replays rounds
            reported.add(step)
            self._ot_trials[trial_id].report(float(value), step=step)

    def on_trial_complete(self, trial_id: str, result: dict | None = None,
                          error: bool = False) -> None:
        if trial_id in self._completed_trials or trial_id not in self._ot_trials:
            return
        trial = self._ot_trials[trial_id]
        if error:
            self._ot_study.tell(trial, state=optuna.trial.TrialState.FAIL)
        elif result and result.get(FINISHED):
            metrics = self.metric if isinstance(self.metric, list) else [self.metric]
            values = [result[m] for m in metrics]
            self._ot_study.tell(trial, values if len(values) > 1 else values[0])
        else:                 # stopped by the scheduler before its last round
            if result:        # the result it was stopped on reaches no on_trial_result
                self.on_trial_result(trial_id, result)
            self._ot_study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        self._completed_trials.add(trial_id)


def optuna_searcher(study: str, objective: str, results: str, seed: int,
                    max_concurrent: int | None, space: Space):
    if objective not in OBJECTIVES:
        raise ConfigError("--objective", objective, "unknown objective", ", ".join(OBJECTIVES))
    metric, mode = OBJECTIVES[objective]
    os.makedirs(results, exist_ok=True)
    storage = optuna.storages.RDBStorage(storage_url(results))
    if len(metric) == 1:
        metric, mode = metric[0], mode[0]
    searcher = FclOptunaSearch(DefineByRun(space), metric=metric, mode=mode, seed=seed,
                               study_name=optuna_study_name(study, objective), storage=storage)
    # TPE learns from finished trials: running everything at once would make it random search.
    return ConcurrencyLimiter(searcher, max_concurrent=max_concurrent or 2)
