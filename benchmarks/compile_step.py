"""Whether `torch.compile` pays for a trial's steps: a workload's training step and evaluation
step eager and compiled (inductor), the compile's cost on a cold cache and on a warm one (what
a second trial on the same node pays when the trials share inductor's cache), and the steps a
trial must take before the compile has paid for itself.

    python benchmarks/compile_step.py [--workloads nettailor resnet8-lora32]
        [--modes fp32 bf16] [--layouts nhwc] [--threads 1] [--reps 5] [--study-trials 36]

Each (workload, mode, layout) is measured in fresh processes: one with an empty inductor cache
(`TORCHINDUCTOR_CACHE_DIR` a new folder), then one more on the cache it filled. The workloads
and steps are `benchmarks/roofline.py`'s (random images of the data set's shape at the preset's
batch size; 512 for evaluation); every steady time is the best of `--reps` timings of 3 steps,
after the warm-up calls that compile.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))


def measure(workload: str, mode: str, layout: str, threads: int, reps: int) -> dict:
    """In this process: eager and compiled seconds per step, and the compiled steps' first
    calls (their compile), for training and evaluation."""
    import torch

    from roofline import best_seconds, workload_steps
    torch.set_num_threads(threads)
    out = {}
    for phase, eager in zip(("train", "eval"), workload_steps(workload, mode, layout)):
        out[f"{phase}_eager_s"] = best_seconds(eager, reps, inner=3)
    torch._dynamo.reset()
    train, evaluate = workload_steps(workload, mode, layout, compiled=True)
    for phase, fn in (("train", train), ("eval", evaluate)):
        t0 = time.perf_counter()
        fn()
        fn()                        # a second call: a recompile for train/eval mode shows here
        out[f"{phase}_first_s"] = time.perf_counter() - t0
        out[f"{phase}_compiled_s"] = best_seconds(fn, reps, inner=3)
    return out


def in_fresh_process(args: list[str], cache: str) -> dict:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
    done = subprocess.run([sys.executable, __file__, "--one", *args], capture_output=True,
                          text=True, env=env, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"{args}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def row(workload: str, mode: str, layout: str, cold: dict, warm: dict) -> str:
    cells = []
    for phase in ("train", "eval"):
        eager, comp = cold[f"{phase}_eager_s"], min(cold[f"{phase}_compiled_s"],
                                                    warm[f"{phase}_compiled_s"])
        first_cold, first_warm = cold[f"{phase}_first_s"], warm[f"{phase}_first_s"]
        gain = eager - comp
        pays = (f"{first_warm / gain:,.0f}" if gain > 0 else "never")
        cells.append(f"{eager * 1e3:.1f} | {comp * 1e3:.1f} | {eager / comp:.2f}x | "
                     f"{first_cold:.1f} | {first_warm:.1f} | {pays}")
    return f"| {workload} | {mode} | {layout} | " + " | ".join(cells) + " |"


def trial_work(workload: str) -> tuple[float, float, int]:
    """(training steps, evaluation batches of 512, tasks) of one trial of the workload's preset
    on CIFAR-10 (5,000 training and 1,000 test images a class): every evaluation scores every
    task, an upper bound on what early evaluations score."""
    from roofline import EVAL_BATCH, WORKLOADS

    from fcl.federated.participation import training_samples
    from fcl.presets import preset
    name, own = WORKLOADS[workload]
    cfg = preset(name, own)
    classes = 10 // cfg.data.num_tasks
    per_task = min(cfg.data.train_per_class or 5000, 5000) * classes
    steps = training_samples(cfg, per_task) / cfg.client.batch_size
    evals = cfg.rounds // cfg.eval.every * cfg.data.num_tasks * 1000 * classes / EVAL_BATCH
    return steps, evals, cfg.data.num_tasks


def trial_row(workload: str, mode: str, layout: str, cold: dict, warm: dict, trials: int,
              concurrent: int) -> str:
    """What compiling costs and saves over one trial: a graph per task and phase (train, eval),
    compiled on a cold cache (the study's first trial on a node) or a warm one (the others)."""
    steps, evals, tasks = trial_work(workload)
    saved = sum(n * (cold[f"{ph}_eager_s"] - min(cold[f"{ph}_compiled_s"],
                                                  warm[f"{ph}_compiled_s"]))
                for ph, n in (("train", steps), ("eval", evals)))
    cost = {c: tasks * (r["train_first_s"] + r["eval_first_s"])
            for c, r in (("cold", cold), ("warm", warm))}
    eager = steps * cold["train_eager_s"] + evals * cold["eval_eager_s"]
    # a study: its first `concurrent` trials start together on an empty cache, the rest warm
    first = min(concurrent, trials)
    study = first * (eager - saved + cost["cold"]) + (trials - first) * (eager - saved +
                                                                         cost["warm"])
    return (f"| {workload} | {mode} | {layout} | {steps:,.0f} | {evals:,.0f} | {tasks} | "
            f"{eager:,.0f} | {saved:,.0f} | {cost['cold']:,.0f} | {cost['warm']:,.0f} | "
            f"{trials * eager / study:.2f}x |")


def main() -> None:
    from roofline import DTYPES, WORKLOADS
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workloads", nargs="+", choices=list(WORKLOADS),
                   default=["nettailor", "resnet8-lora32"])
    p.add_argument("--modes", nargs="+", choices=list(DTYPES), default=list(DTYPES))
    p.add_argument("--layouts", nargs="+", choices=("nchw", "nhwc"), default=["nhwc"])
    p.add_argument("--threads", type=int, default=1, help="torch threads (a study's trial: 1)")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--study-trials", type=int, default=36,
                   help="trials of the study priced in the last column (default: the "
                        "optimizers grid's 36)")
    p.add_argument("--concurrent", type=int, default=2,
                   help="trials at a time, the first of which compile on an empty cache")
    p.add_argument("--one", nargs=5, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        w, m, lay, t, r = args.one
        print(json.dumps(measure(w, m, lay, int(t), int(r))))
        return
    from fcl.bench import describe_machine
    print(describe_machine("cpu") + f"; {args.threads} thread(s); torch.compile, inductor")
    print("\nms per step (eager, compiled: steady state), their ratio, the first two compiled "
          "calls' seconds (the compile) on a cold and on a warm inductor cache, and the steps "
          "after which a warm-cache compile has paid for itself\n")
    head = " | ".join(f"{ph} {c}" for ph in ("train", "eval") for c in (
        "eager ms", "compiled ms", "speed-up", "compile s cold", "compile s warm", "pays after"))
    print(f"| workload | precision | layout | {head} |\n|" + "---|" * 15)
    measured = []
    for w in args.workloads:
        for m in args.modes:
            for lay in args.layouts:
                with tempfile.TemporaryDirectory(prefix="fcl-inductor-") as cache:
                    one = [w, m, lay, str(args.threads), str(args.reps)]
                    cold = in_fresh_process(one, cache)
                    warm = in_fresh_process(one, cache)
                measured.append((w, m, lay, cold, warm))
                print(row(w, m, lay, cold, warm), flush=True)
    print("\nOne trial of each workload's preset: its training steps and evaluation batches, "
          "its tasks (a compiled graph per task and phase), seconds of steps eager, seconds "
          "compiling saves in them, seconds its compiles take on a cold and on a warm cache; "
          f"and a study of {args.study_trials} such trials, {args.concurrent} at a time sharing "
          "one cache, compiled against eager (trial-seconds; >1: compiled is faster)\n")
    print("| workload | precision | layout | train steps | eval batches | tasks | eager s | "
          "saved s | compile s cold | compile s warm | study speed-up |\n|" + "---|" * 11)
    for w, m, lay, cold, warm in measured:
        print(trial_row(w, m, lay, cold, warm, args.study_trials, args.concurrent))


if __name__ == "__main__":
    main()
