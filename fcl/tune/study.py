"""What a study script declares (`Study`), the flags it runs with (`StudyOptions`), and what a
run of it returns (`StudyOutcome`). `fcl.tune.run.run_study` does the rest."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fcl.presets import STUDY_FAMILIES
from fcl.tune.schedulers import SchedulerOptions
from fcl.tune.space import Space
from fcl.tune.waits import DEADLINE_S


@dataclass(frozen=True)
class Study:
    """A study script's declaration: what varies (`space`, plus axes per preset, e.g. rounds
    100-400 at `paper` and 25-100 at `local`), what the study fixes (`base` config overrides,
    applied before the user's `--set`), and how trials are drawn. `family`: a family of
    studies whose study presets start from run presets of their own (`fcl.presets`:
    "flocora" runs `flocora-local` at `--preset local`)."""
    name: str
    space: Space
    base: dict[str, Any] = field(default_factory=dict)
    by_preset: dict[str, Space] = field(default_factory=dict)
    searcher: str | None = None          # None: grid (and random draws); "optuna": TPE
    num_samples: int = 1                 # default --num-samples
    doc: str | None = None
    family: str | None = None            # a key of STUDY_PRESETS' `families`, e.g. "flocora"
    early_stopping: bool = False         # may `--scheduler asha` stop trials early? Searches
    #                                      only: a grid's figure needs every final value

    def __post_init__(self):             # a typo in family would silently run the plain presets
        if self.family is not None and self.family not in STUDY_FAMILIES:
            raise ValueError(f"Study {self.name}: unknown family {self.family!r} "
                             f"(fcl.presets: {', '.join(sorted(STUDY_FAMILIES))})")

    def space_for(self, preset: str) -> Space:
        return {**self.space, **self.by_preset.get(preset, {})}


@dataclass(frozen=True)
class StudyOptions:
    """The flags every study script takes (see `fcl.tune.cli`)."""
    preset: str = "local"
    sets: dict[str, str] = field(default_factory=dict)
    seeds: int | None = None
    results: str = "results"
    storage: str | None = None
    address: str | None = None
    cpus_per_trial: float | None = None
    gpus_per_trial: float | None = None
    num_samples: int = 1
    max_concurrent: int | None = None
    resume: bool = False
    fresh: bool = False
    dry_run: bool = False
    objective: str = "acc"
    max_failures: int = 2
    checkpoint_every: int | None = None
    scheduler: SchedulerOptions = field(default_factory=SchedulerOptions)
    callbacks: tuple[str, ...] = ()      # trackers: tensorboard, mlflow, wandb (fcl.tune.trackers)
    retry_errored: bool = False          # with resume: rerun trials that failed for good
    save_models: bool = False            # keep every finished row's model (fcl.tune.trial_models)
    command: str = ""                    # how the user ran it (the --resume hint, the manifest)
    optuna_storage: str | None = None    # a search's Optuna storage URL (default RESULTS/optuna.db)
    wait_deadline: float = DEADLINE_S    # seconds a wait on a storage may last (fcl.tune.waits)
    seed_offsets: tuple[int, int] | None = None   # a grid's seeds: base seed + lo .. + hi - 1
    #                                              (a look of `--seeds auto`); None: `seeds`
    copy_from: tuple[str, ...] = ()      # stored studies to copy identical trials from
    copy_unrecorded_cpu: bool = False    # copy rows that do not record their machine too
    #                                      (`fcl.tune.copies`)


@dataclass(frozen=True)
class StudyOutcome:
    trials: int                       # planned
    paths: tuple[str, ...] = ()       # files written: the Parquet files, then study.json
    finished: int = 0
    failed: int = 0
    unfinished: int = 0
    wall_s: float = 0.0
    result_grid: Any = None           # Tune's ResultGrid (None for a dry run)
    frames: dict = field(default_factory=dict)   # "trials", "rounds": the exported DataFrames
    interrupted: bool = False         # stopped by Ctrl-C (or SIGTERM); continue with --resume
    terminated: bool = False          # the stop was SIGTERM (a scheduler's): exit 143, not 130
