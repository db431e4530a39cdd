"""The kind of processor a run computed on, as far as its numbers depend on it.

A run is deterministic on one kind of machine, not across kinds: the instructions a CPU offers
choose oneDNN's kernels, and bf16 ones round differently (the low-rank FedAvg trial at seed 0
gave ACC 63.81 on an AMD EPYC with AVX512-BF16, 63.83 on an Intel Xeon with AMX-BF16). Every run
records its CPU's kind (`cpu`: the model name and the vector extensions that pick kernels) and,
where it ran on a GPU, the GPU's name (`gpu`), from the process that computed it, so a reader can
tell which rows may be compared bit for bit and `--copy-from` copies a trial only onto the kind
that computed it (`fcl.tune.copies`). A host name does not tell two virtual machines apart.
"""
from __future__ import annotations

import functools
import platform
from dataclasses import dataclass

CPUINFO = "/proc/cpuinfo"
# (flag in /proc/cpuinfo, its name in words): the extensions that change which kernels run
EXTENSIONS = (("avx2", "AVX2"), ("avx512f", "AVX-512"), ("avx512_bf16", "AVX512-BF16"),
              ("avx512_fp16", "AVX512-FP16"), ("amx_bf16", "AMX-BF16"), ("amx_fp16", "AMX-FP16"),
              ("asimd", "NEON"), ("sve", "SVE"), ("bf16", "BF16"))


def first_processor(text: str) -> dict[str, str]:
    """The first processor's entries of /proc/cpuinfo's text (every core repeats them)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if out:
                break
            continue
        key, _, value = line.partition(":")
        out.setdefault(key.strip(), value.strip())
    return out


def kind_of(info: dict[str, str], fallback: str = "") -> str:
    """`Model name (EXT, EXT)` from /proc/cpuinfo's entries (x86 `model name` and `flags`, Arm
    `Features`); `fallback` names the CPU where they do not."""
    name = " ".join((info.get("model name") or info.get("Model") or fallback
                     or "unknown CPU").split())
    flags = set((info.get("flags") or info.get("Features") or "").split())
    ext = [words for flag, words in EXTENSIONS if flag in flags]
    return f"{name} ({', '.join(ext)})" if ext else name


@functools.cache
def cpu_kind() -> str:
    """The CPU kind of the machine this process runs on, e.g. `Intel(R) Xeon(R) Processor (AVX2, AVX-512, AVX512-BF16,
    AVX512-FP16, AMX-BF16)`."""
    try:
        with open(CPUINFO) as f:
            info = first_processor(f.read())
    except OSError:          # not Linux: what the platform says
        info = {}
    return kind_of(info, platform.processor() or platform.machine())


def gpu_kind(device) -> str:
    """The GPU's name where `device` (a torch device or its name) is one, else ""."""
    import torch            # here: `import fcl.machine_kind` stays light

    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return "" if device.type == "cpu" else device.type


@dataclass(frozen=True)
class Kind:
    """What decides a run's numbers besides its config: the CPU's kind, the GPU's name ("" on a
    CPU) and torch's version (`torch.__version__`, as rows' `torch_version` hold it)."""
    cpu: str
    gpu: str
    torch: str

    def words(self) -> str:
        return f"{self.cpu}{f' with {self.gpu}' if self.gpu else ''}, torch {self.torch}"


def this_kind(gpu: bool = False) -> Kind:
    """The kind of the machine this process runs on, for a run on its CPU or (`gpu`) on its first visible GPU."""
    import torch

    return Kind(cpu_kind(), gpu_kind("cuda") if gpu else "", torch.__version__)
