"""Ray Tune studies of FCL runs: the only part of fcl that imports Ray.

    from fcl.tune import Study, grid, main
    STUDY = Study("ablation_lr", {"client.lr": grid(0.01, 0.05), "server.lr": grid(0.1, 1.0)})
    if __name__ == "__main__":
        main(STUDY)                     # flags: see fcl.tune.cli

Modules, in the order a study meets them: `study` (what a script declares: Study, StudyOptions,
StudyOutcome), `space` (declaring and checking what varies), `cli` (the flags), `run`
(`run_study`: plan -> claim state -> fit -> export), `plan` (base config from the study preset,
the space with its seeds, data loaded and cut once), `data_sharing` (which trials share a loaded
and a prepared data set), `cost` (the dry run's trial table and price), `locations` (the output
places checked before any work), `state` (where Tune keeps a study; the resume / fresh policy),
`cluster` (local Ray or a cluster; trial resources), `tuner` (the Tuner: trainable, searcher,
scheduler, reporter), `trial` (one trial = one engine run, reported and checkpointed every
round), `report` (what a trial reports each round, one typed record every reader goes through),
`searchers` (Optuna), `optuna_storage` (where Optuna keeps a search), `schedulers` (FIFO, ASHA),
`trackers` (TensorBoard, MLflow, W&B callbacks), `progress` (the live table, Ctrl-C),
`stop_request` (why a study stops early: SIGTERM, a full disk, no node that fits; the one place
fcl stops it), `export` (the trials' rows from their checkpoints), `study_manifest` (study.json
from the declaration and plan), `checkpoints` (after the export: each trial's last checkpoint
kept, the older ones deleted); `user_api` (`trainable` and `results_frames`: fcl's trainable in
one's own `tune.Tuner`, its ResultGrid as fcl's Parquet frames).
"""
import importlib

# Each name from its module on first use: a study's declaration (`Study`, `grid`) needs neither
# the study runner nor torch, so `fcl study` lists the studies without loading them.
_HOMES = {"main": "cli", "run_study_cli": "cli", "run_study": "run", "given": "space",
          "grid": "space", "Study": "study", "StudyOptions": "study", "StudyOutcome": "study",
          "results_frames": "user_api", "trainable": "user_api"}
__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'fcl.tune' has no attribute {name!r}")
    return getattr(importlib.import_module(f"fcl.tune.{_HOMES[name]}"), name)
