"""Run configuration: frozen dataclasses, one public key per field (`server.lr`, `data.alpha`).

Every field carries its help text and its check in `field(metadata=...)`, so the CLI's `--help`,
the validation error and the Parquet column all come from one place. Strings become behaviour
only where they are consumed (`fcl.federated.server_opt.OPTIMIZERS`, ...), never compared deep
inside a loop.
"""
from __future__ import annotations

import dataclasses
import functools
import typing
from dataclasses import dataclass, field, fields, replace
from typing import Any, Iterator

from fcl.config_error import ConfigError, one_line  # noqa: F401  (re-exported)
from fcl.config_fields import (BETA, BOOL_OR_AUTO, POSITIVE, PROBABILITY, check_value,
                               did_you_mean, opt, parse_field)  # did_you_mean: re-exported
from fcl.config_runtime import RuntimeConfig
from fcl.config_sections import BACKBONES, DataConfig, ModelConfig  # noqa: F401  (re-exported)
from fcl.methods import registry


@dataclass(frozen=True)
class ScheduleConfig:
    order: str = opt("async", "task order over rounds: fmtl = random task each round, sync = "
                              "common order, async = per-client permutation (Algorithm 1)",
                     choices=("fmtl", "sync", "async"))


@dataclass(frozen=True)
class ClientConfig:
    # learning rates reach a diverging grid corner (client.lr=1e4, server.lr=1e6) and no further:
    # 1e308 overflowed the first update into a traceback
    lr: float = opt(0.05, "local SGD learning rate (Eq. 5)", check=lambda v: 0 < v <= 1e4,
                    allowed="0 < lr <= 1e4")
    momentum: float = opt(0.0, "local SGD momentum", **BETA)
    weight_decay: float = opt(0.0, "local SGD weight decay", check=lambda v: 0 <= v <= 1e3,
                              allowed="0 <= wd <= 1e3")
    local_epochs: int = opt(2, "K: local epochs over the client's shard per round",
                            check=lambda v: 0 < v <= 1000, allowed="1 <= K <= 1000")
    batch_size: int = opt(32, "local minibatch size", **POSITIVE)
    algorithm: str = opt("sgd", "local update: sgd = plain local SGD (FedAvg's client); fedprox "
                                "= + prox_mu/2 ||w - w_server||^2 (Li et al. 2020); scaffold = "
                                "control variates, step along g - c_i + c (Karimireddy et al. "
                                "2020); see fcl/federated/client_algorithms.py",
                         choices=("sgd", "fedprox", "scaffold"))
    prox_mu: float = opt(0.01, "fedprox only: mu, the weight of the proximal term",
                         check=lambda v: 0 <= v <= 1e4, allowed="0 <= mu <= 1e4")


@dataclass(frozen=True)
class ServerConfig:
    optimizer: str = opt("fedadam", "server optimizer (Eqs. 7-9, Table 1)",
                         choices=("fedsgd", "fedadam", "fedadagrad", "fedyogi"))
    lr: float = opt(0.5, "eta: server learning rate", check=lambda v: 0 < v <= 1e6,
                    allowed="0 < eta <= 1e6")
    momentum: float = opt(0.0, "fedsgd only: server momentum (0 = plain FedAvg/FedSGD)", **BETA)
    beta1: float = opt(0.9, "first-moment decay of the adaptive optimizers", **BETA)
    beta2: float = opt(0.99, "second-moment decay (fedadam, fedyogi)", **BETA)
    tau: float = opt(1e-3, "adaptivity: step = eta * m / (sqrt(v) + tau)",
                     check=lambda v: 0 < v <= 1e3, allowed="0 < tau <= 1e3")
    bias_correction: bool = opt(False, "Adam-style bias correction of m and v")
    aggregate: str = opt("mean", "pseudo-gradient: sample-weighted mean of deltas (Eq. 1) or "
                                 "their sum (Eq. 7 read literally)", choices=("mean", "sum"))


@dataclass(frozen=True)
class ParticipationConfig:
    fraction: float = opt(1.0, "share of clients sampled each round",
                          check=lambda v: 0 < v <= 1, allowed="0 < fraction <= 1")
    straggler_prob: float = opt(0.0, "each sampled client fails to report with this probability",
                                **PROBABILITY)


@dataclass(frozen=True)
class CompressionConfig:
    bits: int = opt(32, "bits per value of every message, both links (32: float32 as is; "
                        "8/4/2: affine per output channel, 1-D tensors in float32)",
                    choices=(32, 8, 4, 2))
    payload: str = opt("values", "what a client's uplink carries: values = its trained tensors "
                                 "(FLoCoRA: the server averages the dequantized values); delta "
                                 "= trained minus received (quantization error relative to the "
                                 "update, not the weights); the same at bits=32",
                       choices=("values", "delta"))
    prune: float = opt(0.0, "magnitude pruning of every uplink (FLoCoRA's Table IV, its "
                            "code's prune.py): values whose |value| is below one threshold "
                            "over all tensors (the N sorted |values| at index floor(N x rate)) "
                            "become 0; sent sparse in float32, positions as a bitmap or "
                            "indices, the cheaper per tensor (needs compression.bits=32); "
                            "0 = off",
                       check=lambda v: 0 <= v < 1,
                       allowed="0 (off), 0.5, 0.8, 0.9, 0.95 (the paper's rates) or any rate "
                               "0 <= rate < 1")
    prune_server: bool = opt(False, "prune the global model clients receive the same way (the "
                                    "code's --prune_srv, on in all its pruning runs; needs "
                                    "compression.prune > 0)")


@dataclass(frozen=True)
class EvalConfig:
    every: int = opt(1, "evaluate all tasks every k rounds (phase boundaries and the last round "
                        "always)", **POSITIVE)
    batch_size: int = opt(0, "evaluation batch size; auto (stored as 0, the default) = by the "
                             "device the run computes on (`fcl.compute_mode.eval_batch_size`: "
                             "1024 on a GPU; on a CPU the largest power of two whose largest "
                             "activation fits 8 MiB, e.g. 32 for ResNet-8)",
                          check=lambda v: v >= 0,
                          allowed="auto or a positive integer", aliases={"auto": 0})


@dataclass(frozen=True)
class RunConfig:
    rounds: int = opt(50, "R: communication rounds; Q = R / T rounds per phase",
                      check=lambda v: 0 < v <= 100_000, allowed="1 <= R <= 100000")
    # under 2^31: every seeded library takes it, and a study's seed + i stays an int64 column
    seed: int = opt(0, "one seed for everything", check=lambda v: 0 <= v < 2**31,
                    allowed="0 <= seed < 2^31")
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    client: ClientConfig = field(default_factory=ClientConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    participation: ParticipationConfig = field(default_factory=ParticipationConfig)
    compression: CompressionConfig = field(default_factory=CompressionConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    run: RuntimeConfig = field(default_factory=RuntimeConfig)

    def __post_init__(self):
        for key, value, meta, _ in iter_fields(self):
            check_value(key, value, meta)
        self._check_method()
        self._check_pruning()
        if self.rounds % self.data.num_tasks:
            raise ConfigError("rounds", self.rounds, f"not a multiple of data.num_tasks="
                              f"{self.data.num_tasks}", "a multiple of data.num_tasks")

    def _check_method(self) -> None:
        """The method's own rules across sections, and a config spelled as a method was before
        it had its own name (`full` with a ZeroFL sparsity) refused with that name."""
        model = {f"model.{f.name}": getattr(self.model, f.name) for f in fields(self.model)}
        for m in registry.methods().values():
            if m.name != self.model.adapter and m.spelled_before and m.spelled_before(model):
                raise ConfigError("model.adapter", self.model.adapter, f"with these settings it "
                                  f"is {m.name}, now a method of its own", m.name)
        registry.method(self.model.adapter).check(self)

    def _check_pruning(self) -> None:
        c = self.compression
        if c.prune > 0 and c.bits != 32:
            raise ConfigError("compression.prune", c.prune, f"pruning sends float32 values, "
                              f"not compression.bits={c.bits}", "0 unless compression.bits=32")
        if c.prune_server and c.prune == 0:
            raise ConfigError("compression.prune_server", "true", "nothing to prune at "
                              "compression.prune=0", "false, or set compression.prune > 0")

    @property
    def rounds_per_phase(self) -> int:
        return self.rounds // self.data.num_tasks          # Q = R / T

    def to_flat(self) -> dict[str, Any]:
        """{'server.lr': 0.5, ...}: the public vocabulary, as Parquet columns."""
        return {key: value for key, value, _, _ in iter_fields(self)}


@functools.cache
def type_hints(cls: type) -> dict[str, Any]:
    """`typing.get_type_hints`, once per class: evaluated on each call, the string annotations
    made a config's `to_flat` cost milliseconds (a study's export calls it per trial)."""
    return typing.get_type_hints(cls)


def iter_fields(cfg: RunConfig) -> Iterator[tuple[str, Any, dict, type]]:
    """(key, value, metadata, type) for every leaf field, in declaration order."""
    hints = type_hints(type(cfg))
    for f in fields(cfg):
        value = getattr(cfg, f.name)
        if dataclasses.is_dataclass(value):
            sub_hints = type_hints(type(value))
            for g in fields(value):
                yield f"{f.name}.{g.name}", getattr(value, g.name), g.metadata, sub_hints[g.name]
        else:
            yield f.name, value, f.metadata, hints[f.name]


def field_types(cfg: RunConfig | None = None) -> dict[str, type]:
    return {key: typ for key, _, _, typ in iter_fields(cfg or RunConfig())}


def parsed_values(cfg: RunConfig, overrides: dict[str, Any]) -> dict[str, Any]:
    """Each override parsed by its key's type (ConfigError: an unknown key, a bad value)."""
    types_, metas = field_types(cfg), {key: meta for key, _, meta, _ in iter_fields(cfg)}
    for key, raw in overrides.items():
        if key not in types_:
            raise ConfigError(key, raw, "unknown key", did_you_mean(key, types_) +
                              "see `fcl run --help` for every key")
    return {key: parse_field(key, raw, types_[key], metas[key]) for key, raw in overrides.items()}


def with_overrides(cfg: RunConfig, overrides: dict[str, Any]) -> RunConfig:
    """A new config with `{'server.lr': '0.5', ...}` applied (strings parsed by field type;
    unknown keys and bad values raise ConfigError); the whole config is re-validated once."""
    top: dict[str, Any] = {}
    sections: dict[str, dict[str, Any]] = {}
    for key, value in parsed_values(cfg, overrides).items():
        if "." in key:
            section, name = key.split(".", 1)
            sections.setdefault(section, {})[name] = value
        else:
            top[key] = value
    for section, values in sections.items():
        top[section] = replace(getattr(cfg, section), **values)
    return replace(cfg, **top)      # RunConfig.__post_init__ validates the whole


# The keys only one method (or client algorithm) reads: (the key that picks it, its value) -> its
# keys. A key given for a run of another method would be accepted and do nothing (a forgotten
# `model.adapter=lora` runs FedAvg without a word), so `check_read` refuses it. Presets and
# studies may set them for every method (FLoCoRA's recipe names LoRA's rank for its FedAvg
# rows too): only the keys a user gives are checked.
def method_keys() -> dict[tuple[str, str], tuple[str, ...]]:
    return {**{("model.adapter", m.name): m.keys for m in registry.methods().values() if m.keys},
            ("client.algorithm", "fedprox"): ("client.prox_mu",)}


def check_read(cfg: RunConfig | list[RunConfig], given: dict[str, Any]) -> None:
    """Refuse, in one line naming the method that reads it, a key in `given` (the keys a user
    set) that `cfg`'s method does not read; given a study's trial configs, one that none of
    them reads."""
    cfgs = cfg if isinstance(cfg, list) else [cfg]
    flats = None
    for (picker, method), keys in method_keys().items():
        for key in (k for k in keys if k in given):
            flats = flats or [c.to_flat() for c in cfgs]
            runs = sorted({str(f[picker]) for f in flats})
            if method not in runs:
                raise ConfigError(key, given[key], f"read only by {picker}={method}; "
                                  f"{'this run has' if len(cfgs) == 1 else 'its trials have'} "
                                  f"{picker}={', '.join(runs)}, which ignores it",
                                  f"{picker}={method} beside it, or leave {key} out")


def from_flat(flat: dict[str, Any], base: RunConfig | None = None) -> RunConfig:
    """Inverse of `RunConfig.to_flat` (ignores keys that are not config keys, e.g. metrics)."""
    base = base or RunConfig()
    known = field_types(base)
    return with_overrides(base, {k: v for k, v in flat.items() if k in known})


def key_rows(cfg: RunConfig | None = None) -> Iterator[tuple[str, Any, str, str]]:
    """(key, default, allowed values, help) for every key, `cfg`'s values as the defaults (a
    value with a word, such as eval.batch_size=auto, as its word): the one source of
    `fcl run --help` and the documentation's configuration reference."""
    for key, value, meta, typ in iter_fields(cfg or RunConfig()):
        allowed = meta.get("allowed") or ("true/false" if typ is bool else typ.__name__)
        value = next((w for w, v in (meta.get("aliases") or {}).items()
                      if type(v) is type(value) and v == value), value)
        yield key, value, allowed, meta.get("help", "")


def describe_keys(cfg: RunConfig | None = None) -> str:
    """Every key with its default, allowed values and help: the epilog of `fcl run --help`."""
    return "\n".join(f"  {key:<30} default {value!r:<24} allowed: {allowed}\n  {'':<30} {help}"
                     for key, value, allowed, help in key_rows(cfg))


def bool_or_auto_keys() -> tuple[str, ...]:
    """The keys that take true, false or auto (`BOOL_OR_AUTO`)."""
    return tuple(k for k, _, meta, _ in iter_fields(RunConfig())
                 if meta.get("choices") == BOOL_OR_AUTO["choices"])
