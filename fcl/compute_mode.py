"""How a run's tensors are computed, never what they compute: the device, `run.precision`,
`run.channels_last` and `run.client_batching`.

- `bf16` autocasts the forward passes of local training and evaluation (convolutions and
  matmuls run in bfloat16, losses and norms in float32, as torch's autocast lists decide). The
  backward pass runs outside the autocast region (torch's advice), so gradients arrive in the
  parameters' dtype: weights, gradients, SGD momentum, the server state, the optimizer moments,
  the aggregation and every message stay float32.
- `channels_last` stores the images (uint8, on the device) and every 4-D weight in NHWC order.
  Indexing a batch out of NHWC images keeps NHWC, so batches need no conversion per step.
  Values are unchanged; only the convolution kernels that run differ.

Whether either is faster depends on the hardware: bf16 needs native bfloat16 kernels (a CPU
with AVX512-BF16 or AMX, or a GPU); on an AVX2-only CPU it is several times slower than fp32,
and a warning says so when a run starts. `auto` picks bf16 only where it is native. NHWC paid
on an AVX-512 CPU with native bf16 (1.23-1.89x in fp32, 1.15-1.2x over NCHW bf16) and lost on
an AVX2-only one (0.77-0.99x): `run.channels_last=auto` is NHWC on an AVX-512 CPU. See
docs/benchmarks.md.
"""
from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, ContextManager

import torch
from torch import nn

from fcl.data.federated import FederatedData

if TYPE_CHECKING:
    from fcl.config import RuntimeConfig

AUTOCAST_DTYPES: dict[str, torch.dtype | None] = {"fp32": None, "bf16": torch.bfloat16}


def native_cpu_bf16() -> bool:
    """Whether oneDNN has bfloat16 kernels for this CPU (AVX512-BF16, AMX). Without them
    autocast still works, through reference kernels that are 4-10x slower than fp32."""
    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def resolve_precision(precision: str, device: torch.device) -> str:
    """`run.precision` as run on `device`: `auto` is bf16 where the device has native bfloat16
    kernels (a CUDA GPU that supports it, a CPU with AVX512-BF16 or AMX), else fp32."""
    if precision != "auto":
        return precision
    if device.type == "cuda":
        native = torch.cuda.is_bf16_supported()
    else:
        native = device.type == "cpu" and native_cpu_bf16()
    return "bf16" if native else "fp32"


def resolve_channels_last(setting: str, device: torch.device) -> bool:
    """`run.channels_last` as run on `device`: `auto` is NHWC on a CUDA GPU (torch's advice for
    its convolutions, unmeasured on a GPU) and on a CPU with AVX-512 kernels
    (`fcl bench` on one with native bf16 too: NHWC 1.23-1.89x NCHW in fp32, bf16+NHWC
    1.15-1.20x bf16), NCHW on other CPUs (an AVX2-only CPU: 0.77-0.99x). An AVX-512 CPU without
    bf16 was not measured."""
    return _bool_or(setting, lambda: device.type == "cuda" or
                    (device.type == "cpu" and avx512_cpu()))


def avx512_cpu() -> bool:
    """Whether torch runs this CPU's AVX-512 kernels (AVX512-BF16 and AMX CPUs are AVX-512)."""
    return torch.backends.cpu.get_cpu_capability() == "AVX512"


def resolve_client_batching(setting: str, device: torch.device) -> bool:
    """`run.client_batching` as run on `device`: `auto` is on for a CUDA GPU, where a round's
    many small steps are bound by kernel launches (unmeasured on a GPU), and
    off on a CPU, where `fcl bench` measured batched clients at 0.37-1.00x of one by one (an
    AVX2 CPU and one with native bf16): vmapped clients turn each convolution into a grouped
    one, which oneDNN runs more slowly."""
    return _bool_or(setting, lambda: device.type == "cuda")


def _bool_or(setting: str, auto: Callable[[], bool]) -> bool:
    """A true/false/auto key's value: `auto()` decides auto."""
    return auto() if setting == "auto" else setting == "true"


# eval.batch_size=auto. A GPU wants large batches. On a CPU a batch is fastest while its largest
# activation stays in cache: the largest power of two whose biggest fp32 activation fits 8 MiB
# (a quarter of the 32 MiB L3 of the 2-core EPYC measured; benchmarks/eval_speed.py,
# docs/benchmarks.md, Evaluation batch size): ResNet-8 (64 x 32 x 32 floats an image) gets 32,
# 2.3x the images/s of 1024 in fp32 at 2 threads; cifar10-local's resnet_tiny at width 16 gets
# 128, 1.27x at 1 thread.
CPU_EVAL_BUDGET_BYTES = 8 * 2**20
CPU_EVAL_BATCH_RANGE = (8, 1024)
GPU_EVAL_BATCH = 1024


def largest_activation_bytes(forward: Callable[[torch.Tensor], object],
                             image: torch.Tensor) -> int:
    """Bytes (as float32) of the largest tensor any module returns while `forward` runs on one
    image (a batch of 1), the image included. A global forward hook sees every module called,
    also those a model calls through a swap."""
    largest = [image[:1].numel() * 4]

    def hook(module, args, out):
        if isinstance(out, torch.Tensor):
            largest[0] = max(largest[0], out.numel() * 4)

    handle = nn.modules.module.register_module_forward_hook(hook)
    try:
        with torch.inference_mode():
            forward(image[:1])
    finally:
        handle.remove()
    return largest[0]


def eval_batch_size(batch_size: int, device: torch.device,
                    image_bytes: Callable[[], int] | None = None) -> int:
    """`eval.batch_size` as evaluated on `device`: 0 (auto) is 1024 on a GPU and, on a CPU,
    the largest power of two in 8..1024 whose largest activation (`image_bytes()`: one image's,
    `largest_activation_bytes`) fits `CPU_EVAL_BUDGET_BYTES`; 256 without a model to measure."""
    if batch_size:
        return batch_size
    if device.type != "cpu":
        return GPU_EVAL_BATCH
    if image_bytes is None:
        return 256
    low, high = CPU_EVAL_BATCH_RANGE
    fits = max(CPU_EVAL_BUDGET_BYTES // max(image_bytes(), 1), 1)
    return min(max(1 << (fits.bit_length() - 1), low), high)


def eval_channels_last(channels_last: bool, device: torch.device) -> bool:
    """Whether evaluation feeds its batches in channels_last (NHWC) order: where the run does.
    Not on an AVX-512 CPU by itself, though there NHWC batches (weights as they are) ran the
    same evaluation ~2x faster at 1 thread (benchmarks/eval_speed.py): in bf16 they moved
    accuracy counts by one test image in 108 of the 900 evaluated rounds of the 36-trial
    `optimizers` study at cifar10-local (benchmarks/optimizers_study.py --compare), so the
    layout of evaluation stays the run's, and its numbers those of NCHW evaluation."""
    return channels_last


@dataclass(frozen=True)
class ComputeMode:
    device: torch.device
    autocast_dtype: torch.dtype | None = None     # None: plain float32
    channels_last: bool = False
    client_batching: bool = False

    @classmethod
    def from_config(cls, cfg: RuntimeConfig, device: torch.device) -> "ComputeMode":
        dtype = AUTOCAST_DTYPES[resolve_precision(cfg.precision, device)]
        if dtype is torch.bfloat16 and device.type == "cpu" and not native_cpu_bf16():
            warnings.warn("run.precision=bf16: this CPU has no native bfloat16 kernels (oneDNN "
                          "reports none, e.g. AVX2 only); bf16 runs several times slower than "
                          "fp32 on such a CPU", RuntimeWarning, stacklevel=2)
        return cls(device, dtype, resolve_channels_last(cfg.channels_last, device),
                   resolve_client_batching(cfg.client_batching, device))

    @property
    def precision(self) -> str:
        return next(k for k, v in AUTOCAST_DTYPES.items() if v == self.autocast_dtype)

    @property
    def layout(self) -> str:
        """The summary's name of the memory format: nhwc or nchw."""
        return "nhwc" if self.channels_last else "nchw"

    @property
    def memory_format(self) -> torch.memory_format:
        return torch.channels_last if self.channels_last else torch.contiguous_format

    @property
    def forward_context(self) -> Callable[[], ContextManager]:
        """A factory of the context every forward pass runs in (autocast, or nothing)."""
        if self.autocast_dtype is None:
            return contextlib.nullcontext
        device_type, dtype = self.device.type, self.autocast_dtype
        return lambda: torch.autocast(device_type, dtype=dtype)

    def model(self, model: nn.Module) -> nn.Module:
        """The model on the device, its 4-D weights in the memory format (in place)."""
        return model.to(self.device, memory_format=self.memory_format)

    def data(self, data: FederatedData) -> FederatedData:
        """The data on the device, images in the memory format (4-D uint8 tensors only)."""
        data = data.to(self.device)
        if not self.channels_last:
            return data
        fmt = lambda x: x.contiguous(memory_format=torch.channels_last) \
            if x.dim() == 4 else x  # noqa: E731
        return replace(data, tasks=tuple(replace(t, train_x=fmt(t.train_x), test_x=fmt(t.test_x))
                                         for t in data.tasks))
