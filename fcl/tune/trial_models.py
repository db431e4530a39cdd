"""The trained models of a study, kept on request (`--save-models`):

    <results>/<study>/models/<trial_id>/{model.pt, model.json}

one folder per row of trials.parquet (a trial run at several seeds has a row, so a model, per
seed), in `fcl.saved_model`'s format: `fcl.load_model(folder)` gives one `nn.Module` per task,
and evaluating it reproduces that row's per-task accuracy.

A trial writes its models into its last checkpoint (`save_trial_models`), so they reach the
driver through the storage as the rows do, on a cluster too; the driver's export copies them
into the results folder (`export_models`) before the manifest, the study's commit marker, is
written. Trials that did not finish (ERROR, EARLY_STOPPED) have no model.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile

from fcl.results_io import config_hash
from fcl.saved_model import save_model

MODELS = "models"


def save_trial_models(runs, results, checkpoint_dir: str) -> None:
    """Each finished seed run's model (its plan's model mirrors the last round's state), with
    its result's summary, into `checkpoint_dir/models/<trial_id>/`."""
    for run, result in zip(runs, results):
        cfg = run.plan.cfg
        save_model(os.path.join(checkpoint_dir, MODELS, config_hash(cfg)), cfg, run.plan.model,
                   run.plan.data, result.summary, replace=True)


def checkpoint_models(checkpoint) -> dict[str, str]:
    """{trial_id: folder} of the models in a (local or fetched) checkpoint folder."""
    root = os.path.join(checkpoint, MODELS)
    if not os.path.isdir(root):
        return {}
    return {name: os.path.join(root, name) for name in sorted(os.listdir(root))}


def export_models(checkpoints, study_folder: str, trial_ids: set[str]) -> str | None:
    """Copy the models of the trials' last checkpoints (Tune `Checkpoint`s) whose id is in
    `trial_ids` (the rows exported) into `study_folder/models`, as one unit: built in a temp
    folder beside it, then swapped in for the old one (which goes also when no checkpoint held
    a model: it belonged to other results). Returns the folder, None if no model was kept."""
    os.makedirs(study_folder, exist_ok=True)
    for stale in os.listdir(study_folder):       # a killed export's (the study's lock is held)
        if stale.startswith(".tmp-models-"):
            shutil.rmtree(os.path.join(study_folder, stale), ignore_errors=True)
    tmp = tempfile.mkdtemp(prefix=".tmp-models-", dir=study_folder)
    try:
        for ckpt in checkpoints:
            with ckpt.as_directory() as d:
                for tid, src in checkpoint_models(d).items():
                    if tid in trial_ids:
                        shutil.copytree(src, os.path.join(tmp, tid))
        final, old = os.path.join(study_folder, MODELS), tmp + "-old"
        if os.path.exists(final):
            os.replace(final, old)
        if os.listdir(tmp):
            os.replace(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)
        return final if os.path.isdir(final) else None
    except BaseException:
        with contextlib.suppress(OSError):
            shutil.rmtree(tmp)
        raise
