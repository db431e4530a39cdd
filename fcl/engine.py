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
`start` and the plan it resolves are `fcl.run_start`'s, also importable from this module.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Callable

import torch

from fcl.config import RunConfig
from fcl.data.federated import FederatedData
from fcl.federated.aggregate import cosine_distance, subtract, weighted_mean
from fcl.federated.batched_clients import batched_updates
from fcl.federated.client import ClientUpdate, TaskNames, local_train
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
from fcl.machine_kind import cpu_kind, gpu_kind
from fcl.metrics import acc, bwt_f, bwt_f_literal
from fcl.models.task_state import Params, load_state_
from fcl.records import RoundRecord, RunSummary, TaskRecord
from fcl.run_start import (build_plan, initial_state, model_activation_bytes,  # noqa: F401
                           prepare_data, resolve_device, start, to_device)
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
        batched_clients=plan.batched_clients, compiled=plan.compiled,
        diverged=totals.diverged_round >= 0, diverged_round=totals.diverged_round,
        cpu=cpu_kind(), gpu=gpu_kind(plan.device))

def head_weights(trainable: list[str]) -> list[str]:
    """The FC's weight tensors (biases left out): what the FCL paper's head cosine compares."""
    return [n for n in trainable if n.startswith("head.") and not n.endswith("bias")]
