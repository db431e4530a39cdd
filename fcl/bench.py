"""`fcl bench`: samples/s of whole runs against a bare PyTorch loop doing the same work, for a
table of workloads x compute modes, all in one process.

The bare loop builds the same model in the same compute mode, trains task 0's module with
torch.optim.SGD on as many training samples as the run processed, in minibatches of the same
size, and evaluates all tasks as often as the run did: what a plain training script would spend
on the same work. So run / bare is what the federation costs (broadcast, messages, aggregation,
server optimizer, metrics, per-client state swaps), and a run faster than its bare loop gained
more from the fast path (batched clients) than the federation costs.

Measurement on a shared machine: absolute samples/s move with the load, so every mode of a
workload is measured in the same process, modes are interleaved (run, bare, next mode, ...),
`--repeats` keeps the best of each, and the 1-minute load average is printed next to each
number. Compare ratios, not absolute numbers across tables.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from fcl.bench_eval import EvalRow, bench_eval, format_eval_table, load_average, sync_device
from fcl.compute_mode import ComputeMode, eval_batch_size, eval_channels_last
from fcl.config import RunConfig
from fcl.engine import evaluate, model_activation_bytes, prepare_data, resolve_device, run
from fcl.models.factory import build_model
from fcl.presets import preset

# name -> (preset, overrides): the three workloads the bench table measures
WORKLOADS: dict[str, tuple[str, dict]] = {
    "nettailor-local": ("local", {}),
    "flocora-lora-resnet8": ("flocora-local", {"model.backbone": "resnet8"}),
    "fedavg-full-resnet8": ("flocora-local", {"model.backbone": "resnet8",
                                              "model.adapter": "full"}),
}
MODES: dict[str, dict] = {
    "fp32": {"run.precision": "fp32", "run.channels_last": False, "run.client_batching": False},
    "fp32+batch": {"run.precision": "fp32", "run.channels_last": False,
                   "run.client_batching": True},
    "fp32+cl": {"run.precision": "fp32", "run.channels_last": True, "run.client_batching": False},
    "fp32+cl+batch": {"run.precision": "fp32", "run.channels_last": True,
                      "run.client_batching": True},
    "bf16": {"run.precision": "bf16", "run.channels_last": False, "run.client_batching": False},
    "bf16+cl": {"run.precision": "bf16", "run.channels_last": True, "run.client_batching": False},
    "bf16+cl+batch": {"run.precision": "bf16", "run.channels_last": True,
                      "run.client_batching": True},
}


def default_modes(device: str) -> tuple[list[str], list[str]]:
    """(modes to bench, modes skipped): every mode, except bf16 on a CPU without native
    bfloat16 kernels, where it falls back to reference convolutions (see fcl/compute_mode.py)."""
    from fcl.compute_mode import native_cpu_bf16
    slow = resolve_device(device).type == "cpu" and not native_cpu_bf16()
    skipped = [m for m in MODES if slow and MODES[m]["run.precision"] == "bf16"]
    return [m for m in MODES if m not in skipped], skipped


@dataclass(frozen=True)
class Row:
    workload: str
    mode: str
    rounds: int
    samples: int
    run_sps: float
    bare_sps: float
    load_run: float          # 1-minute load average when the best run ended
    load_bare: float

    @property
    def ratio(self) -> float:
        return self.run_sps / self.bare_sps


def bare_loop(cfg: RunConfig, data, samples: int, evaluations: int = 0) -> float:
    """samples/s of a plain loop: model build, `samples` training samples of task 0 in
    minibatches, then `evaluations` evaluations of all tasks, in the run's compute mode."""
    compute = ComputeMode.from_config(cfg.run, resolve_device(cfg.run.device))
    forward = compute.forward_context
    sync_device(compute.device)
    t0 = time.perf_counter()
    data = compute.data(data)
    model = compute.model(build_model(cfg.model, data.image_shape, data.classes_per_task(),
                                      cfg.seed))
    opt = torch.optim.SGD([p for p in model.tasks[0].parameters() if p.requires_grad],
                          lr=cfg.client.lr, momentum=cfg.client.momentum,
                          weight_decay=cfg.client.weight_decay, foreach=True)
    td = data.tasks[0]
    g = torch.Generator().manual_seed(cfg.seed)
    model.train()
    done = 0
    while done < samples:
        perm = torch.randperm(len(td.train_y), generator=g).to(td.train_y.device)
        for idx in perm.split(cfg.client.batch_size):
            if done >= samples:
                break
            with forward():
                loss = F.cross_entropy(model(data.normalise(td.train_x[idx]), 0),
                                       td.train_y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            done += len(idx)
    batch = eval_batch_size(cfg.eval.batch_size, compute.device,
                            lambda: model_activation_bytes(model, data))
    nhwc = eval_channels_last(compute.channels_last, compute.device)
    for _ in range(evaluations):
        evaluate(model, data, batch, forward, nhwc)
    sync_device(compute.device)
    return done / (time.perf_counter() - t0)


def workload_config(spec: tuple[str, dict], rounds: int = 0, overrides: dict | None = None
                    ) -> RunConfig:
    """A workload's config from (preset, its overrides) and the user's overrides; `rounds` > 0
    replaces R, rounded up to a multiple of T."""
    preset_name, own = spec
    cfg = preset(preset_name, {**own, **(overrides or {})})
    if not rounds:
        return cfg
    T = cfg.data.num_tasks
    return preset(preset_name, {**own, **(overrides or {}), "rounds": T * math.ceil(rounds / T)})


def bench_workload(name: str, cfg: RunConfig, modes: list[str], repeats: int = 1,
                   warmup: bool = True) -> list[Row | EvalRow]:
    """Every mode of one workload, interleaved, best of `repeats`."""
    from fcl.config import with_overrides
    data = prepare_data(cfg)
    cfgs = {m: with_overrides(cfg, MODES[m]) for m in modes}
    if warmup:     # imports (torch.optim), allocator, first bf16 / vmap calls
        for m in modes:
            bare_loop(cfgs[m], data, 2 * cfg.client.batch_size)
    best: dict[str, list] = {m: [0.0, 0.0, 0, math.nan, math.nan] for m in modes}
    for _ in range(repeats):
        for m in modes:
            res = run(cfgs[m], data=data)
            samples = res.summary.samples
            evaluations = sum(rec["evaluated"] for rec in res.records)
            b = best[m]
            if res.summary.samples_per_s > b[0]:
                b[0], b[2], b[3] = res.summary.samples_per_s, samples, load_average()
            bare = bare_loop(cfgs[m], data, samples, evaluations)
            if bare > b[1]:
                b[1], b[4] = bare, load_average()
    return [Row(name, m, cfg.rounds, best[m][2], best[m][0], best[m][1], best[m][3], best[m][4])
            for m in modes] + bench_eval(name, cfgs, max(repeats, 3))


def format_table(rows: list, header: str = "") -> str:
    """The run table (`Row`s), its target lines, then the evaluation table (`EvalRow`s)."""
    evals = [r for r in rows if isinstance(r, EvalRow)]
    rows = [r for r in rows if isinstance(r, Row)]
    fp32 = {r.workload: r.run_sps for r in rows if r.mode == "fp32"}
    lines = [header] if header else []
    lines += ["| workload | mode | rounds | samples | run samples/s | bare samples/s | run / bare "
              "| run / fp32 run | load (run, bare) |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        vs = r.run_sps / fp32[r.workload] if r.workload in fp32 else math.nan
        lines.append(f"| {r.workload} | {r.mode} | {r.rounds} | {r.samples} | {r.run_sps:.1f} "
                     f"| {r.bare_sps:.1f} | {r.ratio:.2f} | {vs:.2f} "
                     f"| {r.load_run:.1f}, {r.load_bare:.1f} |")
    lines += target_lines(rows)
    if evals:
        lines += ["", format_eval_table(evals)]
    return "\n".join(lines)


def target_lines(rows: list[Row]) -> list[str]:
    """Issue 7's targets, for the rows present."""
    get = {(r.workload, r.mode): r for r in rows if isinstance(r, Row)}
    out = []

    def check(label: str, value: float, goal: float):
        out.append(f"target {label}: {value:.2f} (goal >= {goal}) "
                   f"{'met' if value >= goal else 'MISSED'}")

    full, lora, nt = "fedavg-full-resnet8", "flocora-lora-resnet8", "nettailor-local"
    if (full, "fp32") in get:
        check("fp32 full-model FedAvg run / bare loop", get[full, "fp32"].ratio, 0.95)
        for m in MODES:       # frozen conv weights (LoRA) x each compute mode
            if (lora, m) in get:
                check(f"LoRA ResNet-8 {m} / fp32 full-model run",
                      get[lora, m].run_sps / get[full, "fp32"].run_sps, 2.0)
    if (nt, "fp32") in get:
        for m in MODES:
            if m != "fp32" and (nt, m) in get:
                check(f"NetTailor local {m} / fp32", get[nt, m].run_sps /
                      get[nt, "fp32"].run_sps, 1.8)
    for seq in MODES:
        bat = f"{seq}+batch"
        if (lora, seq) in get and (lora, bat) in get:
            check(f"LoRA ResNet-8 batched / sequential ({seq})",
                  get[lora, bat].run_sps / get[lora, seq].run_sps, 1.2)
    return out


def bench_table(workloads: dict[str, tuple[str, dict]], modes: list[str], rounds: int = 0,
                overrides: dict | None = None, repeats: int = 1, out=None,
                warmup: bool = True) -> list[Row | EvalRow]:
    """`workloads`: name -> (preset, overrides), e.g. `WORKLOADS`."""
    rows = []
    for name, spec in workloads.items():
        cfg = workload_config(spec, rounds, overrides)
        if cfg.run.threads:
            torch.set_num_threads(cfg.run.threads)
        rows += bench_workload(name, cfg, modes, repeats, warmup)
        if out is not None:     # progress: the table so far
            print(format_table(rows), file=out, flush=True)
    return rows


def profile_run(cfg: RunConfig, data, top: int = 10) -> str:
    """torch.profiler's top ops (self time) of a whole run in the config's compute mode, batched
    clients included (what the table measures): the evidence for where a mode's time goes."""
    from torch.profiler import ProfilerActivity, profile
    bare_loop(cfg, data, 2 * cfg.client.batch_size)               # warm-up
    cuda = torch.cuda.is_available() and resolve_device(cfg.run.device).type == "cuda"
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=acts) as prof:
        run(cfg, data=data)
    key = "self_cuda_time_total" if cuda else "self_cpu_time_total"
    return prof.key_averages().table(sort_by=key, row_limit=top, max_name_column_width=40)


def describe_machine(device: str) -> str:
    dev = resolve_device(device)
    from fcl.compute_mode import native_cpu_bf16
    cpu = torch.backends.cpu.get_cpu_capability()
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else f"CPU ({cpu})"
    return (f"device {name}, {torch.get_num_threads()} threads, native CPU bf16: "
            f"{native_cpu_bf16()}, torch {torch.__version__}")


def training_step(cfg: RunConfig, image_shape: tuple[int, int, int],
                  classes_per_task: list[int]):
    """(step, model, compute): `step()` is one SGD step of task 0 of the model `cfg` builds, in
    its compute mode on the CPU, at the client batch size on random images (a step's time and
    FLOPs do not depend on pixel values)."""
    compute = ComputeMode.from_config(cfg.run, torch.device("cpu"))
    model = compute.model(build_model(cfg.model, image_shape, classes_per_task, cfg.seed))
    opt = torch.optim.SGD([p for p in model.tasks[0].parameters() if p.requires_grad],
                          lr=cfg.client.lr, momentum=cfg.client.momentum, foreach=True)
    g = torch.Generator().manual_seed(cfg.seed)
    batch = cfg.client.batch_size
    x = torch.randn(batch, *image_shape, generator=g).contiguous(
        memory_format=compute.memory_format)
    y = torch.randint(0, classes_per_task[0], (batch,), generator=g)

    def step():
        model.train()
        with compute.forward_context():
            loss = F.cross_entropy(model(x, 0), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step, model, compute


def step_rate(cfg: RunConfig, image_shape: tuple[int, int, int], classes_per_task: list[int],
              threads: int, seconds: float = 2.0) -> float:
    """Training samples/s of `training_step` with `threads` threads, for about `seconds` after
    two warm-up steps: what a trial's training costs, without its evaluations and the rounds'
    bookkeeping."""
    step, _, _ = training_step(cfg, image_shape, classes_per_task)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        step()
        step()
        steps, t0 = 0, time.perf_counter()
        while steps < 3 or time.perf_counter() - t0 < seconds:
            step()
            steps += 1
        return steps * cfg.client.batch_size / (time.perf_counter() - t0)
    finally:
        torch.set_num_threads(before)
