"""What a run and a study print while they run: the round line's elapsed time and ETA, the
study's one progress line (trials done / running / failed / to go, ETA) and its best config."""
import math
import time
from types import SimpleNamespace

import pandas as pd
import pytest

from fcl.run_command import progress_line
from fcl.clock import clock

ROUND = {"round": 2, "phase": 1, "tasks_trained": [0, 3], "clients_reporting": 3,
         "clients_sampled": 3, "drift": 0.5, "mean_acc": 71.25, "bytes_up": 1e5,
         "bytes_down": 1e5}


def test_clock_reads_as_minutes_and_hours():
    assert [clock(s) for s in (0, 12.4, 65, 3723)] == ["0:00", "0:12", "1:05", "1:02:03"]


def test_round_line_has_elapsed_and_eta_at_the_mean_round_time():
    line = progress_line(ROUND, 15, elapsed=12.0)      # 3 rounds in 12 s: 12 to go at 4 s
    assert line.endswith("sent 0.200 MB elapsed 0:12 ETA 0:48")
    assert line.startswith("round    3/15 phase 1 tasks 0,3")
    assert "elapsed" not in progress_line(ROUND, 15)
    last = progress_line({**ROUND, "round": 14, "mean_acc": math.nan}, 15, elapsed=61.0)
    assert last.endswith("elapsed 1:01 ETA 0:00") and "acc" not in last


pytest.importorskip("ray")
from fcl.tune.progress import LineReporter, best_line, eta_s, study_line  # noqa: E402


def test_study_line():
    assert study_line(3, 2, 1, 6, 75, 150) == (
        "trials 3 done, 2 running, 1 failed, 6 to go; elapsed 1:15 ETA 2:30")
    assert study_line(0, 2, 0, 4, 5, None).endswith("elapsed 0:05 ETA unknown")


def test_eta_from_the_cost_model_then_from_finished_trials():
    assert eta_s(5, 2, [], 40.0) == 100.0               # 5 trials x 40 s, 2 at a time
    assert eta_s(5, 2, [10.0, 30.0], 40.0) == 50.0      # finished trials' mean replaces it
    assert eta_s(5, 2, [], None) is None


def test_line_reporter_counts_trials_by_status(capsys):
    def trial(status, wall=None):
        return SimpleNamespace(status=status, last_result={} if wall is None
                               else {"time_total_s": wall})
    rep = LineReporter(total=6, concurrent=2, prior_s=100.0)
    rep.report([trial("TERMINATED", 20.0), trial("TERMINATED", 40.0), trial("RUNNING"),
                trial("ERROR"), trial("PENDING")], done=False)
    line = capsys.readouterr().out.strip()
    # 2 to go + 1 running counted half, at the finished trials' 30 s, 2 at a time: 37.5 s
    assert line.startswith("trials 2 done, 1 running, 1 failed, 2 to go; elapsed 0:0")
    assert line.endswith("ETA 0:38")


def test_eta_is_unknown_until_a_trial_finishes_without_a_prior(capsys):
    def trial(status, wall=None):
        return SimpleNamespace(status=status, last_result={} if wall is None
                               else {"time_total_s": wall})
    # the elapsed time counts from the driver's start, given (Ray's start counts too)
    rep = LineReporter(total=4, concurrent=2, prior_s=None, start=time.perf_counter() - 65)
    rep.report([trial("RUNNING"), trial("RUNNING"), trial("PENDING")], done=False)
    assert capsys.readouterr().out.strip() == (
        "trials 0 done, 2 running, 0 failed, 2 to go; elapsed 1:05 ETA unknown")
    rep.report([trial("TERMINATED", 8.0), trial("RUNNING"), trial("PENDING")], done=False)
    # 2 to go + 1 running counted half, at the finished trial's 8 s, 2 at a time
    assert capsys.readouterr().out.strip().endswith("elapsed 1:05 ETA 0:10")


def test_the_cost_prior_counts_what_a_run_costs_beyond_training():
    """A smoke trial (hundreds of samples) takes about a second, not the 0.1 s of its training
    at the CPU rate: the prior of 12 such trials, 2 at a time, read `ETA 0:01`."""
    from fcl.tune.cost import RUN_FIXED_S, cpu_seconds
    assert cpu_seconds(400, 1, 4000.0) == pytest.approx(0.1 + RUN_FIXED_S)
    assert cpu_seconds(1200, 3, 4000.0) == pytest.approx(0.3 + 3 * RUN_FIXED_S)   # 3 seeds
    assert eta_s(12, 2, [], cpu_seconds(400, 1, 4000.0)) >= 6


def test_the_progress_prior_is_the_measured_rate_not_a_fixed_one(monkeypatch, local_ray):
    """The first ETA (before a trial ends) prices the trials at the base config's training
    rate measured on the driver at the trials' threads, as the dry run does (a fixed rate per
    backbone read 8 hours for a study that took 1)."""
    from fcl.tune import Study, StudyOptions, grid, tuner
    from fcl.tune.cluster import TrialResources
    from fcl.tune.cost import cpu_seconds, point_cost
    from fcl.tune.plan import plan_study
    asked = []

    def rate(cfg, datasets, threads, seconds):
        asked.append((cfg.model.width, threads))
        return 500.0

    monkeypatch.setattr(tuner, "measured_rate", rate)
    plan = plan_study(Study("priced", {"server.lr": grid(1.0, 0.5)}), StudyOptions(preset="smoke"))
    res = TrialResources(cpus=1, gpus=0, threads=1)
    line = tuner.reporter(plan, res, table=False)
    samples = point_cost({"server.lr": 1.0}, plan.cfg, plan.datasets)[0]
    assert asked == [(plan.cfg.model.width, 1)]
    assert line._prior == pytest.approx(cpu_seconds(samples, 1, 500.0))


def test_a_study_ends_with_its_elapsed_time_from_the_drivers_start(tmp_path, monkeypatch, capsys):
    """`run_study` times the study from its start to Ray's stop, not from Tune's loop."""
    import io

    from fcl.tune import Study, StudyOptions, grid, run_study
    from fcl.tune import run as run_module
    from fcl.tune.study import StudyOutcome
    seen = {}

    def claimed(plan, state, t0, out, table=False):          # Ray's part, 0.2 s long
        seen["t0"] = t0
        time.sleep(0.2)
        return StudyOutcome(1, finished=1, wall_s=0.0)
    monkeypatch.setattr(run_module, "run_claimed", claimed)
    out, before = io.StringIO(), time.perf_counter()
    outcome = run_study(Study("timed", {"client.lr": grid(0.05)}),
                        StudyOptions(preset="smoke", results=str(tmp_path)), out=out)
    after = time.perf_counter()
    assert before <= seen["t0"] and 0.2 <= outcome.wall_s <= after - seen["t0"]
    assert out.getvalue().splitlines()[-1] == f"elapsed {clock(outcome.wall_s)} in all"


def test_best_line_names_the_config_with_its_seeds_averaged():
    # 0.05 leads 0.1 by 1.0, 1.4, 1.2 on seeds 0-2: mean 1.2, sd 0.2, t(2) 4.303 -> ± 0.50
    df = pd.DataFrame({"client.lr": [0.05] * 3 + [0.1] * 3 + [0.2],
                       "server.lr": [0.5] * 7, "seed": [0, 1, 2, 0, 1, 2, 0],
                       "acc": [70.0, 70.4, 69.3, 69.0, 69.0, 68.1, 50.0],
                       "status": ["TERMINATED"] * 6 + ["ERROR"]})
    assert best_line(df, ["client.lr", "server.lr", "seed"]) == (
        "best ACC 69.9%: client.lr=0.05, server.lr=0.5 (3 seeds); same-seed difference to the "
        "runner-up +1.2 ± 0.5, 3 seeds")
    assert best_line(df, ["seed"]) == "best ACC 69.3% (6 seeds)"
    assert best_line(df.assign(status="ERROR"), ["client.lr"]) == ""


def test_a_best_that_the_runner_up_is_within_reach_of_is_not_named():
    # 0.05 - 0.1 per seed: +3.0, -1.0, +1.0 -> mean +1.0, sd 2.0, ± 4.303 * 2 / sqrt(3) = 4.97
    df = pd.DataFrame({"client.lr": [0.05] * 3 + [0.1] * 3 + [0.01] * 3,
                       "seed": [0, 1, 2] * 3,
                       "acc": [72.0, 68.0, 70.0, 69.0, 69.0, 69.0, 40.0, 41.0, 42.0],
                       "status": ["TERMINATED"] * 9})
    assert best_line(df, ["client.lr"]) == (
        "no best configuration: the highest ACC, 70.0%: client.lr=0.05 (3 seeds), cannot be "
        "separated from client.lr=0.1 (same-seed difference to the runner-up +1.0 ± 5.0, "
        "3 seeds)")
    # one seed each: nothing to pair, so nothing is separated
    one = df[df["seed"] == 0]
    assert best_line(one, ["client.lr"]).startswith("no best configuration: the highest ACC, "
                                                    "72.0%: client.lr=0.05 (1 seed), cannot be "
                                                    "separated from client.lr=0.1; "
                                                    "client.lr=0.01 (1 seed shared")


def test_a_best_within_its_interval_of_chance_is_not_named_a_best():
    # two seeds: 69.8 and 70.0 -> mean 69.9, half-width 12.706 * 0.1414 / sqrt(2) = 1.27
    df = pd.DataFrame({"client.lr": [0.05, 0.05, 0.1], "seed": [0, 1, 0],
                       "acc": [70.0, 69.8, 52.0], "status": ["TERMINATED"] * 3})
    assert best_line(df, ["client.lr"], (50.0, 200)).startswith(
        "no best configuration: the highest ACC, 69.9%: client.lr=0.05 (2 seeds), cannot be "
        "separated from client.lr=0.1")
    assert best_line(df, ["client.lr"], (69.0, 200)) == (
        "no best configuration: the highest ACC, 69.9%: client.lr=0.05 (2 seeds), is within "
        "its 95% interval (± 1.3) of chance (69.0%)")
    # one seed: the binomial interval of 52% on 200 test images, 1.96 * sqrt(.52 * .48 / 200)
    one = df[df["client.lr"] == 0.1]
    assert best_line(one, ["client.lr"], (50.0, 200)) == (
        "no best configuration: the highest ACC, 52.0%: client.lr=0.1 (1 seed), is within "
        "its 95% interval (± 6.9) of chance (50.0%)")
    assert best_line(one, ["client.lr"], (50.0, 20000)).startswith("best ACC 52.0%")


def test_chance_accuracy_counts_each_tasks_classes_and_test_images():
    from fcl.data.federated import chance_accuracy
    from fcl.data.image_dataset import from_arrays
    from fcl.presets import preset
    import numpy as np
    # 5 classes, 3 of them with 4 test images, 2 with 2; tasks of 3 and 2 classes (array_split)
    test_y = np.array([0] * 4 + [1] * 4 + [2] * 4 + [3] * 2 + [4] * 2)
    ds = from_arrays("t", np.zeros((5, 8, 8, 1), np.uint8), np.arange(5),
                     np.zeros((len(test_y), 8, 8, 1), np.uint8), test_y)
    data = preset("smoke", {"data.num_tasks": 2, "data.test_per_class": 3}).data
    assert chance_accuracy(ds, data) == ((100 / 3 + 100 / 2) / 2, 3 + 3 + 3 + 2 + 2)
    data = preset("smoke", {"data.num_tasks": 2, "data.test_per_class": 0}).data
    assert chance_accuracy(ds, data)[1] == 16


def test_sigterm_during_the_export_waits_for_it_and_is_reported():
    import os
    import signal

    from fcl.tune.progress import deferred_sigterm
    done, before = [], signal.getsignal(signal.SIGTERM)
    with deferred_sigterm() as terminated:
        assert not terminated()
        os.kill(os.getpid(), signal.SIGTERM)          # held: the process lives on
        os.kill(os.getpid(), signal.SIGTERM)          # a second one too
        done.append("exported")
    assert done == ["exported"] and terminated()
    assert signal.getsignal(signal.SIGTERM) == before            # the handler put back
