"""`--seeds auto` (`fcl.tune.auto_seeds`): the seed rule run by a study's driver through Ray
Tune. A look's seeds go only to the settings of the comparisons still open, the study stored is
the one a fixed-seed run gives at those seeds (same trial ids, same numbers), and the manifest
records the rule, the looks, the verdicts and the seeds each setting got."""
from __future__ import annotations

import argparse
import dataclasses
import json

import pandas as pd
import pytest

from fcl.sequential import ABOVE, OPEN
from fcl.tune import Study, StudyOptions, auto_seeds, grid, run_study
from fcl.tune.auto_seeds import AutoSeeds, parse_auto, run_auto
from fcl.tune.cli import seeds_arg

TOY = Study("auto_toy", {"client.lr": grid(0.005, 0.05, 0.2)},
            base={"rounds": 2, "data.num_tasks": 2, "model.width": 8, "model.weights": "",
                  "data.test_per_class": 10})


def test_seeds_parse_as_a_count_or_auto_with_its_most():
    parse = seeds_arg(None)
    assert parse("4") == 4 and parse("auto") == AutoSeeds(10) and parse("auto:6") == AutoSeeds(6)
    for bad in ("auto:1", "auto:x", "autox", "auto:101", "0"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse(bad)
    with pytest.raises(argparse.ArgumentTypeError, match="is not a int"):
        seeds_arg("optuna")("auto")          # a search's seeds are the objective's
    with pytest.raises(ValueError):
        parse_auto("auto:", 100)
    assert AutoSeeds(6).rule().looks == (3, 5, 6) and AutoSeeds(2).rule().looks == (2,)


def test_a_look_adds_seeds_only_to_open_comparisons_and_matches_a_fixed_run(
        local_ray, tmp_path, capsys, monkeypatch):
    """Look 1's verdicts are set (the first comparison resolved, the second open) so that
    look 2 is known: it must run the open comparison's two settings only."""
    real = auto_seeds.judge

    def judge(*args):
        verdicts = real(*args)
        if args[6] == 0:                  # the look
            verdicts[0] = dataclasses.replace(verdicts[0], verdict=ABOVE)
            verdicts[1] = dataclasses.replace(verdicts[1], verdict=OPEN)
        return verdicts
    monkeypatch.setattr(auto_seeds, "judge", judge)
    opts = StudyOptions(preset="smoke", results=str(tmp_path / "auto"))
    outcome = run_auto(TOY, opts, AutoSeeds(4))
    assert (outcome.finished, outcome.failed) == (11, 0)
    folder = tmp_path / "auto" / "auto_toy"
    record = json.loads((folder / "study.json").read_text())["seeds_auto"]
    assert record["done"] and record["looks"] == [
        {"seeds": [0, 1, 2], "settings": 3, "trials": 9},
        {"seeds": [3], "settings": 2, "trials": 2}]
    assert record["comparisons"][0] == {
        "label": "client.lr=0.05 against client.lr=0.005 (ACC)", "seeds": 3,
        "verdict": "resolved at 3 seeds (above its bound)"}
    assert record["comparisons"][1]["label"] == "client.lr=0.2 against client.lr=0.005 (ACC)"
    assert record["comparisons"][1]["seeds"] == 4
    assert record["seeds_per_setting"] == {"client.lr=0.005": 4, "client.lr=0.05": 3,
                                           "client.lr=0.2": 4}
    trials = pd.read_parquet(folder / "trials.parquet")
    assert trials.groupby("client.lr")["seed"].apply(sorted).to_dict() == {
        0.005: [0, 1, 2, 3], 0.05: [0, 1, 2], 0.2: [0, 1, 2, 3]}
    assert json.loads((folder / "study.json").read_text())["seeds"] == [0, 1, 2, 3]
    printed = capsys.readouterr().out
    assert "seeds auto: look 1 of 2: seeds 0-2 for 3 of 3 settings (9 trials)" in printed
    assert "seeds auto: look 2 of 2: seed 3 for 2 of 3 settings (2 trials)" in printed
    # the rows are a fixed-seed run's at the same seeds: same trial ids, same ACC
    fixed = run_study(TOY, StudyOptions(preset="smoke", seeds=4, results=str(tmp_path / "f")))
    fixed_acc = fixed.frames["trials"].set_index("trial_id")["acc"]
    auto_acc = trials.set_index("trial_id")["acc"].sort_index()
    pd.testing.assert_series_equal(auto_acc, fixed_acc.loc[auto_acc.index])


def test_a_rerun_is_refused_then_resume_reads_the_looks_back(local_ray, tmp_path):
    opts = StudyOptions(preset="smoke", results=str(tmp_path))
    small = Study("auto_two", {"client.lr": grid(0.005, 0.2)}, base=TOY.base)
    run_auto(small, opts, AutoSeeds(2))
    before = pd.read_parquet(tmp_path / "auto_two" / "trials.parquet")
    from fcl.config import ConfigError
    with pytest.raises(ConfigError, match=r"^--resume=off: study auto_two already has looks"):
        run_auto(small, opts, AutoSeeds(2))
    again = run_auto(small, StudyOptions(preset="smoke", results=str(tmp_path), resume=True),
                     AutoSeeds(2))
    assert again.finished == 0          # the look is read back, nothing reruns
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "auto_two" / "trials.parquet"),
                                  before)



def test_the_dashboard_line_counts_the_rules_verdicts_and_seeds():
    from analysis.seed_comparisons import rule_summary
    record = {"most": 10, "done": True, "seeds_per_setting": {"a": 3, "b": 10, "c": 5},
              "comparisons": [{"verdict": "resolved at 3 seeds (above its bound)"},
                              {"verdict": "resolved at 7 seeds (below its bound)"},
                              {"verdict": "open at the maximum (10 seeds)"},
                              {"verdict": "stopped at 5 seeds (futility: ...)"}]}
    assert rule_summary(record) == (
        "seed rule (--seeds auto, at most 10): 4 comparisons, 2 resolved (at 3-7 seeds), 1 open "
        "at the maximum, 1 stopped for futility; 3-10 seeds a setting")
    record.update(done=False, comparisons=record["comparisons"][2:3])
    assert rule_summary(record) == ("seed rule (--seeds auto, at most 10): 1 comparison, 1 "
                                    "open; 3-10 seeds a setting; not done: --resume goes on")
    assert rule_summary(None) == ""


def test_a_study_with_claims_is_judged_on_them_as_analysis_loads_it(local_ray, tmp_path):
    from analysis.claims import CLAIMS
    from fcl.studies import STUDIES
    run_auto(STUDIES["fcl_methods"], StudyOptions(preset="smoke", results=str(tmp_path)),
             AutoSeeds(2))
    record = json.loads((tmp_path / "fcl_methods" / "study.json").read_text())["seeds_auto"]
    names = {c.name for c in CLAIMS if c.study == "fcl_methods"}
    assert record["comparisons"] and all(
        any(c["label"].startswith(f"{n}: ") for n in names) and c["seeds"] == 2
        for c in record["comparisons"])
