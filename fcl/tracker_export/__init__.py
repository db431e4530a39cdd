"""`fcl export FOLDER... --to TRACKER --dest DEST`: stored studies into the tools researchers
already use, offline and without rerunning anything. TRACKER is `tensorboard` (event files:
`tensorboard --logdir DEST`), `mlflow` (a tracking store: `mlflow ui --backend-store-uri DEST`)
or `optuna` (an Optuna storage: `optuna-dashboard DEST`). Each folder is searched for study
folders (a `study.json` beside the Parquet files), nested ones included; each study is named by
where it lies from its results folder down ("results-pretrained/tau_0.001/optimizers"), and
exporting again replaces what the last export wrote there."""
from __future__ import annotations

import importlib

from fcl.config import ConfigError
from fcl.study_folders import named_studies
from fcl.tracker_export.stored import StoredStudy, read_study

# tracker -> (the module that writes it: `write(studies, dest)`, `viewer(dest)`; the package it
#             needs; the fcl extra that has it)
TARGETS = {
    "tensorboard": ("fcl.tracker_export.tensorboard", "tensorboardX", "viz"),
    "mlflow": ("fcl.tracker_export.mlflow_store", "mlflow", "mlflow"),
    "optuna": ("fcl.tracker_export.optuna_store", "optuna", "viz"),
}


def check_target(to: str) -> None:
    if to not in TARGETS:
        raise ConfigError("--to", to, "unknown tracker", ", ".join(TARGETS))
    package, extra = TARGETS[to][1:3]
    try:
        importlib.import_module(package)
    except ImportError:
        raise ConfigError("--to", to, f"the {package} package is not installed",
                          f"pip install 'fcl[{extra}]'") from None


def stored_studies(folders: list[str]) -> list[StoredStudy]:
    """Every study at or below `folders`, read; a folder with none is one error line."""
    studies = []
    for folder in folders:
        named = named_studies(folder)
        if not named:
            raise ConfigError("FOLDER", folder, "holds no stored study (no study.json at or "
                              "below it)", "a results folder or a study folder")
        for path, name in named:
            try:
                studies.append(read_study(path, name))
            except (OSError, ValueError, KeyError) as e:     # pyarrow's errors are ValueErrors
                why = str(e).strip().splitlines()[0] if str(e).strip() else ""
                raise ConfigError("FOLDER", path, f"not a readable study ({type(e).__name__}: "
                                  f"{why})", "a study folder whose files `fcl ls` calls "
                                  "whole") from None
    return studies


def export(folders: list[str], to: str, dest: str) -> tuple[list[StoredStudy], int, str]:
    """The studies read, the runs written to `dest`, and the command that views them."""
    check_target(to)
    studies = stored_studies(folders)
    module = importlib.import_module(TARGETS[to][0])
    return studies, module.write(studies, dest), module.viewer(dest)
