"""One whole federated continual learning run: Algorithm 1 of the FCL paper, generalised.

    result = run(config, on_round=print)

or, a round at a time (what a Tune trial does, holding its plan and state between reports):

    plan, state = start(config)
    records = []
    for r in range(state.next_round, config.rounds):
        state, record = run_round(plan, state, r)
        records.append(record)
    result = finish(plan, state, records, wall_s)

A run is a `Plan` (everything the config decides, resolved once: the task schedule, the server
optimizer, the client algorithm, the codec, the aggregation, the evaluation rounds) and a
`RunState` (what changes: per task the server state, the accuracy matrix, running totals).
Each round r is four steps:

    down    = broadcast(plan, state, r)                the sample receives its tasks' states
    updates = client_updates(plan, state, down, r)     reporting clients train K local epochs
    state   = server_update(plan, state, down, updates, r)   per task with reports: FedOpt step
    state   = evaluate_if_due(plan, state, r)          all tasks, at the rounds `Plan.due` lists

`compression.payload` says what a client sends. `values` (default; FLoCoRA): its trained
tensors, through the codec; the server's delta of client i is decode(message_i) minus the
server state, so FedAvg (fedsgd, lr 1, mean) makes the new state the mean of the dequantized
values, and the evaluated model is the dequantized broadcast, what clients start from.
`delta`: trained minus received goes through the codec and the float32 server state never
carries a quantization error (the error is relative to the update, not to the weights).
Both are the same at compression.bits=32. This module imports no Ray.

A continual method whose clients keep private per-task state and send other messages than a
task module's tensors (FedWeIT, `fcl.methods.fedweit.round`) gives a `RoundMethod` in its
`Method` value: it runs its own round over the same plan (schedule, participation, server
optimizer, evaluation rounds) and keeps its state in `RunState.method`, so records, totals,
checkpoints and resume are shared. The round's types and shared steps sit below both
(`fcl.federated.round`); the engine asks a method only through its `Method` value
(`fcl.methods.registry`).

A reporting client is sampled, not a straggler, and holds samples of its task this round; one
with an empty shard (a skewed partition at data.min_client_samples=0) received the broadcast
and sends nothing, as a straggler (`holding_data`).

The run is a pure function of its config: every random stream is derived from (seed, purpose,
round, client), so a run resumed from a `RunState` snapshot continues exactly as if it had never
stopped. The state holds no history: records stream to `on_round`, and `run` collects them.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from dataclasses import dataclass, replace
from typing import Any, Callable

import torch
from torch import nn

from fcl.communication import full_model_nbytes
from fcl.compute_mode import (ComputeMode, eval_batch_size, eval_channels_last,
                               largest_activation_bytes, resolve_client_batching)
from fcl.config import RunConfig
from fcl.data.datasets import load_dataset
from fcl.data.federated import FederatedData, build_federated_data
from fcl.federated.aggregate import AGGREGATES, cosine_distance, subtract, weighted_mean
from fcl.federated.batched_clients import batched_updates
from fcl.federated.client import ClientUpdate, TaskNames, Trainer, local_train
from fcl.federated.client_algorithms import ALGORITHMS
from fcl.federated.compression import Codec
from fcl.federated.participation import participation
from fcl.federated.round import (  # noqa: F401  (the round's types, also named here)
    Downlink,
    Plan,
    Report,
    RoundMethod,
    RunState,
    TaskChange,
    TaskServerState,
    Totals,
    Uplink,
    add_totals,
    diverged,
    evaluate,
    holding_data,
    mean_drift,
    ratio,
    round_record,
    task_hits,
)
from fcl.federated.server_opt import server_optimizer
from fcl.federated.task_schedule import task_schedule
from fcl.methods.registry import method
from fcl.metrics import acc, bwt_f, bwt_f_literal, eval_rounds
from fcl.models.factory import build_model
from fcl.models.pretrained import input_stats
from fcl.models.task_state import Params, buffer_names, load_state_, read_state, trainable_names
from fcl.records import RoundRecord, RunSummary
from fcl.seeding import generator


@dataclass(frozen=True)
class RunResult:
    config: RunConfig
    records: list[RoundRecord]       # one per round (each with its task records)
    accuracy: torch.Tensor           # (T, R), in percent, NaN where not evaluated
    summary: RunSummary

    @property
    def task_records(self) -> list[TaskRecord]:
        return [t for rec in self.records for t in rec.tasks]


def build_plan(cfg: RunConfig, model: nn.Module, data: FederatedData,
               compute: ComputeMode | None = None) -> Plan:
    """What the config decides for the whole run, resolved once; the method's own round, if it
    has one, and its uplink's top-K share from its `Method` value."""
    T, N, R = data.num_tasks, data.num_clients, cfg.rounds
    forward = compute.forward_context if compute is not None else contextlib.nullcontext
    device = compute.device if compute is not None else torch.device("cpu")
    own = method(cfg.model.adapter)
    return Plan(
        cfg=cfg, trainer=Trainer(model, data, cfg.client, forward),
        names=[TaskNames(trainable_names(m), buffer_names(m)) for m in model.tasks],
        schedule=task_schedule(cfg.schedule.order, T, N, R, cfg.seed),
        server=server_optimizer(cfg.server), algorithm=ALGORITHMS[cfg.client.algorithm],
        codec=Codec.from_config(cfg.compression.bits, cfg.compression.payload,
                                cfg.compression.prune, cfg.compression.prune_server,
                                own.upload_density(cfg.model)),
        aggregate=AGGREGATES[cfg.server.aggregate],
        due=frozenset(eval_rounds(R, cfg.rounds_per_phase, cfg.eval.every)),
        full_nbytes=[full_model_nbytes(model.backbone, n) for n in data.classes_per_task()],
        device=str(device), precision=compute.precision if compute is not None else "fp32",
        layout=compute.layout if compute is not None else "nchw",
        batched_clients=own.round is None and (
            compute.client_batching if compute is not None else
            resolve_client_batching(cfg.run.client_batching, device)),
        eval_batch=eval_batch_size(cfg.eval.batch_size, device,
                                   lambda: model_activation_bytes(model, data)),
        eval_channels_last=eval_channels_last(bool(compute and compute.channels_last),
                                              device),
        method=own.round() if own.round else None)


def model_activation_bytes(model: nn.Module, data: FederatedData) -> int:
    """The largest activation of one test image of task 0 through the model in eval mode."""
    training = model.training
    model.eval()
    try:
        return largest_activation_bytes(lambda x: model(data.normalise(x), 0),
                                        data.tasks[0].test_x)
    finally:
        model.train(training)


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("run.device=cuda: no CUDA device is available; allowed: auto, cpu")
    return torch.device(name)


def prepare_data(cfg: RunConfig) -> FederatedData:
    """Load the data set and cut it into tasks and client shards (CPU tensors, picklable)."""
    return build_federated_data(load_dataset(cfg.data.name, cfg.data.root, cfg.data), cfg.data,
                                cfg.seed)


def initial_state(plan: Plan) -> RunState:
    tasks = []
    for module, names in zip(plan.model.tasks, plan.names):
        params = read_state(module, names.trainable)
        tasks.append(TaskServerState(params, read_state(module, names.buffers),
                                     plan.server.init(params)))
    T, R = len(tasks), plan.cfg.rounds
    state = RunState(0, tuple(tasks), torch.full((T, R), math.nan, dtype=torch.float64),
                     (math.inf,) * T, Totals(),
                     plan.algorithm.init([ts.params for ts in tasks]))
    return replace(state, method=plan.method.init(plan)) if plan.method else state


def start(cfg: RunConfig, data: FederatedData | None = None,
          model: torch.nn.Module | None = None, resume: RunState | None = None
          ) -> tuple[Plan, RunState]:
    """Everything the config decides, resolved once (`Plan`), and the state to run round
    `state.next_round` from: round 0's, or `resume` (a checkpoint). The model then mirrors the
    server state, as it does between any two rounds.

    `data` may be passed in already prepared (a study cuts it once per node); `model` may be
    passed in to inspect it afterwards (it must be `build_model`'s for this config)."""
    if cfg.run.threads:
        torch.set_num_threads(cfg.run.threads)
    compute = ComputeMode.from_config(cfg.run, resolve_device(cfg.run.device))
    data = data if data is not None else prepare_data(cfg)
    # an ImageNet backbone gets ImageNet-normalised inputs; images go to the device
    data = compute.data(data.with_stats(input_stats(cfg.model, data.image_shape[0])))
    if model is None:
        model = build_model(cfg.model, data.image_shape, data.classes_per_task(), cfg.seed)
    plan = build_plan(cfg, compute.model(model), data, compute)
    state = to_device(resume or initial_state(plan), compute.device)
    for t, ts in enumerate(state.tasks):
        load_state_(plan.model.tasks[t], plan.codec.served({**ts.params, **ts.buffers}))
    return plan, state


def finish(plan: Plan, state: RunState, records: list[RoundRecord], wall_s: float) -> RunResult:
    """The run's result after its last round: `records` are the rounds reported (all of them,
    for a run resumed from a checkpoint too), `wall_s` the time they took in all."""
    return RunResult(plan.cfg, list(records), state.accuracy, summarise(plan, state, wall_s))


def run(cfg: RunConfig, on_round: Callable[[RoundRecord, RunState], None] | None = None,
        data: FederatedData | None = None, resume: RunState | None = None,
        model: torch.nn.Module | None = None) -> RunResult:
    """Run (or continue, from `resume`) one FCL run: `start`, then `run_round` for every round
    left, `on_round(record, state)` after each. The result's records are the rounds this call
    ran (all of them unless resumed)."""
    t0 = time.perf_counter()
    plan, state = start(cfg, data, model, resume)
    records = []
    for r in range(state.next_round, cfg.rounds):
        state, record = run_round(plan, state, r)
        records.append(record)
        if on_round is not None:
            on_round(record, state)
    return finish(plan, state, records, time.perf_counter() - t0)


def run_round(plan: Plan, state: RunState, r: int) -> tuple[RunState, RoundRecord]:
    """Round r of Algorithm 1."""
    if plan.method is not None:
        return plan.method.run_round(plan, state, r)
    t_start = time.perf_counter()
    down = broadcast(plan, state, r)
    updates = client_updates(plan, state, down, r)
    state, changes = server_update(plan, state, down, updates, r)
    state = evaluate_if_due(plan, state, r)
    return state, round_record(plan, state, down, updates, changes, r, t_start)


def broadcast(plan: Plan, state: RunState, r: int) -> Downlink:
    """One message per task (every client of the task gets the same), counted per client."""
    cfg = plan.cfg
    part = participation(r, plan.data.num_clients, cfg.participation, cfg.seed)
    tasks_of = plan.schedule[r].tolist()
    start, extra, cost = {}, {}, {}
    for t in sorted({tasks_of[c] for c in part.sampled}):
        ts = state.tasks[t]
        start[t], cost[t] = plan.codec.send({**ts.params, **ts.buffers}, ts.buffers, down=True)
        down = plan.algorithm.downlink(state.algorithm, t)
        if down:                      # in trainable order, as the client's tensors are
            decoded, nbytes = plan.codec.send(down, down=True)
            extra[t], cost[t] = {n: decoded[n] for n in down}, cost[t] + nbytes
    tasks = [tasks_of[c] for c in part.sampled]
    return Downlink(part.sampled, holding_data(plan, part.reporting, tasks_of), tasks_of, start,
                    extra, sum(cost[t] for t in tasks), sum(plan.full_nbytes[t] for t in tasks))


def client_updates(plan: Plan, state: RunState, down: Downlink, r: int) -> Uplink:
    """Every reporting client trains (batched by task where `run.client_batching` allows)
    and encodes its message."""
    algo, cfg, names = plan.algorithm, plan.cfg.client, plan.names
    batched = {}
    if plan.batched_clients:
        by_task: dict[int, list[int]] = {}
        for c in down.reporting:
            by_task.setdefault(down.tasks_of[c], []).append(c)
        batched = batched_updates(plan.trainer, algo, plan.cfg.seed, r, by_task, down.start,
                                  names)
    reports, nbytes, algo_state = [], 0, state.algorithm
    for c in down.reporting:
        t = down.tasks_of[c]
        start, extra = down.start[t], down.extra.get(t, {})
        up = batched.get(c) or _train_one(plan, state, c, t, start, extra, r)
        sent, extra_bytes = {}, 0
        if extra:             # SCAFFOLD's Delta c_i, through the same codec as the delta
            sent, extra_bytes = plan.codec.send(algo.uplink(cfg, state.algorithm, c, t, start,
                                                            up.end, up.num_samples, extra))
            algo_state = algo.client_update(algo_state, c, t, sent)
        delta, msg_bytes = _encode_update(plan, state.tasks[t].params, start, up, names[t])
        reports.append(Report(c, t, delta, up.num_samples, sent, up.drift, up.loss))
        nbytes += extra_bytes + msg_bytes
    return Uplink(tuple(reports), nbytes, sum(plan.full_nbytes[rep.task] for rep in reports),
                  sum(rep.weight for rep in reports) * cfg.local_epochs,
                  mean_drift(plan, reports), algo_state)


def _train_one(plan: Plan, state: RunState, c: int, t: int, start: Params, extra: Params,
               r: int) -> ClientUpdate:
    algo, names = plan.algorithm, plan.names[t]
    shift = algo.shift(state.algorithm, c, t, extra) if extra else None
    correction = algo.correction(plan.cfg.client, [start[n] for n in names.trainable], shift)
    return local_train(plan.trainer, t, c, start, names, generator(plan.cfg.seed, "batches", r, c),
                       correction)


def _encode_update(plan: Plan, server: Params, start: Params, up: ClientUpdate,
                   names: TaskNames) -> tuple[Params, int]:
    """(the server's decoded delta + buffers, bytes sent) of one client's update."""
    trained = {n: up.end[n] for n in names.trainable}
    sent = trained if plan.codec.values else subtract(trained, {n: start[n] for n in trained})
    got, nbytes = plan.codec.send({**sent, **{n: up.end[n] for n in names.buffers}},
                                  names.buffers)
    if plan.codec.values:      # the server's delta: the dequantized values minus its own state
        got = {**got, **subtract({n: got[n] for n in names.trainable}, server)}
    return got, nbytes


def server_update(plan: Plan, state: RunState, down: Downlink, up: Uplink, r: int
                  ) -> tuple[RunState, dict[int, TaskChange]]:
    """Per task with reports: aggregate, FedOpt step, buffer means, the algorithm's server
    side; the model mirrors the new state; the round's traffic goes into the totals."""
    tasks, first = list(state.tasks), list(state.first_update)
    algo_state, changes = up.algorithm, {}
    for t in sorted({rep.task for rep in up.reports}):
        reports = [rep for rep in up.reports if rep.task == t]
        names, old = plan.names[t], state.tasks[t]
        weights = [rep.weight for rep in reports]
        grad = plan.aggregate([{n: rep.delta[n] for n in names.trainable} for rep in reports],
                              weights)
        params, opt = plan.server.step(old.params, grad, old.opt)
        bufs = weighted_mean([{n: rep.delta[n] for n in names.buffers} for rep in reports],
                             weights) if names.buffers else {}
        if reports[0].extra:
            algo_state = plan.algorithm.server_update(algo_state, t, [rep.extra for rep in reports],
                                                      plan.data.num_clients)
        tasks[t] = TaskServerState(params, bufs, opt)
        load_state_(plan.model.tasks[t], plan.codec.served({**params, **bufs}))
        first[t] = min(first[t], r)
        changes[t] = TaskChange(len(reports), cosine_distance(params, old.params,
                                                              head_weights(names.trainable)),
                                cosine_distance(params, old.params))
    totals = add_totals(state.totals, down, up)
    if totals.diverged_round < 0 and diverged(up, [tasks[t] for t in changes],
                                              plan.cfg.run.divergence_loss):
        totals = replace(totals, diverged_round=r)
    return replace(state, next_round=r + 1, tasks=tuple(tasks), first_update=tuple(first),
                   algorithm=algo_state, totals=totals), changes


def evaluate_if_due(plan: Plan, state: RunState, r: int) -> RunState:
    if r not in plan.due:
        return state
    accuracy = state.accuracy.clone()
    accuracy[:, r] = evaluate(plan.model, plan.data, plan.eval_batch, plan.trainer.forward,
                              plan.eval_channels_last)
    return replace(state, accuracy=accuracy)


def summarise(plan: Plan, state: RunState, wall: float) -> RunSummary:
    A, totals, cfg = state.accuracy, state.totals, plan.cfg
    Q = cfg.rounds_per_phase
    return RunSummary(
        acc=acc(A), bwt_f=bwt_f(A, Q, list(state.first_update), state.held_accuracy),
        bwt_f_literal=bwt_f_literal(A, Q),
        bytes_up=totals.bytes_up, bytes_down=totals.bytes_down, tcc_bytes=totals.tcc,
        full_fedavg_bytes=totals.full_bytes,
        compression_ratio=ratio(totals.full_bytes, totals.tcc), rounds=cfg.rounds,
        samples=totals.samples, wall_s=wall,
        samples_per_s=totals.samples / wall if wall > 0 else math.nan,
        drift_mean=totals.drift_sum / totals.drift_rounds if totals.drift_rounds else math.nan,
        trainable_params_per_task=sum(t.numel() for t in state.tasks[0].params.values()),
        device=plan.device, precision=plan.precision, layout=plan.layout,
        batched_clients=plan.batched_clients, diverged=totals.diverged_round >= 0,
        diverged_round=totals.diverged_round)

def head_weights(trainable: list[str]) -> list[str]:
    """The FC's weight tensors (biases left out): what the FCL paper's head cosine compares."""
    return [n for n in trainable if n.startswith("head.") and not n.endswith("bias")]


def to_device(state: RunState, device: torch.device) -> RunState:
    """The state's tensors on `device` (a checkpoint may come from another device); the
    accuracy matrix stays on the host."""
    return replace(state, tasks=_moved(state.tasks, device),
                   algorithm=_moved(state.algorithm, device), method=_moved(state.method, device))


def _moved(x: Any, device: torch.device) -> Any:
    """Tensors in dicts, tuples and dataclasses moved to `device`, the structure kept."""
    if isinstance(x, torch.Tensor):
        return x.to(device)
    if isinstance(x, dict):
        return {k: _moved(v, device) for k, v in x.items()}
    if isinstance(x, tuple):
        return tuple(_moved(v, device) for v in x)
    if dataclasses.is_dataclass(x):
        return replace(x, **{f.name: _moved(getattr(x, f.name), device)
                             for f in dataclasses.fields(x)})
    return x


