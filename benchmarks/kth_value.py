"""ZeroFL's top-K threshold: `fcl.federated.kth_value.kth_smallest` against `torch.kthvalue`, on
the tensors a ZeroFL run really thresholds.

    python benchmarks/kth_value.py [--preset flocora-cifar10-lowrank] [--sparsity 0.82 0.973]
                                   [--reps 5] [--steps 20] [--threads 1]

A short ZeroFL run of the preset (1 round, 50 images a class, one thread: a study's trial)
records the first tensor of every kind `top_k` sees (shape, layout, dtype, density: weights in
the sparse forward, input activations for the weight gradient) and how often each kind comes.
Each is then thresholded both ways, interleaved, best of `--reps`: top_k as it was
(torch.kthvalue of |t|, then torch.where) and as it is (`kth_smallest`), checked bit-equal.
A sparsity's summary line weighs each kind by its count (the top-K time of a round both ways),
then times the preset's ZeroFL training step (`fcl.bench.training_step`: one SGD step at the
client batch size, in the run's compute mode) with SWAT's top_k each way, interleaved, best of
`--steps`: what a trial's training gains (its evaluations run the sparse forward too, on the
weights only). Needs CIFAR-10 under the preset's `data.root`.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import fcl  # noqa: E402
import fcl.methods.zerofl.model as zerofl_model  # noqa: E402
from fcl.bench import describe_machine, training_step  # noqa: E402
from fcl.federated.pruning import top_k, top_k_count  # noqa: E402


def top_k_by_kthvalue(t: torch.Tensor, density: float) -> torch.Tensor:
    """top_k before `kth_smallest`: a full torch.kthvalue over |t|, then torch.where."""
    n = t.numel()
    k = top_k_count(n, density)
    if k >= n:
        return t
    mags = t.detach().abs().reshape(-1)
    threshold = torch.kthvalue(mags.float(), n - k + 1).values.to(mags.dtype)
    return torch.where(t.abs() >= threshold, t, torch.zeros_like(t))


def kind(t: torch.Tensor, density: float) -> tuple:
    layout = "nhwc" if t.dim() == 4 and t.is_contiguous(memory_format=torch.channels_last) \
        and not t.is_contiguous() else "dense"
    return tuple(t.shape), layout, str(t.dtype).removeprefix("torch."), round(density, 4)


def zerofl(sparsity: float, per_class: int, test_per_class: int) -> dict:
    return {"model.adapter": "zerofl", "model.zerofl_sparsity": sparsity,
            "model.zerofl_mask_ratio": 0.0, "rounds": 1, "data.train_per_class": per_class,
            "data.test_per_class": test_per_class}


def step_seconds(preset: str, sparsity: float, steps: int) -> tuple[float, float]:
    """Best time of one training step of the preset's ZeroFL model, (kthvalue, kth_smallest)."""
    cfg = fcl.configure(preset, zerofl(sparsity, 50, 10))
    step, _, _ = training_step(cfg, (3, 32, 32), [10])
    best = {top_k_by_kthvalue: float("inf"), top_k: float("inf")}
    try:
        for i in range(steps + 1):
            for threshold in best:               # interleaved
                zerofl_model.top_k = threshold
                t0 = time.perf_counter()
                step()
                if i:                            # the first is a warm-up
                    best[threshold] = min(best[threshold], time.perf_counter() - t0)
    finally:
        zerofl_model.top_k = top_k
    return best[top_k_by_kthvalue], best[top_k]


def recorded_calls(preset: str, sparsity: float) -> tuple[dict, Counter]:
    """{kind: first tensor of that kind}, {kind: calls} of one short training round."""
    first, calls = {}, Counter()

    def recording(t, density):
        key = kind(t, density)
        calls[key] += 1
        first.setdefault(key, (t.detach().clone(memory_format=torch.preserve_format), density))
        return top_k(t, density)

    zerofl_model.top_k = recording
    try:
        fcl.run(preset, zerofl(sparsity, 50, 10), progress=False)
    finally:
        zerofl_model.top_k = top_k
    return first, calls


def best_of(fn, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="flocora-cifar10-lowrank")
    p.add_argument("--sparsity", type=float, nargs="+", default=[0.82, 0.973])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=20)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    print(f"# {describe_machine('cpu')}; preset {args.preset}")
    print("| sparsity | shape | layout | dtype | density | calls | kthvalue (ms) | "
          "kth_smallest (ms) | ratio | bit-equal |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for sparsity in args.sparsity:
        first, calls = recorded_calls(args.preset, sparsity)
        old_total = new_total = 0.0
        for key, (t, density) in sorted(first.items(), key=lambda kv: -kv[1][0].numel()):
            old = new = float("inf")
            for _ in range(args.reps):       # interleaved, so a busy moment hits both
                old = min(old, best_of(lambda: top_k_by_kthvalue(t, density), 1))
                new = min(new, best_of(lambda: top_k(t, density), 1))
            want, got = top_k_by_kthvalue(t, density), top_k(t, density)
            equal = got.stride() == want.stride() and torch.equal(
                got.view(torch.int16 if got.dtype == torch.bfloat16 else torch.int32),
                want.view(torch.int16 if want.dtype == torch.bfloat16 else torch.int32))
            old_total += calls[key] * old
            new_total += calls[key] * new
            shape, layout, dtype, d = key
            print(f"| {sparsity:g} | {'x'.join(map(str, shape))} | {layout} | {dtype} | {d:g} | "
                  f"{calls[key]} | {old * 1e3:.2f} | {new * 1e3:.2f} | {old / new:.2f}x | "
                  f"{equal} |")
        old_step, new_step = step_seconds(args.preset, sparsity, args.steps)
        print(f"\nsparsity {sparsity:g}: top-K time of the recorded round, weighted by calls: "
              f"kthvalue {old_total:.2f} s, kth_smallest {new_total:.2f} s, "
              f"{old_total / new_total:.2f}x; a training step, best of {args.steps}: "
              f"{old_step * 1e3:.0f} ms against {new_step * 1e3:.0f} ms, "
              f"{old_step / new_step:.2f}x\n")


if __name__ == "__main__":
    main()
