"""fcl's trainable in a user's own `tune.Tuner`, and its `ResultGrid` as fcl's Parquet frames.

    from ray import tune
    import fcl, fcl.tune
    base = fcl.configure("smoke", {"rounds": 5})
    tuner = tune.Tuner(fcl.tune.trainable(base),
                       param_space={"client.lr": tune.grid_search([0.01, 0.05])})
    frames = fcl.tune.results_frames(tuner.fit(), base, study="mine")
    frames["trials"].to_parquet("trials.parquet")        # also "rounds", "tasks"

The param space holds flat config keys (`client.lr`, `server.optimizer`, ...); every trial is
`fcl.run` of the base config with its values, reported to Tune every round (`acc`, `drift`,
`train_loss`, `bytes`, `wall_s`) and checkpointed every `checkpoint_every` rounds, so a
scheduler (ASHA) may stop it and a restored Tuner resumes it bit-identically.
"""
from __future__ import annotations

import pandas as pd
from ray import tune

from fcl.config import RunConfig
from fcl.presets import preset
from fcl.tune.export import outcomes, study_frames
from fcl.tune.plan import load_datasets
from fcl.tune.space import config_keys
from fcl.tune.shipped_methods import shipped
from fcl.tune.trial import train_trial


def _base(base_config: RunConfig | str) -> RunConfig:
    return preset(base_config) if isinstance(base_config, str) else base_config


def trainable(base_config: RunConfig | str, checkpoint_every: int = 0, seeds: int = 1):
    """A Tune function trainable: `train_trial` bound (`tune.with_parameters`, shipped once
    through Ray's object store) to `base_config` (a `RunConfig` or a preset name) and its data
    set, loaded once when the trainable is made (a trial whose space changes the data keys loads
    its own). `checkpoint_every`: rounds between checkpoints (0: a tenth of the rounds, as a
    study does); `seeds`: seeds each trial runs in lockstep (seed, seed+1, ...), reporting their
    mean."""
    cfg = _base(base_config)
    every = checkpoint_every or max(1, cfg.rounds // 10)
    return tune.with_parameters(train_trial, base=cfg, datasets=load_datasets([cfg]),
                                checkpoint_every=every, seeds=seeds, methods=shipped())


def results_frames(result_grid, base_config: RunConfig | str, study: str = "mine",
                   preset_name: str = "") -> dict[str, pd.DataFrame]:
    """`{"trials", "rounds", "tasks"}`: the trials of a `ResultGrid` of `trainable(base_config)`
    in fcl's Parquet schema (docs/results.md), built from each trial's last checkpoint as
    `fcl.tune.run_study` builds them; trials sorted by the config keys they set, then
    `trial_id`. Trials still pending are left out."""
    cfg = _base(base_config)
    trials, _unfinished = outcomes(result_grid, cfg)
    known = config_keys()
    keys = list(dict.fromkeys(k for res in result_grid for k in (res.config or {}) if k in known))
    name = preset_name or (base_config if isinstance(base_config, str) else "")
    return study_frames(study, name, trials, keys)
