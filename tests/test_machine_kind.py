"""The kind of machine a run records (`fcl.machine_kind`): read from /proc/cpuinfo's text as
x86 and Arm Linux write it, and recorded in every run's summary."""
from fcl.machine_kind import Kind, cpu_kind, first_processor, kind_of

INTEL = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Processor
flags\t\t: fpu sse2 avx2 avx512f avx512_bf16 avx512_fp16 amx_bf16 amx_tile

processor\t: 1
model name\t: Something else
flags\t\t: fpu
"""
AMD = """processor\t: 0
model name\t: AMD EPYC 7B13   64-Core Processor
flags\t\t: fpu avx2 avx512f avx512_bf16
"""
ARM = """processor\t: 0
BogoMIPS\t: 50.00
Features\t: fp asimd sve bf16
CPU implementer\t: 0x41
"""


def test_each_cpu_kind_names_its_model_and_the_extensions_that_pick_kernels():
    assert kind_of(first_processor(INTEL)) == (
        "Intel(R) Xeon(R) Processor (AVX2, AVX-512, AVX512-BF16, AVX512-FP16, AMX-BF16)")
    assert kind_of(first_processor(AMD)) == (
        "AMD EPYC 7B13 64-Core Processor (AVX2, AVX-512, AVX512-BF16)")
    assert kind_of(first_processor(ARM), "aarch64") == "aarch64 (NEON, SVE, BF16)"
    assert kind_of({}, "") == "unknown CPU"
    # the two CPUs that gave one config different numbers are two kinds
    assert kind_of(first_processor(INTEL)) != kind_of(first_processor(AMD))


def test_a_run_records_the_kind_that_computed_it():
    from fcl.config import RunConfig, with_overrides
    from fcl.engine import run
    cfg = with_overrides(RunConfig(), {"rounds": 2, "data.num_tasks": 2, "data.num_clients": 2,
                                       "data.train_per_class": 5, "data.test_per_class": 5,
                                       "model.width": 8, "run.threads": 1})
    summary = run(cfg).summary
    assert summary.cpu == cpu_kind() != "" and summary.gpu == ""
    assert Kind(summary.cpu, summary.gpu, "x").words() == f"{cpu_kind()}, torch x"
