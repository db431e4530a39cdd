"""Optuna TPE behind Ray Tune, with its state in an Optuna storage (SQLite by default, so
`optuna-dashboard results/optuna.db` shows the search while it runs and after).

Objectives: `acc` maximises ACC; `pareto` maximises ACC and minimises the bytes communicated
(up + down), a multi-objective TPE whose Pareto front Optuna keeps.
"""
from __future__ import annotations

import os

import optuna
from ray.tune.search import ConcurrencyLimiter
from ray.tune.search.optuna import OptunaSearch

from fcl.config import ConfigError

OBJECTIVES = {"acc": (["acc"], ["max"]), "pareto": (["acc", "bytes"], ["max", "min"])}


def storage_url(results: str) -> str:
    return "sqlite:///" + os.path.abspath(os.path.join(results, "optuna.db"))


def optuna_study_name(study: str, objective: str) -> str:
    return f"{study}-{objective}"


def optuna_study_exists(url: str, name: str) -> bool:
    if url.startswith("sqlite:///") and not os.path.exists(url[len("sqlite:///"):]):
        return False
    return name in optuna.get_all_study_names(storage=url)


def delete_optuna_study(url: str, name: str) -> None:
    if optuna_study_exists(url, name):
        optuna.delete_study(study_name=name, storage=url)


def optuna_searcher(study: str, objective: str, results: str, seed: int,
                    max_concurrent: int | None):
    if objective not in OBJECTIVES:
        raise ConfigError("--objective", objective, "unknown objective", ", ".join(OBJECTIVES))
    metric, mode = OBJECTIVES[objective]
    os.makedirs(results, exist_ok=True)
    url = storage_url(results)
    storage = optuna.storages.RDBStorage(url)
    if len(metric) == 1:
        metric, mode = metric[0], mode[0]
    searcher = OptunaSearch(metric=metric, mode=mode, seed=seed,
                            study_name=optuna_study_name(study, objective), storage=storage)
    # TPE learns from finished trials: running everything at once would make it random search.
    return ConcurrencyLimiter(searcher, max_concurrent=max_concurrent or 2)
