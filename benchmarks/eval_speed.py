"""Images/s of `fcl.engine.evaluate` over eval batch sizes, compute modes and thread counts,
against a bare `model.eval()` loop over the same test tensors (torch.no_grad, `.item()` per
batch: what a plain script or Flower's `test()` does).

    python benchmarks/eval_speed.py [--workload cifar10-local|resnet8] [--threads 1 2]
                                    [--batches 64 128 256 512 1024] [--reps 3]

Workloads: `cifar10-local` (the study preset's model: NetTailor on resnet_tiny width 16, Split
CIFAR-10, 5 tasks x 200 test images) and `resnet8` (FLoCoRA's ResNet-8 GroupNorm(2) with LoRA
r=32, CIFAR-10 as one task, `--test-per-class` images per class). Every cell is the best of
`--reps`, cells interleaved. `evaluate` is timed with the run's layout and with NHWC batches
(`evaluate(..., channels_last=True)`: what the engine does on an AVX-512 CPU); the accuracy
counts of every batch size and layout are checked equal (the line says False otherwise).
Needs CIFAR-10 in torchvision's layout under data/ (data/cifar-10-batches-py, the preset's
`data.root=data`), which torchvision downloads there on first use (not with `FCL_OFFLINE=1`).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from fcl.bench import describe_machine  # noqa: E402
from fcl.bench_eval import bare_eval, eval_setup  # noqa: E402
from fcl.engine import evaluate  # noqa: E402
from fcl.presets import preset  # noqa: E402

WORKLOADS = {
    "cifar10-local": ("cifar10-local", {}),
    "resnet8": ("flocora-cifar10-local", {"model.backbone": "resnet8", "data.num_clients": 2,
                                          "data.train_per_class": 10,
                                          "data.test_per_class": 100}),
}
# the run's modes (run.channels_last: the weights in NHWC too)
MODES = {"fp32": {"run.precision": "fp32", "run.channels_last": False},
         "fp32+cl": {"run.precision": "fp32", "run.channels_last": True},
         "bf16": {"run.precision": "bf16", "run.channels_last": False},
         "bf16+cl": {"run.precision": "bf16", "run.channels_last": True}}


def timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workload", choices=list(WORKLOADS), default="cifar10-local")
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--batches", type=int, nargs="+", default=[64, 128, 256, 512, 1024])
    p.add_argument("--modes", nargs="+", choices=list(MODES), default=["fp32", "bf16"])
    p.add_argument("--test-per-class", type=int, default=200)
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args()
    name, own = WORKLOADS[args.workload]
    base = {**own, "data.test_per_class": args.test_per_class, "run.device": "cpu"}
    print(describe_machine("cpu"), "| load", f"{os.getloadavg()[0]:.1f}", flush=True)
    for threads in args.threads:
        torch.set_num_threads(threads)
        for mode in args.modes:
            plan, forward = eval_setup(preset(name, {**base, **MODES[mode]}))
            model, data = plan.model, plan.data
            n = sum(len(td.test_y) for td in data.tasks)
            best: dict[tuple, float] = {}
            counts: dict[tuple, torch.Tensor] = {}
            evaluate(model, data, 256, forward)                       # warm-up
            for _ in range(args.reps):
                for bs in args.batches:
                    for nhwc in (False, True):
                        s, acc = timed(lambda: evaluate(model, data, bs, forward, nhwc))
                        best[bs, nhwc] = max(best.get((bs, nhwc), 0), n / s)
                        counts.setdefault((bs, nhwc), acc)
                    s, _ = timed(lambda: bare_eval(model, data, bs, forward))
                    best[bs, "bare"] = max(best.get((bs, "bare"), 0), n / s)
            first = next(iter(counts.values()))
            same = all(torch.equal(c, first) for c in counts.values())
            for bs in args.batches:
                print(f"{args.workload} threads={threads} {mode:8s} batch={bs:5d} evaluate "
                      f"{best[bs, False]:6.0f} img/s, NHWC batches {best[bs, True]:6.0f} img/s; "
                      f"bare {best[bs, 'bare']:6.0f} img/s; NHWC evaluate / bare "
                      f"{best[bs, True] / best[bs, 'bare']:.2f}", flush=True)
            print(f"  {n} images; accuracy counts equal over batch sizes and layouts: {same}; "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
