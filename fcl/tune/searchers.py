"""Optuna TPE behind Ray Tune, with its state in an Optuna storage (SQLite by default, so
`optuna-dashboard sqlite:///$PWD/results/optuna.db` shows the search while it runs and after).

The storage is `--optuna-storage` where a study names one (`fcl.tune.optuna_storage`).

Objectives: `acc` maximises ACC; `pareto` maximises ACC and minimises the bytes communicated
(up + down), a multi-objective TPE whose Pareto front Optuna keeps.

What Optuna stores is what happened to each trial (`FclOptunaSearch`):
- a finished trial is COMPLETE with its final value(s);
- a trial the scheduler stopped (ASHA) is PRUNED, with the ACC it reported at each round as its
  intermediate values (step = round, each round once though a resumed trial replays some), so
  TPE ranks it below the finished ones instead of learning from a partial run as if it were
  final (a multi-objective trial has no intermediate values);
- a trial that failed for good is FAIL.
Each trial's config carries its Optuna trial number (`TRIAL_NUMBER`), the join key between
trials.parquet and the dashboard. The searcher is our own Tune `Searcher` over Optuna's public
ask/tell API, and the storage is its memory: a resumed search (`--resume`) reopens the same
study and finds its trials there again by the Tune trial id each one carries.
The space is define-by-run (`DefineByRun`): a key declared with `space.given(...)` is sampled
only in trials where its parent takes one of the given values (LoRA's rank and alpha only for
LoRA trials), so Optuna's importances and TPE never see a rank that did nothing.
"""
from __future__ import annotations

import contextlib
import math
import os
import pickle
import sys
import warnings

import optuna
from ray.tune.search import ConcurrencyLimiter, Searcher
from ray.tune.search.optuna import OptunaSearch
from ray.tune.search.sample import Domain

from fcl.config import ConfigError
from fcl.tune import stop_request
from fcl.tune.disk_full import raised_on_full_disk
from fcl.tune.optuna_storage import (FLAG, JOURNAL, METRIC_NAMES, OBJECTIVES, open_storage,
                                     optuna_study_name, repair_journal, storage_url,
                                     study_folder)
from fcl.tune.space import Given, Space, is_grid
from fcl.tune.report import TrialReport

TRIAL_NUMBER = "optuna_trial"   # key the searcher adds to each trial's config
TUNE_TRIAL_ID = "tune_trial_id"  # user attr of each Optuna trial: the Tune trial it was asked for
FCL_STUDY = "fcl_study"          # user attr: the study folder whose driver asked it


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

    def __call__(self, trial: optuna.Trial) -> dict:
        """The trial's config: sampled and constant keys, in declaration order."""
        values = {}
        for key, value in self.space.items():
            if isinstance(value, Given):
                if values.get(value.parent) in value.values:
                    values[key] = _suggest(trial, key, value.domain)
            elif isinstance(value, Domain):
                values[key] = _suggest(trial, key, value)
            else:
                values[key] = value
        return values


class FclOptunaSearch(Searcher):
    """A Tune searcher that drives an Optuna study through its public ask/tell interface.

    The study's storage is the source of truth: each Optuna trial carries the Tune trial id it
    was asked for (user attr `tune_trial_id`), so a searcher restored by Tune (`restore`, or
    unpickled from the experiment state) finds its running trials, their reported rounds and
    their states there again. What it pickles is only how to reopen the study (storage URL, an
    RDB's or a journal file's; name, directions, space) and the TPE sampler; an in-memory study
    (`storage=None`, tests) is pickled whole, having nowhere else to live."""

    def __init__(self, space: DefineByRun, metric: str | list[str], mode: str | list[str],
                 seed: int, study_name: str = "fcl", storage: str | None = None,
                 owner: str = ""):
        super().__init__(metric=metric, mode=mode)
        self._space, self._study_name, self._url = space, study_name, storage
        self._owner = owner           # the study folder, so an export knows its own trials
        with warnings.catch_warnings():     # constant_liar: experimental in Optuna
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            # running trials count as if they had the worst value, so draws made while
            # others run (one per free slot of the cluster) do not all land on one spot
            self._sampler = optuna.samplers.TPESampler(seed=seed, constant_liar=True)
        self._open()

    def _open(self) -> None:
        if self._url and self._url.startswith(JOURNAL):
            dropped = repair_journal(self._url[len(JOURNAL):])
            if dropped:
                print(f"{FLAG}={self._url}: dropped its partial last record ({dropped} bytes, "
                      "a write cut short)", file=sys.stderr)
        try:
            self._open_study()
        except Exception as e:      # noqa: BLE001  (OSError, sqlalchemy's OperationalError)
            if not raised_on_full_disk(e):
                raise
            raise ConfigError(FLAG, self._url, "the disk filled up (opening the search's "
                              "Optuna study: No space left on device)", "free some space, "
                              "then run the same command again") from None
        self._trials: dict[str, int] = {}     # Tune trial id -> storage trial id (a cache)

    def _open_study(self) -> None:
        self._storage = (open_storage(self._url) if self._url
                         else optuna.storages.InMemoryStorage())
        modes = self.mode if isinstance(self.mode, list) else [self.mode]
        self._study = optuna.create_study(
            storage=self._storage, sampler=self._sampler, pruner=optuna.pruners.NopPruner(),
            study_name=self._study_name, load_if_exists=True,
            directions=["maximize" if m == "max" else "minimize" for m in modes])
        self._study_id = self._storage.get_study_id_from_name(self._study_name)
        names = [METRIC_NAMES.get(m, m) for m in
                 (self.metric if isinstance(self.metric, list) else [self.metric])]
        if self._study.metric_names != names:
            with warnings.catch_warnings():     # experimental since Optuna 3.2, stable since
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                self._study.set_metric_names(names)

    @property
    def study(self) -> optuna.Study:
        return self._study

    # ---- Tune's callbacks ----------------------------------------------------------------

    def suggest(self, trial_id: str) -> dict | None:
        with self._writing():
            return self._suggest(trial_id)
        return None                     # the storage is full: no trial; the study stops

    def _suggest(self, trial_id: str) -> dict | None:
        trial = self._study.ask()
        if self._owner:               # first: a trial naming a Tune trial names its owner
            trial.set_user_attr(FCL_STUDY, self._owner)
        trial.set_user_attr(TUNE_TRIAL_ID, trial_id)
        try:
            config = self._space(trial)
        except Exception:
            self._study.tell(trial, state=optuna.trial.TrialState.FAIL)
            raise
        self._trials[trial_id] = self._storage.get_trial_id_from_study_id_trial_number(
            self._study_id, trial.number)
        return {**config, TRIAL_NUMBER: trial.number}

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        with self._writing():
            self._on_trial_result(trial_id, result)

    def _on_trial_result(self, trial_id: str, result: dict) -> None:
        if isinstance(self.metric, list):
            return            # Optuna keeps no intermediate values of multi-objective trials
        report = TrialReport.from_tune(result)
        value = report.value(self.metric) if report is not None else None
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return            # before the first evaluation: nothing to report
        frozen = self._frozen(trial_id)
        step = int(report.round)
        # a trial resumed from a checkpoint replays rounds: the storage says which it has
        if frozen is not None and not frozen.state.is_finished() \
                and step not in frozen.intermediate_values:
            self._storage.set_trial_intermediate_value(self._trials[trial_id], step,
                                                       float(value))

    def on_trial_complete(self, trial_id: str, result: dict | None = None,
                          error: bool = False) -> None:
        with self._writing():
            self._on_trial_complete(trial_id, result, error)

    def _on_trial_complete(self, trial_id: str, result: dict | None, error: bool) -> None:
        frozen = self._frozen(trial_id)
        if frozen is None or frozen.state.is_finished():
            return
        State = optuna.trial.TrialState
        metrics = self.metric if isinstance(self.metric, list) else [self.metric]
        report = TrialReport.from_tune(result)
        finished = report is not None and report.finished
        values = [report.value(m) if report is not None else None for m in metrics]
        if error or (finished and None in values):
            self._study.tell(frozen.number, state=State.FAIL)
        elif finished:
            self._study.tell(frozen.number, values if len(values) > 1 else values[0])
        else:                 # stopped by the scheduler before its last round
            if result:        # the result it was stopped on reaches no on_trial_result
                self._on_trial_result(trial_id, result)
            self._study.tell(frozen.number, state=State.PRUNED)

    @contextlib.contextmanager
    def _writing(self):
        """A write to the Optuna storage that finds its disk full (a journal's OSError,
        SQLite's 'database or disk is full') stops the study as a full results disk does: one
        line, the state kept for --resume (`fcl.tune.stop_request`); the Optuna trial it was
        about is set right at the export (`fcl.tune.optuna_storage.reconcile`)."""
        try:
            yield
        except Exception as e:      # noqa: BLE001  (OSError, sqlalchemy's OperationalError)
            if not raised_on_full_disk(e):
                raise
            if not stop_request.stops(stop_request.OPTUNA_FULL):
                stop_request.request_stop(stop_request.OPTUNA_FULL, self._url or "")

    def set_search_properties(self, metric: str | None, mode: str | None, config: dict,
                              **spec) -> bool:
        """Tune offers its param space to the searcher; the space is ours (define-by-run), so an
        empty one is accepted and a non-empty one refused (Tune then says why)."""
        return not config

    # ---- Tune's save / restore and pickling ----------------------------------------------

    def save(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "wb") as f:
            pickle.dump(self._state(), f)

    def restore(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "rb") as f:
            self._load(pickle.load(f))

    def __getstate__(self) -> dict:
        return self._state()

    def __setstate__(self, state: dict) -> None:
        self._load(state)

    def _state(self) -> dict:
        if self._url is None:                 # in memory: the study is the state
            return dict(self.__dict__)
        reopened = ("_storage", "_study", "_study_id", "_trials")
        return {k: v for k, v in self.__dict__.items() if k not in reopened}

    def _load(self, state: dict) -> None:
        self.__dict__.update(state)
        if "_study" not in state:
            self._open()

    def _frozen(self, trial_id: str) -> optuna.trial.FrozenTrial | None:
        """The Optuna trial asked for `trial_id`, read from the storage (None: not ours)."""
        if trial_id not in self._trials:
            for t in self._study.get_trials(deepcopy=False):
                if t.user_attrs.get(TUNE_TRIAL_ID) == trial_id:
                    self._trials[trial_id] = \
                        self._storage.get_trial_id_from_study_id_trial_number(self._study_id,
                                                                              t.number)
        if trial_id not in self._trials:
            return None
        return self._storage.get_trial(self._trials[trial_id])


def optuna_searcher(study: str, objective: str, results: str, seed: int,
                    max_concurrent: int | None, space: Space, storage: str | None = None):
    """The study's searcher on `storage` (a URL `parse_storage` returned; default SQLite in
    `results`), wrapped in its concurrency limit."""
    if objective not in OBJECTIVES:
        raise ConfigError("--objective", objective, "unknown objective", ", ".join(OBJECTIVES))
    metric, mode = OBJECTIVES[objective]
    os.makedirs(results, exist_ok=True)
    if len(metric) == 1:
        metric, mode = metric[0], mode[0]
    searcher = FclOptunaSearch(DefineByRun(space), metric=metric, mode=mode, seed=seed,
                               study_name=optuna_study_name(study, objective),
                               storage=storage or storage_url(results),
                               owner=study_folder(results, study))
    # As many draws at once as the cluster runs (`max_concurrent`: its slots, or the user's
    # cap): TPE's constant liar (`FclOptunaSearch`) keeps concurrent draws apart.
    return ConcurrencyLimiter(searcher, max_concurrent=max_concurrent or 1)
