"""A run's start (`start`): everything its config decides resolved once into a `Plan`
(`build_plan`: schedule, server optimizer, client algorithm, codec, aggregation, evaluation
rounds, the compute mode's batch and layout, whether the forward is compiled), and the state
its first round runs from (`initial_state`, or a checkpoint moved to the run's device).
`fcl.engine` runs the rounds."""
from __future__ import annotations

import contextlib
import dataclasses
import math
from dataclasses import replace
from typing import Any

import torch
from torch import nn

from fcl.communication import full_model_nbytes
from fcl.compile_policy import compile_forward_, resolve_compile
from fcl.compute_mode import (ComputeMode, eval_batch_size, eval_channels_last,
                               largest_activation_bytes, resolve_client_batching)
from fcl.config import RunConfig
from fcl.data.datasets import load_dataset
from fcl.data.federated import FederatedData, build_federated_data
from fcl.federated.aggregate import AGGREGATES
from fcl.federated.client import TaskNames, Trainer
from fcl.federated.client_algorithms import ALGORITHMS
from fcl.federated.compression import Codec
from fcl.federated.round import Plan, RunState, TaskServerState, Totals
from fcl.federated.server_opt import server_optimizer
from fcl.federated.task_schedule import task_schedule
from fcl.methods.registry import method
from fcl.metrics import eval_rounds
from fcl.models.factory import build_model
from fcl.models.pretrained import input_stats
from fcl.models.task_state import buffer_names, load_state_, read_state, trainable_names


def build_plan(cfg: RunConfig, model: nn.Module, data: FederatedData,
               compute: ComputeMode | None = None) -> Plan:
    """What the config decides for the whole run, resolved once; the method's own round, if it
    has one, and its uplink's top-K share from its `Method` value."""
    T, N, R = data.num_tasks, data.num_clients, cfg.rounds
    forward = compute.forward_context if compute is not None else contextlib.nullcontext
    device = compute.device if compute is not None else torch.device("cpu")
    own = method(cfg.model.adapter)
    batched = own.round is None and (
        compute.client_batching if compute is not None else
        resolve_client_batching(cfg.run.client_batching, device))
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
        batched_clients=batched, compiled=resolve_compile(cfg, model, data, batched),
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
    if plan.compiled:
        compile_forward_(plan.model, data.num_tasks)
    state = to_device(resume or initial_state(plan), compute.device)
    for t, ts in enumerate(state.tasks):
        load_state_(plan.model.tasks[t], plan.codec.served({**ts.params, **ts.buffers}))
    return plan, state


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
