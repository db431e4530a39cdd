"""Where Tune keeps a study (`<storage>/<study>`, default `<results>/.tune/<study>`; a path the
nodes share, or s3://...), and the policy on what is there: a rerun is refused, `--resume`
continues it (after checking it is the same study; with no state it is refused: nothing to
resume), `--fresh` discards it (with its Optuna study). The one module that reads or writes a
study's Tune state.

Beside Tune's own files the state holds `study.json`: the study's manifest (`fcl.manifest`, no
files listed) as it started, what `--resume` compares against.

The exported results `<results>/<study>/` are guarded too, whether or not Tune's state is there
(a fresh clone has none: `results/.tune` is git-ignored): without `--fresh` a study refuses to
replace results whose manifest names another preset, data set, space (varying keys, axes),
seeds or base config (`run.*` keys aside: they change how a run computes), and also results of
the very same study when there is no Tune state to `--resume` (a finished study, e.g. the
committed results of a fresh clone): rerunning it would replace committed rows, so that needs
`--fresh` too. A grid study run again with more seeds than it stored is not refused: it
extends the stored study (`fcl.tune.extend`). `--resume` of a study whose Tune state is there
is checked against that state's record instead (`check_resume`), which was started on these
results with consent.

One driver per study: the lock of `fcl.tune.study_lock`, on the results folder and (`hold_storage`)
on a `--storage` of its own.
"""
from __future__ import annotations

import contextlib
import json
import os
import sys
from dataclasses import dataclass, replace
from collections.abc import Iterator

import pyarrow.fs
from ray import tune

from fcl.config import ConfigError
from fcl.manifest import Manifest, ManifestError, manifest_differences, read_manifest
from fcl.results_io import FILES
from fcl.tune import disk_full
from fcl.tune.extend import differs_in_seeds_only, seed_range, settings_diff
from fcl.tune.optuna_storage import (FLAG as OPTUNA_FLAG, check_writable, delete_optuna_study,
                                     optuna_study_exists, optuna_study_name, parse_storage,
                                     storage_url)
from fcl.tune.study import StudyOptions
from fcl.tune.study_lock import hold, holder_line, lock_path  # noqa: F401  (callers' names)

RECORD = "study.json"


@dataclass(frozen=True)
class TuneState:
    """Where Tune keeps a study's state, and what is there."""
    storage: str
    path: str                  # <storage>/<study>
    can_restore: bool
    optuna_url: str
    optuna_name: str


def storage_of(opts: StudyOptions) -> str:
    storage = opts.storage or os.path.join(os.path.abspath(opts.results), ".tune")
    return storage if "://" in storage else os.path.abspath(storage)


def resolve_optuna_storage(name: str, searcher: str | None, opts: StudyOptions) -> StudyOptions:
    """`opts` with the Optuna storage a search uses (`--optuna-storage`, made absolute; on
    `--resume`, the one its Tune state records when the flag is left out; else SQLite in the
    results folder), checked writable before Ray starts; a grid's stays None."""
    if searcher is None:
        if opts.optuna_storage is not None:
            raise ConfigError(OPTUNA_FLAG, opts.optuna_storage, f"study {name} is a grid; only "
                              "a search keeps an Optuna study", f"no {OPTUNA_FLAG}")
        return opts
    given = parse_storage(opts.optuna_storage) if opts.optuna_storage is not None else None
    recorded = None
    if opts.resume and not opts.fresh:
        recorded = (read_record(storage_of(opts).rstrip("/") + "/" + name) or {}
                    ).get("optuna_storage")
    if given is not None and recorded and given != recorded:
        raise ConfigError(OPTUNA_FLAG, given, f"study {name} was started on {recorded}; "
                          "--resume continues it there", f"{OPTUNA_FLAG} {recorded}, or the "
                          "flag left out")
    url = given or recorded or storage_url(opts.results)
    check_writable(url)
    return replace(opts, optuna_storage=url)


def claim_state(name: str, opts: StudyOptions, searcher: str | None,
                manifest: Manifest | None = None) -> TuneState:
    """Check (and with --fresh, discard) the study's earlier state; refuses a rerun of a study
    that has state unless --resume or --fresh says what to do with it, `--resume` of one that
    has none, and (given the new plan's `manifest`) replacing the results `check_results`
    guards. Needs no Ray running; the caller holds the study's lock."""
    storage = storage_of(opts)
    path = storage.rstrip("/") + "/" + name
    state = TuneState(storage, path, tune.Tuner.can_restore(path),
                      opts.optuna_storage or storage_url(opts.results),
                      optuna_study_name(name, opts.objective))
    stale_optuna = searcher == "optuna" and optuna_study_exists(state.optuna_url,
                                                                state.optuna_name)
    if opts.fresh:
        remove_experiment(path)
        if searcher == "optuna":
            delete_optuna_study(state.optuna_url, state.optuna_name)
        return TuneState(storage, path, False, state.optuna_url, state.optuna_name)
    folder = os.path.join(opts.results, name)
    if not opts.resume and state.can_restore and manifest is not None \
            and finished_before_extension(state.path, folder, manifest):
        check_results(folder, manifest)         # refuses moved settings before any removal
        remove_experiment(path)        # the state of the stored study that seeds are added to
        state = TuneState(storage, path, False, state.optuna_url, state.optuna_name)
    if not opts.resume and (state.can_restore or stale_optuna):
        raise ConfigError("--resume", "off", f"study {name} already has state in {path}",
                          "--resume to continue it, or --fresh to discard it")
    if opts.retry_errored and not state.can_restore:
        raise ConfigError("--retry-errored", "on", f"study {name} has no Tune state in {path}",
                          "run the study first")
    if opts.resume and not (state.can_restore or stale_optuna):
        started_only(name, path)
    if manifest is not None and not (opts.resume and state.can_restore):
        check_results(os.path.join(opts.results, name), manifest)
    if opts.resume and state.can_restore and disk_full.never_recorded(path):
        print(f"study {name} was stopped before Tune recorded any trial ({path} holds no "
              "experiment state yet): it starts from the beginning", file=sys.stderr)
        remove_experiment(path)
        return TuneState(storage, path, False, state.optuna_url, state.optuna_name)
    if opts.resume and state.can_restore:
        disk_full.ensure_resumable(name, path)
    return state


def finished_before_extension(path: str, folder: str, manifest: Manifest) -> bool:
    """Whether the Tune state at `path` is that of the study exported to `folder`, finished,
    and `manifest` adds seeds to it (`fcl.tune.extend`; whether at its settings is
    `check_results`'s to say): that state is done with and makes way for the new trials' (an
    interrupted extension's state records the new seeds: --resume)."""
    record = read_record(path)
    try:
        old = read_manifest(folder)
    except ManifestError:
        return False
    return (record is not None and old is not None
            and tuple(record.get("seeds", ())) == tuple(old.seeds)
            and differs_in_seeds_only(["seeds"], old, manifest))


def adds_seeds_at_other_settings(diff: list[str], old: Manifest, new: Manifest) -> bool:
    """More seeds over a stored grid study whose base settings moved since (only those)."""
    return ("seeds" in diff and differs_in_seeds_only(["seeds"], old, new)
            and all(d == "seeds" or d.startswith("base ") for d in diff))


def check_results(folder: str, manifest: Manifest) -> None:
    """Refuse (one line) to replace the results in `folder` (see the module's doc)."""
    try:
        old = read_manifest(folder)
    except ManifestError as e:
        raise ConfigError("--results", folder, f"{e}", "--fresh to replace it") from None
    if old is None:
        held = [f"{n}.parquet" for n in FILES
            if os.path.exists(os.path.join(folder, f"{n}.parquet"))]
        if held:
            raise ConfigError("--results", folder, f"holds {', '.join(held)} but no manifest "
                              "(an interrupted export, or older results)",
                              "--fresh to replace them, or another --results")
        return
    diff = manifest_differences(old, manifest)
    if differs_in_seeds_only(diff, old, manifest):
        return                  # more seeds: the stored trials are kept (`fcl.tune.extend`)
    if diff and adds_seeds_at_other_settings(diff, old, manifest):
        raise ConfigError("--results", folder, f"holds study {old.study} at seeds "
                          f"{seed_range(old.seeds)}; seeds are added to it only at its "
                          f"settings ({settings_diff(old.base, manifest.base, manifest.varying)})",
                          "the as-stored settings with --set, or --fresh to rerun it whole")
    if diff:
        shown = ", ".join(diff[:4]) + (f" and {len(diff) - 4} more" if len(diff) > 4 else "")
        raise ConfigError("--results", folder, f"holds study {old.study} at preset {old.preset} "
                          f"on {old.dataset}; this run differs in {shown}",
                          "--fresh to replace those results, or another --results "
                          "(e.g. /tmp/fcl-demo)")
    raise ConfigError("--fresh", "off", f"{folder} already holds this study's results (at "
                      f"preset {old.preset} on {old.dataset}) and there is no Tune state to "
                      "resume: a rerun would replace them", "--fresh to rerun and replace "
                      "them, or another --results")


def enter(state: TuneState, opts: StudyOptions, manifest: Manifest) -> None:
    """Before Tune starts: a resumed study must be the one that stopped (`check_resume`);
    then this one is recorded in its state."""
    check_resume(state, opts, manifest)
    write_record(state.path, manifest)


def started_only(name: str, path: str) -> None:
    """`--resume` of a study Tune holds no state of. Where fcl's record of it is there (a
    driver killed in its first seconds: the record is written before Tune starts, and the
    driver's last line said `--resume`), it starts from the beginning: no trial ran, so
    nothing is lost or mixed, whatever config the resume names; where nothing is, a one-line
    refusal (a mistyped --results or --storage)."""
    old = read_record(path)
    if old is None:
        raise ConfigError("--resume", "on", f"nothing to resume: study {name} has no Tune "
                          f"state in {path}", "run it without --resume (or check --storage)")
    print(f"study {name} was stopped before Tune wrote its state ({path} holds fcl's record "
          "of it only): it starts from the beginning", file=sys.stderr)
    remove_experiment(path)


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
    """Tune's state of a study, and the driver's copy of it from a full-disk stop."""
    disk_full.drop_stash(path)
    fs, p = experiment_fs(path)
    if fs.get_file_info(p).type != pyarrow.fs.FileType.NotFound:
        fs.delete_dir(p)


@contextlib.contextmanager
def hold_storage(opts: StudyOptions, name: str) -> Iterator[None]:
    """The study's lock on its Tune state too, where `--storage` is not under `--results`: two
    drivers of one study with their own results folders but one shared storage (a lab's
    default) would otherwise share, and `--fresh` delete, one live Tune state. An object store
    (s3://, gs://, ...) cannot be locked: a warning says so and the study goes on."""
    storage = storage_of(opts)
    # RESULTS/.tune, or --storage the results folder itself: the results lock covers it (and
    # is that very file, which a second flock of this driver would find held)
    if opts.storage is None or ("://" not in storage and
                                os.path.realpath(storage) == os.path.realpath(opts.results)):
        yield
        return
    if "://" in storage:
        print(f"warning: --storage={storage}: an object store cannot be locked; run one driver "
              f"of study {name} on it at a time", file=sys.stderr)
        yield
        return
    owner = default_storage_owner(storage)
    with hold(storage, name, opts.command, "--storage"), \
            (hold(owner, name, opts.command, "--storage")
             if owner and os.path.realpath(owner) != os.path.realpath(opts.results)
             else contextlib.nullcontext()):
        yield


def default_storage_owner(storage: str) -> str | None:
    """The results folder whose default storage `storage` is (`<results>/.tune`), or None: a
    driver of that folder holds only its results lock, so a driver using its storage from
    another results folder must take that lock too, or its `--fresh` deletes a live state."""
    path = os.path.realpath(storage)
    return os.path.dirname(path) if os.path.basename(path) == ".tune" else None
