"""After the export: delete the checkpoints of the exported trials that nothing reads any more.

Tune keeps every checkpoint of every trial while a study runs (`CheckpointConfig(num_to_keep=
None)`, `fcl.tune.tuner`): it deletes none, so every checkpoint the experiment snapshot names is
there whenever the driver is killed, and `--resume` restores each trial from the newest one its
snapshot names. So while it runs a study holds, per trial, one checkpoint every
`checkpoint_every` rounds (by default every tenth of its rounds: about 9 a trial) plus the last
one: disk = trials x ~10 x the size of a trial's engine state at all its seeds (server model,
its buffers and server-optimizer moments per task, the round records so far; the last
checkpoint holds the finished `RunResult` instead, far smaller unless `--save-models`). Measured
on a 2-core AMD EPYC with AVX2 only, a smoke study of 2 trials (10 rounds, a checkpoint every
round): 9 checkpoints of 0.16 MB and a last one of 20 KB per trial, 2.8 MB in all before the
pruning, 40 KB after it. Tune's experiment state lists every checkpoint too (its metrics: about
4 KB each in that smoke study). (With Tune's `num_to_keep=2`, before, a trial held about 2 at a
time, but every second one forced a snapshot of every trial's state: docs/benchmarks.md.)

Once the export has written the study's Parquet files and manifest, `prune_checkpoints` deletes,
in the folder of each exported trial, every checkpoint but the trial's last (the one Tune's
state names as its latest). That last one is kept because Tune's state still points at it:
- `--resume` of the finished study restores its trials from Tune's state and exports again from
  each trial's last checkpoint (a finished trial's holds its whole `RunResult`; with
  `--save-models` its models too), and `--retry-errored` resumes a failed trial from its last;
- adding seeds to a finished study (`fcl.tune.extend`) reads the stored Parquet files, not the
  checkpoints, and discards that study's Tune state first (`fcl.tune.state`).
The older ones are only a trial's way back after a crash mid-trial, which a finished trial no
longer needs: the snapshot still names them, but Tune never opens a checkpoint other than a
trial's latest. A trial still unfinished (no row) keeps all of its checkpoints. Pruning twice
(a `--resume` of the finished study) deletes nothing more.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import pyarrow.fs

from fcl.tune.export import on_storage


@dataclass(frozen=True)
class Pruned:
    checkpoints: int             # deleted
    bytes: int                   # that they held
    kept: int                    # the trials' last checkpoints, kept
    kept_bytes: int


def _size(fs: pyarrow.fs.FileSystem, path: str) -> int:
    infos = fs.get_file_info(pyarrow.fs.FileSelector(path, recursive=True,
                                                     allow_not_found=True))
    return sum(i.size or 0 for i in infos if i.type == pyarrow.fs.FileType.File)


def _prune_here(result_grid, trial_dirs: set[str]) -> Pruned:
    deleted = freed = kept = kept_bytes = 0
    for res in result_grid:
        if str(res.path) not in trial_dirs:
            continue                 # not exported (unfinished): its checkpoints stay
        fs, last = res.filesystem, (res.checkpoint.path if res.checkpoint is not None else None)
        found = fs.get_file_info(pyarrow.fs.FileSelector(str(res.path), allow_not_found=True))
        for info in found:
            if info.type != pyarrow.fs.FileType.Directory or \
                    not os.path.basename(info.path).startswith("checkpoint_"):
                continue
            size = _size(fs, info.path)
            if info.path == last:
                kept, kept_bytes = kept + 1, kept_bytes + size
                continue
            try:
                fs.delete_dir(info.path)
            except FileNotFoundError:
                continue             # gone already
            deleted, freed = deleted + 1, freed + size
    return Pruned(deleted, freed, kept, kept_bytes)


def prune_checkpoints(result_grid, trial_dirs: set[str]) -> Pruned:
    """Delete every checkpoint but the last of each trial whose folder is in `trial_dirs`
    (Tune's trial folders, `Result.path`, of the trials the export wrote rows for), where the
    checkpoints are: by the driver, or under Ray Client by a task on the head node."""
    return on_storage(_prune_here, result_grid, trial_dirs)


def pruned_line(pruned: Pruned) -> str:
    mb = 2 ** 20
    return (f"deleted {pruned.checkpoints} older checkpoints of the exported trials "
            f"({pruned.bytes / mb:.1f} MB); kept each one's last ({pruned.kept}, "
            f"{pruned.kept_bytes / mb:.1f} MB) for --resume")
