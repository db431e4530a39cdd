"""The report a trial sends Tune (`fcl.tune.report.TrialReport`): what goes on the wire, what
comes back through `from_tune`, the mean over seeds, and that a finished run's last report
carries its summary."""
import math

import pytest

pytest.importorskip("ray")
from fcl.engine import run  # noqa: E402
from fcl.presets import preset  # noqa: E402
from fcl.tune.report import (FINISHED, TUNE_DONE, TUNE_TRIAL_ID,  # noqa: E402
                             TrialReport)

TINY = {"rounds": 2, "data.num_tasks": 2, "data.train_per_class": 8, "data.test_per_class": 4,
        "client.local_epochs": 1, "model.width": 8, "run.device": "cpu"}
RECORDS = [{"round": 0, "evaluated": True, "mean_acc": 60.0, "drift": 0.5, "train_loss": 1.0},
           {"round": 1, "evaluated": False, "mean_acc": math.nan, "drift": 0.25,
            "train_loss": 0.5}]


def test_a_round_report_goes_out_flat_and_comes_back_equal():
    report = TrialReport.after(RECORDS, 1000, 2.5)
    # the latest evaluated round's accuracy, the latest round's drift and loss
    assert (report.round, report.acc, report.drift, report.train_loss) == (1, 60.0, 0.25, 0.5)
    wire = report.to_tune()
    assert wire == {"round": 1, "acc": 60.0, "drift": 0.25, "train_loss": 0.5, "bytes": 1000,
                    "wall_s": 2.5, "seeds": 1}
    # Tune adds its own keys; they stay out of the report
    back = TrialReport.from_tune({**wire, TUNE_TRIAL_ID: "a1", "time_total_s": 3.0,
                                  TUNE_DONE: False})
    assert back == report and not back.finished
    assert TrialReport.from_tune({TUNE_TRIAL_ID: "a1"}) is None         # never reported
    assert math.isnan(TrialReport.after(RECORDS[1:], 0, 0.0).acc)        # before any evaluation


def test_the_mean_over_seeds_averages_every_number_and_counts_the_seeds():
    a = TrialReport(3, 50.0, 1.0, 2.0, 100, 4.0)
    b = TrialReport(3, 70.0, 3.0, 4.0, 300, 6.0)
    m = TrialReport.mean([a, b])
    assert (m.round, m.acc, m.drift, m.train_loss, m.bytes, m.wall_s, m.seeds) == (
        3, 60.0, 2.0, 3.0, 200.0, 5.0, 2)
    assert TrialReport.mean([a, b], wall_s=11.0).wall_s == 11.0          # the trial's whole time


def test_a_finished_run_reports_its_summary_and_the_searcher_reads_any_of_it():
    result = run(preset("smoke", TINY))
    final = TrialReport.mean([TrialReport.final(result)], wall_s=9.0)
    wire = final.to_tune()
    assert wire[FINISHED] is True and wire[TUNE_DONE] is True and wire["wall_s"] == 9.0
    assert wire["acc"] == result.summary.acc and wire["bwt_f"] == result.summary.bwt_f
    assert wire["bytes"] == result.summary.bytes_up + result.summary.bytes_down
    back = TrialReport.from_tune(wire)
    assert back.finished and back.value("bwt_f") == result.summary.bwt_f
    assert back.value("acc") == result.summary.acc and back.value("no_such") is None
