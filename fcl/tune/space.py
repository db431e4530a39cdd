"""A study's search space: what varies, in the public vocabulary (`client.lr`, `data.alpha`).

A space maps a config key to a constant, `grid(...)` (Tune's grid_search) or a Tune domain
(`tune.loguniform`, `tune.choice`, ...). A key that is not a config key names a *variant* axis:
a grid whose values are dicts of config keys, for axes that move several keys together (an
optimizer with its tau, LoRA rank with its alpha):

    {"client.lr": grid(0.01, 0.05),
     "opt": grid({"server.optimizer": "fedsgd"}, {"server.optimizer": "fedadam", "server.tau": 0.1})}

Everything here is checked against the config before any trial starts, so a bad key or value
is one `ConfigError` line, never a failed trial.
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from typing import Any

from ray.tune.search.sample import Categorical, Domain, Float, Integer

from fcl.config import ConfigError, RunConfig, field_types, with_overrides

Space = dict[str, Any]


def grid(*values: Any) -> dict:
    """Tune's grid_search over `values` (every value becomes its own trial)."""
    return {"grid_search": list(values)}


def is_grid(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"grid_search"}


def with_seeds(space: Space, first_seed: int, count: int) -> Space:
    """Seeds as one more grid axis: first_seed .. first_seed + count - 1."""
    if "seed" in space:
        raise ConfigError("--seeds", count, "the study's space already varies `seed`",
                          "leave --seeds out for this study")
    return {**space, "seed": grid(*range(first_seed, first_seed + count))}


@functools.cache
def config_keys() -> frozenset[str]:
    return frozenset(field_types())


def trial_overrides(trial_config: dict) -> dict[str, Any]:
    """A Tune trial config (space keys -> sampled values) as flat config overrides."""
    known = config_keys()
    flat: dict[str, Any] = {}
    for key, value in trial_config.items():
        if key in known:
            flat[key] = value
        elif isinstance(value, dict):
            flat.update(value)
    return flat


def resolve(base: RunConfig, trial_config: dict) -> RunConfig:
    """The trial's RunConfig: the study's base with the trial's values applied."""
    return with_overrides(base, trial_overrides(trial_config))


def grid_points(space: Space) -> list[dict]:
    """Every grid combination, in a fixed order; non-grid values are kept as they are (a Tune
    domain stays a domain: one point stands for the `num_samples` draws from it)."""
    keys = list(space)
    axes = [space[k]["grid_search"] if is_grid(space[k]) else [space[k]] for k in keys]
    return [dict(zip(keys, combo)) for combo in itertools.product(*axes)]


def representatives(value: Any) -> list[Any]:
    """Concrete values that stand for `value` when checking it: itself, each categorical
    choice, or both ends of a numeric range."""
    if isinstance(value, Categorical):
        return list(value.categories)
    if isinstance(value, (Float, Integer)):
        lower, upper = value.lower, value.upper
        if isinstance(value, Integer):
            upper -= 1                                  # randint's upper bound is exclusive
        return [lower, upper]
    if isinstance(value, Domain):
        raise ConfigError("space", type(value).__name__, "unsupported search domain",
                          "grid, tune.choice, tune.uniform/loguniform/randint and friends")
    return [value]


def check_space(space: Space, base: RunConfig) -> list[RunConfig]:
    """Raise ConfigError for any key or value the config rejects; returns the configs of every
    grid point (random axes at their choices or range ends), which the caller checks further."""
    known = field_types(base)
    for key, value in space.items():
        values = value["grid_search"] if is_grid(value) else [value]
        if not values:
            raise ConfigError(key, "[]", "empty grid", "at least one value")
        for v in values:
            if key in known:
                for rep in representatives(v):
                    with_overrides(base, {key: rep})
            elif isinstance(v, dict):
                with_overrides(base, v)
            else:
                raise ConfigError(key, v, "unknown key", "a config key (see `fcl run --help`), "
                                  "or a variant axis whose values are dicts of config keys")
    configs = []
    for point in grid_points(space):
        # each grid point with its random axes at their first representative, then each other
        # representative one axis at a time (linear, not a product over many random axes)
        first = {k: representatives(v)[0] if k in known else v for k, v in point.items()}
        configs.append(resolve(base, first))
        for k, v in point.items():
            if k in known:
                configs.extend(resolve(base, {**first, k: rep})
                               for rep in representatives(v)[1:])
    return configs


def varying_keys(space: Space) -> list[str]:
    """The config keys a study varies (variant axes expanded), in declaration order."""
    known = config_keys()
    keys: list[str] = []
    for key, value in space.items():
        values = value["grid_search"] if is_grid(value) else [value]
        if key in known:
            if is_grid(value) or isinstance(value, Domain):
                keys.append(key)
        else:
            keys.extend(k for v in values if isinstance(v, dict) for k in v)
    return list(dict.fromkeys(keys))


def data_signature(cfg: RunConfig) -> tuple:
    """What prepared data depends on: the data.* keys and the seed (class order and client
    partition are drawn from it). Only trials with equal signatures may share prepared data."""
    return tuple(sorted((k, v) for k, v in cfg.to_flat().items() if k.startswith("data."))) + (
        ("seed", cfg.seed),)


# DataConfig fields that only `build_federated_data` reads (the cut into tasks and client shards,
# done per trial); every other data field may change what a loader returns.
CUT_FIELDS = ("num_tasks", "num_clients", "partition", "alpha", "min_client_samples",
              "train_per_class", "test_per_class", "class_order", "augment")


def dataset_key(cfg: RunConfig) -> tuple:
    """Which loaded data set a trial cuts its tasks from: trials that differ only in how the
    data is cut (or in the seed) share one loaded copy."""
    return tuple((f.name, getattr(cfg.data, f.name)) for f in dataclasses.fields(cfg.data)
                 if f.name not in CUT_FIELDS)


def training_samples(cfg: RunConfig, train_images_per_task: float) -> float:
    """Expected samples a run trains on: R rounds x sampled clients x (1 - straggler
    probability) x K epochs x a client's shard (the task's images / N)."""
    n = cfg.data.num_clients
    sampled = max(1, round(cfg.participation.fraction * n))
    shard = train_images_per_task / n
    return (cfg.rounds * sampled * (1 - cfg.participation.straggler_prob)
            * cfg.client.local_epochs * shard)


def describe_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}" if math.isfinite(value) else str(value)
    if isinstance(value, Domain):
        return f"~{type(value).__name__.lower()}{representatives(value)}"
    if isinstance(value, dict):
        return ",".join(f"{k.split('.')[-1]}={describe_value(v)}" for k, v in value.items())
    return str(value)
