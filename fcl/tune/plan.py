"""A study resolved against its options before any trial (`plan_study`): the base config, the
space Tune runs (a grid's seeds one more axis), the scheduler, and the data sets loaded and cut
once. Starts no Ray: every value is checked where it enters the study, so a bad one is one line
(exit 2) before any trial."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from fcl.config import ConfigError, RunConfig, check_read
from fcl.data.datasets import ImageDataset, load_dataset
from fcl.data.federated import build_federated_data
from fcl.manifest import Manifest
from fcl.presets import STUDY_PRESETS, study_preset
from fcl.tune import cluster, schedulers, space as spaces, trackers
from fcl.tune.data_sharing import data_signature, dataset_key
from fcl.tune.optuna_storage import storage_url
from fcl.tune.space import Space
from fcl.tune.study import Study, StudyOptions
from fcl.tune.study_manifest import study_manifest


@dataclass(frozen=True)
class StudyPlan:
    """A study resolved against its options: what the steps of `run_study` share."""
    study: Study
    opts: StudyOptions
    cfg: RunConfig                     # the base config every trial starts from
    space: Space                       # what Tune runs (a grid's seeds are one more axis)
    datasets: dict[tuple, ImageDataset]
    scheduler: Any                     # None (FIFO) or Tune's ASHA
    address: str | None                # a Ray cluster to join; None: start a local Ray

    @property
    def name(self) -> str:
        return self.study.name

    @property
    def trial_seeds(self) -> int:
        """Seeds each trial runs itself: a search's `--seeds` (the objective is their mean);
        a grid's seeds are trials of their own (one grid axis)."""
        return (self.opts.seeds or 1) if self.study.searcher is not None else 1

    @property
    def planned_trials(self) -> int:
        """The trials Tune creates: every grid point `num_samples` times (a search:
        `num_samples`)."""
        points = 1 if self.study.searcher else len(spaces.grid_points(self.space))
        return points * self.opts.num_samples

    def resources(self, have: dict, autoscales: bool, nodes: list | None = None
                  ) -> cluster.TrialResources:
        """Each trial's share of a cluster that has `have` in all, on `nodes` (`fcl.tune.nodes`;
        default: one node)."""
        o = self.opts
        return cluster.trial_resources(have, o.cpus_per_trial, o.gpus_per_trial,
                                       o.max_concurrent, autoscales, nodes)

    def manifest(self) -> Manifest:
        """The study's `study.json` (without its files): also the record of its Tune state
        that `--resume` checks against."""
        o, s = self.opts, self.study
        return study_manifest(
            s.name, s.doc, s.searcher, o.preset, self.cfg, self.space,
            trial_seeds=self.trial_seeds, num_samples=o.num_samples, objective=o.objective,
            scheduler=schedulers.describe(self.scheduler, o.scheduler.reduction_factor),
            command=o.command,
            # the default (RESULTS/optuna.db) is left out: a stored manifest names no machine path
            optuna_storage=None if o.optuna_storage == storage_url(o.results) else o.optuna_storage)


def base_config(study: Study, opts: StudyOptions) -> RunConfig:
    """The study preset's config (`fcl.presets.study_preset`), the study's keys, then `--set`."""
    return study_preset(opts.preset, {**study.base, **opts.sets}, study.family)


def plan_study(study: Study, opts: StudyOptions) -> StudyPlan:
    """Every check that needs no Ray: the scheduler and trackers asked for, the space against
    the config, the data sets loaded and cut (one line, exit 2, before any trial)."""
    schedulers.check(opts.scheduler, study.name, study.early_stopping)
    trackers.check(opts.callbacks)
    cfg = base_config(study, opts)
    space = study_space(study.space_for(opts.preset), cfg, opts, study.searcher)
    check_sets(space, opts)
    configs = spaces.check_space(space, cfg)
    check_read(configs, opts.sets)          # a --set key that no trial's method reads
    scheduler = schedulers.make_scheduler(opts.scheduler, cfg.rounds_per_phase,
                                          max(c.rounds for c in configs))
    datasets = load_datasets(configs)
    check_data(configs, datasets)
    return StudyPlan(study, opts, cfg, space, datasets, scheduler,
                     opts.address or os.environ.get("RAY_ADDRESS") or None)


def check_sets(space: Space, opts: StudyOptions) -> None:
    """A `--set` of a key the study varies would be overridden by every trial's own value
    without a word: refused in one line (the seed is its own flag, --seeds)."""
    varied = set(spaces.varying_keys(space)) - {"seed"}
    for key, value in opts.sets.items():
        if key in varied:
            raise ConfigError("--set", f"{key}={value}", f"the study varies {key} (each trial "
                              "sets its own value)", "a key other than the study's axes ("
                              + ", ".join(sorted(varied)) + ")")


def study_space(space: Space, cfg: RunConfig, opts: StudyOptions, searcher: str | None
                ) -> Space:
    """The space Tune runs: a grid gets its seeds as one more axis (`--seeds`, else the study
    preset's); a search runs each draw at `trial_seeds` seeds inside the trial, and its
    conditional keys need Optuna's define-by-run space."""
    if "seed" in space:
        raise ConfigError("--seeds", opts.seeds, "the study's space already varies `seed`",
                          "leave --seeds out for this study")
    if searcher is not None:
        return space
    conditional = [k for k, v in space.items() if isinstance(v, spaces.Given)]
    if conditional:
        raise ConfigError(conditional[0], "given(...)", "conditional keys need a searcher "
                          "that samples define-by-run", "searcher='optuna' in the Study")
    if opts.seed_offsets is not None:
        lo, hi = opts.seed_offsets
        return {**space, "seed": spaces.grid(*range(cfg.seed + lo, cfg.seed + hi))}
    seeds = opts.seeds or STUDY_PRESETS[opts.preset].seeds
    return {**space, "seed": spaces.grid(*range(cfg.seed, cfg.seed + seeds))}


_LOADED: dict[tuple, ImageDataset] = {}      # per driver process: data sets are read-only


def load_datasets(configs: list[RunConfig]) -> dict[tuple, ImageDataset]:
    """Each data set the study uses, loaded once in the driver (`data_sharing.dataset_key`)."""
    out = {}
    for c in configs:
        key = dataset_key(c)
        if key not in _LOADED:
            _LOADED[key] = load_dataset(c.data.name, c.data.root, c.data)
        out[key] = _LOADED[key]
    return out


def check_data(configs: list[RunConfig], datasets: dict) -> None:
    """Cut every distinct (data keys, seed) once, so a partition that cannot be made (too many
    clients, a Dirichlet draw that starves a client) fails before any trial."""
    seen = set()
    for cfg in configs:
        sig = data_signature(cfg)
        if sig not in seen:
            seen.add(sig)
            build_federated_data(datasets[dataset_key(cfg)], cfg.data, cfg.seed)
