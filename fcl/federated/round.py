"""A round's state and message types, and the steps every round shares, below both the engine
(`fcl.engine`, the round over task modules) and the methods with a round of their own
(`fcl.methods.fedweit.round`), so that no method imports the engine.

`Plan` is what the config decides for the whole run, resolved once (`fcl.run_start.build_plan`);
`RunState` what changes, a checkpoint after any round. A round's broadcast is a `Downlink`, the
clients' updates an `Uplink` of `Report`s, each updated task's change a `TaskChange`; the round
ends with its `RoundRecord` (`round_record`) and its traffic added to the `Totals`."""
from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import torch

from fcl.data.federated import FederatedData
from fcl.federated.client import TaskNames, Trainer
from fcl.federated.client_algorithms import ClientAlgorithm
from fcl.federated.compression import Codec
from fcl.federated.server_opt import OptState, ServerOptimizer
from fcl.models.task_state import Params
from fcl.records import RoundRecord, TaskRecord, mean_finite

if TYPE_CHECKING:
    from torch import nn

    from fcl.config import RunConfig


@dataclass(frozen=True)
class TaskServerState:
    params: Params                   # trainable tensors (what the FedOpt step moves)
    buffers: Params                  # norm running statistics (weighted means)
    opt: OptState


@dataclass(frozen=True)
class Totals:
    """Running sums over the rounds so far (what the summary needs, without the history)."""
    bytes_up: int = 0
    bytes_down: int = 0
    samples: int = 0                 # training samples processed (for throughput)
    full_bytes: int = 0              # what full-model float32 FedAvg would have sent so far
    drift_sum: float = 0.0           # of the rounds' drift, over rounds where clients reported
    drift_rounds: int = 0
    diverged_round: int = -1         # the first round that diverged (`diverged`), -1: none

    @property
    def tcc(self) -> int:
        return self.bytes_up + self.bytes_down


@dataclass(frozen=True)
class RunState:
    """Everything needed to continue a run after round `next_round - 1` (a checkpoint)."""
    next_round: int
    tasks: tuple[TaskServerState, ...]
    accuracy: torch.Tensor           # (T, R) float64, NaN where not evaluated yet
    first_update: tuple[float, ...]  # per task, first round with a server update (inf: none)
    totals: Totals = Totals()
    algorithm: Any = None            # the client algorithm's own state (SCAFFOLD's controls)
    method: Any = None               # a method with its own round: its state (FedWeIT's B,
    #                                  knowledge base and clients' private task states)
    held_accuracy: torch.Tensor | None = None  # (T, R) per-client task models (FedWeIT): the
    #                                  mean over the clients that held the task before the round
    #                                  (`fcl.metrics`); None: one global model, `accuracy`

@dataclass(frozen=True)
class RoundMethod:
    """A continual method whose clients keep private per-task state and whose messages are
    not a task module's tensors (FedWeIT: `fcl.methods.fedweit.round`): it runs its own round
    over the same schedule, participation, server optimizer, evaluation rounds and records.
    `init(plan)` gives its part of the `RunState` (`RunState.method`)."""
    init: Callable[["Plan"], Any]
    run_round: Callable[["Plan", RunState, int], tuple[RunState, RoundRecord]]

@dataclass(frozen=True)
class Plan:
    """What the config decides for the whole run, resolved once."""
    cfg: RunConfig
    trainer: Trainer                 # model, data, client.*, forward context
    names: list[TaskNames]           # per task
    schedule: torch.Tensor           # (R, N): the task of each client in each round
    server: ServerOptimizer
    algorithm: ClientAlgorithm
    codec: Codec
    aggregate: Callable[[list[Params], list[float]], Params]
    due: frozenset[int]              # rounds evaluated
    full_nbytes: list[int]           # per task: one full-model float32 FedAvg message
    device: str = "cpu"              # where it computes, and in which precision (the summary's)
    precision: str = "fp32"
    layout: str = "nchw"             # run.channels_last resolved: nhwc or nchw
    batched_clients: bool = False    # run.client_batching resolved
    compiled: bool = False           # run.compile resolved (fcl.compile_policy)
    eval_batch: int = 1024           # eval.batch_size resolved for the device (auto: 0)
    eval_channels_last: bool = False  # evaluation batches in NHWC (compute_mode)
    method: RoundMethod | None = None  # a method with its own round (None: task modules)

    @property
    def model(self) -> nn.Module:
        return self.trainer.model

    @property
    def data(self) -> FederatedData:
        return self.trainer.data

@torch.inference_mode()
def evaluate(model: torch.nn.Module, data: FederatedData, batch_size: int,
             forward_context: Callable = contextlib.nullcontext,
             channels_last: bool = False) -> torch.Tensor:
    """Test accuracy (percent) of every task, one host sync for all of them. `channels_last`:
    batches in NHWC order (faster convolutions on some devices; `compute_mode`)."""
    model.eval()
    correct = [task_hits(model, data, t, batch_size, forward_context, channels_last)
               for t in range(data.num_tasks)]
    sizes = torch.tensor([len(td.test_y) for td in data.tasks], dtype=torch.float64)
    return torch.stack(correct).cpu().double() * 100.0 / sizes


def task_hits(model: torch.nn.Module, data: FederatedData, t: int, batch_size: int,
              forward_context: Callable = contextlib.nullcontext,
              channels_last: bool = False) -> torch.Tensor:
    """Correct test predictions of task t (a device tensor; the model in eval mode)."""
    td = data.tasks[t]
    hits = torch.zeros((), dtype=torch.long, device=td.test_y.device)
    for start in range(0, len(td.test_y), batch_size):
        x = data.normalise(td.test_x[start:start + batch_size])
        if channels_last and x.dim() == 4:      # else as stored (NHWC data stays NHWC)
            x = x.contiguous(memory_format=torch.channels_last)
        with forward_context():
            logits = model(x, t)
        hits += (logits.argmax(1) == td.test_y[start:start + batch_size]).sum()
    return hits

@dataclass(frozen=True)
class Downlink:
    """What round r's participation sample receives."""
    sampled: tuple[int, ...]
    reporting: tuple[int, ...]       # those that train and report: not straggling, with data
    tasks_of: list[int]              # the task of every client this round
    start: dict[int, Params]         # per task: the state its clients decode and start from
    extra: dict[int, Params]         # per task: the client algorithm's message, decoded
    nbytes: int
    full_nbytes: int                 # what full-model FedAvg would have sent

def holding_data(plan: Plan, reporting: tuple[int, ...], tasks_of: list[int]
                 ) -> tuple[int, ...]:
    """The reporting clients that hold samples of their task this round. A client with an
    empty shard (data.min_client_samples=0 with a skewed partition) is like a straggler: it
    received the broadcast (counted in bytes_down) and sends nothing (no report, no bytes_up,
    no drift or loss); a task none of whose clients report gets no server update that round."""
    shards = [td.shards for td in plan.data.tasks]
    return tuple(c for c in reporting if len(shards[tasks_of[c]][c]))


@dataclass(frozen=True)
class Report:
    """One client's update as the server decodes it."""
    client: int
    task: int
    delta: Params                    # trainable: the server's delta; buffers: their values
    weight: int                      # |D_c|
    extra: Params                    # the client algorithm's message (SCAFFOLD: Delta c_i)
    drift: torch.Tensor
    loss: torch.Tensor


@dataclass(frozen=True)
class Uplink:
    reports: tuple[Report, ...]
    nbytes: int
    full_nbytes: int
    samples: int
    drift: float                     # Eq. 2: mean over reports of drift / K (NaN: no report)
    algorithm: Any                   # the client algorithm's state after the clients' side

def mean_drift(plan: Plan, reports: list[Report]) -> float:
    """Eq. 2: sum over epochs of ||P_k - P_0||^2 / K, averaged over the reporting clients."""
    if not reports:
        return math.nan
    total = torch.zeros((), dtype=torch.float64, device=plan.data.mean.device)
    for rep in reports:
        total = total + rep.drift.double() / plan.cfg.client.local_epochs
    return float(total) / len(reports)

@dataclass(frozen=True)
class TaskChange:
    reports: int
    cos_head: torch.Tensor
    cos_module: torch.Tensor

def diverged(up: Uplink, updated: list[TaskServerState], bound: float) -> bool:
    """Whether a round diverged: its reports' mean training loss is not finite or above `bound`
    (run.divergence_loss, 1e3 by default; 0: no bound), or an updated server state is not
    finite. Cross-entropy starts near ln C (below 7 even for 1000 classes) and falls as a run
    learns; a diverging run passes 1e3 within a round or two (server.lr=1e6 reached 1e6). A
    diverged run goes on to its last round, as any other, and exits 0: an LR grid with diverged
    corners is data, and its cells keep their numbers, marked."""
    if up.reports:
        loss = float(torch.stack([rep.loss for rep in up.reports]).mean())
        if not math.isfinite(loss) or (bound > 0 and loss > bound):
            return True
    return any(not bool(torch.isfinite(v).all()) for ts in updated for v in ts.params.values())

def round_record(plan: Plan, state: RunState, down: Downlink, up: Uplink,
                 changes: dict[int, TaskChange], r: int, t_start: float) -> RoundRecord:
    """The round's record (after `server_update` and `evaluate_if_due`)."""
    n, totals = len(up.reports), state.totals
    evaluated = r in plan.due
    accuracy = state.accuracy[:, r]
    held = state.held_accuracy[:, r] if state.held_accuracy is not None else \
        torch.full_like(accuracy, math.nan)
    tasks = tuple(TaskRecord(
        round=r, task=t, accuracy=float(accuracy[t]) if evaluated else math.nan,
        # math.nan itself, not a new NaN: records compare equal as their rows do
        accuracy_held=float(held[t]) if evaluated and not torch.isnan(held[t]) else math.nan,
        reports=changes[t].reports if t in changes else 0,
        cos_head=float(changes[t].cos_head) if t in changes else math.nan,
        cos_module=float(changes[t].cos_module) if t in changes else math.nan)
        for t in range(plan.data.num_tasks))
    return RoundRecord(
        round=r, phase=r // plan.cfg.rounds_per_phase, tasks_trained=tuple(sorted(changes)),
        clients_sampled=len(down.sampled), clients_reporting=n, drift=up.drift,
        train_loss=float(torch.stack([rep.loss for rep in up.reports]).mean()) if n
        else math.nan,
        cos_head=mean_finite([float(ch.cos_head) for ch in changes.values()]),
        cos_module=mean_finite([float(ch.cos_module) for ch in changes.values()]),
        bytes_up=up.nbytes, bytes_down=down.nbytes, tcc_bytes=totals.tcc,
        compression_ratio=ratio(totals.full_bytes, totals.tcc), evaluated=evaluated,
        mean_acc=float(accuracy.mean()) if evaluated else math.nan,
        wall_s=time.perf_counter() - t_start, tasks=tasks)

def add_totals(t: Totals, down: Downlink, up: Uplink) -> Totals:
    reported = not math.isnan(up.drift)
    return Totals(t.bytes_up + up.nbytes, t.bytes_down + down.nbytes, t.samples + up.samples,
                  t.full_bytes + down.full_nbytes + up.full_nbytes,
                  t.drift_sum + up.drift if reported else t.drift_sum,
                  t.drift_rounds + reported, t.diverged_round)

def ratio(full: int, sent: int) -> float:
    return full / sent if sent else math.nan
