"""Run configuration: frozen dataclasses, one public key per field (`server.lr`, `data.alpha`).

Every field carries its help text and its check in `field(metadata=...)`, so the CLI's `--help`,
the validation error and the Parquet column all come from one place. Strings become behaviour
only where they are consumed (`fcl.federated.server_opt.OPTIMIZERS`, ...), never compared deep
inside a loop.
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import typing
from dataclasses import dataclass, field, fields, replace
from typing import Any, Callable, Iterable, Iterator

from fcl.config_error import ConfigError, one_line  # noqa: F401  (re-exported)
from fcl.data.domains import parse_domains
from fcl.methods import registry
from fcl.models.stages import stage_channels


class Registered:
    """The allowed values of a key that names a registered thing (model.adapter: the methods
    in `fcl.methods.registry`), read when asked, so a method registered later is allowed."""

    def __init__(self, names: Callable[[], tuple[str, ...]]):
        self._names = names

    def __iter__(self):
        return iter(self._names())

    def __contains__(self, value: Any) -> bool:
        return value in self._names()

    def __len__(self) -> int:
        return len(self._names())

    def __str__(self) -> str:
        return ", ".join(self._names())


class MethodsHelp:
    """model.adapter's help: every registered method's own summary, read when asked."""

    def __str__(self) -> str:
        return "the continual method (fcl/methods/<name>/): " + "; ".join(
            m.summary for m in registry.methods().values())


def opt(default: Any, help: str, choices: tuple | None = None,
        check: Callable[[Any], bool] | None = None, allowed: str | None = None,
        aliases: dict[str, Any] | None = None) -> Any:
    """A config field with its documentation and its range check; `aliases` are words a user
    may type for a value (eval.batch_size=auto is 0), turned into it where the value is parsed."""
    meta = {"help": help, "choices": choices, "check": check, "aliases": aliases or {},
            "allowed": allowed or (choices if isinstance(choices, Registered) else
                                   ", ".join(map(str, choices)) if choices else None)}
    return field(default=default, metadata=meta)


POSITIVE = dict(check=lambda v: v > 0, allowed="> 0")
NON_NEGATIVE = dict(check=lambda v: v >= 0, allowed=">= 0")
PROBABILITY = dict(check=lambda v: 0 <= v < 1, allowed="0 <= p < 1")
BETA = dict(check=lambda v: 0 <= v < 1, allowed="0 <= beta < 1")
# a field that takes true, false or auto (run.channels_last, run.client_batching): the words of
# a bool are aliases, and a Python bool given for such a field reads as its word
BOOL_WORDS = {**dict.fromkeys(("true", "1", "yes", "on"), "true"),
              **dict.fromkeys(("false", "0", "no", "off"), "false")}
BOOL_OR_AUTO = dict(choices=("auto", "true", "false"), aliases={**BOOL_WORDS, "auto": "auto"})


@dataclass(frozen=True)
class DataConfig:
    name: str = opt("fashion_mnist_bundled", "data set (layouts: fcl/data/<name>.py, README)",
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
                             "images: see README", check=lambda v: 0 <= v <= 1024,
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


@dataclass(frozen=True)
class ScheduleConfig:
    order: str = opt("async", "task order over rounds: fmtl = random task each round, sync = "
                              "common order, async = per-client permutation (Algorithm 1)",
                     choices=("fmtl", "sync", "async"))


@dataclass(frozen=True)
class ClientConfig:
    # learning rates reach a diverging grid corner (client.lr=1e4, server.lr=1e6) and no further:
    # 1e308 overflowed the first update into a traceback
    lr: float = opt(0.05, "local SGD learning rate (Eq. 5)", check=lambda v: 0 < v <= 1e4,
                    allowed="0 < lr <= 1e4")
    momentum: float = opt(0.0, "local SGD momentum", **BETA)
    weight_decay: float = opt(0.0, "local SGD weight decay", check=lambda v: 0 <= v <= 1e3,
                              allowed="0 <= wd <= 1e3")
    local_epochs: int = opt(2, "K: local epochs over the client's shard per round",
                            check=lambda v: 0 < v <= 1000, allowed="1 <= K <= 1000")
    batch_size: int = opt(32, "local minibatch size", **POSITIVE)
    algorithm: str = opt("sgd", "local update: sgd = plain local SGD (FedAvg's client); fedprox "
                                "= + prox_mu/2 ||w - w_server||^2 (Li et al. 2020); scaffold = "
                                "control variates, step along g - c_i + c (Karimireddy et al. "
                                "2020); see fcl/federated/client_algorithms.py",
                         choices=("sgd", "fedprox", "scaffold"))
    prox_mu: float = opt(0.01, "fedprox only: mu, the weight of the proximal term",
                         check=lambda v: 0 <= v <= 1e4, allowed="0 <= mu <= 1e4")


@dataclass(frozen=True)
class ServerConfig:
    optimizer: str = opt("fedadam", "server optimizer (Eqs. 7-9, Table 1)",
                         choices=("fedsgd", "fedadam", "fedadagrad", "fedyogi"))
    lr: float = opt(0.5, "eta: server learning rate", check=lambda v: 0 < v <= 1e6,
                    allowed="0 < eta <= 1e6")
    momentum: float = opt(0.0, "fedsgd only: server momentum (0 = plain FedAvg/FedSGD)", **BETA)
    beta1: float = opt(0.9, "first-moment decay of the adaptive optimizers", **BETA)
    beta2: float = opt(0.99, "second-moment decay (fedadam, fedyogi)", **BETA)
    tau: float = opt(1e-3, "adaptivity: step = eta * m / (sqrt(v) + tau)",
                     check=lambda v: 0 < v <= 1e3, allowed="0 < tau <= 1e3")
    bias_correction: bool = opt(False, "Adam-style bias correction of m and v")
    aggregate: str = opt("mean", "pseudo-gradient: sample-weighted mean of deltas (Eq. 1) or "
                                 "their sum (Eq. 7 read literally)", choices=("mean", "sum"))


@dataclass(frozen=True)
class ParticipationConfig:
    fraction: float = opt(1.0, "share of clients sampled each round",
                          check=lambda v: 0 < v <= 1, allowed="0 < fraction <= 1")
    straggler_prob: float = opt(0.0, "each sampled client fails to report with this probability",
                                **PROBABILITY)


@dataclass(frozen=True)
class CompressionConfig:
    bits: int = opt(32, "bits per value of every message, both links (32: float32 as is; "
                        "8/4/2: affine per output channel, 1-D tensors in float32)",
                    choices=(32, 8, 4, 2))
    payload: str = opt("values", "what a client's uplink carries: values = its trained tensors "
                                 "(FLoCoRA: the server averages the dequantized values); delta "
                                 "= trained minus received (quantization error relative to the "
                                 "update, not the weights); the same at bits=32",
                       choices=("values", "delta"))
    prune: float = opt(0.0, "magnitude pruning of every uplink (FLoCoRA's Table IV, its "
                            "code's prune.py): values whose |value| is below one threshold "
                            "over all tensors (the N sorted |values| at index floor(N x rate)) "
                            "become 0; sent sparse in float32, positions as a bitmap or "
                            "indices, the cheaper per tensor (needs compression.bits=32); "
                            "0 = off",
                       check=lambda v: 0 <= v < 1,
                       allowed="0 (off), 0.5, 0.8, 0.9, 0.95 (the paper's rates) or any rate "
                               "0 <= rate < 1")
    prune_server: bool = opt(False, "prune the global model clients receive the same way (the "
                                    "code's --prune_srv, on in all its pruning runs; needs "
                                    "compression.prune > 0)")


@dataclass(frozen=True)
class EvalConfig:
    every: int = opt(1, "evaluate all tasks every k rounds (phase boundaries and the last round "
                        "always)", **POSITIVE)
    batch_size: int = opt(0, "evaluation batch size; auto (stored as 0, the default) = by the "
                             "device the run computes on (`fcl.compute_mode.eval_batch_size`: "
                             "1024 on a GPU; on a CPU the largest power of two whose largest "
                             "activation fits 8 MiB, e.g. 32 for ResNet-8)",
                          check=lambda v: v >= 0,
                          allowed="auto or a positive integer", aliases={"auto": 0})


@dataclass(frozen=True)
class RuntimeConfig:
    device: str = opt("auto", "compute device (auto: cuda when available)",
                      choices=("auto", "cpu", "cuda"))
    threads: int = opt(0, "torch CPU threads (0 = leave torch's default)",
                       check=lambda v: 0 <= v <= 1024, allowed="0 <= n <= 1024")
    precision: str = opt("auto", "forward passes of local training and evaluation: fp32, "
                                 "bf16 autocast (weights, gradients, server state and messages "
                                 "stay float32), or auto = bf16 where the device has native "
                                 "bfloat16 kernels (a CPU with AVX512-BF16 or AMX, a CUDA GPU "
                                 "that supports it), else fp32",
                         choices=("fp32", "bf16", "auto"))
    channels_last: str = opt("auto", "images and 4-D weights in channels_last (NHWC) memory "
                                      "format (same values, other convolution kernels): true, "
                                      "false, or auto = NHWC on an AVX-512 CPU and on a CUDA "
                                      "GPU, NCHW on other CPUs", **BOOL_OR_AUTO)
    client_batching: str = opt("false", "clients of the same task in the same round train "
                                        "together in one vmapped step (torch.func), falling "
                                        "back to one by one where they cannot (fcl/federated/"
                                        "batched_clients.py): true, false, or auto = on a CUDA "
                                        "GPU, off on a CPU",
                               **BOOL_OR_AUTO)
    divergence_loss: float = opt(1e3, "the run is flagged diverged (summary: diverged, "
                                      "diverged_round) once a round's mean training loss "
                                      "passes this bound or is not finite, or a server state "
                                      "is not finite; it still runs to its last round "
                                      "(cross-entropy starts near ln C, below 7 for 1000 "
                                      "classes; 0 = no loss bound, non-finite values only)",
                                 check=lambda v: 0 <= v <= 1e30, allowed="0 <= bound <= 1e30")


@dataclass(frozen=True)
class RunConfig:
    rounds: int = opt(50, "R: communication rounds; Q = R / T rounds per phase",
                      check=lambda v: 0 < v <= 100_000, allowed="1 <= R <= 100000")
    # under 2^31: every seeded library takes it, and a study's seed + i stays an int64 column
    seed: int = opt(0, "one seed for everything", check=lambda v: 0 <= v < 2**31,
                    allowed="0 <= seed < 2^31")
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    client: ClientConfig = field(default_factory=ClientConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    participation: ParticipationConfig = field(default_factory=ParticipationConfig)
    compression: CompressionConfig = field(default_factory=CompressionConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    run: RuntimeConfig = field(default_factory=RuntimeConfig)

    def __post_init__(self):
        for key, value, meta, _ in iter_fields(self):
            check_value(key, value, meta)
        self._check_method()
        self._check_pruning()
        if self.rounds % self.data.num_tasks:
            raise ConfigError("rounds", self.rounds, f"not a multiple of data.num_tasks="
                              f"{self.data.num_tasks}", "a multiple of data.num_tasks")

    def _check_method(self) -> None:
        """The method's own rules across sections, and a config spelled as a method was before
        it had its own name (`full` with a ZeroFL sparsity) refused with that name."""
        model = {f"model.{f.name}": getattr(self.model, f.name) for f in fields(self.model)}
        for m in registry.methods().values():
            if m.name != self.model.adapter and m.spelled_before and m.spelled_before(model):
                raise ConfigError("model.adapter", self.model.adapter, f"with these settings it "
                                  f"is {m.name}, now a method of its own", m.name)
        registry.method(self.model.adapter).check(self)

    def _check_pruning(self) -> None:
        c = self.compression
        if c.prune > 0 and c.bits != 32:
            raise ConfigError("compression.prune", c.prune, f"pruning sends float32 values, "
                              f"not compression.bits={c.bits}", "0 unless compression.bits=32")
        if c.prune_server and c.prune == 0:
            raise ConfigError("compression.prune_server", "true", "nothing to prune at "
                              "compression.prune=0", "false, or set compression.prune > 0")

    @property
    def rounds_per_phase(self) -> int:
        """Q = R / T."""
        return self.rounds // self.data.num_tasks

    def to_flat(self) -> dict[str, Any]:
        """{'server.lr': 0.5, ...}: the public vocabulary, as Parquet columns."""
        return {key: value for key, value, _, _ in iter_fields(self)}


@functools.cache
def type_hints(cls: type) -> dict[str, Any]:
    """`typing.get_type_hints`, once per class: it evaluates every string annotation on each
    call, which made a config's `to_flat` cost milliseconds (a study's export calls it a few
    times per trial)."""
    return typing.get_type_hints(cls)


def iter_fields(cfg: RunConfig) -> Iterator[tuple[str, Any, dict, type]]:
    """(key, value, metadata, type) for every leaf field, in declaration order."""
    hints = type_hints(type(cfg))
    for f in fields(cfg):
        value = getattr(cfg, f.name)
        if dataclasses.is_dataclass(value):
            sub_hints = type_hints(type(value))
            for g in fields(value):
                yield f"{f.name}.{g.name}", getattr(value, g.name), g.metadata, sub_hints[g.name]
        else:
            yield f.name, value, f.metadata, hints[f.name]


def check_value(key: str, value: Any, meta: dict) -> None:
    choices, check = meta.get("choices"), meta.get("check")
    if choices and value not in choices:
        hint = did_you_mean(value, map(str, choices)) if isinstance(value, str) else ""
        raise ConfigError(key, value, "unknown value", hint + str(meta["allowed"]))
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(key, value, "not a finite number", meta.get("allowed") or "a number")
    if check and not check(value):
        raise ConfigError(key, value, "out of range", meta["allowed"])


TYPE_WORDS = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


def parse_value(key: str, text: Any, typ: type) -> Any:
    """Turn a `--set` string (or a JSON/Tune value) into the field's type, or raise ConfigError."""
    if not isinstance(text, str):
        if typ is float and isinstance(text, (int, float)) and not isinstance(text, bool):
            return float(text)
        if isinstance(text, typ) and not (typ is int and isinstance(text, bool)):
            return text
        raise ConfigError(key, text, f"not {TYPE_WORDS[typ]}", TYPE_WORDS[typ])
    try:
        if typ is bool:
            low = text.strip().lower()
            if low not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError
            return low in ("true", "1", "yes")
        if typ is int:
            return int(text)
        if typ is float:
            return float(text)
        return text
    except ValueError:
        raise ConfigError(key, text, f"not {TYPE_WORDS[typ]}",
                          "true or false" if typ is bool else TYPE_WORDS[typ]) from None


def parse_field(key: str, raw: Any, typ: type, meta: dict) -> Any:
    """`parse_value`, with the field's aliases (words for values) and its allowed values in
    the error of a value that is neither."""
    aliases = meta.get("aliases") or {}
    word = (raw.strip().lower() if isinstance(raw, str)
            else str(raw).lower() if isinstance(raw, bool) else None)
    if word in aliases:
        return aliases[word]
    try:
        return parse_value(key, raw, typ)
    except ConfigError as e:
        if not aliases:
            raise
        raise ConfigError(key, raw, e.why, meta["allowed"]) from None


def field_types(cfg: RunConfig | None = None) -> dict[str, type]:
    return {key: typ for key, _, _, typ in iter_fields(cfg or RunConfig())}


def did_you_mean(key: str, known: Iterable[str]) -> str:
    """`did you mean client.lr? ` for a key close to a known one (a typo), else ''."""
    close = difflib.get_close_matches(key, list(known), n=2, cutoff=0.75)
    return f"did you mean {' or '.join(close)}? " if close else ""


def with_overrides(cfg: RunConfig, overrides: dict[str, Any]) -> RunConfig:
    """A new config with `{'server.lr': '0.5', ...}` applied (strings parsed by field type).

    Unknown keys and bad values raise ConfigError; the whole config is re-validated once."""
    types_ = field_types(cfg)
    metas = {key: meta for key, _, meta, _ in iter_fields(cfg)}
    top: dict[str, Any] = {}
    sections: dict[str, dict[str, Any]] = {}
    for key, raw in overrides.items():
        if key not in types_:
            raise ConfigError(key, raw, "unknown key", did_you_mean(key, types_) +
                              "see `fcl run --help` for every key")
        value = parse_field(key, raw, types_[key], metas[key])
        if "." in key:
            section, name = key.split(".", 1)
            sections.setdefault(section, {})[name] = value
        else:
            top[key] = value
    for section, values in sections.items():
        top[section] = replace(getattr(cfg, section), **values)
    return replace(cfg, **top)      # RunConfig.__post_init__ validates the whole


# The keys only one method (or client algorithm) reads: (the key that picks it, its value) -> its
# keys. A key given for a run of another method would be accepted and do nothing (a forgotten
# `model.adapter=lora` runs FedAvg without a word), so `check_read` refuses it. Presets and
# studies may set them for every method (FLoCoRA's recipe names LoRA's rank for its FedAvg
# rows too): only the keys a user gives are checked.
def method_keys() -> dict[tuple[str, str], tuple[str, ...]]:
    return {**{("model.adapter", m.name): m.keys for m in registry.methods().values() if m.keys},
            ("client.algorithm", "fedprox"): ("client.prox_mu",)}


def check_read(cfg: RunConfig | list[RunConfig], given: dict[str, Any]) -> None:
    """Refuse, in one line naming the method that reads it, a key in `given` (the keys a user
    set) that `cfg`'s method does not read; given a study's trial configs, one that none of
    them reads."""
    cfgs = cfg if isinstance(cfg, list) else [cfg]
    flats = None
    for (picker, method), keys in method_keys().items():
        for key in (k for k in keys if k in given):
            flats = flats or [c.to_flat() for c in cfgs]
            runs = sorted({str(f[picker]) for f in flats})
            if method not in runs:
                raise ConfigError(key, given[key], f"read only by {picker}={method}; "
                                  f"{'this run has' if len(cfgs) == 1 else 'its trials have'} "
                                  f"{picker}={', '.join(runs)}, which ignores it",
                                  f"{picker}={method} beside it, or leave {key} out")


def from_flat(flat: dict[str, Any], base: RunConfig | None = None) -> RunConfig:
    """Inverse of `RunConfig.to_flat` (ignores keys that are not config keys, e.g. metrics)."""
    base = base or RunConfig()
    known = field_types(base)
    return with_overrides(base, {k: v for k, v in flat.items() if k in known})


def key_rows(cfg: RunConfig | None = None) -> Iterator[tuple[str, Any, str, str]]:
    """(key, default, allowed values, help) for every key, `cfg`'s values as the defaults (a
    value with a word, such as eval.batch_size=auto, as its word): the one source of
    `fcl run --help` and the documentation's configuration reference."""
    for key, value, meta, typ in iter_fields(cfg or RunConfig()):
        allowed = meta.get("allowed") or ("true/false" if typ is bool else typ.__name__)
        value = next((w for w, v in (meta.get("aliases") or {}).items()
                      if type(v) is type(value) and v == value), value)
        yield key, value, allowed, meta.get("help", "")


def describe_keys(cfg: RunConfig | None = None) -> str:
    """Every key with its default, allowed values and help: the epilog of `fcl run --help`."""
    return "\n".join(f"  {key:<30} default {value!r:<24} allowed: {allowed}\n  {'':<30} {help}"
                     for key, value, allowed, help in key_rows(cfg))



def bool_or_auto_keys() -> tuple[str, ...]:
    """The keys that take true, false or auto (`BOOL_OR_AUTO`)."""
    return tuple(k for k, _, meta, _ in iter_fields(RunConfig())
                 if meta.get("choices") == BOOL_OR_AUTO["choices"])
