"""Ray Tune studies of FCL runs: the only part of fcl that imports Ray.

    from fcl.tune import Study, grid, main
    STUDY = Study("ablation_lr", {"client.lr": grid(0.01, 0.05), "server.lr": grid(0.1, 1.0)})
    if __name__ == "__main__":
        main(STUDY)                     # flags: see fcl.tune.cli

Modules: `space` (declaring and checking what varies), `trainable` (one trial = one engine
run, reported and checkpointed every round), `study` (the orchestration loop), `export`
(Parquet), `cluster` (local Ray or a cluster; trial resources), `searchers` (Optuna),
`trackers` (TensorBoard, MLflow, W&B callbacks), `progress` (the live table, Ctrl-C), `cli`.
"""
from fcl.tune.cli import main, run_study_cli
from fcl.tune.space import given, grid
from fcl.tune.study import Study, StudyOptions, StudyOutcome, run_study

__all__ = ["given", "grid", "main", "run_study", "run_study_cli", "Study", "StudyOptions",
           "StudyOutcome"]
