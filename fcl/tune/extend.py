"""More seeds over a stored study: a grid study run with `--seeds` beyond the ones its stored
results hold runs only the trials it lacks and re-exports the whole study.

A stored study is extended when its manifest differs from the new plan's in the seeds alone
(`fcl.manifest.manifest_differences`), the new seeds include the stored ones, the study is a
grid (no searcher, no random axis) and every stored trial finished. The stored trials must be
the very trials the new plan would run at the stored seeds: a trial's id is its config's hash
(`fcl.results_io.config_hash`), so a preset whose defaults moved since (e.g. a `run.*` key) gives
other ids, and the extension is refused in one line that names the as-stored settings to pass
with `--set` (or `--fresh` reruns the whole study at today's). The stored rows keep their
values, never recomputed (`as_today` only spells their config columns as today's); the
manifest's `extended` lists each part of the study: its seeds, trials, commit and command.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace

import pandas as pd

from fcl.config import ConfigError, RunConfig
from fcl.manifest import Manifest, ManifestError, manifest_differences, read_manifest, verify
from fcl.results_io import FILES, TERMINATED, as_today, config_hash
from fcl.tune.space import Space, grid, grid_points, is_grid, resolve


@dataclass(frozen=True)
class StoredPart:
    """The stored results a study extends: their manifest and frames (trials, rounds, tasks)."""
    manifest: Manifest
    frames: dict[str, pd.DataFrame]

    @property
    def seeds(self) -> tuple[int, ...]:
        return self.manifest.seeds


def differs_in_seeds_only(diff: list[str], old: Manifest, new: Manifest) -> bool:
    """Whether `new` (differing from `old` in `diff`) is `old` with seeds added."""
    return (diff == ["seeds"] and old.searcher is None and new.searcher is None
            and set(old.seeds) < set(new.seeds))


def stored_part(folder: str, manifest: Manifest, space: Space, base: RunConfig
                ) -> StoredPart | None:
    """The stored study in `folder` that the plan (`manifest`, `space`, `base`) extends, or None
    when it does not extend one (the state's policy then applies). Refuses, in one line, an
    extension whose stored trials are not the plan's at the stored seeds."""
    try:
        old = read_manifest(folder)
    except ManifestError:
        return None
    if old is None or not differs_in_seeds_only(manifest_differences(old, manifest), old,
                                                 manifest):
        return None
    if not all(is_grid(v) for v in space.values()):     # random draws: no fixed trial ids
        raise ConfigError("--seeds", len(manifest.seeds), f"{folder} holds a study whose space "
                          "draws values at random: seeds are added only to a grid",
                          "--fresh to rerun the whole study")
    broken = verify(folder, old)
    if broken:
        raise ConfigError("--seeds", len(manifest.seeds), f"cannot add seeds: {broken[0]}",
                          "--fresh to rerun the whole study")
    frames = {n: pd.read_parquet(os.path.join(folder, f"{n}.parquet")) for n in FILES}
    trials = frames["trials"]
    unfinished = int((trials["status"] != TERMINATED).sum())
    if unfinished:
        raise ConfigError("--seeds", len(manifest.seeds), f"{folder} holds {unfinished} trials "
                          "that did not finish: seeds can only be added to a complete study",
                          "--fresh to rerun the whole study")
    at_stored = {config_hash(resolve(base, p)) for p in grid_points(stored_space(space, old))}
    if at_stored != set(trials["trial_id"]):
        raise ConfigError("--seeds", len(manifest.seeds), f"the stored trials in {folder} "
                          "are not this plan's at seeds " + seed_range(old.seeds) + " ("
                          + settings_diff(old.base, manifest.base, manifest.varying) + ")",
                          "add the as-stored settings with --set, or --fresh to rerun the "
                          "whole study")
    return StoredPart(old, frames)


def stored_space(space: Space, old: Manifest) -> Space:
    return {**space, "seed": grid(*old.seeds)}


def missing_space(space: Space, part: StoredPart) -> Space:
    """The space Tune runs: the study's grid at the seeds the stored part lacks."""
    new = [s for s in space["seed"]["grid_search"] if s not in part.seeds]
    return {**space, "seed": grid(*new)}


# a key the plan leaves at "decide later" that the stored base holds decided: not a difference
RESOLVED_LATER = {"run.threads": 0}        # the trial's CPUs, once Ray's resources are known


def settings_diff(stored: dict, now: dict, varied: tuple[str, ...] = ()) -> str:
    """`key=stored value` for each base key whose value moved since the stored run (what to
    pass with --set to add seeds as stored); the keys the study varies aside."""
    moved = sorted(k for k in set(stored) & set(now) if stored[k] != now[k]
                   and k not in varied
                   and not (k in RESOLVED_LATER and now[k] == RESOLVED_LATER[k]))
    if not moved:
        return "no base setting differs; the trial ids do"
    return "stored at " + " ".join(f"{k}={fmt(stored[k])}" for k in moved)


def fmt(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def seed_range(seeds: tuple[int, ...]) -> str:
    s = sorted(seeds)
    return f"{s[0]}-{s[-1]}" if s == list(range(s[0], s[-1] + 1)) and len(s) > 1 else \
        ",".join(map(str, s))


def merged_frames(part: StoredPart, new: dict[str, pd.DataFrame], sort_keys: list[str]
                  ) -> dict[str, pd.DataFrame]:
    """The whole study: the stored rows and the new trials' rows, in the order one export of
    all of them gives (varying keys, then trial id; rounds and tasks follow). The stored rows
    keep their values; only their config columns are spelled as today's (`as_today`)."""
    trials = concat(as_today(part.frames["trials"]), new["trials"])
    keys = [k for k in sort_keys if k in trials] + ["trial_id"]
    trials = trials.sort_values(keys, kind="stable").reset_index(drop=True)
    order = {tid: i for i, tid in enumerate(trials["trial_id"])}
    out = {"trials": trials}
    for name, within in (("rounds", ["round"]), ("tasks", ["round", "task"])):
        df = concat(as_today(part.frames[name]), new[name])
        out[name] = (df.assign(_order=df["trial_id"].map(order))
                     .sort_values(["_order", *within], kind="stable")
                     .drop(columns="_order").reset_index(drop=True))
    return out


def concat(stored: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """Stored rows then new ones, in the new frame's types; a column the stored rows lack (a
    metric added since, e.g. `diverged`) is null there, never invented (nullable bool or int)."""
    cols = list(new.columns) + [c for c in stored.columns if c not in new.columns]
    both = pd.concat([stored, new], ignore_index=True)[cols]
    for col in new.columns:
        kind = new[col].dtype
        if both[col].dtype == kind:
            continue
        if not both[col].isna().any():
            both[col] = both[col].astype(kind)
        elif pd.api.types.is_bool_dtype(kind):
            both[col] = both[col].astype("boolean")
        elif pd.api.types.is_integer_dtype(kind):
            both[col] = both[col].astype("Int64")
    return both


def extended_manifest(manifest: Manifest, part: StoredPart, added: int) -> Manifest:
    """`manifest` of the whole study, with `extended`: the stored parts, then this one."""
    earlier = list(part.manifest.extended) or [{
        "seeds": list(part.seeds), "trials": len(part.frames["trials"]),
        "fcl_git": part.manifest.fcl_git, "command": part.manifest.command}]
    now = {"seeds": [s for s in manifest.seeds if s not in part.seeds], "trials": added,
           "fcl_git": manifest.fcl_git, "command": manifest.command}
    return replace(manifest, extended=tuple(earlier + [now]))
