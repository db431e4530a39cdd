"""Where one `optimizers` trial at `cifar10-local` spends its time, outside Ray: loading the
data set, cutting it into tasks and shards, `engine.start`, the rounds' training, evaluation
(as the engine runs it, and at batch 1024, the default before auto), and one checkpoint's save.

    python benchmarks/trial_phases.py [--threads 1] [--set KEY=VALUE ...]

One process, one thread by default (a study's layout: 2 trials x 1 CPU on 2 cores). Each phase
is timed once inside one run (evaluation: every evaluated round, both layouts, interleaved),
so compare shares, not absolute seconds, on a shared machine.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from fcl.cli_args import parse_sets  # noqa: E402
from fcl.data.datasets import load_dataset  # noqa: E402
from fcl.data.federated import build_federated_data  # noqa: E402
from fcl.engine import (broadcast, client_updates, evaluate, server_update, start,  # noqa: E402
                        evaluate_if_due)
from fcl.presets import study_preset  # noqa: E402

TRIAL = {"server.optimizer": "fedsgd", "server.lr": 1.0, "seed": 0}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE")
    args = p.parse_args()
    os.chdir(ROOT)
    torch.set_num_threads(args.threads)
    cfg = study_preset("cifar10-local", {**TRIAL, "run.threads": args.threads,
                                         **parse_sets(args.set)})
    t = {}
    t0 = time.perf_counter()
    ds = load_dataset(cfg.data.name, cfg.data.root, cfg.data)
    t["load data set (driver, once per study)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    data = build_federated_data(ds, cfg.data, cfg.seed)
    t["cut tasks and shards (per trial, cached per worker and seed)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    plan, state = start(cfg, data=data)
    t["engine.start"] = time.perf_counter() - t0
    train = ev = ev_1024 = 0.0
    for r in range(cfg.rounds):
        t0 = time.perf_counter()
        down = broadcast(plan, state, r)
        up = client_updates(plan, state, down, r)
        state, _ = server_update(plan, state, down, up, r)
        train += time.perf_counter() - t0
        if r in plan.due:
            t0 = time.perf_counter()
            state = evaluate_if_due(plan, state, r)
            ev += time.perf_counter() - t0
            t0 = time.perf_counter()
            evaluate(plan.model, plan.data, 1024, plan.trainer.forward,
                     plan.eval_channels_last)
            ev_1024 += time.perf_counter() - t0
    t["training, all rounds"] = train
    t[f"evaluation x{len(plan.due)} (batch {plan.eval_batch}, NHWC {plan.eval_channels_last})"] \
        = ev
    t[f"evaluation x{len(plan.due)} at batch 1024 (eval.batch_size's old default)"] = ev_1024
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        torch.save((state, []), os.path.join(d, "run_state.pt"))
        t["one checkpoint's torch.save (x12 a trial at checkpoint_every 2)"] = \
            time.perf_counter() - t0
    print(f"cifar10-local trial {TRIAL}, precision {plan.precision}, threads {args.threads}, "
          f"CPU {torch.backends.cpu.get_cpu_capability()}, load {os.getloadavg()[0]:.1f}; "
          f"ACC {float(state.accuracy[:, -1].mean()):.2f}")
    for k, v in t.items():
        print(f"  {v:7.2f} s  {k}")


if __name__ == "__main__":
    main()
