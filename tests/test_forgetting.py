"""Forgetting beside BWT_f (`fcl.forgetting`, `analysis.forgetting`): drops that BWT_f's signed
sum hides, on hand-built accuracy tables, and drop claims judged on drops."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis import claims
from analysis.forgetting import forgetting_columns
from fcl import forgetting

NAN = math.nan


def test_a_gain_does_not_cancel_a_drop():
    # T = 2, R = 4, Q = 2, both tasks trained from round 0; at the boundary (round 2) task 0
    # loses 8 points and task 1 gains 8: BWT_f's sum is 0, the drops are not
    A = np.array([[50, 60, 52, 58], [40, 50, 58, 59]], dtype=float)
    changes = forgetting.boundary_changes(A, 2, [0, 0])
    assert sorted(changes.tolist()) == [-8.0, 8.0]
    assert forgetting.mean_drop(changes) == 4.0          # (8 + 0) / 2
    assert forgetting.drop_share(changes) == 50.0        # one of two terms loses > 5
    assert forgetting.drop_share(changes, points=10) == 0.0
    # best - final: task 0 peaked at 60, ends at 58; task 1 peaked at 58, ends at 59
    assert forgetting.forgetting(A, [0, 0], 2) == pytest.approx((2 + -1) / 2)


def test_only_tasks_trained_before_a_boundary_count():
    # task 1 is first updated at round 2 (its phase starts there): its jump from chance at the
    # boundary is learning, and it is still being learned in the last phase
    A = np.array([[50, 60, 52, 58], [NAN, 10, 70, 72]], dtype=float)
    changes = forgetting.boundary_changes(A, 2, [0, 2])
    assert changes.tolist() == [-8.0]
    assert forgetting.forgetting(A, [0, 2], 2) == 2.0
    # no term at all (one phase): NaN, not 0
    one_phase = forgetting.boundary_changes(A, 4, [0, 0])
    assert math.isnan(forgetting.mean_drop(one_phase))
    assert math.isnan(forgetting.drop_share(one_phase))


def test_stored_tasks_give_the_same_numbers():
    A = np.array([[50, 60, 52, 58], [40, 50, 58, 59]], dtype=float)
    tasks = pd.DataFrame([{"trial_id": "t", "round": r, "task": t, "accuracy": A[t, r],
                           "reports": 1} for t in range(2) for r in range(4)])
    trials = pd.DataFrame({"trial_id": ["t", "gone"], "rounds": [4, 4],
                           "data.num_tasks": [2, 2]})
    got = forgetting_columns(trials, tasks).set_index("trial_id")
    assert got.loc["t"].tolist() == [4.0, 50.0, 0.5]
    assert got.loc["gone"].isna().all()                 # no tasks stored: NaN


def drops(ref_shares, other_shares, ref_drop=2.0, other_drop=1.0) -> pd.DataFrame:
    rows = [{"seed": s, "k": "ref", "mean_drop": ref_drop + s / 10, "drop_share": v}
            for s, v in enumerate(ref_shares)]
    rows += [{"seed": s, "k": "x", "mean_drop": other_drop + s / 20, "drop_share": v}
             for s, v in enumerate(other_shares)]
    return pd.DataFrame(rows)


LESS = claims.Comparison("mean drop x - ref", "mean_drop", {"k": "x"}, {"k": "ref"}, sign=-1)
CLAIM = claims.Claim("x drops less than ref", "optimizers", "FCL", "", (LESS,))


def verdict_of(table: pd.DataFrame) -> str:
    result = [claims.compare(table, {}, LESS)]
    testable = claims.drops_seen(table, {}, LESS)
    return claims.verdict(result, [LESS], testable)


def test_a_drop_claim_needs_the_reference_to_drop():
    # x drops 1 point less at every seed, and the reference drops sharply in every seed
    assert verdict_of(drops([10, 12, 8], [0, 0, 0])) == claims.HOLDS
    # a reference with no sharp drop, or one in one seed of three: not testable, not "holds"
    assert verdict_of(drops([0, 0, 0], [0, 0, 0])) == claims.NOT_TESTABLE
    assert verdict_of(drops([0, 0, 6], [0, 0, 0])) == claims.NOT_TESTABLE
    # a BWT_f claim is judged as before, whatever the drops
    bwt = claims.Comparison("BWT_f", "bwt_f", {"k": "x"}, {"k": "ref"})
    assert claims.drops_seen(drops([0, 0, 0], [0, 0, 0]), {}, bwt)


def test_the_drop_claims_of_the_fcl_paper_are_judged_on_drops():
    named = {c.name: c for c in claims.CLAIMS}
    for name in ("Table 3: FedAdam drops less than FedAvg at eta 1",
                 "Table 3: FedSGD's drops shrink as eta falls",
                 "Fig. 4a: FedSGD eta 1 drops at phase boundaries, FedAdam eta 0.5 does not",
                 "Fig. 5a: smaller drops at a lower server LR (client LR 0.05)"):
        assert [comp.value for comp in named[name].comparisons] == ["mean_drop"], name
