"""Where Tune keeps a study (`<storage>/<study>`, default `<results>/.tune/<study>`; a path the
nodes share, or s3://...), and the policy on what is there: a rerun is refused, `--resume`
continues it (after checking it is the same study), `--fresh` discards it (with its Optuna
study). The one module that reads or writes a study's Tune state.

Beside Tune's own files the state holds `study.json`: the study's manifest (`fcl.manifest`, no
files listed) as it started, what `--resume` compares against.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

import pyarrow.fs
from ray import tune

from fcl.config import ConfigError
from fcl.manifest import Manifest
from fcl.tune.searchers import (delete_optuna_study, optuna_study_exists, optuna_study_name,
                                storage_url)
from fcl.tune.study import StudyOptions

RECORD = "study.json"


@dataclass(frozen=True)
class TuneState:
    """Where Tune keeps a study's state, and what is there."""
    storage: str
    path: str                  # <storage>/<study>
    can_restore: bool
    optuna_url: str
    optuna_name: str


def claim_state(name: str, opts: StudyOptions, searcher: str | None) -> TuneState:
    """Check (and with --fresh, discard) the study's earlier state; refuses a rerun of a study
    that has state unless --resume or --fresh says what to do with it. Needs no Ray running."""
    storage = opts.storage or os.path.join(os.path.abspath(opts.results), ".tune")
    if "://" not in storage:
        storage = os.path.abspath(storage)
    path = storage.rstrip("/") + "/" + name
    state = TuneState(storage, path, tune.Tuner.can_restore(path), storage_url(opts.results),
                      optuna_study_name(name, opts.objective))
    stale_optuna = searcher == "optuna" and optuna_study_exists(state.optuna_url,
                                                                state.optuna_name)
    if opts.fresh:
        remove_experiment(path)
        if searcher == "optuna":
            delete_optuna_study(state.optuna_url, state.optuna_name)
        return TuneState(storage, path, False, state.optuna_url, state.optuna_name)
    if not opts.resume and (state.can_restore or stale_optuna):
        raise ConfigError("--resume", "off", f"study {name} already has state in {path}",
                          "--resume to continue it, or --fresh to discard it")
    if opts.retry_errored and not state.can_restore:
        raise ConfigError("--retry-errored", "on", f"study {name} has no Tune state in {path}",
                          "run the study first")
    return state


def enter(state: TuneState, opts: StudyOptions, manifest: Manifest) -> None:
    """Before Tune starts: a resumed study must be the one that stopped (`check_resume`);
    then this one is recorded in its state."""
    check_resume(state, opts, manifest)
    write_record(state.path, manifest)


def check_resume(state: TuneState, opts: StudyOptions, manifest: Manifest) -> None:
    """Refuse to resume a study under a base config or trial seeds other than its own."""
    if not (opts.resume and state.can_restore):
        return
    old = read_record(state.path)
    if old is None:
        return
    new = {**manifest.base, "--seeds": manifest.trial_seeds}
    was = {**old["base"], "--seeds": old.get("trial_seeds", 1)}
    diff = sorted(k for k in new if was.get(k) != new[k])
    if diff:
        raise ConfigError("--resume", ",".join(diff), "differs from the interrupted study's "
                          "config", "the same --preset/--set/--seeds/--cpus-per-trial, or "
                          "--fresh")


def experiment_fs(path: str) -> tuple[pyarrow.fs.FileSystem, str]:
    if "://" in path:
        return pyarrow.fs.FileSystem.from_uri(path)
    return pyarrow.fs.LocalFileSystem(), os.path.abspath(path)


def read_record(path: str) -> dict | None:
    """The record of the study kept at `path` (a dict: older ones are not manifests)."""
    fs, p = experiment_fs(path)
    try:
        with fs.open_input_stream(f"{p}/{RECORD}") as f:
            return json.loads(f.read().decode())
    except (FileNotFoundError, OSError):
        return None


def write_record(path: str, manifest: Manifest) -> None:
    fs, p = experiment_fs(path)
    fs.create_dir(p, recursive=True)
    with fs.open_output_stream(f"{p}/{RECORD}.tmp") as f:
        f.write(manifest.to_json().encode())
    fs.move(f"{p}/{RECORD}.tmp", f"{p}/{RECORD}")


def remove_experiment(path: str) -> None:
    fs, p = experiment_fs(path)
    if fs.get_file_info(p).type != pyarrow.fs.FileType.NotFound:
        fs.delete_dir(p)
