"""Studies through real Ray Tune (one local Ray of 2 CPUs for the session): Parquet rows and
schema, numbers equal to a direct engine run, a driver killed mid-study and resumed, a failing
trial retried then recorded, and idempotent re-export."""
import glob
import os
import signal
import subprocess
import sys
import textwrap
import time

import pandas as pd
import pytest
import torch

ray = pytest.importorskip("ray")

from fcl.config import ConfigError, field_types  # noqa: E402
from fcl.engine import run  # noqa: E402
from fcl.manifest import read_manifest, sha256, verify  # noqa: E402
from fcl.tune import Study, StudyOptions, grid, run_study  # noqa: E402
from fcl.results_io import STUDY_COLUMNS, STUDY_SUMMARY_TYPES, VERSION_COLUMNS  # noqa: E402
from fcl.tune.plan import base_config  # noqa: E402
from fcl.tune.space import resolve  # noqa: E402

SPACE = {"client.lr": grid(0.02, 0.1), "server.optimizer": grid("fedsgd", "fedadam")}
# the only columns a rerun may change: timing, and Tune's own ids of the trials of that run
TIMING = ("wall_s", "samples_per_s", "tune_trial_id", "tune_trial_dir")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# the smoke study at the size these tests were written for (a random width-8 backbone, 5
# rounds): they check Tune's mechanics, which need no learning, at half the cost
SMALL = {"model.weights": "", "model.width": "8", "rounds": "5", "data.test_per_class": "10"}


def smoke(results, **kw) -> StudyOptions:
    return StudyOptions(preset="smoke", results=str(results), sets=SMALL, **kw)


@pytest.fixture(scope="module")
def uninterrupted(local_ray, tmp_path_factory):
    results = tmp_path_factory.mktemp("uninterrupted")
    outcome = run_study(Study("grid4", SPACE), smoke(results))
    return results, outcome


def frames(results, study="grid4"):
    return {n: pd.read_parquet(os.path.join(results, study, f"{n}.parquet"))
            for n in ("trials", "rounds", "tasks")}


def test_smoke_grid_rows_schema_and_numbers(uninterrupted):
    results, outcome = uninterrupted
    assert (outcome.trials, outcome.finished, outcome.failed) == (4, 4, 0)
    f = frames(results)
    trials, rounds, tasks = f["trials"], f["rounds"], f["tasks"]
    # run_study returns Tune's ResultGrid beside the frames it exported
    assert isinstance(outcome.result_grid, ray.tune.ResultGrid) and len(outcome.result_grid) == 4
    pd.testing.assert_frame_equal(outcome.frames["trials"], trials, check_dtype=False)
    # each row joins its Tune trial: the id Tune reported, and the trial's folder
    by_id = {r.metrics["trial_id"]: str(r.path) for r in outcome.result_grid}
    assert dict(zip(trials["tune_trial_id"], trials["tune_trial_dir"])) == by_id
    assert all(os.path.isdir(d) for d in trials["tune_trial_dir"])
    assert trials["optuna_trial"].isna().all() and str(trials["optuna_trial"].dtype) == "Int64"
    assert len(trials) == 4 and trials["trial_id"].is_unique
    assert set(trials["status"]) == {"TERMINATED"} and set(trials["error"]) == {""}
    assert len(rounds) == 4 * 5 and len(tasks) == 4 * 5 * 5   # x rounds, x rounds x tasks
    assert rounds.groupby("trial_id").size().eq(5).all()
    assert tasks.groupby("trial_id").size().eq(25).all()
    # every config key, the summary, study and version columns, each with one type
    types = field_types()
    for col in (*STUDY_COLUMNS, *types, *STUDY_SUMMARY_TYPES, *VERSION_COLUMNS, "schema_version"):
        assert col in trials.columns, col
    assert trials["client.lr"].dtype == "float64" and trials["rounds"].dtype == "int64"
    assert trials["server.bias_correction"].dtype == "bool"
    assert (trials["rounds"] == 5).all() and (trials["schema_version"] == 2).all()
    assert sorted(zip(trials["client.lr"], trials["server.optimizer"])) == [
        (0.02, "fedadam"), (0.02, "fedsgd"), (0.1, "fedadam"), (0.1, "fedsgd")]
    assert (trials["run.threads"] == 1).all()                 # one CPU per trial
    # ACC is the mean accuracy of the last round, as tasks.parquet has it
    last = tasks[tasks["round"] == 4].groupby("trial_id")["accuracy"].mean()
    assert trials.set_index("trial_id")["acc"].sub(last).abs().max() < 1e-9
    # a trial through Ray gives exactly the numbers of a direct engine run of its config
    row = trials.iloc[0]
    cfg = resolve(base_config(Study("grid4", SPACE), smoke(results)),
                  {k: row[k] for k in ("client.lr", "server.optimizer")})
    cfg = resolve(cfg, {"seed": int(row["seed"]), "run.threads": 1})
    direct = run(cfg)
    assert row["acc"] == direct.summary["acc"] and row["bwt_f"] == direct.summary["bwt_f"]
    mine = rounds[rounds["trial_id"] == row["trial_id"]]
    assert mine["drift"].tolist() == [r["drift"] for r in direct.records]
    assert rounds.groupby("trial_id")["bytes_up"].sum().eq(trials.set_index("trial_id")
                                                          ["bytes_up"]).all()


def test_the_export_writes_a_manifest_that_matches_its_parquet(uninterrupted):
    results, outcome = uninterrupted
    folder = os.path.join(results, "grid4")
    manifest = read_manifest(folder)
    assert outcome.paths[-1] == os.path.join(folder, "study.json")    # written last
    assert verify(folder, manifest) == []
    for name, entry in manifest.files.items():
        path = os.path.join(folder, f"{name}.parquet")
        assert entry == {"rows": len(pd.read_parquet(path)), "sha256": sha256(path)}
    assert set(manifest.files) == {"trials", "rounds", "tasks"}
    assert manifest.varying == ("client.lr", "server.optimizer")
    assert (manifest.study, manifest.preset, manifest.searcher) == ("grid4", "smoke", None)
    assert (manifest.seeds, manifest.trial_seeds, manifest.scheduler) == ((0,), 1, "fifo")
    assert manifest.base["rounds"] == 5 and manifest.base["run.threads"] == 1


def test_finished_study_refuses_a_rerun_and_resume_reexports_the_same_files(uninterrupted):
    results, outcome = uninterrupted
    paths = [os.path.join(results, "grid4", f"{n}.parquet") for n in ("trials", "rounds", "tasks")]
    before = [open(p, "rb").read() for p in paths]
    # the export pruned each trial's checkpoints to its last (`fcl.tune.checkpoints`): what
    # --resume restores and exports again from
    last = sorted(r.checkpoint.path for r in outcome.result_grid)
    assert sorted(glob.glob(str(results / ".tune" / "grid4" / "*" / "checkpoint_*"))) == last
    with pytest.raises(ConfigError, match="--resume to continue it, or --fresh"):
        run_study(Study("grid4", SPACE), smoke(results))
    with pytest.raises(ConfigError, match="differs from the interrupted study"):
        run_study(Study("grid4", SPACE), StudyOptions(preset="smoke", sets={**SMALL, "rounds": "20"},
                                                      results=str(results), resume=True))
    outcome = run_study(Study("grid4", SPACE), smoke(results, resume=True))
    assert (outcome.finished, outcome.failed) == (4, 0)
    assert [open(p, "rb").read() for p in paths] == before
    assert sorted(glob.glob(str(results / ".tune" / "grid4" / "*" / "checkpoint_*"))) == last


STUDY_SCRIPT = """
from fcl.tune import Study, grid, main
STUDY = Study("grid4", {space!r})
if __name__ == "__main__":
    main(STUDY)
"""


def test_driver_killed_mid_study_then_resumed_gives_exactly_the_same_rows(uninterrupted, tmp_path):
    results, _ = uninterrupted
    script = tmp_path / "grid4.py"
    script.write_text(textwrap.dedent(STUDY_SCRIPT.format(space=SPACE)))
    killed = tmp_path / "results"
    env = {**os.environ, "PYTHONPATH": REPO}
    log = open(tmp_path / "driver.log", "w")
    proc = subprocess.Popen(
        [sys.executable, str(script), "--preset", "smoke", "--results", str(killed),
         "--set", *(f"{k}={v}" for k, v in SMALL.items()),
         "--address", ray.get_runtime_context().gcs_address],
        stdout=log, stderr=subprocess.STDOUT, env=env)
    pattern = str(killed / ".tune" / "grid4" / "*" / "checkpoint_*")
    deadline = time.monotonic() + 300     # generous: a loaded machine starts Python slowly
    while not glob.glob(pattern) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    # some trials mid-way, none exported yet: the 12 smoke trials finish and export in a few
    # seconds after the first checkpoint on a quiet machine, so kill soon after it
    time.sleep(0.3)
    assert proc.poll() is None, (tmp_path / "driver.log").read_text()[-2000:]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not os.path.exists(killed / "grid4" / "trials.parquet")
    outcome = run_study(Study("grid4", SPACE), smoke(killed, resume=True))
    assert (outcome.finished, outcome.failed) == (4, 0)
    # every checkpoint the killed driver left, but each trial's last, deleted after the export
    assert sorted(glob.glob(pattern)) == sorted(r.checkpoint.path for r in outcome.result_grid)
    a, b = frames(results), frames(killed)
    pd.testing.assert_frame_equal(a["trials"].drop(columns=list(TIMING)),
                                  b["trials"].drop(columns=list(TIMING)))
    pd.testing.assert_frame_equal(a["rounds"].drop(columns="wall_s"),
                                  b["rounds"].drop(columns="wall_s"))
    pd.testing.assert_frame_equal(a["tasks"], b["tasks"])


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_failing_trial_is_retried_then_recorded_and_the_study_completes(local_ray, tmp_path):
    space = {"run.device": grid("cpu", "cuda")}         # cuda: fails here, at run time
    outcome = run_study(Study("failing", space), smoke(tmp_path, seeds=1, max_failures=1))
    assert (outcome.finished, outcome.failed) == (1, 1)
    f = frames(tmp_path, "failing")
    trials = f["trials"].set_index("run.device")
    assert trials.loc["cpu", "status"] == "TERMINATED" and trials.loc["cpu", "error"] == ""
    assert trials.loc["cuda", "status"] == "ERROR"
    assert "run.device=cuda: no CUDA device" in trials.loc["cuda", "error"]
    # Tune's id of a trial that failed before its first report (`export.tune_ids`)
    by_dir = {str(r.path): r.metrics["trial_id"] for r in outcome.result_grid}
    assert trials.loc["cuda", "tune_trial_id"] == by_dir[trials.loc["cuda", "tune_trial_dir"]]
    assert trials["tune_trial_id"].str.len().gt(0).all()
    assert pd.isna(trials.loc["cuda", "acc"]) and trials.loc["cuda", "rounds"] == 5
    assert set(f["rounds"]["trial_id"]) == {trials.loc["cpu", "trial_id"]}
    # retried once: Ray logged two failures of that trial
    error_logs = glob.glob(str(tmp_path / ".tune" / "failing" / "*cuda*" / "error.txt"))
    assert len(error_logs) == 1
    assert open(error_logs[0]).read().count("Failure # ") == 2
    # --resume leaves a trial that failed for good alone (still recorded as ERROR);
    # --retry-errored runs it again
    again = smoke(tmp_path, seeds=1, max_failures=1, resume=True)
    assert run_study(Study("failing", space), again).failed == 1
    assert open(error_logs[0]).read().count("Failure # ") == 2
    from dataclasses import replace
    retried = run_study(Study("failing", space), replace(again, retry_errored=True))
    assert (retried.finished, retried.failed) == (1, 1)
    assert open(error_logs[0]).read().count("Failure # ") > 2


def last_point(space):
    """Each grid axis at its last value (the extreme one in every study here)."""
    from fcl.tune.space import is_grid, trial_overrides
    return trial_overrides({k: v["grid_search"][-1] if is_grid(v) else v
                            for k, v in space.items()})


def test_every_grid_study_runs_at_smoke_through_ray(local_ray, tmp_path):
    """One trial per study script (its base keys, each axis at its last value), all in one
    Tune run so two reused actors serve them: every declaration runs through the trainable."""
    import runpy
    studies = {}
    for path in sorted(glob.glob(os.path.join(REPO, "studies", "*.py"))):
        study = runpy.run_path(path).get("STUDY")          # run_all.py drives them, is none
        if study is not None and study.searcher is None:
            studies[study.name] = {**study.base, **last_point(study.space_for("smoke"))}
    names = sorted(studies)
    outcome = run_study(Study("every_study", {"study": grid(*(studies[n] for n in names))}),
                        StudyOptions(preset="smoke", seeds=1, results=str(tmp_path)))
    assert (outcome.trials, outcome.finished, outcome.failed) == (len(names), len(names), 0)
    f = frames(tmp_path, "every_study")
    trials = f["trials"].set_index("trial_id")
    assert trials["acc"].notna().all() and (trials["status"] == "TERMINATED").all()
    rows = f["tasks"].groupby("trial_id").size()            # rounds x tasks, per trial
    assert rows.sort_index().tolist() == (trials["rounds"] * trials["data.num_tasks"]
                                          ).sort_index().tolist()
    per_round = f["rounds"].groupby("trial_id").size()      # rounds, per trial
    assert per_round.sort_index().tolist() == trials["rounds"].sort_index().tolist()
    for name in names:                                      # each study's keys took effect
        match = trials
        for key, value in studies[name].items():
            match = match[match[key] == value]
        assert len(match) >= 1, name


def test_optuna_search_at_two_seeds_persists_to_sqlite(local_ray, tmp_path):
    """A search with --seeds 2: each sampled config runs at seeds 0 and 1 (two Parquet rows),
    Optuna's value is their mean ACC, and the rows carry the Optuna trial number."""
    import optuna
    import runpy
    study = runpy.run_path(os.path.join(REPO, "studies", "search.py"))["STUDY"]
    cheap = ("client.lr", "server.lr", "server.tau", "model.adapter", "model.lora_rank")
    space = {k: v for k, v in study.space_for("smoke").items() if k in cheap}
    outcome = run_study(Study("search", space, searcher="optuna"),
                        StudyOptions(preset="smoke", num_samples=2, seeds=2, results=str(tmp_path)))
    assert (outcome.trials, outcome.finished) == (2, 4)
    db = f"sqlite:///{tmp_path}/optuna.db"
    ot = optuna.load_study(study_name="search-acc", storage=db)
    done = [t for t in ot.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(done) == 2 and {"client.lr", "server.tau"} <= set(done[0].params)
    trials = frames(tmp_path, "search")["trials"]
    assert sorted(trials["seed"]) == [0, 0, 1, 1]
    by_number = trials.groupby("optuna_trial")
    assert sorted(by_number.groups) == sorted(t.number for t in done)
    for t in done:
        rows = by_number.get_group(t.number)
        assert t.value == pytest.approx(rows["acc"].mean())            # the mean of its seeds
        assert (rows["client.lr"] == t.params["client.lr"]).all()
        assert rows["tune_trial_id"].nunique() == 1
    manifest = read_manifest(tmp_path / "search")
    assert (manifest.searcher, manifest.seeds, manifest.trial_seeds) == ("optuna", (0, 1), 2)
    assert manifest.varying == tuple(space) and verify(tmp_path / "search", manifest) == []
