"""The `run.*` section of a run's config: how a run computes (device, threads, precision,
memory format, vmapped clients, a compiled forward) and when it counts as diverged, never what it
computes; `fcl.compute_mode` and `fcl.compile_policy` resolve it."""
from __future__ import annotations

from dataclasses import dataclass

from fcl.config_fields import BOOL_OR_AUTO, opt


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
    compile: str = opt("false", "the model's forward torch.compile'd (inductor; graphs per "
                                "phase compiled in each trial's process, inductor's on-disk "
                                "cache shared by the trials of a node; the float results "
                                "move): true, false, or auto = where the model is large enough "
                                "and a graph trains long enough for the compile to pay, as "
                                "measured (fcl/compile_policy.py)",
                        **BOOL_OR_AUTO)
    divergence_loss: float = opt(1e3, "the run is flagged diverged (summary: diverged, "
                                      "diverged_round) once a round's mean training loss "
                                      "passes this bound or is not finite, or a server state "
                                      "is not finite; it still runs to its last round "
                                      "(cross-entropy starts near ln C, below 7 for 1000 "
                                      "classes; 0 = no loss bound, non-finite values only)",
                                 check=lambda v: 0 <= v <= 1e30, allowed="0 <= bound <= 1e30")
