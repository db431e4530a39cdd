"""FLoCoRA Table II (`flocora_layers`): rows in the paper's order and the same-seed differences
from Vanilla, on trials whose numbers are worked by hand."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from analysis.figures.flocora_table2 import table_ii_stats
from fcl.intervals import t975

# (adapter on the FC, norms trained) -> ACC at seeds 0, 1, 2
ACC = {(True, False): (40.0, 42.0, 44.0),      # Vanilla
       (True, True): (41.0, 42.0, 46.0),       # + norms: +1, 0, +2 -> mean 1, SD 1
       (False, True): (50.0, 52.0, 54.0)}      # + final FC: +10 at every seed, SD 0


def trials() -> pd.DataFrame:
    rows = [{"model.lora_on_head": head, "model.lora_train_norms": norms, "seed": seed,
             "acc": acc, "bytes_up": 2e6, "bytes_down": 1e6,
             "trainable_params_per_task": 1000 + 10 * norms - 5 * (not head)}
            for (head, norms), accs in ACC.items() for seed, acc in enumerate(accs)]
    return pd.DataFrame(rows).sample(frac=1.0, random_state=0)   # file order does not matter


def test_rows_in_the_papers_order_with_same_seed_differences_from_vanilla():
    stats = table_ii_stats(trials())
    assert list(stats["row"]) == ["FLoCoRA Vanilla", "+ Norm. Layers", "+ Final FC"]
    vanilla, norms, fc = (stats.iloc[i] for i in range(3))
    assert vanilla["acc_mean"] == pytest.approx(42.0) and vanilla["d_n"] == 0
    assert norms["d_acc"] == pytest.approx(1.0)
    assert norms["d_ci95"] == pytest.approx(t975(2) * 1.0 / math.sqrt(3))
    assert norms["d_n"] == 3
    assert fc["d_acc"] == pytest.approx(10.0) and fc["d_ci95"] == pytest.approx(0.0)
    assert list(stats["tcc_mb"]) == [3.0, 3.0, 3.0]
    assert list(stats["trainable_params_per_task"]) == [1000, 1010, 1005]


def test_without_vanilla_no_difference_is_made_up():
    t = trials()
    stats = table_ii_stats(t[t["model.lora_train_norms"]])
    assert list(stats["row"]) == ["+ Norm. Layers", "+ Final FC"]
    assert stats["d_acc"].isna().all() and (stats["d_n"] == 0).all()
