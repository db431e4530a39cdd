"""analysis/paired.py: per-seed differences to a reference setting (the claims table's
"paired difference" column)."""
import math

import pandas as pd
import pytest

from analysis import paired
from fcl.manifest import Manifest, write_manifest


def trials() -> pd.DataFrame:
    # seed offsets +-10 hit every setting alike; the 8-bit setting is 1 point below FP per seed
    # (+0.5 at seed 2), the 2-bit one 5 points below
    rows = []
    for seed, offset in ((0, 0.0), (1, -10.0), (2, 10.0)):
        for bits, drop in ((32, 0.0), (8, -1.0), (2, -5.0)):
            extra = 1.5 if (bits, seed) == (8, 2) else 0.0
            rows.append({"study": "q", "trial_id": f"{bits}-{seed}", "status": "TERMINATED",
                         "seed": seed, "compression.bits": bits, "model.lora_alpha": 512.0,
                         "acc": 50.0 + offset + drop + extra, "bwt_f": 0.0,
                         "schema_version": 2})
    return pd.DataFrame(rows)


def test_differences_are_taken_seed_by_seed():
    table = paired.paired(trials(), {"compression.bits": "32"}, ["acc"]).set_index(
        "compression.bits")
    assert table.loc[2, "acc diff"] == pytest.approx(-5.0)
    assert table.loc[2, "acc ci95"] == pytest.approx(0.0)     # the seed offsets cancel
    assert table.loc[8, "acc diff"] == pytest.approx(-0.5)
    # std of (-1, -1, +0.5) = 0.866; t(0.975, 2) = 4.303
    assert table.loc[8, "acc ci95"] == pytest.approx(4.303 * 0.866025 / math.sqrt(3), rel=1e-4)
    assert list(table["acc n"]) == [3, 3]


def test_a_reference_that_matches_several_settings_is_refused():
    with pytest.raises(ValueError, match="matches 3 settings; allowed: exactly one"):
        paired.paired(trials(), {"model.lora_alpha": "512"}, ["acc"])
    with pytest.raises(ValueError, match="--ref no.such: not a column"):
        paired.paired(trials(), {"no.such": "1"}, ["acc"])


def test_command_prints_a_markdown_table_and_refuses_bad_input(tmp_path, capsys):
    (tmp_path / "q").mkdir()
    trials().to_parquet(tmp_path / "q" / "trials.parquet")
    write_manifest(tmp_path / "q", Manifest("q", "smoke", "cifar10", {},
                                            varying=("compression.bits",), seeds=(0, 1, 2)))
    assert paired.main(["q", "--results", str(tmp_path), "--ref", "compression.bits=32"]) == 0
    out = capsys.readouterr().out
    assert "| 2 | -5.00 ± 0.00 (3) |" in out
    assert paired.main(["q", "--results", str(tmp_path), "--ref", "bits"]) == 2
    assert paired.main(["q", "--results", str(tmp_path), "--ref", "compression.bits=32",
                        "--value", "nope"]) == 2
    err = capsys.readouterr().err
    assert "error: --ref bits: not KEY=VALUE pairs" in err and "error: --value nope" in err
