"""`--scheduler asha`: refused with one line by grids that feed figures, checked before any
trial, and, through real Ray Tune, a search of 8 smoke trials that stops some early and keeps
them in trials.parquet as EARLY_STOPPED with the round they reached."""
import os
import runpy

import pandas as pd
import pytest

ray = pytest.importorskip("ray")

from fcl.tune import Study, StudyOptions, grid, run_study  # noqa: E402
from fcl.tune.cli import run_study_cli  # noqa: E402
from fcl.tune.schedulers import SchedulerOptions  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_study(name: str):
    return runpy.run_path(os.path.join(REPO, "studies", f"{name}.py"))["STUDY"]


@pytest.mark.parametrize("study,argv,line", [
    ("ablation_lr", ["--scheduler", "asha"], "error: --scheduler=asha: study ablation_lr is a "
                                             "grid whose figure needs every trial's final value"),
    ("drift_correction", ["--scheduler", "asha"], "error: --scheduler=asha: study "
                                                  "drift_correction is a grid"),
    ("search", ["--grace-rounds", "2"], "error: --grace-rounds=2: only with --scheduler asha"),
    ("search", ["--scheduler", "asha", "--reduction-factor", "1"],
     "error: --reduction-factor=1.0: out of range; allowed: > 1"),
    ("search", ["--scheduler", "asha", "--grace-rounds", "50", "--preset", "smoke"],
     "error: --grace-rounds=50: no trial runs past round 9"),
    ("search", ["--scheduler", "hyperband"], "error: argument --scheduler: invalid choice"),
])
def test_bad_scheduler_flags_fail_with_one_line_and_exit_2(study, argv, line, capsys, tmp_path):
    code = run_study_cli(load_study(study), ["--results", str(tmp_path), "--dry-run", *argv]) \
        if "invalid choice" not in line else None
    if code is None:
        with pytest.raises(SystemExit) as exit_:
            run_study_cli(load_study(study), ["--results", str(tmp_path), *argv])
        code = exit_.value.code
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith(line) and err.count("\n") == 1, err
    assert not os.listdir(tmp_path)


def test_dry_run_of_an_asha_search_names_its_rungs(capsys):
    code = run_study_cli(load_study("search"), ["--preset", "smoke", "--dry-run", "--scheduler",
                                                "asha", "--reduction-factor", "2"])
    assert code == 0
    out = capsys.readouterr().out
    # smoke: rounds 5 or 10, T = 5: grace Q = 2 rounds of the base (R = 10); max_t = 10
    assert ("scheduler: asha on acc, time attribute round, grace 2 rounds, reduction factor 2, "
            "rungs at rounds 2, 4, 8") in out


def test_export_counts_never_reported_trials_and_marks_scheduler_stops():
    """Tune marks a trial its scheduler stopped as done; an interrupted one is not; a trial
    still pending when a study is interrupted has no config at all."""
    from types import SimpleNamespace as Result

    from fcl.presets import preset
    from fcl.tune.export import outcomes
    grid = [Result(path="/e/t0", config=None, error=None, checkpoint=None, metrics={}),
            Result(path="/e/t1", config={"client.lr": 0.1}, error=None, checkpoint=None,
                   metrics={"done": True, "round": 3, "acc": 55.0}),
            Result(path="/e/t2", config={"client.lr": 0.2}, error=None, checkpoint=None,
                   metrics={"done": False, "round": 2, "acc": 50.0})]
    out, unfinished = outcomes(grid, preset("smoke"))
    assert unfinished == 2
    assert [(o.status, o.config.client.lr, o.reached) for o in out] == [
        ("EARLY_STOPPED", 0.1, {"round_reached": 3, "acc_reached": 55.0})]


# backbone widths whose random init differs in accuracy, best first (see the ASHA test), at
# the smoke study's size of the measurement: a random backbone (no shipped weights), 5 rounds,
# 10 test images per class
WIDTHS_BEST_FIRST = (6, 8, 4, 16, 18, 12)
RANDOM_INIT_SIZE = {"model.weights": "", "rounds": "5", "data.test_per_class": "10"}


def test_asha_search_stops_trials_early_and_records_them(local_ray, tmp_path):
    """Smoke trials learn next to nothing in a few rounds, so the trials differ by their
    initialisation instead: at client.lr = 1e-6 each backbone width keeps the accuracy of its
    random init (measured with fcl.engine.run at the smoke study size, GroupNorm(2, C): width
    6 at 51%, 8 at 50%, 4 at 49%, 16 at 48%, 18 at 47%, 12 at 45%; even widths only, as
    model.norm_groups=2 needs), listed best first, so every later trial meets a higher cutoff
    at round 1."""
    space = {"model.width": grid(*WIDTHS_BEST_FIRST)}
    opts = StudyOptions(preset="smoke", sets={"client.lr": "1e-6", "client.local_epochs": "1",
                                              **RANDOM_INIT_SIZE},
                        results=str(tmp_path),
                        scheduler=SchedulerOptions("asha", grace_rounds=1, reduction_factor=2))
    outcome = run_study(Study("asha", space, early_stopping=True), opts)
    trials = pd.read_parquet(tmp_path / "asha" / "trials.parquet")
    rounds = pd.read_parquet(tmp_path / "asha" / "rounds.parquet")
    n = len(WIDTHS_BEST_FIRST)
    assert outcome.trials == n and len(trials) == n and outcome.failed == 0
    stopped = trials[trials["status"] == "EARLY_STOPPED"]
    done = trials[trials["status"] == "TERMINATED"]
    assert len(stopped) >= 1 and len(stopped) + len(done) == n
    # R = 5: rungs at rounds 1, 2, 4; a stopped trial got no further than round 2
    assert stopped["round_reached"].between(1, 2).all()
    assert stopped["acc"].isna().all() and stopped["acc_reached"].notna().all()
    assert stopped["acc_reached"].max() < done["acc_reached"].max()
    assert (done["round_reached"] == 4).all() and (done["acc_reached"] == done["acc"]).all()
    assert str(trials["round_reached"].dtype) == "Int64"
    assert set(rounds["trial_id"]) == set(done["trial_id"])      # rounds: finished trials only
