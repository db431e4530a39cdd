"""The data and model sections of a run's config (`data.*`, `model.*`), the two with most keys;
`fcl.config` holds the others and `RunConfig`."""
from __future__ import annotations

import math
from dataclasses import dataclass, fields

from fcl.config_error import ConfigError
from fcl.config_fields import (NON_NEGATIVE, POSITIVE, PROBABILITY, MethodsHelp, Registered,
                               check_value, opt)
from fcl.data.domains import parse_domains
from fcl.methods import registry
from fcl.models.stages import stage_channels


@dataclass(frozen=True)
class DataConfig:
    name: str = opt("fashion_mnist_bundled", "data set (layouts: fcl/data/<name>.py, docs/data.md)",
                    choices=("fashion_mnist_bundled", "fashion_mnist", "cifar10", "cifar100",
                             "miniimagenet", "decathlon", "npz"))
    root: str = opt("", "file or folder holding the data set (npz: the .npz file; cifar*: "
                        "torchvision's root; fashion_mnist: empty = Debian's package path)")
    num_tasks: int = opt(5, "T: classes are split into T tasks of disjoint classes, a head each",
                         **POSITIVE)
    num_clients: int = opt(5, "N: clients; each task's training set is partitioned over them",
                           **POSITIVE)
    partition: str = opt("iid", "how a task's training set is split over clients: iid; "
                                "dirichlet = per class over clients (Hsu et al., the FCL paper); "
                                "lda = per client over classes, equal shard sizes (Flower's "
                                "recipe, FLoCoRA's code)", choices=("iid", "dirichlet", "lda"))
    alpha: float = opt(0.5, "Dirichlet concentration (partition=dirichlet or lda)",
                       check=lambda v: 0 < v <= 1e6, allowed="0 < alpha <= 1e6 (1e6: "
                                                             "already an even split)")
    min_client_samples: int = opt(2, "Dirichlet guard: resample until every client holds at "
                                     "least this many samples of every task",
                                 check=lambda v: 0 <= v <= 10_000, allowed="0 <= n <= 10000")
    train_per_class: int = opt(0, "keep at most this many training images per class (0 = all)",
                               **NON_NEGATIVE)
    test_per_class: int = opt(0, "keep at most this many test images per class (0 = all)",
                              **NON_NEGATIVE)
    class_order: str = opt("natural", "which classes form which task: natural order, or a "
                                      "permutation drawn from the seed",
                           choices=("natural", "seeded"))
    augment: bool = opt(False, "random crop (zero padding of H/8 pixels) + horizontal flip of "
                               "every training batch, on the device")
    domains: str = opt("", "decathlon only: comma-separated domain sequence, one task each "
                           "(empty = all ten, alphabetical; see fcl/data/decathlon.py)",
                       check=lambda v: v == "" or _known_domains(v),
                       allowed="empty, or a comma-separated subset of aircraft, cifar100, "
                               "daimlerpedcls, dtd, gtsrb, imagenet12, omniglot, svhn, ucf101, "
                               "vgg-flowers")


def _known_domains(text: str) -> bool:
    try:
        parse_domains(text)
    except ValueError:
        return False
    return True


BACKBONES = ("resnet_tiny", "resnet8", "resnet18")


@dataclass(frozen=True)
class ModelConfig:
    backbone: str = opt("resnet_tiny", "frozen backbone (randomly initialised from the seed)",
                        choices=BACKBONES)
    width: int = opt(16, "resnet_tiny only: channels of the first stage (doubles per stage)",
                     check=lambda v: 0 < v <= 256, allowed="1 <= width <= 256 (4w channels "
                                                           "in the last stage)")
    norm: str = opt("group", "normalisation in backbone and proxies (batch: backbone in eval mode)",
                    choices=("group", "batch"))
    norm_groups: int = opt(2, "norm=group only: groups of every GroupNorm (FLoCoRA / Hsieh et al.: "
                              "2); must divide every layer's channels", **POSITIVE)
    stem: str = opt("cifar", "backbone stem: cifar = 3x3 conv stride 1; imagenet = torchvision's "
                             "7x7 conv stride 2 + max-pool (needed for ImageNet weights)",
                    choices=("cifar", "imagenet"))
    input_size: int = opt(0, "resize every batch (bilinear, on the device) to S x S before the "
                             "backbone (0 = the images' own size); ImageNet backbones on 32x32 "
                             "images: docs/data.md, Input size", check=lambda v: 0 <= v <= 1024,
                          allowed="0 <= S <= 1024")
    pretrained: str = opt("none", "backbone weights: none = random init from the seed; imagenet = "
                                  "torchvision's ResNet-18 ImageNet weights (downloaded, or the "
                                  "torchvision file given as model.weights)",
                          choices=("none", "imagenet"))
    weights: str = opt("", "backbone checkpoint to load (written by `fcl pretrain`, or a "
                           "torchvision resnet18 state_dict): a file path, or fcl:NAME = one "
                           "shipped in the package (fcl/weights/README.md); empty = none")
    adapter: str = opt("nettailor", MethodsHelp(), choices=Registered(registry.names))
    proxy_depth: int = opt(3, "k: each block receives proxies from the k previous blocks",
                           check=lambda v: 0 <= v <= 16,   # ResNet-18 has 8 blocks: 16 is ample
                           allowed="0 <= k <= 16 (larger than the blocks: all previous ones)")
    node_relu: str = opt("after_sum", "nettailor only: where a node's ReLU sits. after_sum = "
                                      "ReLU(a0 G(x) + sum_j a_j P_j(x_j)), NetTailor's node; "
                                      "in_block = a0 ReLU(G(x)) + sum_j a_j P_j(x_j), the FCL "
                                      "paper's Eq. 4 read literally",
                         choices=("after_sum", "in_block"))
    gate_init: float = opt(2.0, "gate logits start at +g for the main path and -g for proxies",
                           check=lambda v: 0 <= v <= 100, allowed="0 <= g <= 100 (sigmoid(100) "
                                                                  "is already 1)")
    complexity_penalty: float = opt(0.0, "NetTailor's complexity loss weight (0 = off): "
                                         "penalises gate mass on proxy paths by their cost",
                                    check=lambda v: 0 <= v <= 1e6, allowed="0 <= w <= 1e6")
    lora_rank: int = opt(32, "lora only: r, the rank of every adapter", check=lambda v:
                         0 < v <= 1024, allowed="1 <= r <= 1024 (no layer has more channels)")
    lora_alpha: float = opt(512.0, "lora only: alpha; adapters are scaled by alpha / r "
                                   "(FLoCoRA: 512 = 16 r at r = 32)",
                            check=lambda v: 0 < v <= 1e6, allowed="0 < alpha <= 1e6")
    lora_on_head: bool = opt(False, "lora only: a LoRA adapter on a frozen final FC instead of "
                                    "training the FC (FLoCoRA Table II, first two rows)")
    lora_train_norms: bool = opt(True, "lora only: train per-task norm layers (false: the "
                                       "backbone's frozen norms, Table II 'Vanilla')")
    fedweit_lambda_l1: float = opt(1e-3, "fedweit only: lambda_1, the L1 weight on the "
                                         "task-adaptive kernels A and their send/inference "
                                         "threshold |A| > lambda_1 (official config: 1e-3)",
                                   check=lambda v: 0 <= v <= 1e3, allowed="0 <= l1 <= 1e3")
    fedweit_lambda_l2: float = opt(100.0, "fedweit only: lambda_2, the weight of the "
                                          "retroactive term 1/2 ||B sigmoid(m_i) + A_i - "
                                          "theta_i*||^2 of every past task (official: 100)",
                                   check=lambda v: 0 <= v <= 1e6, allowed="0 <= l2 <= 1e6")
    fedweit_weight_decay: float = opt(1e-4, "fedweit only: weight decay wd/2 ||.||^2 on A_t "
                                            "and m_t (and on B for a client's first task), "
                                            "part of the loss (official: 1e-4)",
                                      check=lambda v: 0 <= v <= 1e3, allowed="0 <= wd <= 1e3")
    fedweit_sparsity: float = opt(0.3, "fedweit only: client sparsity s, the share of B's "
                                       "output channels (smallest |m_t|) a client does not "
                                       "send (official: 0.3)", **PROBABILITY)
    fedweit_channels: str = opt("code", "fedweit only: which channels of B are sent. code = "
                                        "|m| above the floor(s n)-th smallest, as the official "
                                        "code cuts (n - floor(s n) - 1 channels); top = the "
                                        "ceil((1 - s) n) largest |m|, the paper's top 70%",
                                choices=("code", "top"))
    fedweit_past: str = opt("frozen", "fedweit only: past tasks' A_i under the retroactive "
                                      "term. frozen = only B moves (official code); trained "
                                      "= A_i of past tasks are trained too (the paper's text)",
                            choices=("frozen", "trained"))
    fedweit_optimizer: str = opt("adam", "fedweit only: the client's local optimizer at "
                                         "client.lr (official: Adam, lr 1e-3/3, a fresh one "
                                         "each round; sgd = the other methods' client.*)",
                                 choices=("adam", "sgd"))
    fedweit_bwt_clients: str = opt("held", "fedweit only: whose accuracy a BWT_f term of task t "
                                           "compares across a phase boundary (each client keeps "
                                           "its own task model). held = the clients that held "
                                           "t before the boundary, the same on both sides (the "
                                           "FCL paper's drop from new clients updating the "
                                           "model); all = every client holding t after it, "
                                           "including those that just started t",
                                   choices=("held", "all"))
    fedpara_gamma: float = opt(0.1, "fedpara only: gamma, each layer's rank R = ceil((1 - "
                                    "gamma) r_min + gamma r_max) between the smallest rank "
                                    "that can reach full rank and the largest with no more "
                                    "values than the dense layer (Flower's baseline: 0.1 on "
                                    "CIFAR-10, 0.4 on CIFAR-100)",
                               check=lambda v: 0 < v <= 1, allowed="0 < gamma <= 1")
    fedpara_on_head: bool = opt(False, "fedpara only: the final FC parameterised too, W = "
                                       "(X1 Y1^T) * (X2 Y2^T) (false: a dense FC, as Flower's "
                                       "VGG-16 keeps its classifier)")
    zerofl_sparsity: float = opt(0.0, "zerofl only: ZeroFL's sparsity s (Qiu et al. 2022; "
                                      "fcl/methods/zerofl/): SWAT's sparse local training, "
                                      "every conv forward with its top (1 - s) weights by "
                                      "magnitude, weight gradients from the top (1 - s) input "
                                      "activations, the dense weights updated; norms and FC "
                                      "dense (model.adapter=zerofl needs s > 0; the paper's "
                                      "0.9)",
                                 check=lambda v: 0 <= v < 1,
                                 allowed="0.9 (the paper's) or any 0 < s < 1 for zerofl")
    zerofl_mask_ratio: float = opt(0.0, "zerofl only: ZeroFL's mask ratio r: each conv kernel "
                                        "is uploaded at its top (1 - s) + r by magnitude, "
                                        "sparse (count + values + bitmap or indices, as "
                                        "compression.prune); r <= s (the paper's 0, 0.1, 0.2)",
                                   check=lambda v: 0 <= v < 1,
                                   allowed="0, 0.1, 0.2 (the paper's) or any 0 <= r <= "
                                           "model.zerofl_sparsity")

    def __post_init__(self):
        for f in fields(self):          # each value in its range before the checks across them
            check_value(f"model.{f.name}", getattr(self, f.name), f.metadata)
        if self.norm == "group":
            # the rule GroupNorm applies when the model is built, checked with the config
            channels = stage_channels(self.backbone, self.width)
            odd = [c for c in channels if c % self.norm_groups]
            if odd:
                at = f" at model.width={self.width}" if self.backbone == "resnet_tiny" else ""
                raise ConfigError("model.norm_groups", self.norm_groups, f"does not divide "
                                  f"{odd[0]}, the channels of a {self.backbone} layer{at}",
                                  f"a divisor of {math.gcd(*channels)}")
        if self.pretrained == "imagenet":      # torchvision's architecture, nothing else loads
            for key, want in (("backbone", "resnet18"), ("stem", "imagenet"), ("norm", "batch")):
                if getattr(self, key) != want:
                    raise ConfigError(f"model.{key}", getattr(self, key), "model.pretrained="
                                      "imagenet needs torchvision's ResNet-18", want)
