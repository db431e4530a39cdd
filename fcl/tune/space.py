"""A study's search space: what varies, in the public vocabulary (`client.lr`, `data.alpha`).

A space maps a config key to a constant, `grid(...)` (Tune's grid_search) or a Tune domain
(`tune.loguniform`, `tune.choice`, ...). A key that is not a config key names a *variant* axis:
a grid whose values are dicts of config keys, for axes that move several keys together (an
optimizer with its tau, LoRA rank with its alpha):

    {"client.lr": grid(0.01, 0.05),
     "opt": grid({"server.optimizer": "fedsgd"},
                 {"server.optimizer": "fedadam", "server.tau": 0.1})}

A searched key may depend on another (a define-by-run space, Optuna searches only):
`given("model.adapter", "lora", tune.choice([4, 8]))` is sampled only in trials whose
`model.adapter` is "lora"; the others keep the base config's value.

Every space is checked against the config before any trial starts, so a bad key or value
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


@dataclasses.dataclass(frozen=True)
class Given:
    """A searched key sampled only when `parent` takes one of `values`."""
    parent: str
    values: tuple
    domain: Domain


def given(parent: str, values: Any, domain: Domain) -> Given:
    """`domain`, sampled only in trials whose `parent` key is `values` (one value or a list)."""
    return Given(parent, tuple(values) if isinstance(values, (list, tuple)) else (values,), domain)


def grid(*values: Any) -> dict:
    """Tune's grid_search over `values` (every value becomes its own trial)."""
    return {"grid_search": list(values)}


def is_grid(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"grid_search"}


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
    if isinstance(value, Given):
        return representatives(value.domain)
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
        if isinstance(value, Given):
            check_given(space, key, value)
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


def check_given(space: Space, key: str, value: Given) -> None:
    """The parent of a conditional key is a searched key, declared before it, that can take
    the values the condition names."""
    keys = list(space)
    if value.parent not in keys[:keys.index(key)]:
        raise ConfigError(key, f"given({value.parent!r}, ...)", "its parent is not a key "
                          "declared before it", ", ".join(keys[:keys.index(key)]) or "none")
    parent = space[value.parent]
    can_take = representatives(parent) if isinstance(parent, Categorical) else (
        [parent] if not isinstance(parent, Domain) else None)
    bad = [v for v in value.values if can_take is not None and v not in can_take]
    if bad:
        raise ConfigError(key, f"given({value.parent!r}, {bad[0]!r})",
                          f"{value.parent} never takes {bad[0]!r}",
                          ", ".join(map(str, can_take)))


def complete_variants(space: Space, base: RunConfig) -> Space:
    """Each variant axis with every value holding the same keys (the ones it lacks at the base
    config's values), so Tune's progress table can show every key of the axis in every row."""
    flat = base.to_flat()
    out = {}
    for key, value in space.items():
        if is_grid(value) and key not in config_keys() and all(
                isinstance(v, dict) for v in value["grid_search"]):
            keys = list(dict.fromkeys(k for v in value["grid_search"] for k in v))
            value = grid(*({k: v.get(k, flat.get(k)) for k in keys}
                           for v in value["grid_search"]))
        out[key] = value
    return out


def display_columns(space: Space) -> dict[str, str]:
    """Tune progress-table columns (a path into the trial config -> the config key it shows)
    for every key the study varies: variant axes by `<axis>/<key>`."""
    known = config_keys()
    columns: dict[str, str] = {}
    for key, value in space.items():
        values = value["grid_search"] if is_grid(value) else [value]
        if key in known:
            if is_grid(value) or isinstance(value, (Domain, Given)):
                columns[key] = key
        else:
            for v in values:
                if isinstance(v, dict):
                    columns.update({f"{key}/{k}": k for k in v})
    return columns


def varying_keys(space: Space) -> list[str]:
    """The config keys a study varies (variant axes expanded), in declaration order."""
    return list(dict.fromkeys(display_columns(space).values()))


def describe_value(value: Any) -> str:
    if isinstance(value, Given):
        cond = "/".join(map(str, value.values))
        return f"{describe_value(value.domain)} if {value.parent}={cond}"
    if isinstance(value, float):
        return f"{value:g}" if math.isfinite(value) else str(value)
    if isinstance(value, Domain):
        return f"~{type(value).__name__.lower()}{representatives(value)}"
    if isinstance(value, dict):
        return ",".join(f"{k.split('.')[-1]}={describe_value(v)}" for k, v in value.items())
    return str(value)
