"""How far a training or evaluation step is from the machine's limit: the attainable FLOP/s of
the CPU (a large matmul and a large 3x3 convolution, fp32 and bf16, with one thread and with
all), and the FLOP/s each workload's step reaches (FLOPs counted by torch's FlopCounterMode,
forward and backward), as a share of the attainable at the same precision and threads.

    python benchmarks/roofline.py [--threads 1 2] [--modes fp32 bf16] [--layouts nchw nhwc]
                                  [--reps 5]

Workloads: `nettailor` (the study preset's model: NetTailor on resnet_tiny width 16), and
FLoCoRA's ResNet-8 as `resnet8-full` and `resnet8-lora32` (LoRA r 32), each at its preset's
batch size for training and at 512 images for evaluation. The inputs are random images of the
data set's shape: a step's FLOPs and time do not depend on pixel values. Every time is the best
of `--reps`, so a busy machine reads slower, never faster, than it is.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from fcl.bench import describe_machine, training_step  # noqa: E402
from fcl.presets import preset  # noqa: E402

WORKLOADS = {
    "nettailor": ("cifar10-local", {}),
    "resnet8-full": ("flocora-cifar10-local", {"model.backbone": "resnet8",
                                               "model.adapter": "full"}),
    "resnet8-lora32": ("flocora-cifar10-local", {"model.backbone": "resnet8",
                                                 "model.adapter": "lora",
                                                 "model.lora_rank": 32}),
    # compile_step.py's too: FLoCoRA's presets as their studies run them (LoRA r 32)
    "width16-lora32": ("flocora-cifar10-local", {}),
    "lowrank-lora32": ("flocora-cifar10-lowrank", {}),
    "lowrank-full": ("flocora-cifar10-lowrank", {"model.adapter": "full"}),
}
ROOFLINE_WORKLOADS = ("nettailor", "resnet8-full", "resnet8-lora32")
EVAL_BATCH = 512
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def best_seconds(fn, reps: int, inner: int = 1) -> float:
    """The best of `reps` timings of `inner` calls, per call (one call first, to warm up)."""
    fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        best = min(best, (time.perf_counter() - t0) / inner)
    return best


def attainable(mode: str, reps: int) -> dict[str, float]:
    """GFLOP/s of a 2048^3 matmul and of a 3x3 convolution (64 x 128 channels x 32 x 32, NHWC
    and NCHW) in `mode`'s dtype."""
    dtype, n = DTYPES[mode], 2048
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    out = {"matmul 2048": 2 * n ** 3 / best_seconds(lambda: a @ b, reps) / 1e9}
    x = torch.randn(64, 128, 32, 32, dtype=dtype)
    w = torch.randn(128, 128, 3, 3, dtype=dtype)
    flops = 2 * 64 * 128 * 32 * 32 * 128 * 9
    for layout, fmt in (("nchw", torch.contiguous_format), ("nhwc", torch.channels_last)):
        xl, wl = x.contiguous(memory_format=fmt), w.contiguous(memory_format=fmt)
        out[f"conv3x3 {layout}"] = flops / best_seconds(
            lambda: F.conv2d(xl, wl, padding=1), reps) / 1e9
    return out


def workload_steps(name: str, mode: str, layout: str, compiled: bool = False):
    """(train step, eval step) of the workload in `mode` and `layout` (nhwc: the weights and
    the images channels-last, as the engine runs on an AVX-512 CPU), each a function of no
    arguments; `compiled`: the model's forward `torch.compile`d (inductor, its default mode)."""
    preset_name, own = WORKLOADS[name]
    cfg = preset(preset_name, {**own, "run.precision": mode,
                               "run.channels_last": layout == "nhwc"})
    classes = [10 // cfg.data.num_tasks] * cfg.data.num_tasks
    train, model, compute = training_step(cfg, (3, 32, 32), classes)
    if compiled:
        model.forward = torch.compile(model.forward)
    g = torch.Generator().manual_seed(1)
    xe = torch.randn(EVAL_BATCH, 3, 32, 32, generator=g).contiguous(
        memory_format=compute.memory_format)

    def evaluate():
        model.eval()
        with torch.no_grad(), compute.forward_context():
            model(xe, 0).argmax(1)

    return train, evaluate


def counted_flops(fn) -> int:
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


def rows(threads: list[int], modes: list[str], layouts: list[str], reps: int,
         workloads: list[str]) -> list[tuple]:
    """(kernel or step, precision, threads, GFLOP/s, % of the best kernel at that precision
    and thread count)."""
    out = []
    for t in threads:
        torch.set_num_threads(t)
        for mode in modes:
            peak = attainable(mode, reps)
            top = max(peak.values())
            out += [(kernel, mode, t, gf, 100 * gf / top) for kernel, gf in peak.items()]
            for name in workloads:
                for layout in layouts:
                    steps = workload_steps(name, mode, layout)
                    for phase, fn in zip(("train", "eval"), steps):
                        gf = counted_flops(fn) / best_seconds(fn, reps, inner=3) / 1e9
                        out.append((f"{name} {phase} {layout}", mode, t, gf, 100 * gf / top))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, nargs="+", default=[1, torch.get_num_threads()])
    p.add_argument("--modes", nargs="+", choices=list(DTYPES), default=list(DTYPES))
    p.add_argument("--layouts", nargs="+", choices=("nchw", "nhwc"), default=["nchw", "nhwc"])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--workloads", nargs="+", choices=list(WORKLOADS),
                   default=list(ROOFLINE_WORKLOADS))
    args = p.parse_args()
    print(describe_machine("cpu"))
    print("| kernel or step | precision | threads | GFLOP/s | % of attainable |")
    print("|---|---|---|---|---|")
    for kernel, mode, t, gf, share in rows(sorted(set(args.threads)), args.modes,
                                               args.layouts, args.reps, args.workloads):
        print(f"| {kernel} | {mode} | {t} | {gf:.1f} | {share:.0f}% |")


if __name__ == "__main__":
    main()
