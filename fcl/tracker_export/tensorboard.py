"""Stored studies as TensorBoard event files (tensorboardX, which Ray Tune installs): one run per
trial at DEST/<study>/<trial_id>, a curve per round metric and per task's accuracy, the summary
metrics as `summary/<name>` at the last round, and the trial's settings in the HParams view."""
from __future__ import annotations

import os
import shutil

from fcl.tracker_export.stored import StoredStudy


def hparam(value):
    """HParams takes numbers, strings and bools; anything else (None) as its text."""
    return value if isinstance(value, (int, float, str, bool)) else str(value)


def write(studies: list[StoredStudy], dest: str) -> int:
    """Returns the runs written; an earlier export of a trial to `dest` is replaced."""
    from tensorboardX import SummaryWriter
    from tensorboardX.summary import hparams
    written = 0
    for study in studies:
        for trial in study.trials:
            logdir = os.path.join(dest, study.name, trial.trial_id)
            shutil.rmtree(logdir, ignore_errors=True)
            last = trial.history[-1][0] if trial.history else 0
            with SummaryWriter(logdir) as w:
                for step, values in trial.history:
                    for key, value in values.items():
                        w.add_scalar(key, value, step)
                summary = {f"summary/{k}": v for k, v in trial.summary.items()}
                for key, value in summary.items():
                    w.add_scalar(key, value, last)
                for part in hparams({k: hparam(v) for k, v in trial.params.items()}, summary):
                    w.file_writer.add_summary(part)
            written += 1
    return written


def viewer(dest: str) -> str:
    """The command that shows what `write` put at `dest`."""
    return f"tensorboard --logdir {dest}"
