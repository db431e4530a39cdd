"""analysis/machine_mix.py: the seeds whose trials ran on several kinds of machine, named on
stderr by `analysis paired` (and `analysis claims`); rows that do not record their CPU say
nothing."""
import pandas as pd

from analysis import paired
from analysis.machine_mix import mixed_seeds, note, row_kinds
from fcl.manifest import Manifest, write_manifest

INTEL = "Intel(R) Xeon(R) Processor (AVX2, AVX-512, AMX-BF16)"
AMD = "AMD EPYC 9R14 (AVX2, AVX-512, AVX512-BF16)"


def trials(kinds: dict[tuple[int, int], tuple]) -> pd.DataFrame:
    """Two settings (bits 32 and 8) at seeds 0-2; `kinds[(seed, bits)]` = (cpu, gpu, torch),
    an absent entry a row without the columns' values (stored before they were recorded)."""
    rows = []
    for seed in (0, 1, 2):
        for bits in (32, 8):
            cpu, gpu, version = kinds.get((seed, bits), (None, None, "2.14.1"))
            rows.append({"study": "q", "trial_id": f"{bits}-{seed}", "status": "TERMINATED",
                         "seed": seed, "compression.bits": bits, "acc": 50.0 + seed - bits / 32,
                         "bwt_f": 0.0, "schema_version": 2, "cpu": cpu, "gpu": gpu,
                         "torch_version": version})
    return pd.DataFrame(rows)


def test_a_seed_with_two_recorded_kinds_is_named_and_unrecorded_rows_are_left_out():
    frame = trials({(0, 32): (INTEL, "", "2.14.1"), (0, 8): (INTEL, "", "2.14.1"),
                    (1, 32): (INTEL, "", "2.14.1"), (1, 8): (AMD, "", "2.14.1"),
                    (2, 32): (INTEL, "", "2.14.1")})             # (2, 8): unrecorded
    kinds = row_kinds(frame)
    assert kinds.iloc[0] == f"{INTEL}, torch 2.14.1" and kinds.iloc[-1] is None
    assert mixed_seeds(frame) == {1: [f"{AMD}, torch 2.14.1", f"{INTEL}, torch 2.14.1"]}


def test_a_gpu_or_a_torch_version_makes_another_kind():
    frame = trials({(0, 32): (INTEL, "NVIDIA H100", "2.14.1"), (0, 8): (INTEL, "", "2.14.1"),
                    (1, 32): (INTEL, "", "2.14.1"), (1, 8): (INTEL, "", "2.13.0")})
    assert set(mixed_seeds(frame)) == {0, 1}
    assert f"{INTEL} with NVIDIA H100, torch 2.14.1" in mixed_seeds(frame)[0]


def test_one_kind_or_no_record_gives_no_note():
    assert note("q", trials({})) is None
    assert note("q", trials({k: (AMD, "", "2.14.1") for k in [(0, 32), (0, 8), (1, 8)]})) is None
    assert note("q", trials({}).drop(columns=["cpu", "gpu"])) is None


def test_paired_names_the_mixed_seed_on_stderr_and_keeps_its_table(tmp_path, capsys):
    frame = trials({(0, 32): (INTEL, "", "2.14.1"), (0, 8): (INTEL, "", "2.14.1"),
                    (2, 32): (INTEL, "", "2.14.1"), (2, 8): (AMD, "", "2.14.1")})
    (tmp_path / "q").mkdir()
    frame.to_parquet(tmp_path / "q" / "trials.parquet")
    write_manifest(tmp_path / "q", Manifest("q", "smoke", "cifar10", {},
                                            varying=("compression.bits",), seeds=(0, 1, 2)))
    assert paired.main(["q", "--results", str(tmp_path), "--ref", "compression.bits=32"]) == 0
    out, err = capsys.readouterr()
    assert "| 8 | +0.75 ± 0.00 (3) |" in out
    assert err.strip() == (f"note: q: trials of one seed ran on several kinds of machine "
                           f"(seed 2: {AMD}, torch 2.14.1 | {INTEL}, torch 2.14.1); their "
                           f"same-seed differences include the kinds' rounding")


def test_claims_name_a_mixed_study_once_on_stderr(monkeypatch, capsys):
    """The stored flocora_quantization with one of its trials said to have run on another CPU:
    each of its claims is judged as before, the study named once."""
    from pathlib import Path

    from analysis import claims
    from analysis.study_tables import load_study
    results = Path(__file__).resolve().parent.parent / "results"
    study = load_study(results, "flocora_quantization")
    study.trials["cpu"], study.trials["gpu"] = INTEL, ""
    study.trials.loc[study.trials.index[-1], "cpu"] = AMD
    monkeypatch.setattr(claims, "load_study", lambda folder, name: study)
    chosen = [c for c in claims.CLAIMS if c.study == "flocora_quantization"]
    cache: dict = {}
    cells = [claims.judge(c, results, cache) for c in chosen]
    err = capsys.readouterr().err.splitlines()
    seed = int(study.trials["seed"].iloc[-1])
    assert len(chosen) >= 2 and len(err) == 1
    assert err[0].startswith(f"note: {results}/flocora_quantization: trials of one seed ran on "
                             f"several kinds of machine (seed {seed}: {AMD}")
    assert cells == [claims.judge(c, results, {}) for c in chosen]
