"""Named starting points. Presets change sizes and data, never the meaning of a key.

| preset             | what                                                                   |
|--------------------|------------------------------------------------------------------------|
| smoke              | bundled Split Fashion-MNIST (200 images/class), T=5, N=3, R=10, FedAvg |
|                    | (FedSGD eta 1): ACC ~80% in under a minute on 2 CPU cores              |
| local              | the bundled set, T=5, N=5, R=50, K=2: a meaningful run on 2 CPU cores  |
| paper              | Table 2 on its own data set, CIFAR-100 (the same as paper-cifar100)    |
| paper-cifar100     | Table 2: CIFAR-100, 10 tasks x 10 classes, ImageNet ResNet-18 at 72x72 |
| paper-miniimagenet | Table 2 on MiniImageNet: 10 tasks x 10 classes, 84x84                  |
| paper-decathlon    | Table 2 on the Visual Decathlon: 10 domains, 72x72, evaluated on val   |
| cifar10-local      | Split CIFAR-10 (5 x 2) at study size for 2 CPU cores (data.root=data)  |
| cifar10-gpu        | Split CIFAR-10, 1000 images/class, R=25: the studies on one GPU        |
| flocora-cifar10-*  | FLoCoRA's recipe on CIFAR-10 (T=1) at those two sizes                  |
| flocora-cifar10-lowrank | FLoCoRA on CIFAR-10 at width 64, where LoRA r 32 is low-rank      |

`cifar10-local-pretrained` is `cifar10-local` on a frozen backbone that `fcl pretrain` made from
images no FCL task uses, shipped in the package (fcl/weights/README.md): closer to the paper's
ImageNet-pretrained backbone than a random one (results/README.md, "Which frozen backbone").
`cifar10-drift` is that preset at R = 50 on Dirichlet(0.5) client shards, the calibrated regime
where phase boundaries cost accuracy most often (results/README.md, "A regime where drift shows").

A study (`studies/*.py`) takes a *study preset* (`STUDY_PRESETS`, one per run preset): the run
preset its trials start from, made smaller where a study of dozens of trials has to fit a laptop,
the seeds each grid point runs by default, and, for FLoCoRA's studies, the run preset of
FLoCoRA's recipe at that size.

Table 2 of the FCL paper: ResNet-18 backbone (ImageNet-pretrained, frozen: the NetTailor
setting), T=10, N=5 IID clients, R=300 (Q=30), K=2, client SGD lr 0.05, FedAdam with server lr
0.5, and the asynchronous task order the paper studies. The paper states no batch size (these
presets use 32) and no augmentation (off). The paper presets need the data set under
`data.root` and torchvision's ImageNet weights (downloaded, or `model.weights=PATH`; or
pretrain your own with `fcl pretrain`, see fcl/pretrain.py). `model.input_size=72` feeds
CIFAR's 32x32 images to the ImageNet backbone at 72x72, the size the Decathlon (and NetTailor)
use for CIFAR-100; MiniImageNet (84) and the Decathlon (72) run at their own size.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fcl.config import ConfigError, RunConfig, check_read, with_overrides
from fcl.shipped_weights import shipped

TABLE2 = {
    "rounds": 300, "data.num_tasks": 10, "data.num_clients": 5, "data.partition": "iid",
    "model.backbone": "resnet18", "model.stem": "imagenet", "model.norm": "batch",
    "model.pretrained": "imagenet", "client.lr": 0.05, "client.local_epochs": 2,
    "client.batch_size": 32, "server.optimizer": "fedadam", "server.lr": 0.5,
    "schedule.order": "async", "eval.every": 1,
}

# FLoCoRA (its Section IV): a plain FL run is T = 1. ResNet-8 with GroupNorm(2, C), LoRA
# r = 32, alpha = 512 on every conv, norms and FC trained; 100 clients, 10% sampled, 100 rounds,
# batch 32, SGD lr 0.01 momentum 0.9, 5 local epochs, Flower's latent-Dirichlet partition with
# alpha 0.5 (equal shards, 500 CIFAR-10 images each), FedAvg (FedSGD with server lr 1 on the
# sample-weighted mean: the new state is the mean of the clients' dequantized values, as
# `compression.payload=values` sends them). `model.adapter=full` is its FedAvg baseline,
# `compression.bits=8|4|2` its quantized rows. Its CIFAR-10 is torchvision's (data.root=DIR).
FLOCORA = {
    "rounds": 100, "data.num_tasks": 1, "data.num_clients": 100, "data.partition": "lda",
    "data.alpha": 0.5, "participation.fraction": 0.1, "model.backbone": "resnet8",
    "model.norm": "group", "model.norm_groups": 2, "model.adapter": "lora",
    "model.lora_rank": 32, "model.lora_alpha": 512.0, "client.lr": 0.01, "client.momentum": 0.9,
    "client.local_epochs": 5, "client.batch_size": 32, "server.optimizer": "fedsgd",
    "server.lr": 1.0, "server.aggregate": "mean", "compression.payload": "values",
    "schedule.order": "sync", "eval.every": 1,
}
# What FLoCoRA's studies fix: its recipe without the sizes (and the LDA alpha: Table IV's 1.0
# where a CPU's few rounds need it), which come from the preset
FLOCORA_SIZES = ("rounds", "data.num_clients", "participation.fraction", "model.backbone",
                 "client.local_epochs", "eval.every", "data.alpha")
FLOCORA_RECIPE = {k: v for k, v in FLOCORA.items() if k not in FLOCORA_SIZES}

# How resnet_tiny at width 16 (the NetTailor presets' model) computes fastest on a CPU: fp32, in
# the layout and evaluation batch of the device (the defaults, run.channels_last=auto and
# eval.batch_size=auto). On the AVX-512 CPU with native bf16 measured (docs/benchmarks.md),
# NetTailor at `local` trained at 1.89x fp32 NCHW in fp32 + NHWC against 1.53x in bf16 + NHWC,
# and the 36-trial optimizers study at cifar10-local ran in 3.6 min in fp32 + NHWC against
# bf16 + NHWC's 3.9 and bf16 + NCHW's 7.1. Larger models (ResNet-8: bf16 + NHWC 1.95-2.26x fp32)
# keep the default run.precision=auto.
TINY_FP32 = {"run.precision": "fp32"}

# The FCL studies on Split CIFAR-10 (5 tasks x 2 classes): data.root=data holds torchvision's
# cifar-10-batches-py (where its download with root=data puts it). The studies stored before
# these settings ran bf16 (auto), NCHW, eval batch 1024 (results/README.md, "Rerunning a study
# as stored").
CIFAR10 = {"data.name": "cifar10", "data.root": "data", "data.num_tasks": 5,
           "data.num_clients": 5, "client.local_epochs": 2, "server.tau": 0.1, "eval.every": 5,
           **TINY_FP32}

# Backbones `fcl pretrain` made, shipped in the package (fcl/weights/README.md: the command of
# each); a preset names one as `fcl:NAME` (fcl/shipped_weights.py), the same on every machine.
CIFAR10_BACKBONE = shipped("resnet_tiny-cifar10_rest.pt")     # cifar10-local-pretrained's
FASHION_BACKBONE = shipped("resnet_tiny-fashion_mnist.pt")    # the smoke studies'


PRESETS: dict[str, dict] = {
    "flocora": {**FLOCORA, "data.name": "cifar10"},
    # The same recipe at bundled-data scale: 10-class Fashion-MNIST (60 train / 50 test images
    # per class), 10 clients, half sampled, 20 rounds of 2 local epochs, and resnet_tiny at width
    # 32 (32-64-128 channels; ResNet-8's layout with a stride-2 first block, ~4x cheaper).
    "flocora-local": {
        **FLOCORA, "rounds": 20, "data.num_clients": 10, "participation.fraction": 0.5,
        "data.train_per_class": 60, "data.test_per_class": 50, "model.backbone": "resnet_tiny",
        "model.width": 32, "client.local_epochs": 2, "eval.every": 5,
    },
    # Split CIFAR-10 (torchvision's cifar-10-batches-py under data.root) at study sizes: 5 tasks
    # x 2 classes, 5 IID clients, 300 training / 100 test images per class, R = 25, K = 2; a
    # trial takes ~30 s on one CPU core. FedAdam eta 0.5 with tau = 0.1: at the default tau =
    # 1e-3 it stays at chance on these tasks (ACC 51.0 at seed 0, vs 66.0 with tau 0.1; FedSGD
    # eta 1: 63.9). cifar10-gpu: the same recipe on 1000 training / 200 test images per class
    # (3.3x the training samples), meant for one GPU machine running every study (studies/gpu;
    # not yet timed on a GPU). The GPU presets batch clients where they run on a GPU
    # (run.client_batching=auto: on CUDA, off on a CPU, where it lost; docs/benchmarks.md).
    "cifar10-local": {**CIFAR10, "rounds": 25, "data.train_per_class": 300,
                      "data.test_per_class": 100},
    # cifar10-local on a frozen pretrained backbone (results/README.md, "Which frozen
    # backbone": the calibration of random vs pretrained backbones that chose this one)
    "cifar10-local-pretrained": {**CIFAR10, "rounds": 25, "data.train_per_class": 300,
                                 "data.test_per_class": 100,
                                 "model.weights": CIFAR10_BACKBONE},
    # cifar10-local-pretrained with R = 50 (Q = 10) on Dirichlet(0.5) shards: the regime of the
    # calibration (results/README.md, "A regime where drift shows") in which phase boundaries
    # cost a trained task more than 5 points most often at a useful ACC (5 of 24 boundaries,
    # ACC ~72; IID at R = 25 or 50: 1 and 0 of 24)
    "cifar10-drift": {**CIFAR10, "rounds": 50, "data.train_per_class": 300,
                      "data.test_per_class": 100, "data.partition": "dirichlet",
                      "data.alpha": 0.5, "model.weights": CIFAR10_BACKBONE},
    "cifar10-gpu": {**CIFAR10, "rounds": 25, "data.train_per_class": 1000,
                    "data.test_per_class": 200, "run.precision": "auto",
                    "run.client_batching": "auto"},
    # FLoCoRA on CIFAR-10 (10 classes, T = 1). flocora-cifar10-local: the calibrated CPU regime
    # (results/README.md, "A FLoCoRA regime that learns on a CPU"): all 50,000 training images
    # on 10 LDA(1.0) clients of 5,000 (Table IV's LDA), 2 sampled a round, R = 40 of K = 1,
    # resnet_tiny at width 16 in fp32 (faster than bf16 at that width), the whole test set,
    # the recipe's SGD lr 0.01: full-model FedAvg 57.6% at seed 0, LoRA r = 32 53.8%, ~3 min a
    # run on one core (LDA 0.5: FedAvg 45.5%; the earlier 300 images per class: 23%). On a
    # GPU, FLoCoRA's ResNet-8 and 100 clients of 500 images (10% a round), at K = 2 for 20
    # rounds.
    "flocora-cifar10-local": {**FLOCORA, "rounds": 40, "data.name": "cifar10",
                              "data.root": "data", "data.num_clients": 10, "data.alpha": 1.0,
                              "participation.fraction": 0.2, "data.train_per_class": 5000,
                              "data.test_per_class": 1000, "model.backbone": "resnet_tiny",
                              "model.width": 16, "client.local_epochs": 1, "eval.every": 10,
                              **TINY_FP32},
    # flocora-cifar10-lowrank: the same data and recipe on resnet_tiny at width 64 (ResNet-8's
    # 64/128/256 channels, a stride-2 first block: about a quarter of its multiply-adds), where
    # LoRA is low-rank: at r 32 a message is 4.70x / 17.31x / 31.81x / 54.71x smaller than
    # FedAvg's at 32 / 8 / 4 / 2 bits (`fcl params`), within 3% of FLoCoRA's ResNet-8 (4.8 /
    # 17.7 / 32.6 / 56.3), where width 16 gives 1.18x at FP (its adapters outgrow its 16-channel
    # kernels). R = 40 as at width 16 (400,000 training samples): full-model FedAvg 64.0 /
    # 57.6 / 60.3% at seeds 0-2, 4.4 min a run on 2 threads, LoRA about twice that (at R = 20
    # seed 1 stayed at 37.1%; results/README.md, "A low-rank FLoCoRA regime");
    # run.precision=auto (bf16 where the CPU has it natively)
    "flocora-cifar10-lowrank": {**FLOCORA, "rounds": 40, "data.name": "cifar10",
                                "data.root": "data", "data.num_clients": 10, "data.alpha": 1.0,
                                "participation.fraction": 0.2, "data.train_per_class": 5000,
                                "data.test_per_class": 1000, "model.backbone": "resnet_tiny",
                                "model.width": 64, "client.local_epochs": 1, "eval.every": 10},
    "flocora-cifar10-gpu": {**FLOCORA, "rounds": 20, "data.name": "cifar10", "data.root": "data",
                            "client.local_epochs": 2, "eval.every": 5,
                            "run.client_batching": "auto"},
    # FedSGD eta 1 (FedAvg): at this size the default FedAdam (tau 1e-3) stays at chance (ACC
    # 51.2% at seed 0); at seeds 0 / 1 / 2 FedAdam tau 0.1 reached 64.0 / 71.0 / 83.0%, FedSGD
    # eta 1 79.2 / 83.0 / 79.6% (mean 80.6%), 17-30 s a run on 2 CPU cores shared with others.
    "smoke": {
        "rounds": 10, "data.num_tasks": 5, "data.num_clients": 3,
        "data.train_per_class": 200, "data.test_per_class": 50,
        "client.local_epochs": 2, "eval.every": 1, "server.optimizer": "fedsgd",
        "server.lr": 1.0, **TINY_FP32,
    },
    # bf16 passed the accuracy check at `local` and `flocora-local` (docs/benchmarks.md); at
    # `local`'s width 16, fp32 + NHWC was faster still (TINY_FP32)
    "local": {
        "rounds": 50, "data.num_tasks": 5, "data.num_clients": 5,
        "client.local_epochs": 2, "eval.every": 5, **TINY_FP32,
    },
    # Table 2 as printed: its data set is CIFAR-100, split into 10 tasks of 10 classes.
    "paper": {**TABLE2, "data.name": "cifar100", "model.input_size": 72},
    "paper-cifar100": {**TABLE2, "data.name": "cifar100", "model.input_size": 72},
    "paper-miniimagenet": {**TABLE2, "data.name": "miniimagenet"},
    "paper-decathlon": {**TABLE2, "data.name": "decathlon"},
}


def preset(name: str, overrides: dict | None = None, check: bool = True) -> RunConfig:
    """The preset's config with `overrides` (the keys a user gives: one its method does not
    read is refused, `fcl.config.check_read`; a study checks its `--set` against its trials
    instead, `check` False)."""
    if name not in PRESETS:
        raise ConfigError("--preset", name, "unknown preset", ", ".join(PRESETS))
    cfg = with_overrides(with_overrides(RunConfig(), PRESETS[name]), overrides or {})
    if check:
        check_read(cfg, overrides or {})
    return cfg


@dataclass(frozen=True)
class StudyPreset:
    """What `--preset NAME` of a study means: the run preset its trials start from, the study
    sizes laid over it, the seeds of a grid point, and the run preset a family of studies
    (FLoCoRA's) starts from instead, at that preset's own sizes."""
    run: str                                               # a key of PRESETS
    sizes: dict[str, Any] = field(default_factory=dict)    # applied before the study's keys
    seeds: int = 3                                         # --seeds default of a grid study
    families: dict[str, str] = field(default_factory=dict)    # family -> its run preset
    what: str = ""                                         # for --help


# `smoke` and `local` trials are smaller than `fcl run` at the same preset. `smoke`: 10 rounds
# on 20 training / 20 test images per class over the shipped Fashion-MNIST backbone (in-domain
# for the bundled Fashion-MNIST tasks, so a few seconds teach the task modules): every cell of
# `studies/ablation_lr.py --preset smoke` ended at 61.5-99.5% ACC (chance 50), 6-11 s a trial;
# on a random width-8 backbone at 5 rounds 8 of its 12 cells stayed at 50.0% (results/README.md,
# "Smoke studies"). `local`: half the rounds of `fcl run --preset local` on a third of its
# training images, so a 36-trial study takes about 20 minutes on 2 CPU cores. Every other run
# preset is a study preset as it is.
STUDY_PRESETS: dict[str, StudyPreset] = {
    "smoke": StudyPreset("smoke", {"rounds": 10, "data.train_per_class": 20,
                                   "data.test_per_class": 20,
                                   "model.weights": FASHION_BACKBONE},
                         seeds=1, what="seconds"),
    "local": StudyPreset("local", {"rounds": 25, "data.train_per_class": 200,
                                   "data.test_per_class": 100},
                         families={"flocora": "flocora-local"}, what="a laptop"),
    "paper": StudyPreset("paper", families={"flocora": "flocora"}, what="Table 2"),
    "cifar10-local": StudyPreset("cifar10-local",
                                 families={"flocora": "flocora-cifar10-local"},
                                 what="Split CIFAR-10, 2 CPU cores"),
    # FLoCoRA's studies keep its random frozen backbone (its premise), as at cifar10-local
    "cifar10-local-pretrained": StudyPreset("cifar10-local-pretrained",
                                            families={"flocora": "flocora-cifar10-local"},
                                            what="cifar10-local, pretrained backbone"),
    "cifar10-drift": StudyPreset("cifar10-drift", seeds=5,
                                 families={"flocora": "flocora-cifar10-local"},
                                 what="cifar10-local-pretrained, R = 50, Dirichlet 0.5"),
    "cifar10-gpu": StudyPreset("cifar10-gpu", families={"flocora": "flocora-cifar10-gpu"},
                               what="Split CIFAR-10, one GPU"),
    **{name: StudyPreset(name) for name in PRESETS if name not in (
        "smoke", "local", "paper", "cifar10-local", "cifar10-local-pretrained",
        "cifar10-drift", "cifar10-gpu")},
}
STUDY_FAMILIES = frozenset(f for p in STUDY_PRESETS.values() for f in p.families)


def study_preset(name: str, overrides: dict | None = None, family: str | None = None
                 ) -> RunConfig:
    """The base config of a study at study preset `name`: its run preset (the family's own, at
    its sizes, where the family has one), the study sizes, then `overrides`."""
    if name not in STUDY_PRESETS:
        raise ConfigError("--preset", name, "unknown preset", ", ".join(STUDY_PRESETS))
    p = STUDY_PRESETS[name]
    if family in p.families:
        return preset(p.families[family], overrides, check=False)
    return preset(p.run, {**p.sizes, **(overrides or {})}, check=False)
