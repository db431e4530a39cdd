"""`run.compile`: whether a run's model forward is `torch.compile`d (inductor), and compiling it.

A compiled forward is a few graphs: one per phase (training with gradients, evaluation without),
one more once a batch of another size comes (a shard's last batch: the batch size becomes a
symbol), and, where the task's modules differ in structure, one per task.
Each is compiled in the trial's own process; inductor's on-disk cache (its FX graph cache, on
by default, under the node's temp folder) is shared by every trial of the node, so the study's
first trials pay the compile and later ones mostly load it.

What that costs and gives was measured (`benchmarks/compile_step.py`, docs/benchmarks.md, "A
compiled step": a 2-core AMD EPYC with native bf16, one thread a trial): 7-39 s a graph on an
empty cache, under 3 s on a warm one; steady-state steps 0.68-3.97x eager. Over a study in bf16
NHWC, ResNet-8 LoRA r 32 (about 560 TFLOP of training per graph) ran 1.17x faster compiled,
FLoCoRA's width-64 models 1.03-1.15x, NetTailor and LoRA at width 16 0.37x and 0.86x. `auto`
compiles where the model is large enough for inductor's steps to beat eager's and a graph's
expected training work pays for its compile (`AUTO_MIN_FORWARD_FLOP`, `AUTO_MIN_TRAIN_FLOP`;
the measured points around them: docs/benchmarks.md). Those bounds were measured on one CPU: on
another, time `benchmarks/compile_step.py` and set `run.compile` by what it shows.

Compiled arithmetic is not eager's (inductor fuses and reorders float operations), so a run's
numbers move with the setting, as with `run.precision`; `false` is the default so that a stored
study extended keeps computing as its rows did. The vmapped client step (`run.client_batching`)
is not compiled: `auto` leaves such a run eager and `true` refuses it.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from fcl.config import ConfigError, RunConfig
from fcl.data.federated import FederatedData
from fcl.federated.participation import training_samples

# `auto`'s two bounds, from benchmarks/compile_step.py in bf16 NHWC (what `auto` runs on the
# measuring CPU; docs/benchmarks.md, "A compiled step"). The forward's FLOPs a sample: below
# it inductor's steps were slower than eager's (NetTailor at width 16, 7.4 MFLOP; FLoCoRA's
# width-16 LoRA r 32, 12 MFLOP), above it faster (its width-64 LoRA r 32, 181 MFLOP; ResNet-8
# LoRA r 32, 468 MFLOP). The training FLOPs a graph is expected to run: where the steps' ~15%
# saving at ResNet-8's one-thread rate (0.35 TFLOP/s) covers a cold-cache compile of a training
# and an evaluation graph (about 40 s: ~270 s of eager steps, ~95 TFLOP), so that a run alone
# gains too, not only a study whose later trials find the cache warm; the full-model ResNet-8
# run of flower_side_by_side.py (42 TFLOP), compiled on a cold cache, ran 0.97x eager's
# whole-run rate.
AUTO_MIN_FORWARD_FLOP = 100e6
AUTO_MIN_TRAIN_FLOP = 100e12
# torch.compile's backend: inductor generates fused C++ (CPU) or Triton (CUDA) kernels
BACKEND = "inductor"
# A backward pass costs about twice the forward: training FLOPs = 3 x the forward's.
TRAIN_OVER_FORWARD = 3


def forward_flop_per_sample(model: nn.Module, data: FederatedData) -> int:
    """FLOPs of one test image of task 0 through the model in eval mode (torch's counter)."""
    training = model.training
    model.eval()
    try:
        with FlopCounterMode(display=False) as counter, torch.no_grad():
            model(data.normalise(data.tasks[0].test_x[:1]), 0)
    finally:
        model.train(training)
    return counter.get_total_flops()


def train_flop_per_graph(cfg: RunConfig, model: nn.Module, data: FederatedData,
                         forward_flop: int | None = None) -> float:
    """Expected training FLOPs of one task's graph over the run: the forward's per sample x 3
    x the samples the run is expected to train on (`training_samples`) / T; `forward_flop`:
    the forward's FLOPs a sample where already counted."""
    T = data.num_tasks
    images = sum(len(t.train_y) for t in data.tasks) / T
    if forward_flop is None:
        forward_flop = forward_flop_per_sample(model, data)
    return TRAIN_OVER_FORWARD * forward_flop * training_samples(cfg, images) / T


def resolve_compile(cfg: RunConfig, model: nn.Module, data: FederatedData,
                    batched_clients: bool) -> bool:
    """`run.compile` as this run takes it (see the module's docstring)."""
    setting = cfg.run.compile
    if setting == "true" and batched_clients:
        raise ConfigError("run.compile", setting, "clients train in one vmapped step "
                          "(run.client_batching), which is not compiled", "false or auto, "
                          "or run.client_batching=false")
    if setting != "auto":
        return setting == "true"
    if batched_clients:
        return False
    forward = forward_flop_per_sample(model, data)      # one counted forward for both bounds
    return (forward >= AUTO_MIN_FORWARD_FLOP
            and train_flop_per_graph(cfg, model, data, forward) >= AUTO_MIN_TRAIN_FLOP)


def compile_forward_(model: nn.Module, num_tasks: int) -> None:
    """The model's forward compiled in place (`nn.Module.compile`: every call of the module,
    training and evaluation, goes through it). Dynamo's caches are emptied first (graphs of an
    earlier run in this process guard on that run's model and would count towards the limit),
    and the limit of graphs a function may compile is raised to cover a graph per task and
    phase (the most a run can need): past the limit torch runs the function eagerly without
    saying so."""
    torch.compiler.reset()
    limit = 4 * num_tasks + 8      # 2 phases x T, a symbolic-batch graph each, some slack
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, limit)
    model.compile(backend=BACKEND)
