"""`fcl pretrain`: train a backbone on one data set and save it as a `model.weights` checkpoint,
so a user without ImageNet weights can pretrain on one data set and run FCL on another:

    fcl pretrain --preset local --set data.name=cifar10 data.root=~/data model.backbone=resnet18 \\
        model.stem=imagenet model.norm=batch model.input_size=72 data.augment=true \\
        --epochs 30 --out r18-cifar10.pt
    fcl run --preset paper-cifar100 --set data.root=~/data model.pretrained=none \\
        model.weights=r18-cifar10.pt

The backbone (`model.backbone`, `.stem`, `.norm`, `.width`, `.input_size`; starting from
`model.pretrained` / `model.weights` when set) and one linear head over all classes of
`data.name` train together on its whole training set (`data.train_per_class` caps it;
`data.augment` applies), with SGD (momentum 0.9, weight decay, cosine learning rate over the
epochs) and BatchNorm in train mode. The checkpoint holds the backbone's state_dict (BatchNorm
statistics included), its architecture (checked when loaded) and how it was trained (no wall
time: the file's bytes depend only on what it learned); the head is dropped. The same config,
seed and `run.threads` give the same file, byte for byte, on the same device.

`--skip-per-class N` leaves out the first N training and test images of every class: the ones an
FCL run with `data.train_per_class` and `data.test_per_class` <= N uses (`fcl.data.federated`
keeps the first per class), so a backbone pretrained on the rest of the same data set never saw
an FCL task's image (`cifar10-local`: 300 / 100 per class; `fcl/weights/README.md`).
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import replace

import torch
import torch.nn.functional as F
from torch import nn

from fcl.cli_args import (
    EXIT_WRITE_FAILED,
    add_config_arguments,
    check_device,
    check_output,
    config_from_args,
    write_failed,
)
from fcl.compute_mode import eval_batch_size, largest_activation_bytes
from fcl.config import ClientConfig, ConfigError, RunConfig
from fcl.data.federated import _first_per_class as first_per_class
from fcl.data.image_dataset import ImageDataset
from fcl.models.backbone import Backbone, build_backbone
from fcl.models.pretrained import architecture, load_pretrained_, save_checkpoint
from fcl.seeding import derive_seed, generator


def without_first_per_class(ds: ImageDataset, skip: int) -> ImageDataset:
    """`ds` less the first `skip` images of every class of both splits (in order), by the same
    rule that picks an FCL run's images, so the two are disjoint by index."""
    if skip <= 0:
        return ds

    def rest(y: torch.Tensor) -> torch.Tensor:
        keep = torch.ones(len(y), dtype=torch.bool)
        keep[first_per_class(y, skip)] = False
        return keep.nonzero().flatten()
    tr, te = rest(ds.train_y), rest(ds.test_y)
    return replace(ds, train_x=ds.train_x[tr], train_y=ds.train_y[tr], test_x=ds.test_x[te],
                   test_y=ds.test_y[te])


def pretrain(cfg: RunConfig, epochs: int, lr: float, batch_size: int, weight_decay: float,
             log=print, skip_per_class: int = 0) -> tuple[Backbone, dict]:
    """Train `cfg.model`'s backbone + a linear head on `cfg.data` (less the first
    `skip_per_class` images of every class); (backbone, report)."""
    from fcl.data.datasets import load_dataset
    from fcl.data.federated import build_federated_data
    from fcl.engine import resolve_device
    from fcl.federated.client import sgd_step_, train_epoch
    t0 = time.perf_counter()
    device = resolve_device(cfg.run.device)
    if cfg.run.threads:
        torch.set_num_threads(cfg.run.threads)
    ds = load_dataset(cfg.data.name, cfg.data.root, cfg.data)
    ds = replace(without_first_per_class(ds, skip_per_class), task_classes=None)  # one head
    one_task = replace(cfg.data, num_tasks=1, num_clients=1, partition="iid")
    data = build_federated_data(ds, one_task, cfg.seed).to(device)
    td = data.tasks[0]
    in_channels = data.image_shape[0]
    backbone = build_backbone(cfg.model.backbone, in_channels, cfg.model.norm, cfg.model.width,
                              cfg.seed, cfg.model.stem, cfg.model.input_size,
                              cfg.model.norm_groups)
    load_pretrained_(backbone, cfg.model, in_channels)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(derive_seed(cfg.seed, "pretrain_head"))
        head = nn.Linear(backbone.out_channels, len(td.classes))
    backbone, head = backbone.to(device).requires_grad_(True), head.to(device)
    params = list(backbone.parameters()) + list(head.parameters())
    gen = generator(cfg.seed, "pretrain")
    augment = data.augmenter(gen)
    momentum_bufs: list[torch.Tensor] = []
    losses = []

    def loss(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(head(backbone.features(x)), y)

    for epoch in range(epochs):
        step_cfg = ClientConfig(lr=lr * 0.5 * (1 + math.cos(math.pi * epoch / epochs)),
                                momentum=0.9, weight_decay=weight_decay)
        backbone.train()
        loss_sum = torch.zeros((), device=device)
        steps = train_epoch(data, 0, td.shards[0], batch_size, gen, augment, loss, params,
                            lambda ps, gs: sgd_step_(ps, gs, momentum_bufs, step_cfg), loss_sum)
        losses.append(float(loss_sum) / max(steps, 1))         # one sync per epoch
        log(f"epoch {epoch + 1:>3}/{epochs} lr {step_cfg.lr:.4f} loss {losses[-1]:.4f}")
    backbone.eval().requires_grad_(False)
    report = {"data.name": cfg.data.name, "data.root": cfg.data.root, "seed": cfg.seed,
              "epochs": epochs, "lr": lr, "batch_size": batch_size,
              "weight_decay": weight_decay, "input_size": cfg.model.input_size,
              "skip_per_class": skip_per_class, "threads": cfg.run.threads,
              "train_loss": losses[-1] if losses else math.nan,
              "test_acc": held_out_accuracy(backbone, head, data, eval_batch_size(
                  cfg.eval.batch_size, device, lambda: largest_activation_bytes(
                      lambda x: head(backbone.features(data.normalise(x))),
                      data.tasks[0].test_x))),
              "classes": len(td.classes), "train_images": len(td.train_y),
              "wall_s": time.perf_counter() - t0}
    return backbone.cpu(), report


@torch.inference_mode()
def held_out_accuracy(backbone: Backbone, head: nn.Module, data, batch_size: int) -> float:
    """Percent of the one task's test images the backbone + head classify right."""
    td = data.tasks[0]
    hits = torch.zeros((), dtype=torch.long, device=td.test_y.device)
    for start in range(0, len(td.test_y), batch_size):
        x = data.normalise(td.test_x[start:start + batch_size])
        hits += (head(backbone.features(x)).argmax(1) == td.test_y[start:start + batch_size]).sum()
    return float(hits) * 100.0 / max(len(td.test_y), 1)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_config_arguments(p)
    p.add_argument("--out", required=True, metavar="FILE.pt", help="checkpoint to write")
    p.add_argument("--epochs", type=int, default=10, help="epochs over the training set")
    p.add_argument("--lr", type=float, default=0.1, help="peak SGD learning rate (cosine)")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--skip-per-class", type=int, default=0, metavar="N",
                   help="leave out the first N training and test images of every class (those "
                        "FCL runs with data.train_per_class <= N use)")


def checkpoint_bytes(cfg: RunConfig) -> int:
    """About the size of the checkpoint `cfg` gives: float32 parameters and buffers (built on
    the CPU, untrained: ~0.1 s), plus room for the architecture and report."""
    net = build_backbone(cfg.model.backbone, 3, cfg.model.norm, cfg.model.width, cfg.seed,
                         cfg.model.stem, cfg.model.input_size, cfg.model.norm_groups)
    return 4 * sum(t.numel() for t in net.state_dict().values()) + (1 << 16)


MAX_SKIP_PER_CLASS = 10_000


def main(args: argparse.Namespace) -> int:
    for flag, value in (("--epochs", args.epochs), ("--lr", args.lr),
                        ("--batch-size", args.batch_size)):
        if not value > 0 or not math.isfinite(value):
            raise ConfigError(flag, value, "out of range", "> 0")
    if not (args.weight_decay >= 0 and math.isfinite(args.weight_decay)):
        raise ConfigError("--weight-decay", args.weight_decay, "out of range", ">= 0")
    # past the largest class of any data set fcl reads, nothing would be left to train on
    if not 0 <= args.skip_per_class <= MAX_SKIP_PER_CLASS:
        raise ConfigError("--skip-per-class", args.skip_per_class, "out of range",
                          f"0 <= N <= {MAX_SKIP_PER_CLASS}")
    cfg = config_from_args(args)
    check_device(cfg)
    check_output("--out", args.out, "file", checkpoint_bytes(cfg))    # before the training
    backbone, report = pretrain(cfg, args.epochs, args.lr, args.batch_size, args.weight_decay,
                                log=lambda line: print(line, file=sys.stderr, flush=True),
                                skip_per_class=args.skip_per_class)
    done = (f"test accuracy {report['test_acc']:.2f}% over {report['classes']} classes after "
            f"{args.epochs} epochs ({report['wall_s']:.1f} s)")
    try:
        meta = {k: v for k, v in report.items() if k != "wall_s"}     # same run, same bytes
        sha = save_checkpoint(args.out, backbone,
                              architecture(cfg.model, backbone.stem[0].in_channels), meta)
    except OSError as e:        # checked writable before the training: the disk filled since
        print(done, flush=True)
        print(write_failed("--out", args.out, e), file=sys.stderr)
        return EXIT_WRITE_FAILED
    print(f"{done}; wrote {args.out} sha256={sha[:16]}")
    return 0
