"""A study's manifest (`fcl.manifest.Manifest`) from what its script declares and the plan the
driver resolved: the one place that turns a space into the manifest's `varying` keys and `axes`.
Used by the export (after every run)."""
from __future__ import annotations

from fcl.config import RunConfig
from fcl.manifest import Manifest, dataset_label
from fcl.provenance import fcl_git
from fcl.tune.space import Space, config_keys, display_columns, is_grid


def space_axes(space: Space) -> dict[str, list[str]]:
    """Space key -> the config keys it sets, for every key that varies (a variant axis sets
    several; `seed` left out: it is the manifest's `seeds`)."""
    known, axes = config_keys(), {}
    for path, key in display_columns(space).items():
        axis = path.split("/")[0] if path not in known else path
        if key != "seed":
            axes.setdefault(axis, []).append(key)
    return axes


def space_seeds(space: Space, cfg: RunConfig, trial_seeds: int) -> tuple[int, ...]:
    """The seeds a study runs: a grid's seed axis, else the base seed and the trials' own."""
    seed = space.get("seed")
    if is_grid(seed):
        return tuple(int(s) for s in seed["grid_search"])
    return tuple(range(cfg.seed, cfg.seed + trial_seeds))


def study_manifest(name: str, doc: str | None, searcher: str | None, preset: str,
                   cfg: RunConfig, space: Space, *, trial_seeds: int = 1, num_samples: int = 1,
                   scheduler: str = "fifo", objective: str = "acc", command: str = "",
                   optuna_storage: str | None = None) -> Manifest:
    """The manifest of study `name` run at `preset` from base config `cfg` over `space` (the
    space Tune ran: a grid's seeds are its `seed` axis)."""
    axes = space_axes(space)
    return Manifest(
        study=name, preset=preset, dataset=dataset_label(cfg.data.name, cfg.data.root),
        base=cfg.to_flat(), doc=doc or "", searcher=searcher, objective=objective,
        varying=tuple(dict.fromkeys(k for keys in axes.values() for k in keys)), axes=axes,
        seeds=space_seeds(space, cfg, trial_seeds), trial_seeds=trial_seeds,
        num_samples=num_samples, scheduler=scheduler, command=command, fcl_git=fcl_git(),
        optuna_storage=optuna_storage if searcher is not None else None)
