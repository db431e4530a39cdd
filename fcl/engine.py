"""One whole federated continual learning run: Algorithm 1 of the FCL paper, generalised.

    result = run(config, on_round=print)

Each round r: the participation sample receives the server state of its task (the schedule
says which task each client trains); reporting clients train K local epochs and send their
message; per task with reports, the server forms the pseudo-gradient and applies its FedOpt step
(tasks with no report keep their state).

`compression.payload` says what a client sends. `values` (default; FLoCoRA): its trained
tensors, through the codec; the server's delta of client i is decode(message_i) minus the
server state, so FedAvg (fedsgd, lr 1, mean) makes the new state the mean of the dequantized
values, and the evaluated model is the dequantized broadcast, what clients start from.
`delta`: trained minus received goes through the codec and the float32 server state never
carries a quantization error (the error is relative to the update, not to the weights).
Both are the same at compression.bits=32. Metrics are recorded every round; all tasks are
evaluated at the rounds `fcl.metrics.eval_rounds` lists. Nothing here imports Ray.

The run is a pure function of its config: every random stream is derived from (seed, purpose,
round, client), so a run resumed from a `RunState` snapshot continues exactly as if it had never
stopped.
"""
from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass, field, replace
from typing import Callable

import torch

from fcl.communication import full_model_nbytes
from fcl.compute_mode import ComputeMode
from fcl.config import RunConfig
from fcl.data.datasets import load_dataset
from fcl.data.federated import FederatedData, build_federated_data
from fcl.federated import server_opt
from fcl.federated.aggregate import cosine_distance, pseudo_gradient, subtract, weighted_mean
from fcl.federated.batched_clients import batched_updates
from fcl.federated.client import local_train
from fcl.federated.client_algorithms import (ALGORITHMS, control_change, local_steps,
                                             server_control, zeros_like)
from fcl.federated.compression import decode, encoder
from fcl.federated.participation import participation
from fcl.federated.task_schedule import task_schedule
from fcl.metrics import acc, bwt_f, bwt_f_literal, eval_rounds
from fcl.models.factory import build_model
from fcl.models.pretrained import input_stats
from fcl.models.task_state import Params, buffer_names, read_state, trainable_names, load_state_
from fcl.seeding import generator


@dataclass(frozen=True)
class TaskServerState:
    params: Params                   # trainable tensors (what the FedOpt step moves)
    buffers: Params                  # norm running statistics (weighted means)
    opt: server_opt.OptState
    control: Params = field(default_factory=dict)   # SCAFFOLD's c of this task (else empty)


@dataclass(frozen=True)
class RunState:
    """Everything needed to continue a run after round `next_round - 1` (a checkpoint)."""
    next_round: int
    tasks: tuple[TaskServerState, ...]
    accuracy: torch.Tensor           # (T, R) float64, NaN where not evaluated yet
    first_update: tuple[float, ...]  # per task, first round with a server update (inf: none)
    records: tuple[dict, ...]        # per round records so far
    task_records: tuple[dict, ...]   # per round x task records so far
    bytes_up: int = 0
    bytes_down: int = 0
    samples: int = 0                 # training samples processed (for throughput)
    full_bytes: int = 0              # what full-model float32 FedAvg would have sent so far
    # SCAFFOLD: c_i per (client, task) that client has trained; missing = zero (the initial c_i)
    client_control: dict[tuple[int, int], Params] = field(default_factory=dict)


@dataclass(frozen=True)
class RunResult:
    config: RunConfig
    records: list[dict]              # one per round
    task_records: list[dict]         # one per round x task
    accuracy: torch.Tensor           # (T, R), in percent, NaN where not evaluated
    summary: dict = field(default_factory=dict)


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


def initial_state(cfg: RunConfig, model: torch.nn.Module) -> RunState:
    tasks = []
    for module in model.tasks:
        params = read_state(module, trainable_names(module))
        control = zeros_like(params) if ALGORITHMS[cfg.client.algorithm].control_variates else {}
        tasks.append(TaskServerState(params, read_state(module, buffer_names(module)),
                                     server_opt.init(params, cfg.server), control))
    T, R = len(tasks), cfg.rounds
    return RunState(0, tuple(tasks), torch.full((T, R), math.nan, dtype=torch.float64),
                    (math.inf,) * T, (), ())


@torch.inference_mode()
def evaluate(model: torch.nn.Module, data: FederatedData, batch_size: int,
             forward_context: Callable = contextlib.nullcontext) -> torch.Tensor:
    """Test accuracy (percent) of every task, one host sync for all of them."""
    model.eval()
    correct = []
    for t, td in enumerate(data.tasks):
        hits = torch.zeros((), dtype=torch.long, device=td.test_y.device)
        for start in range(0, len(td.test_y), batch_size):
            x = data.normalise(td.test_x[start:start + batch_size])
            with forward_context():
                logits = model(x, t)
            hits += (logits.argmax(1) == td.test_y[start:start + batch_size]).sum()
        correct.append(hits)
    sizes = torch.tensor([len(td.test_y) for td in data.tasks], dtype=torch.float64)
    return torch.stack(correct).cpu().double() * 100.0 / sizes


def run(cfg: RunConfig, on_round: Callable[[dict, RunState], None] | None = None,
        data: FederatedData | None = None, resume: RunState | None = None,
        model: torch.nn.Module | None = None) -> RunResult:
    """Run (or continue, from `resume`) one FCL run; `on_round(record, state)` after each round.

    `data` may be passed in already prepared (a study prepares it once per node); `model` may
    be passed in to inspect it afterwards (it must be `build_model`'s for this config)."""
    t0 = time.perf_counter()
    if cfg.run.threads:
        torch.set_num_threads(cfg.run.threads)
    compute = ComputeMode.from_config(cfg.run, resolve_device(cfg.run.device))
    device = compute.device
    data = data if data is not None else prepare_data(cfg)
    # an ImageNet backbone gets ImageNet-normalised inputs; images go to the device
    data = compute.data(data.with_stats(input_stats(cfg.model, data.image_shape[0])))
    if model is None:
        model = build_model(cfg.model, data.image_shape, data.classes_per_task(), cfg.seed)
    model = compute.model(model)
    T, N, R, Q = data.num_tasks, data.num_clients, cfg.rounds, cfg.rounds_per_phase
    schedule = task_schedule(cfg.schedule.order, T, N, R, cfg.seed)
    due = set(eval_rounds(R, Q, cfg.eval.every))
    names = [(trainable_names(m), buffer_names(m)) for m in model.tasks]
    state = resume or initial_state(cfg, model)
    state = replace(state, tasks=tuple(_to(ts, device) for ts in state.tasks),
                    client_control={k: _params_to(v, device)
                                    for k, v in state.client_control.items()})
    for t, ts in enumerate(state.tasks):       # the model always mirrors the server between rounds
        load_state_(model.tasks[t], served(cfg, {**ts.params, **ts.buffers}))

    for r in range(state.next_round, R):
        state, record = run_round(cfg, r, model, data, schedule, names, state, due,
                                  compute.forward_context)
        if on_round is not None:
            on_round(record, state)

    A = state.accuracy
    wall = time.perf_counter() - t0
    summary = {
        "acc": acc(A), "bwt_f": bwt_f(A, Q, list(state.first_update)),
        "bwt_f_literal": bwt_f_literal(A, Q),
        "bytes_up": state.bytes_up, "bytes_down": state.bytes_down,
        **communication_summary(state),
        "rounds": R, "samples": state.samples, "wall_s": wall,
        "samples_per_s": state.samples / wall if wall > 0 else math.nan,
        "drift_mean": _mean([rec["drift"] for rec in state.records]),
        "trainable_params_per_task": sum(t.numel() for t in state.tasks[0].params.values()),
        "device": str(device), "precision": compute.precision,    # run.precision=auto resolved
    }
    return RunResult(cfg, list(state.records), list(state.task_records), A, summary)


def run_round(cfg: RunConfig, r: int, model, data: FederatedData, schedule: torch.Tensor,
              names, state: RunState, due: set[int],
              forward: Callable = contextlib.nullcontext) -> tuple[RunState, dict]:
    """`forward`: the context of every forward pass (`ComputeMode.forward_context`, made
    once per run)."""
    t_start = time.perf_counter()
    Q = cfg.rounds_per_phase
    part = participation(r, data.num_clients, cfg.participation, cfg.seed)
    tasks_of = schedule[r].tolist()
    encode = encoder(cfg.compression.bits)
    values = cfg.compression.payload == "values"
    # full-model FedAvg baseline: same messages, each the whole model of its task in float32
    full_nbytes = [full_model_nbytes(model.backbone, n) for n in data.classes_per_task()]
    bytes_down = bytes_up = samples = full_bytes = 0
    received: dict[int, Params] = {}
    broadcast: dict[int, tuple[Params, int]] = {}   # one message per task: all its clients get it
    for c in part.sampled:                     # broadcast: each sampled client gets its task
        t = tasks_of[c]
        if t not in broadcast:
            msg = encode({**state.tasks[t].params, **state.tasks[t].buffers})
            broadcast[t] = (decode(msg), msg.nbytes)
        received[c], nbytes = broadcast[t]
        bytes_down += nbytes
        full_bytes += full_nbytes[t]
    algorithm = ALGORITHMS[cfg.client.algorithm]
    controls: dict[int, Params] = {}          # SCAFFOLD's downlink is (x, c): c as decoded
    client_control = dict(state.client_control)
    control_changes: dict[int, list[Params]] = {}
    if algorithm.control_variates:
        control_nbytes = {}
        for c in part.sampled:
            t = tasks_of[c]
            if t not in controls:
                msg = encode(state.tasks[t].control)
                controls[t], control_nbytes[t] = decode(msg), msg.nbytes
            bytes_down += control_nbytes[t]

    # run.client_batching: clients of one task train together; the others one by one below
    batched = batched_updates(cfg, r, model, data, tasks_of, part.reporting, received, names,
                              forward)
    updates: dict[int, list] = {}
    drift_sum = torch.zeros((), dtype=torch.float64, device=data.mean.device)
    losses = []
    for c in part.reporting:
        t = tasks_of[c]
        trainable, buffers = names[t]
        gen = generator(cfg.seed, "batches", r, c)
        own = client_control.get((c, t)) or zeros_like(controls.get(t, {}))   # c_i
        shift = [controls[t][n] - own[n] for n in trainable] if controls else []    # c - c_i
        correction = algorithm.correction(cfg.client, [received[c][n] for n in trainable], shift)
        up = batched[c] if c in batched else local_train(
            model, data, t, c, received[c], trainable, buffers, cfg.client, cfg.model, gen,
            correction, forward_context=forward)
        if controls:          # Delta c_i, sent with the delta through the same codec
            change = control_change(received[c], up.end, controls[t],
                                    local_steps(up.num_samples, cfg.client), cfg.client.lr)
            msg = encode(change)
            bytes_up += msg.nbytes
            change = decode(msg)
            client_control[(c, t)] = {n: own[n] + change[n] for n in change}
            control_changes.setdefault(t, []).append(change)
        trained = {n: up.end[n] for n in trainable}
        sent = trained if values else subtract(trained, {n: received[c][n] for n in trainable})
        msg = encode({**sent, **{n: up.end[n] for n in buffers}})
        bytes_up += msg.nbytes
        full_bytes += full_nbytes[t]
        samples += up.num_samples * cfg.client.local_epochs
        got = decode(msg)
        if values:             # the server's delta: the dequantized values minus its own state
            got = {**got, **subtract({n: got[n] for n in trainable}, state.tasks[t].params)}
        updates.setdefault(t, []).append((got, up.num_samples))
        drift_sum = drift_sum + up.drift.double() / cfg.client.local_epochs
        losses.append(up.loss)

    new_tasks = list(state.tasks)
    first_update = list(state.first_update)
    task_rows = {}
    for t, reports in sorted(updates.items()):
        trainable, buffers = names[t]
        old = state.tasks[t]
        weights = [w for _, w in reports]
        grad = pseudo_gradient([{n: m[n] for n in trainable} for m, _ in reports], weights,
                               cfg.server.aggregate)
        params, opt = server_opt.step(old.params, grad, old.opt, cfg.server)
        bufs = weighted_mean([{n: m[n] for n in buffers} for m, _ in reports], weights) \
            if buffers else {}
        control = (server_control(old.control, control_changes[t], data.num_clients)
                   if t in control_changes else old.control)
        new_tasks[t] = TaskServerState(params, bufs, opt, control)
        load_state_(model.tasks[t], served(cfg, {**params, **bufs}))
        first_update[t] = min(first_update[t], r)
        head = head_weights(trainable)
        task_rows[t] = {"reports": len(reports),
                        "cos_head": cosine_distance(params, old.params, head),
                        "cos_module": cosine_distance(params, old.params)}

    accuracy = state.accuracy
    evaluated = r in due
    if evaluated:
        accuracy = accuracy.clone()
        accuracy[:, r] = evaluate(model, data, cfg.eval.batch_size, forward)

    n_reports = len(part.reporting)
    record = {
        "round": r, "phase": r // Q,
        "tasks_trained": sorted(updates),
        "clients_sampled": len(part.sampled), "clients_reporting": n_reports,
        "drift": float(drift_sum) / n_reports if n_reports else math.nan,   # Eq. 2
        "train_loss": float(torch.stack(losses).mean()) if losses else math.nan,
        "cos_head": _mean([float(v["cos_head"]) for v in task_rows.values()]),
        "cos_module": _mean([float(v["cos_module"]) for v in task_rows.values()]),
        "bytes_up": bytes_up, "bytes_down": bytes_down,
        "tcc_bytes": state.bytes_up + state.bytes_down + bytes_up + bytes_down,
        "compression_ratio": _ratio(state.full_bytes + full_bytes,
                                    state.bytes_up + state.bytes_down + bytes_up + bytes_down),
        "evaluated": evaluated,
        "mean_acc": float(accuracy[:, r].mean()) if evaluated else math.nan,
        "wall_s": time.perf_counter() - t_start,
    }
    task_records = [{
        "round": r, "task": t,
        "accuracy": float(accuracy[t, r]) if evaluated else math.nan,
        "reports": task_rows[t]["reports"] if t in task_rows else 0,
        "cos_head": float(task_rows[t]["cos_head"]) if t in task_rows else math.nan,
        "cos_module": float(task_rows[t]["cos_module"]) if t in task_rows else math.nan,
    } for t in range(data.num_tasks)]
    new_state = RunState(r + 1, tuple(new_tasks), accuracy, tuple(first_update),
                         state.records + (record,), state.task_records + tuple(task_records),
                         state.bytes_up + bytes_up, state.bytes_down + bytes_down,
                         state.samples + samples, state.full_bytes + full_bytes,
                         client_control)
    return new_state, record


def served(cfg: RunConfig, state: Params) -> Params:
    """The model clients receive and evaluation sees: with payload=values, the broadcast as
    decoded (quantized at bits < 32); with payload=delta, the float32 server state."""
    if cfg.compression.payload == "delta" or cfg.compression.bits == 32:
        return state
    return decode(encoder(cfg.compression.bits)(state))


def head_weights(trainable: list[str]) -> list[str]:
    """The FC's weight tensors (biases left out): what the FCL paper's head cosine compares."""
    return [n for n in trainable if n.startswith("head.") and not n.endswith("bias")]


def _params_to(p: Params, device: torch.device) -> Params:
    return {n: t.to(device) for n, t in p.items()}


def _to(ts: TaskServerState, device: torch.device) -> TaskServerState:
    mv = lambda p: _params_to(p, device)  # noqa: E731
    return TaskServerState(mv(ts.params), mv(ts.buffers),
                           server_opt.OptState(mv(ts.opt.m), mv(ts.opt.v), ts.opt.steps),
                           mv(ts.control))


def communication_summary(state: RunState) -> dict:
    """TCC (FLoCoRA Eq. 2, counted exactly: every byte sent on both links over the run) and
    the compression ratio versus full-model float32 FedAvg with the same messages."""
    tcc = state.bytes_up + state.bytes_down
    return {"tcc_bytes": tcc, "full_fedavg_bytes": state.full_bytes,
            "compression_ratio": _ratio(state.full_bytes, tcc)}


def _ratio(full: int, sent: int) -> float:
    return full / sent if sent else math.nan


def _mean(values: list[float]) -> float:
    vals = [v for v in values if not math.isnan(v)]
    return sum(vals) / len(vals) if vals else math.nan
