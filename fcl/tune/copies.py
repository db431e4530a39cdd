"""Trials another study already stored, copied instead of run again (`--copy-from STUDY ...`).

Studies of one paper share settings: FLoCoRA's Table IV runs FedAvg and LoRA at 32 / 8 / 4 / 2
bits, which its Fig. 2 and Table III studies store at the same seeds. A trial's id is its whole
config's hash (`fcl.results_io.config_hash`, the seed included), and a run is deterministic on
one kind of machine (`fcl.machine_kind`: bf16 kernels differ between CPUs; the low-rank FedAvg
trial at seed 0 gave 63.81 on an AMD EPYC, 63.83 on an Intel Xeon with AMX), so a stored trial
with the id a planned trial would get is that trial's result where the kind that computed it
(its row's `cpu`, `gpu` and `torch_version`) is the kind the new trials run on
(`fcl.tune.node_kinds`): with `--copy-from`, a grid study takes those rows (trials, rounds,
tasks) from the named studies of the same results folder and Tune runs only the rest. Each
copied row keeps its values, its commit (`fcl_git`), its machine and its timing; its `study`
becomes this study's and `copied_from` names the study it came from; the manifest's `copied`
lists each source with its trials, their seeds, its commit and the machines that computed them.

Refused in one line: a source that is not a stored, intact study in the results folder; this
study itself (seeds are added with `--seeds`); a search or `--num-samples` > 1 (no fixed trial
ids); a planned trial a source computed on another kind of machine, or trials run on nodes of
several kinds; a row stored before fcl recorded the CPU, unless `--copy-unrecorded-cpu` says it
ran on this kind (the manifest then names its machine `unrecorded`); a trial two sources store
with different ACC (then the machine or the code computed otherwise: run it instead); a plan
with no trial left to run.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import TextIO

import pandas as pd

from fcl.config import ConfigError, RunConfig
from fcl.machine_kind import Kind
from fcl.manifest import Manifest, ManifestError, read_manifest, verify
from fcl.results_io import FILES, TERMINATED, config_hash
from fcl.tune import extend
from fcl.tune.space import Space, grid, grid_points, is_grid, resolve, trial_overrides

FLAG = "--copy-from"
UNRECORDED_FLAG = "--copy-unrecorded-cpu"
UNRECORDED = "unrecorded"      # the machine of a row stored before rows recorded it
AXIS = "trial"                 # the one axis of the space Tune runs when some trials are copied


@dataclass(frozen=True)
class Copies:
    """The rows copied into a study, and the space of the trials left for Tune."""
    frames: dict[str, pd.DataFrame]      # trials (with `copied_from`), rounds, tasks
    record: tuple[dict, ...]             # the manifest's `copied`: study, trials, seeds, fcl_git
    space_left: Space

    @property
    def trials(self) -> int:
        return len(self.frames["trials"])

    def line(self, ran: int, planned: bool = False) -> str:
        """What was copied and run; `planned`: what would be (the dry run)."""
        sources = ", ".join(f"{r['study']} ({r['trials']})" for r in self.record)
        n = self.trials
        copy, run = ("copies", "runs") if planned else ("copied", "ran")
        return (f"{copy} {n} trial{'s' * (n != 1)} stored by {sources}: the same config and "
                f"seed; {run} {ran}")


def stored_studies(results: str) -> list[str]:
    return sorted(d for d in os.listdir(results) if os.path.isfile(
        os.path.join(results, d, "study.json"))) if os.path.isdir(results) else []


def source_frames(results: str, name: str, own: str) -> tuple[dict[str, pd.DataFrame], str]:
    """A source study's frames and commit(s), or a one-line refusal."""
    stored = stored_studies(results)
    if name == own:
        raise ConfigError(FLAG, name, "is this study itself (add seeds to it with --seeds)",
                          "another stored study: " + (", ".join(s for s in stored if s != own)
                                                      or "none stored"))
    folder = os.path.join(results, name)
    try:
        manifest = read_manifest(folder)
    except ManifestError as e:
        raise ConfigError(FLAG, name, str(e), "an intact stored study") from None
    if manifest is None:
        raise ConfigError(FLAG, name, f"no stored study in {results}",
                          ", ".join(s for s in stored if s != own) or "none stored")
    broken = verify(folder, manifest)
    if broken:
        raise ConfigError(FLAG, name, f"its files do not match its manifest: {broken[0]}",
                          "an intact stored study")
    return ({n: pd.read_parquet(os.path.join(folder, f"{n}.parquet")) for n in FILES},
            manifest.commits)


def check_sources(results: str, sources: tuple[str, ...], own: str, searcher: str | None,
                  num_samples: int) -> None:
    """What can be refused before the study claims its state: a search, repeated samples,
    and each source (stored, intact, not this study)."""
    if not sources:
        return
    check_kind(sources, searcher, num_samples)
    for name in dict.fromkeys(sources):
        source_frames(results, name, own)


def check_kind(sources: tuple[str, ...], searcher: str | None, num_samples: int) -> None:
    if searcher is not None:
        raise ConfigError(FLAG, " ".join(sources), "a search draws its trials: they have no "
                          "fixed ids to copy", "leave --copy-from out, or a grid study")
    if num_samples != 1:
        raise ConfigError(FLAG, " ".join(sources), f"--num-samples {num_samples} runs each "
                          "config more than once", "--num-samples 1")


def planned_ids(base: RunConfig, space: Space) -> dict[str, dict]:
    """Each grid point Tune would run, by the id its trial gets."""
    return {config_hash(resolve(base, p)): p for p in grid_points(space)}


def row_kind(row: pd.Series) -> Kind | None:
    """The kind of machine that computed a stored trial; None where its row does not say."""
    def text(col: str) -> str:
        value = row.get(col)
        return "" if value is None or pd.isna(value) else str(value)
    return Kind(text("cpu"), text("gpu"), text("torch_version")) if text("cpu") else None


def only_kind(where: dict[Kind, list[str]], sources: tuple[str, ...]) -> Kind:
    """The one kind of machine the new trials run on, or a refusal."""
    if len(where) == 1:
        return next(iter(where))
    listing = "; ".join(f"{k.words()} ({', '.join(ips)})" for k, ips in where.items())
    raise ConfigError(FLAG, " ".join(sources), f"the nodes that run trials are of {len(where)} "
                      f"kinds ({listing}): a copy would stand beside trials computed otherwise",
                      "nodes of one kind, or leave --copy-from out")


def machine_of(name: str, row: pd.Series, on: Kind, unrecorded: bool,
               sources: tuple[str, ...]) -> str:
    """The machine a source's trial was computed on, in words, where it is `on`'s kind (or
    unrecorded and `unrecorded` allows it); else a refusal."""
    kind, tid = row_kind(row), row["trial_id"]
    if kind is None and not unrecorded:
        raise ConfigError(FLAG, " ".join(sources), f"{name} stored trial {tid} before rows "
                          "recorded the machine that computed them", f"{UNRECORDED_FLAG} where "
                          f"{name} ran on {on.words()}, or leave --copy-from out")
    if kind is None and str(row.get("torch_version")) == on.torch:
        return UNRECORDED
    if kind != on:
        ran = kind.words() if kind is not None else f"torch {row.get('torch_version')}"
        raise ConfigError(FLAG, " ".join(sources), f"{name} computed trial {tid} on {ran}; "
                          f"this study's trials run on {on.words()}",
                          "a study computed on the kind this one runs on, or leave "
                          "--copy-from out")
    return kind.words()


def find_copies(results: str, sources: tuple[str, ...], own: str, base: RunConfig,
                space: Space, searcher: str | None, num_samples: int,
                where: dict[Kind, list[str]], unrecorded: bool = False) -> Copies | None:
    """The planned trials (`space` over `base`) that `sources` store, computed on the kind of
    machine the new trials run on (`where`: {kind: its nodes}, `fcl.tune.node_kinds`), and what
    is left to run; None when no source holds any of them. `unrecorded`: rows that do not
    record their machine count as computed on that kind."""
    random = not all(is_grid(v) for v in space.values())
    check_kind(sources, searcher or ("random draws" if random else None), num_samples)
    planned = planned_ids(base, space)
    on = only_kind(where, sources)
    chosen: dict[str, tuple[str, dict[str, pd.DataFrame], pd.Series]] = {}
    record = []
    for name in dict.fromkeys(sources):
        frames, commits = source_frames(results, name, own)
        trials = frames["trials"]
        rows = trials[trials["trial_id"].isin(planned) & (trials["status"] == TERMINATED)]
        taken: list[int] = []
        machines: set[str] = set()
        for _, row in rows.iterrows():
            tid = row["trial_id"]
            if tid in chosen:
                first, _, kept = chosen[tid]
                if kept["acc"] != row["acc"]:
                    raise ConfigError(FLAG, " ".join(sources), f"trial {tid} is stored by "
                                      f"{first} (ACC {kept['acc']}) and {name} (ACC "
                                      f"{row['acc']}): the same config computed otherwise",
                                      "one of them, or leave --copy-from out to run it")
                continue
            machines.add(machine_of(name, row, on, unrecorded, sources))
            chosen[tid] = (name, frames, row)
            taken.append(int(row["seed"]))
        if taken:
            record.append({"study": name, "trials": len(taken), "seeds": sorted(set(taken)),
                           "fcl_git": commits, "machine": sorted(machines)})
    if not chosen:
        return None
    left = [p for tid, p in planned.items() if tid not in chosen]
    if not left:
        raise ConfigError(FLAG, " ".join(sources), f"every one of the {len(planned)} trials "
                          "the plan runs is stored there: nothing is left to run",
                          "fewer sources, or more seeds")
    return Copies(copied_frames(chosen, own), tuple(record),
                  {AXIS: grid(*(trial_overrides(p) for p in left))})


def copied_frames(chosen: dict, own: str) -> dict[str, pd.DataFrame]:
    """The chosen rows of every table, relabelled as this study's, each trial naming its
    source in `copied_from`."""
    out = {}
    for name in FILES:
        parts = []
        for source in dict.fromkeys(src for src, _, _ in chosen.values()):
            ids = [tid for tid, (src, _, _) in chosen.items() if src == source]
            df = next(f for src, f, _ in chosen.values() if src == source)[name]
            part = df[df["trial_id"].isin(ids)].copy()
            if name == "trials":
                part["copied_from"] = source
            parts.append(part)
        frame = pd.concat(parts, ignore_index=True)
        frame["study"] = own
        out[name] = frame
    return out


def merged(copied: Copies | None, part: extend.StoredPart | None,
           frames: dict[str, pd.DataFrame], manifest: Manifest, keys: list[str], ran: int,
           out: TextIO) -> tuple[dict[str, pd.DataFrame], Manifest]:
    """The export's new rows with the copied ones among them (a line says how many), and the
    manifest's `copied`: every part's sources, a stored part's first."""
    if copied is not None:
        frames = extend.merged_frames(extend.StoredPart(manifest, copied.frames), frames, keys)
        print(copied.line(ran), file=out)
    record = (part.manifest.copied if part is not None else ()) + \
        (copied.record if copied is not None else ())
    return frames, replace(manifest, copied=record)
