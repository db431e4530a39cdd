"""What a run reports, as typed records: one `RoundRecord` per round (with a `TaskRecord` per
task) and one `RunSummary` per run. The Parquet schemas of `fcl run --out` and of the studies
are derived from these fields (`columns`), so a column is named and typed in one place.

A record reads like a dict too (`rec["drift"]`, `rec.items()`), so callers that print or frame
rows need no adapter.
"""
from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass, field
from typing import Any, Iterator


class Record:
    """Field access by name (`rec["round"]`) and the scalar fields as a row."""

    def __getitem__(self, name: str) -> Any:
        if name not in self._names():
            raise KeyError(name)
        return getattr(self, name)

    def keys(self) -> list[str]:
        return self._names()

    def items(self) -> Iterator[tuple[str, Any]]:
        return ((n, getattr(self, n)) for n in self._names())

    def row(self) -> dict[str, Any]:
        return dict(self.items())

    @classmethod
    def _names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls) if not f.metadata.get("nested")]


@dataclass(frozen=True)
class TaskRecord(Record):
    round: int
    task: int
    accuracy: float        # test accuracy after the round, percent; NaN where not evaluated
    accuracy_held: float   # per-client task models (FedWeIT): over the clients that held the
    #                        task before the round (`fcl.metrics`); NaN for one global model
    reports: int           # client updates the task received this round
    cos_head: float        # cosine distance to the previous state: FC weights / whole module
    cos_module: float      # (NaN: no update this round)


@dataclass(frozen=True)
class RoundRecord(Record):
    round: int
    phase: int
    tasks_trained: tuple[int, ...]
    clients_sampled: int
    clients_reporting: int
    drift: float           # Eq. 2, mean over reporting clients (NaN: none reported)
    train_loss: float
    cos_head: float        # mean over the tasks updated this round
    cos_module: float
    bytes_up: int
    bytes_down: int
    tcc_bytes: int         # both links, from round 0 to this one
    compression_ratio: float   # full-model float32 FedAvg bytes / tcc_bytes, so far
    evaluated: bool
    mean_acc: float        # mean accuracy over tasks (NaN: not evaluated)
    wall_s: float
    tasks: tuple[TaskRecord, ...] = field(default=(), metadata={"nested": True})


@dataclass(frozen=True)
class RunSummary(Record):
    acc: float
    bwt_f: float
    bwt_f_literal: float
    bytes_up: int
    bytes_down: int
    tcc_bytes: int
    full_fedavg_bytes: int
    compression_ratio: float
    rounds: int
    samples: int
    wall_s: float
    samples_per_s: float
    drift_mean: float
    trainable_params_per_task: int
    device: str
    precision: str
    layout: str            # memory format the convolutions ran in: nchw or nhwc
    batched_clients: bool  # whether clients of a task trained in one vmapped step
    compiled: bool = False     # whether the model's forward ran torch.compile'd (run.compile)
    diverged: bool = False     # the loss or a server state blew up (run.divergence_loss)
    diverged_round: int = -1   # the first such round, -1: none
    cpu: str = ""              # the CPU kind that computed it (fcl.machine_kind)
    gpu: str = ""              # the GPU's name where it ran on one, else ""


PANDAS_TYPES = {int: "int64", float: "float64", bool: "bool", str: "string"}


def columns(record: type[Record], nullable: bool = False) -> dict[str, str]:
    """{column: pandas dtype} of a record's scalar fields (a tuple field is a JSON string);
    `nullable`: integers as Int64, for rows some of which have no value (failed trials)."""
    hints = typing.get_type_hints(record)
    out = {}
    for name in record._names():
        typ = hints[name]
        dtype = PANDAS_TYPES.get(typ, "string")
        if nullable and dtype == "int64":
            dtype = "Int64"
        if nullable and dtype == "bool":
            dtype = "boolean"
        out[name] = dtype
    return out


def mean_finite(values: list[float]) -> float:
    vals = [v for v in values if not math.isnan(v)]
    return sum(vals) / len(vals) if vals else math.nan
