"""The `--seeds auto` rule (`fcl.sequential`): its t quantiles against the table, its looks and
the alpha they spend, its verdicts, and its replay on stored studies (analysis/seeds_simulation)
on hand-built comparisons."""
import math
import random

import pytest

from analysis.seeds_simulation import Replay, Stored, run_rule, simulate
from fcl.intervals import t975
from fcl.sequential import (ABOVE, BELOW, FUTILE, OPEN, SPENDING, SeedRule, judge, spent,
                            t_quantile)


@pytest.mark.parametrize("df", [1, 2, 3, 5, 9, 20, 30])
def test_t_quantiles_match_the_table(df):
    assert t_quantile(0.975, df) == pytest.approx(t975(df), abs=6e-4)


def test_t_quantiles_far_in_the_tail():
    # t(0.995, 2) = 9.925, t(0.9995, 2) = 31.599, t(0.999, 10) = 4.144 (printed tables)
    assert t_quantile(0.995, 2) == pytest.approx(9.925, abs=1e-3)
    assert t_quantile(0.9995, 2) == pytest.approx(31.599, abs=1e-3)
    assert t_quantile(0.999, 10) == pytest.approx(4.144, abs=1e-3)


@pytest.mark.parametrize("spending", SPENDING)
def test_the_looks_spend_exactly_alpha_in_positive_shares(spending):
    rule = SeedRule(most=10, first=3, step=2, spending=spending, boundary="union")
    assert rule.looks == (3, 5, 7, 9, 10)
    assert all(a > 0 for a in rule.levels) and rule.levels == rule.spent_by_look
    assert sum(rule.levels) == pytest.approx(0.05, abs=1e-12)
    assert spent(0.0, 0.05, spending) == 0.0 and spent(1.0, 0.05, spending) == \
        pytest.approx(0.05)


@pytest.mark.parametrize("spending", SPENDING)
def test_simulated_boundaries_spend_no_alpha_twice(spending):
    """Where looks overlap, the simulated level of a later look is above the alpha it
    spends (the union bound's level); the first look, alone, is the same; seeded, the same
    levels every time."""
    union = SeedRule(spending=spending, boundary="union").levels
    simulated = SeedRule(spending=spending).levels
    assert simulated[0] == pytest.approx(union[0], rel=0.1)
    assert all(s > u for s, u in zip(simulated[1:], union[1:]))
    from fcl.sequential import simulated_levels
    assert simulated_levels.__wrapped__((3, 5, 7, 9, 10), SeedRule(spending=spending)
                                        .spent_by_look) == simulated


def test_obrien_fleming_keeps_alpha_for_late_looks_and_pocock_spends_early():
    pocock, obf = SeedRule(spending="pocock"), SeedRule(spending="obrien_fleming")
    assert pocock.levels[0] > 10 * obf.levels[0]
    assert obf.levels[-2] > pocock.levels[-2]


@pytest.mark.parametrize("bad", [dict(first=1), dict(first=11), dict(step=0), dict(alpha=1.0),
                                 dict(spending="linear"), dict(boundary="exact"),
                                 dict(futility=1.0)])
def test_a_bad_rule_is_refused_naming_the_value(bad):
    with pytest.raises(ValueError) as e:
        SeedRule(**bad)
    key, value = next(iter(bad.items()))
    assert str(e.value).startswith(f"{key}={value}: allowed")


def test_judge_by_hand():
    # mean 2, sd 1 over 4 pairs: half-width t(0.975, 3) / 2 = 1.591
    verdict, mean, half = judge([1.0, 2.0, 3.0, 2.0], 0.05)
    assert (verdict, mean) == (ABOVE, 2.0) and half == pytest.approx(3.1824 * math.sqrt(2 / 3)
                                                                      / 2, abs=1e-3)
    assert judge([-1.0, -2.0, -3.0, -2.0], 0.05)[0] == BELOW
    # the same pairs at level 0.001: t(0.9995, 3) = 12.92, the interval reaches 0
    assert judge([1.0, 2.0, 3.0, 2.0], 0.001)[0] == OPEN
    # against a bound of -2: a loss of less than 2 points
    assert judge([-1.0, -1.5, -0.5, -1.0], 0.05, bound=-2.0)[0] == ABOVE
    assert judge([5.0], 0.05)[0] == OPEN


def test_a_resolved_comparison_stops_and_an_open_one_runs_to_the_most():
    order = list(range(10))
    clear = {s: 10.0 + (s % 2) for s in order}             # resolved at the first look
    tie = {s: (-1.0) ** s for s in order}                  # never resolved
    verdicts, stopped = run_rule([clear, tie], order, (3, 5, 10), (0.01, 0.01, 0.03))
    assert verdicts == [ABOVE, OPEN] and stopped == [3, 10]


def test_replay_spends_less_on_a_resolved_comparison_and_agrees_with_fixed_seeds():
    """Two settings compared and resolved by a wide margin, one more setting compared with
    them by nothing: the replay runs the compared settings at the first look only, the other
    at `first` seeds, and agrees with the fixed seeds' verdict."""
    seeds = tuple(range(10))
    rng = random.Random(1)
    wide = Stored("wide", "A", "B", {s: 30.0 + rng.gauss(0, 1) for s in seeds})
    minutes = {name: {s: 1.0 for s in seeds} for name in ("A", "B")}
    replay = Replay("folder", "study", (wide,), minutes, seeds)
    rule = SeedRule(most=10, first=3, step=2, spending="pocock")
    row = simulate(replay, rule, draws=20, seed=0, study_minutes=30.0)   # A, B and a third
    assert row["comparisons agreeing"] == 1.0 and row["opposite"] == 0.0
    # A and B at 3 seeds (6 min), the third setting at 3 of its 10 (3 min)
    assert row["minutes rule"] == pytest.approx(9.0)
    assert row["share compared"] == pytest.approx(0.3)


@pytest.mark.parametrize("boundary", ["simulated", "union"])
def test_under_no_true_difference_the_rule_resolves_at_most_alpha_and_naive_peeking_more(
        boundary):
    """Normal differences with mean 0 (new draws, not the simulation's): the rule's false
    resolutions stay under 5% (the simulated boundary near it, the union bound below), a 95%
    interval at every look resolves more."""
    rng = random.Random(7)
    rule = SeedRule(most=10, first=3, step=1, spending="pocock", boundary=boundary)
    naive = (0.05,) * len(rule.looks)
    false_rule = false_naive = 0
    trials = 4000
    for _ in range(trials):
        d = {s: rng.gauss(0, 1) for s in range(10)}
        order = list(range(10))
        false_rule += run_rule([d], order, rule.looks, rule.levels)[0][0] != OPEN
        false_naive += run_rule([d], order, rule.looks, naive)[0][0] != OPEN
    sigma = math.sqrt(0.05 * 0.95 / trials)
    assert false_rule / trials <= 0.05 + 3 * sigma
    if boundary == "simulated":
        assert false_rule / trials >= 0.05 - 3 * sigma
    assert false_naive / trials > 0.09


def test_futility_stops_a_comparison_far_from_resolving_and_never_resolves_one():
    rule = SeedRule(most=10, first=3, step=2, futility=0.5)
    tie = [0.1, -0.2, 0.15]                    # a mean near 0 with this spread: hopeless
    assert rule.verdict(tie, 0) == FUTILE
    assert SeedRule(futility=0.0).verdict(tie, 0) == OPEN
    assert rule.verdict(tie, len(rule.looks) - 1) == OPEN     # the last look: just open
    close = [1.0, 0.2, 1.6]                    # not resolved at 3, could be at 10
    assert judge(close, rule.levels[0])[0] == OPEN and rule.verdict(close, 0) == OPEN
    verdicts, stopped = run_rule([dict(enumerate(tie * 4))], list(range(10)), rule.looks,
                                 rule.levels, rule)
    assert verdicts == [OPEN] and stopped == [3]


def test_the_command_replays_the_stored_studies_and_refuses_a_bad_rule(capsys, monkeypatch):
    from pathlib import Path
    from analysis.seeds_simulation import main
    monkeypatch.chdir(Path(__file__).resolve().parent.parent)
    assert main(["--results", "results-pretrained", "--draws", "2"]) == 0
    out = capsys.readouterr().out
    assert "| results-pretrained/optimizers |" in out and "| all |" in out
    assert main(["--first", "1"]) == 2
    assert capsys.readouterr().err.strip() == "error: --first=1: allowed 2 <= first <= most (10)"
