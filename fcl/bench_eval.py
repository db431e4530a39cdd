"""`fcl bench`'s evaluation table: images/s of the engine's `evaluate` against a plain script's
loop (`bare_eval`) over the same test tensors, per compute mode; and the two helpers every
timing of `fcl.bench` shares (a device sync, the load average printed beside each number)."""
from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass

import torch

from fcl.config import RunConfig
from fcl.engine import evaluate


def sync_device(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def load_average() -> float:
    return os.getloadavg()[0]


@dataclass(frozen=True)
class EvalRow:
    """Images/s of the engine's `evaluate` (its batch size and layout for the device) and of
    `bare_eval` (a plain script's loop in the run's layout) over the same test tensors."""
    workload: str
    mode: str
    batch: int
    channels_last: bool      # evaluate's batches in NHWC
    images: int
    evaluate_ips: float
    bare_ips: float
    load: float

    @property
    def ratio(self) -> float:
        return self.evaluate_ips / self.bare_ips


def eval_setup(cfg: RunConfig):
    """(plan, forward context) of a run of `cfg` at round 0, on its device and in its compute
    mode: what `evaluate` sees in that run."""
    from fcl.engine import start
    plan, _ = start(cfg)
    return plan, plan.trainer.forward


def bench_eval(name: str, cfgs: dict[str, RunConfig], repeats: int = 3) -> list[EvalRow]:
    """Per mode: best of `repeats` interleaved timings of one evaluation of all tasks, through
    `evaluate` as the engine calls it and through `bare_eval` at the same batch size."""
    setups = {m: eval_setup(c) for m, c in cfgs.items()}
    best = {m: [0.0, 0.0] for m in cfgs}
    for _ in range(repeats):
        for m, (plan, forward) in setups.items():
            for i, fn in enumerate((
                    lambda: evaluate(plan.model, plan.data, plan.eval_batch, forward,
                                     plan.eval_channels_last),
                    lambda: bare_eval(plan.model, plan.data, plan.eval_batch, forward))):
                device = plan.data.mean.device
                sync_device(device)
                t0 = time.perf_counter()
                fn()
                sync_device(device)
                images = sum(len(td.test_y) for td in plan.data.tasks)
                best[m][i] = max(best[m][i], images / (time.perf_counter() - t0))
    return [EvalRow(name, m, plan.eval_batch, plan.eval_channels_last,
                    sum(len(td.test_y) for td in plan.data.tasks), *best[m], load_average())
            for m, (plan, _) in setups.items()]


@torch.no_grad()
def bare_eval(model, data, batch_size: int, forward=contextlib.nullcontext) -> list[int]:
    """The plain evaluation loop of a training script (or Flower's `test()`): `model.eval()`,
    no_grad, per batch normalise, forward, argmax and `.item()`; correct counts per task."""
    model.eval()
    correct = []
    for t, td in enumerate(data.tasks):
        hits = 0
        for x, y in zip(td.test_x.split(batch_size), td.test_y.split(batch_size)):
            with forward():
                hits += (model(data.normalise(x), t).argmax(1) == y).sum().item()
        correct.append(hits)
    return correct


def format_eval_table(rows: list[EvalRow]) -> str:
    lines = ["| workload | mode | eval batch | NHWC batches | test images | evaluate images/s "
             "| bare model.eval() images/s | evaluate / bare | load |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.workload} | {r.mode} | {r.batch} | {'yes' if r.channels_last else 'no'}"
                     f" | {r.images} | {r.evaluate_ips:.0f} | {r.bare_ips:.0f} | {r.ratio:.2f} "
                     f"| {r.load:.1f} |")
    return "\n".join(lines)
