"""`python -m analysis claims`: each claim judged from same-seed comparisons, on every results
folder side by side (the stored ones here; a folder without the study reads "not run")."""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from analysis import claims

REPO = Path(__file__).resolve().parent.parent


def trials(acc_a, acc_b) -> pd.DataFrame:
    rows = [{"seed": s, "k": "a", "acc": v} for s, v in enumerate(acc_a)]
    rows += [{"seed": s, "k": "b", "acc": v} for s, v in enumerate(acc_b)]
    return pd.DataFrame(rows)


def test_a_comparison_pairs_seeds_and_its_verdict_follows_the_interval():
    c = claims.Comparison("a - b", "acc", {"k": "a"}, {"k": "b"})
    # seed spread of 10 points, a constant +1 lead: paired, the interval is 0
    mean, half, n = claims.compare(trials([61, 71, 81], [60, 70, 80]), {}, c)
    assert (mean, half, n) == (1.0, 0.0, 3)
    assert claims.verdict([(mean, half, n)], [1]) == claims.HOLDS
    assert claims.verdict([(mean, half, n)], [-1]) == claims.FAILS
    noisy = claims.compare(trials([61, 69, 83], [60, 70, 80]), {}, c)
    assert noisy[1] > abs(noisy[0]) and claims.verdict([noisy], [1]) == claims.OPEN
    # one comparison holds, the other is missing: not resolved; one against: does not hold
    assert claims.verdict([(1.0, 0.0, 3), (math.nan, math.nan, 0)], [1, 1]) == claims.OPEN
    assert claims.verdict([(1.0, 0.0, 3), (-2.0, 1.0, 3)], [1, 1]) == claims.FAILS
    missing = claims.Comparison("a - c", "acc", {"k": "a"}, {"k": "c"})
    assert claims.compare(trials([1], [2]), {}, missing)[2] == 0


def test_the_table_judges_every_claim_on_each_folder(tmp_path, capsys):
    assert claims.main(["--results", str(REPO / "results"), str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 + len(claims.CLAIMS)
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[-1] == "not run"                       # tmp_path stores no study
        assert any(v in cells[-2] for v in (claims.HOLDS, claims.FAILS, claims.OPEN)), line
    assert claims.main(["--results", str(tmp_path / "none")]) == 2


def test_a_barely_changes_claim_holds_only_inside_its_margin():
    assert claims.verdict([(0.5, 1.0, 3)], [0], [2.0]) == claims.HOLDS
    assert claims.verdict([(1.5, 1.0, 3)], [0], [2.0]) == claims.OPEN
    assert claims.verdict([(-3.5, 1.0, 3)], [0], [2.0]) == claims.FAILS
    assert claims.verdict([(-1.0, 0.5, 3)], [-1]) == claims.HOLDS
    assert claims.verdict([(1.0, 0.5, 3)], [-1]) == claims.FAILS
