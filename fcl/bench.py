"""`fcl bench`: samples/s of a whole run (federation, metrics, evaluation included) against a
bare PyTorch loop that trains the same model on the same number of samples with the same batch
size, measured in one process, so the ratio is what the federation costs."""
from __future__ import annotations

import time

import torch
import torch.nn.functional as F

from fcl.config import RunConfig
from fcl.engine import prepare_data, resolve_device, run
from fcl.models.factory import build_model


def bare_loop(cfg: RunConfig, data, samples: int) -> float:
    """Train task 0's module for `samples` samples in plain minibatches; returns samples/s."""
    device = resolve_device(cfg.run.device)
    data = data.to(device)
    model = build_model(cfg.model, data.image_shape, data.classes_per_task(), cfg.seed).to(device)
    module = model.tasks[0]
    opt = torch.optim.SGD([p for p in module.parameters() if p.requires_grad], lr=cfg.client.lr,
                          momentum=cfg.client.momentum, foreach=True)
    td = data.tasks[0]
    g = torch.Generator().manual_seed(cfg.seed)
    model.train()
    done = 0
    _sync(device)
    t0 = time.perf_counter()
    while done < samples:
        perm = torch.randperm(len(td.train_y), generator=g).to(device)
        for idx in perm.split(cfg.client.batch_size):
            if done >= samples:
                break
            loss = F.cross_entropy(model(data.normalise(td.train_x[idx]), 0), td.train_y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            done += len(idx)
    _sync(device)
    return done / (time.perf_counter() - t0)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def bench_run_vs_bare(cfg: RunConfig, repeats: int = 1) -> str:
    if cfg.run.threads:
        torch.set_num_threads(cfg.run.threads)
    data = prepare_data(cfg)
    bare_loop(cfg, data, 4 * cfg.client.batch_size)        # warm-up: imports, allocator
    run_sps, bare_sps, samples = 0.0, 0.0, 0
    for _ in range(repeats):
        result = run(cfg, data=data)
        samples = result.summary["samples"]
        run_sps = max(run_sps, result.summary["samples_per_s"])
        bare_sps = max(bare_sps, bare_loop(cfg, data, samples))
    return (f"workload: {cfg.model.backbone}/{cfg.model.adapter}, {cfg.rounds} rounds, "
            f"{samples} training samples, batch {cfg.client.batch_size}, "
            f"{torch.get_num_threads()} threads, device {resolve_device(cfg.run.device)}\n"
            f"whole run (eval every {cfg.eval.every}): {run_sps:8.1f} samples/s\n"
            f"bare loop                : {bare_sps:8.1f} samples/s\n"
            f"ratio run / bare         : {run_sps / bare_sps:8.3f}")
