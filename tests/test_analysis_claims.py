"""`python -m analysis claims`: each claim judged from same-seed comparisons, on every results
folder side by side (the stored ones here; a folder without the study reads "not tested")."""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from analysis import claims
from fcl.presets import preset

REPO = Path(__file__).resolve().parent.parent


def trials(acc_a, acc_b, b="b") -> pd.DataFrame:
    rows = [{"seed": s, "k": "a", "acc": v} for s, v in enumerate(acc_a)]
    rows += [{"seed": s, "k": b, "acc": v} for s, v in enumerate(acc_b)]
    return pd.DataFrame(rows)


def judged(comparison, table) -> str:
    return claims.verdict([claims.compare(table, {}, comparison)], [comparison])


def test_a_comparison_pairs_seeds_and_its_verdict_follows_the_interval():
    up = claims.Comparison("a - b", "acc", {"k": "a"}, {"k": "b"})
    down = claims.Comparison("a - b", "acc", {"k": "a"}, {"k": "b"}, sign=-1)
    # seed spread of 10 points, a constant +1 lead: paired, the interval is 0
    table = trials([61, 71, 81], [60, 70, 80])
    assert claims.compare(table, {}, up) == (1.0, 0.0, 3)
    assert judged(up, table) == claims.HOLDS and judged(down, table) == claims.FAILS
    noisy = trials([61, 69, 83], [60, 70, 80])
    mean, half, _ = claims.compare(noisy, {}, up)
    assert half > abs(mean) and judged(up, noisy) == claims.OPEN
    # one comparison holds, the other is missing: not resolved; one against: does not hold
    assert claims.verdict([(1.0, 0.0, 3), (math.nan, math.nan, 0)], [up, up]) == claims.OPEN
    assert claims.verdict([(1.0, 0.0, 3), (-2.0, 1.0, 3)], [up, up]) == claims.FAILS
    # no trial matches either setting (another data set, say): not tested
    missing = claims.Comparison("a - c", "acc", {"k": "a"}, {"k": "c"})
    assert claims.compare(trials([1], [2]), {}, missing)[2] == 0
    assert judged(missing, trials([1], [2])) == claims.UNTESTED


def test_a_loses_less_than_claim_is_one_sided_against_its_bound():
    within2 = claims.Comparison("8-bit - FP", "acc", {"k": "a"}, {"k": "b"}, bound=-2.0)
    assert judged(within2, trials([59.5, 69.5, 79.0], [60, 70, 80])) == claims.HOLDS
    assert judged(within2, trials([57, 67, 77.5], [60, 70, 80])) == claims.FAILS
    assert judged(within2, trials([58, 70, 79], [60, 70, 80])) == claims.OPEN   # -1 ± 2.5
    assert claims.verdict([(5.0, 1.0, 3)], [within2]) == claims.HOLDS            # gains hold


def test_every_claim_names_a_study_script_and_config_keys():
    keys = set(preset("smoke", {}).to_flat())
    for claim in claims.CLAIMS:
        assert (REPO / "studies" / f"{claim.study}.py").is_file(), claim.name
        used = {*claim.fixed, *(k for comp in claim.comparisons for k in (*comp.a, *comp.b))}
        assert used <= keys, (claim.name, used - keys)
        assert claim.comparisons and all(comp.sign in (1, -1) for comp in claim.comparisons)
    assert len({claim.name for claim in claims.CLAIMS}) == len(claims.CLAIMS)
    papers = {claim.paper for claim in (*claims.CLAIMS, *claims.UNTESTED_CLAIMS)}
    assert papers == {"FCL", "FLoCoRA"}


@pytest.mark.parametrize("study", ["flocora_quantization", "ablation_rounds_epochs"])
def test_the_claims_of_a_stored_study_are_judged(study):
    chosen = [c for c in claims.CLAIMS if c.study == study]
    assert len(chosen) >= 2                 # FLoCoRA's Table III; Fig. 5b's ACC and BWT_f
    cells = [claims.judge(c, REPO / "results", {}) for c in chosen]
    assert all(v in (claims.HOLDS, claims.FAILS, claims.OPEN) for _, v in cells), cells


def test_the_table_judges_every_claim_on_each_folder(tmp_path, capsys):
    assert claims.main(["--results", str(REPO / "results"), str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 + claims.ROWS + 1
    verdicts = (claims.HOLDS, claims.FAILS, claims.OPEN, claims.NOT_TESTABLE, claims.UNTESTED)
    for line in lines[2:-1]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[-1].endswith(f"**{claims.UNTESTED}**")     # tmp_path stores no study
        assert any(f"**{v}**" in cells[-2] for v in verdicts), line
    totals = [c.strip() for c in lines[-1].strip("|").split("|")]
    assert totals[-1] == (f"{claims.HOLDS} 0 · {claims.FAILS} 0 · {claims.OPEN} 0 · "
                          f"{claims.NOT_TESTABLE} 0 · {claims.UNTESTED} {claims.ROWS}")
    counted = sum(int(part.rsplit(" ", 1)[1]) for part in totals[-2].split(" · "))
    assert counted == claims.ROWS
    assert claims.main(["--results", str(tmp_path / "none")]) == 2


def test_the_table_goes_to_markdown_or_csv_and_briefly_to_a_terminal(tmp_path, capsys):
    folder = str(REPO / "results")
    assert claims.main(["--results", folder]) == 0
    printed = capsys.readouterr().out
    md, csv = tmp_path / "claims.md", tmp_path / "claims.csv"
    assert claims.main(["--results", folder, "--out", str(md)]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {md} ({claims.ROWS} claims x 1 folders)")
    assert md.read_text() == printed                       # the same table as printed
    assert claims.main(["--results", folder, "--out", str(csv)]) == 0
    capsys.readouterr()
    rows = pd.read_csv(csv)
    assert len(rows) == claims.ROWS and set(rows["folder"]) == {folder}
    verdicts = {claims.HOLDS, claims.FAILS, claims.OPEN, claims.NOT_TESTABLE, claims.UNTESTED}
    assert set(rows["verdict"]) <= verdicts
    for cell, verdict in zip(rows["cell"], rows["verdict"]):
        assert f"**{verdict}**" in cell
    assert claims.main(["--results", folder, "--brief"]) == 0
    brief = capsys.readouterr().out.splitlines()
    assert len(brief) == 1 + claims.ROWS and max(map(len, brief)) < 120
    assert claims.main(["--results", folder, "--out", str(tmp_path / "claims.txt")]) == 2
    assert capsys.readouterr().err.startswith(f"error: --out={tmp_path / 'claims.txt'}: "
                                              "unknown format; allowed: a .md or .csv file")
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_study_run_with_seeds_auto_is_judged_by_its_rules_verdicts():
    """Its seeds were chosen by peeking: the rule's verdicts (study.json's `seeds_auto`) judge
    it, not a fixed-n interval over the seeds it ended with."""
    claim = claims.CLAIMS[0]
    comps = claim.comparisons
    record = {"comparisons": [{"label": f"{claim.name}: {c.label}",
                               "verdict": "resolved at 5 seeds (above its bound)"} for c in comps]}
    assert claims.rule_verdict(record, claim, comps) == (
        claims.HOLDS, "; ".join(["resolved at 5 seeds (above its bound)"] * len(comps)))
    record["comparisons"][0]["verdict"] = "open at the maximum (10 seeds)"
    assert claims.rule_verdict(record, claim, comps)[0] == claims.OPEN
    record["comparisons"][-1]["verdict"] = "resolved at 3 seeds (below its bound)"
    assert claims.rule_verdict(record, claim, comps)[0] == claims.FAILS
    assert claims.rule_verdict({"comparisons": []}, claim, comps) == (
        claims.OPEN, "; ".join(["not judged"] * len(comps)))


def test_a_seeds_auto_comparison_shows_the_interval_its_rule_decided_on():
    """Over the seeds the rule had when it decided (3 of 5 here), at that look's level."""
    from fcl.sequential import SeedRule, t_quantile
    from analysis.seed_stats import t975
    comp = claims.Comparison("a - b", "acc", {"k": "a"}, {"k": "b"})
    claim = claims.Claim("c", "s", "FCL", "says", (comp,))
    rule = SeedRule()
    record = {"most": rule.most, "first": rule.first, "step": rule.step,
              "levels": list(rule.levels), "comparisons": [{"label": "c: a - b", "seeds": 3}]}
    table = trials([61, 72, 80, 50, 90], [60, 70, 80, 60, 60])
    mean, half, n = claims.rule_interval(table, claim, comp, record)
    d = [1.0, 2.0, 0.0]
    sd = (sum((x - 1.0) ** 2 for x in d) / 2) ** 0.5
    assert (mean, n) == (1.0, 3)
    assert half == pytest.approx(t975(2) * sd / 3 ** 0.5 * t_quantile(1 - rule.levels[0] / 2, 2)
                                 / t975(2))
    assert claims.rule_interval(table, claim, comp, {**record, "comparisons": []}) is None
