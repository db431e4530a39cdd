"""What a Ray Tune / Optuna user meets around the studies: Optuna's record of an ASHA search
(PRUNED with per-round values, never COMPLETE with a partial run), the define-by-run space,
trackers (MLflow against a local file store, TensorBoard), the live table's columns, one line
on Ctrl-C, refusals before Ray starts, GPU requests on an autoscaling cluster, `fcl run --help
--preset`, the dry run's price of a search, and the package metadata."""
import glob
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import tomllib
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")
optuna = pytest.importorskip("optuna")

from ray import tune  # noqa: E402

from fcl.config import ConfigError  # noqa: E402
from fcl.presets import preset  # noqa: E402
from fcl.tune import Study, StudyOptions, given, grid, run_study  # noqa: E402
from fcl.tune import cluster  # noqa: E402
from fcl.tune.cli import run_study_cli  # noqa: E402
from fcl.tune.schedulers import SchedulerOptions  # noqa: E402
from fcl.tune.optuna_storage import dashboard_command  # noqa: E402
from fcl.tune.searchers import DefineByRun, FclOptunaSearch  # noqa: E402
from fcl.tune.space import complete_variants, display_columns  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
State = optuna.trial.TrialState


def load_study(name: str):
    import runpy
    return runpy.run_path(os.path.join(REPO, "studies", f"{name}.py"))["STUDY"]


# ---- Optuna, without Ray running -------------------------------------------------------------

SPACE = {"client.lr": tune.loguniform(0.01, 0.1),
         "model.adapter": tune.choice(["nettailor", "lora"]),
         "model.lora_rank": given("model.adapter", "lora", tune.choice([4, 8])),
         "data.partition": "dirichlet"}


def searcher() -> FclOptunaSearch:
    return FclOptunaSearch(DefineByRun(SPACE), metric="acc", mode="max", seed=0)


def test_define_by_run_samples_lora_rank_only_for_lora_trials():
    s = searcher()
    configs = [s.suggest(f"t{i}") for i in range(16)]
    adapters = {c["model.adapter"] for c in configs}
    assert adapters == {"nettailor", "lora"}
    for c in configs:
        assert ("model.lora_rank" in c) == (c["model.adapter"] == "lora"), c
        assert c["data.partition"] == "dirichlet"                 # constants pass through
    params = [set(t.params) for t in s.study.trials]
    assert {"client.lr", "model.adapter"} in params                 # nettailor: no rank
    assert {"client.lr", "model.adapter", "model.lora_rank"} in params
    assert [c["optuna_trial"] for c in configs] == list(range(16))


def test_searcher_records_finished_stopped_and_failed_trials_as_optuna_states():
    s = searcher()
    for tid in ("done", "stopped", "failed"):
        s.suggest(tid)
    for tid in ("done", "stopped"):
        s.on_trial_result(tid, {"acc": float("nan"), "round": 0})    # not evaluated yet
        s.on_trial_result(tid, {"acc": 40.0, "round": 1})
        s.on_trial_result(tid, {"acc": 40.0, "round": 1})            # replayed after a resume
    s.on_trial_result("done", {"acc": 45.0, "round": 2})
    s.on_trial_complete("done", {"acc": 55.0, "round": 4, "done": True, "finished": True})
    # ASHA's stop: Tune hands the result it stopped on to on_trial_complete alone, marked
    # done, though the trial never finished its rounds
    s.on_trial_complete("stopped", {"acc": 45.0, "round": 2, "done": True})
    s.on_trial_complete("failed", {"acc": 30.0, "round": 1}, error=True)
    done, stopped, failed = s.study.trials
    assert (done.state, done.value) == (State.COMPLETE, 55.0)
    assert done.intermediate_values == {1: 40.0, 2: 45.0}
    assert stopped.state == State.PRUNED and stopped.intermediate_values == {1: 40.0, 2: 45.0}
    assert failed.state == State.FAIL and failed.value is None


def test_a_search_space_cannot_grid_and_a_grid_cannot_be_conditional(tmp_path):
    with pytest.raises(ConfigError, match="client.lr=grid"):
        DefineByRun({"client.lr": grid(0.1, 0.2)})
    with pytest.raises(ConfigError, match="conditional keys need a searcher"):
        run_study(Study("bad", {"model.adapter": grid("nettailor"), "model.lora_rank":
                                given("model.adapter", "lora", tune.choice([4]))}),
                  StudyOptions(preset="smoke", results=str(tmp_path), dry_run=True))
    with pytest.raises(ConfigError, match="model.adapter never takes 'lorra'"):
        run_study(Study("bad", {"model.adapter": tune.choice(["nettailor", "lora"]),
                                "model.lora_rank": given("model.adapter", "lorra",
                                                         tune.choice([4]))}, searcher="optuna"),
                  StudyOptions(preset="smoke", results=str(tmp_path), dry_run=True))


def test_dashboard_command_is_a_storage_url_that_optuna_opens(tmp_path):
    command = dashboard_command(str(tmp_path))
    assert command == f"optuna-dashboard sqlite:///{tmp_path}/optuna.db"
    optuna.create_study(storage=command.split()[1], study_name="probe")
    assert (tmp_path / "optuna.db").is_file()


# ---- ASHA search through Ray: what Optuna stores -----------------------------------------------

def test_asha_search_stores_stopped_trials_as_pruned_with_their_rounds(local_ray, tmp_path):
    """At client.lr = 1e-6 a trial keeps the accuracy of its random init, which differs by
    backbone width (tests/test_tune_asha.py): trials drawn one at a time from 6 widths, so ASHA
    (grace 1, rf 2) stops some. Optuna's storage is read back and matched to trials.parquet."""
    from test_tune_asha import RANDOM_INIT_SIZE, WIDTHS_BEST_FIRST
    space = {"model.width": tune.choice(list(WIDTHS_BEST_FIRST))}
    opts = StudyOptions(preset="smoke", sets={"client.lr": "1e-6", "client.local_epochs": "1",
                                              **RANDOM_INIT_SIZE},
                        results=str(tmp_path), num_samples=6, max_concurrent=1,
                        scheduler=SchedulerOptions("asha", grace_rounds=1, reduction_factor=2))
    outcome = run_study(Study("asha_search", space, searcher="optuna", early_stopping=True), opts)
    trials = outcome.frames["trials"]
    ot = optuna.load_study(study_name="asha_search-acc", storage=f"sqlite:///{tmp_path}/optuna.db")
    by_number = {t.number: t for t in ot.trials}
    assert len(by_number) == 6 and trials["optuna_trial"].notna().all()
    stopped = trials[trials["status"] == "EARLY_STOPPED"]
    assert len(stopped) >= 1
    for _, row in trials.iterrows():
        t = by_number[int(row["optuna_trial"])]
        assert t.params["model.width"] == row["model.width"]
        if row["status"] == "EARLY_STOPPED":
            assert t.state == State.PRUNED
            assert max(t.intermediate_values) == row["round_reached"]      # step = round
            assert t.intermediate_values[row["round_reached"]] == row["acc_reached"]
        else:
            assert row["status"] == "TERMINATED" and t.state == State.COMPLETE
            assert t.value == row["acc"] and max(t.intermediate_values) <= row["round_reached"]


# ---- trackers --------------------------------------------------------------------------------

def test_mlflow_and_tensorboard_callbacks_log_every_trial(local_ray, tmp_path, monkeypatch):
    """MLflow's default store here: a local SQLite file beside the results."""
    mlflow = pytest.importorskip("mlflow")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    outcome = run_study(Study("tracked", {"client.lr": grid(0.02, 0.1)}),
                        StudyOptions(preset="smoke", seeds=1, results=str(tmp_path),
                                     callbacks=("mlflow", "tensorboard")))
    assert outcome.finished == 2
    client = mlflow.tracking.MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/mlflow.db")
    experiment = client.get_experiment_by_name("tracked")
    runs = client.search_runs([experiment.experiment_id])
    trials = outcome.frames["trials"]
    assert len(runs) == 2
    assert sorted(float(r.data.params["client.lr"]) for r in runs) == [0.02, 0.1]
    by_lr = trials.set_index("client.lr")
    for r in runs:                            # a Parquet row joins its MLflow run
        row = by_lr.loc[float(r.data.params["client.lr"])]
        assert row["tune_trial_id"] in r.info.run_name
        assert r.data.metrics["acc"] == pytest.approx(row["acc"])
        # the whole base config, not only the sampled key, and the study's identity as tags
        assert r.data.params["rounds"] == str(row["rounds"])
        assert r.data.params["server.optimizer"] == row["server.optimizer"]
        assert (r.data.tags["fcl.preset"], r.data.tags["fcl.status"]) == ("smoke", "TERMINATED")
    for folder in trials["tune_trial_dir"]:    # and its TensorBoard events
        assert glob.glob(os.path.join(folder, "events.out.tfevents.*"))


class FakeTrial:
    """What the MLflow callback reads of a Tune trial."""
    def __init__(self, name: str, config: dict, last_result: dict | None = None):
        self.name, self.config, self.last_result = name, config, last_result

    def __str__(self):
        return self.name


def test_mlflow_runs_hold_the_whole_config_the_study_tags_and_the_end_status(tmp_path):
    """Driven by hand as Tune drives it: params = base config under the sampled keys, tags from
    the study manifest, `fcl.status` = trials.parquet's status (ASHA's stop is FINISHED in
    MLflow's own status), and each report one batch of numbers (NaN left out)."""
    mlflow = pytest.importorskip("mlflow")
    from fcl.tune.study_manifest import study_manifest
    from fcl.tune.trackers import callbacks
    cfg = preset("smoke")
    manifest = study_manifest("m", None, "optuna", "smoke", cfg, {"client.lr": grid(0.1)})
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    (cb,) = callbacks(("mlflow",), "m", str(tmp_path), manifest=manifest)
    cb.tracking_uri = uri
    cb.setup()
    ends = {"done": ({"round": 1, "acc": 60.0, "finished": True, "done": True}, False),
            "stopped": ({"round": 1, "acc": 51.0, "done": True}, False), "failed": ({}, True)}
    for name, (last, failed) in ends.items():
        trial = FakeTrial(name, {"client.lr": 0.05, "optuna_trial": 1}, last)
        cb.log_trial_start(trial)
        cb.log_trial_result(1, trial, {"acc": float("nan"), "round": 0, "training_iteration": 1,
                                       "done": False, "trial_id": "x"})
        cb.log_trial_result(2, trial, {"acc": 55.0, "round": 1, "training_iteration": 2})
        cb.log_trial_end(trial, failed)
    client = mlflow.tracking.MlflowClient(tracking_uri=uri)
    runs = {r.info.run_name: r for r in
            client.search_runs([client.get_experiment_by_name("m").experiment_id])}
    assert {n: r.data.tags["fcl.status"] for n, r in runs.items()} == {
        "done": "TERMINATED", "stopped": "EARLY_STOPPED", "failed": "ERROR"}
    assert runs["stopped"].info.status == "FINISHED" and runs["failed"].info.status == "FAILED"
    params, tags = runs["done"].data.params, runs["done"].data.tags
    assert set(cfg.to_flat()) <= set(params) and params["client.lr"] == "0.05"
    assert params["rounds"] == str(cfg.rounds) and params["model.backbone"] == "resnet_tiny"
    assert (tags["fcl.preset"], tags["fcl.searcher"], tags["study"]) == ("smoke", "optuna", "m")
    assert tags["fcl.dataset"] == manifest.dataset and tags["fcl.rounds"] == str(cfg.rounds)
    history = client.get_metric_history(runs["done"].info.run_id, "acc")
    assert [(m.step, m.value) for m in history] == [(2, 55.0)]


def test_a_missing_tracker_package_is_one_line_naming_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)           # import wandb -> ImportError
    code = run_study_cli(load_study("ablation_lr"), ["--preset", "smoke", "--results",
                                                     str(tmp_path), "--callback", "wandb"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("error: --callback=wandb: the wandb package is not installed; "
                          "allowed: pip install 'fcl[wandb]'")
    assert not os.listdir(tmp_path)


# ---- the live table --------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["drift_correction", "noniid", "task_order",
                                  "flocora_rank_alpha"])
def test_progress_columns_show_the_real_keys_of_grouped_axes(name):
    from ray._private.dict import unflattened_lookup

    from fcl.tune.plan import base_config
    from fcl.tune.tuner import progress_reporter
    study = load_study(name)
    space = study.space_for("smoke")
    cfg = base_config(study, StudyOptions(preset="smoke"))
    columns = display_columns(space)
    filled = complete_variants(space, cfg)
    grouped = [k for k in space if k not in columns.values()]
    assert grouped, "the study has a grouped axis"
    for axis in grouped:
        for value in filled[axis]["grid_search"]:
            for path, key in columns.items():
                if path.startswith(axis + "/"):      # every row has a value, never None
                    assert unflattened_lookup(path, {axis: value}) is not None, (path, value)
    reporter = progress_reporter(space, None)
    names = [*reporter._parameter_columns.values(), *reporter._metric_columns.values()]
    assert len(names) == len(set(names)) and "rounds done" in names


# ---- interruptions and refusals --------------------------------------------------------------

STUDY_SCRIPT = """
from fcl.tune import Study, grid, main
STUDY = Study("slow", {{"client.lr": grid(0.02, 0.1)}}, base={{"rounds": 500}})
if __name__ == "__main__":
    main(STUDY)
"""


def slow_study_at_its_first_checkpoint(tmp_path, address: str | None, **popen):
    """A slow study's driver (a process of its own session), once a trial has checkpointed:
    (process, results folder). `address` None: the driver starts its own local Ray."""
    script = tmp_path / "slow.py"
    script.write_text(textwrap.dedent(STUDY_SCRIPT.format()))
    results = tmp_path / "results"
    argv = [sys.executable, str(script), "--preset", "smoke", "--seeds", "1", "--results",
            str(results), *(["--address", address] if address else [])]
    env = {k: v for k, v in os.environ.items() if address or k != "RAY_ADDRESS"}
    popen = popen or dict(stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc = subprocess.Popen(argv, env={**env, "PYTHONPATH": REPO}, start_new_session=True,
                            **popen)
    pattern = str(results / ".tune" / "slow" / "*" / "checkpoint_*")
    deadline = time.monotonic() + 300
    while not glob.glob(pattern) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert proc.poll() is None
    return proc, results


def test_ctrl_c_prints_one_line_with_the_resume_command(local_ray, tmp_path):
    proc, results = slow_study_at_its_first_checkpoint(tmp_path, local_ray)
    os.killpg(proc.pid, signal.SIGINT)                     # what Ctrl-C in a terminal sends
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("interrupted: 0 of 2 trials finished (2 to go); continue with: "
                               "python studies/slow.py --preset smoke --seeds 1 --results")
    assert lines[0].endswith(" --resume")
    assert not (results / "slow" / "trials.parquet").exists()


def test_sigterm_stops_like_ctrl_c_with_exit_143(local_ray, tmp_path):
    """What SLURM, Kubernetes and `timeout` send on preemption: one line, Tune's state kept for
    --resume, exit 128 + 15 (Ray's own SIGTERM handler would abort with a C++ stack dump)."""
    proc, results = slow_study_at_its_first_checkpoint(tmp_path, local_ray)
    proc.send_signal(signal.SIGTERM)                       # to the driver only, as `kill` does
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("terminated (SIGTERM): 0 of 2 trials finished (2 to go); "
                               "continue with: python studies/slow.py --preset smoke")
    assert lines[0].endswith(" --resume")
    assert (results / ".tune" / "slow").is_dir() and not (results / "slow" / "trials.parquet").exists()


def test_reaper_ends_what_a_dead_driver_left():
    from fcl.tune import reaper
    driver = subprocess.Popen(["sleep", "300"])
    orphan = subprocess.Popen(["sleep", "300"])
    watched = {orphan.pid: reaper.start_time(orphan.pid)}
    watcher = threading.Thread(target=reaper.reap,
                               args=(driver.pid, reaper.start_time(driver.pid), watched))
    watcher.start()
    assert orphan.poll() is None
    driver.kill()
    driver.wait()
    watcher.join(timeout=60)
    assert not watcher.is_alive() and orphan.wait(timeout=60) in (-signal.SIGTERM, -signal.SIGKILL)


def test_a_local_ray_ends_with_its_driver_killed_with_9(tmp_path):
    """kill -9 of a driver that started its own Ray leaves none of its processes running
    (before, ray::DashboardAgent and ray::RuntimeEnvAgent outlived it)."""
    from fcl.tune import reaper
    proc, _ = slow_study_at_its_first_checkpoint(tmp_path, None, stdout=subprocess.DEVNULL,
                                                 stderr=subprocess.DEVNULL)
    ray_processes = {pid: t for pid, t in reaper.descendants(proc.pid).items()
                     if "reaper" not in Path(f"/proc/{pid}/cmdline").read_text(errors="replace")}
    assert len(ray_processes) >= 3            # GCS, raylet, agents, workers
    proc.kill()
    proc.wait()
    # the watcher ends them within seconds; without it Ray's agents linger for about a minute
    # (they notice the raylet is gone only then), so the deadline stays well below that
    deadline = time.monotonic() + 40
    while reaper.alive(ray_processes) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not reaper.alive(ray_processes), [
        Path(f"/proc/{pid}/cmdline").read_text(errors="replace").strip("\0")
        for pid in reaper.alive(ray_processes)]


def test_a_rerun_refuses_before_ray_starts(tmp_path, monkeypatch, capsys):
    from fcl.tune import run as run_module
    state = tmp_path / ".tune" / "ablation_lr"
    state.mkdir(parents=True)
    (state / "tuner.pkl").write_bytes(b"")             # what Tuner.can_restore looks for
    monkeypatch.setattr(run_module.cluster, "connect",
                        lambda *a, **k: pytest.fail("Ray was started"))
    t0 = time.perf_counter()
    code = run_study_cli(load_study("ablation_lr"), ["--preset", "smoke", "--results",
                                                     str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "--resume=off: study ablation_lr already has state in" in err
    assert time.perf_counter() - t0 < 30


def test_retry_errored_needs_state(tmp_path, capsys):
    code = run_study_cli(load_study("ablation_lr"), ["--preset", "smoke", "--results",
                                                     str(tmp_path), "--retry-errored"])
    assert code == 2
    assert "error: --retry-errored=on: study ablation_lr has no Tune state" in \
        capsys.readouterr().err


def test_gpus_on_an_autoscaling_cluster_warn_instead_of_refusing(capsys):
    cpu_only = {"CPU": 8.0}
    with pytest.raises(ConfigError, match="the cluster has 0 GPUs"):
        cluster.trial_resources(cpu_only, None, 1.0, None, autoscales=False)
    res = cluster.trial_resources(cpu_only, None, 1.0, None, autoscales=True)
    assert res.gpus == 1.0
    err = capsys.readouterr().err
    assert err == ("warning: --gpus-per-trial=1: the cluster has 0 GPUs now; trials wait "
                   "until its autoscaler adds GPU nodes\n")
    assert cluster.can_autoscale() is False            # this machine: a local Ray


# ---- dry run, help, metadata -------------------------------------------------------------------

def test_dry_run_prices_what_a_search_samples(capsys):
    """smoke: 20 train images per class, 2 classes per task -> 40 per task, over N = 3 clients,
    all sampled. rounds ~ {5, 10}, local epochs ~ {1..5}, straggler p ~ U(0, 0.5): the mean of
    draws spread evenly is 7.5 x 3 x 0.75 x 3 x 40/3 = 675 per trial, the most 10 x 3 x 1 x 5
    x 40/3 = 2000; 20 trials."""
    assert run_study_cli(load_study("search"), ["--preset", "smoke", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert ("\n20 trials; 13,500 training samples in all for draws spread evenly over the "
            "ranges, at most 40,000 (client.local_epochs=5, participation.straggler_prob=0, "
            "rounds=10)") in out
    assert run_study_cli(load_study("search"), ["--preset", "smoke", "--dry-run", "--seeds",
                                                "3"]) == 0
    assert "\n20 trials x 3 seeds each; 40,500 training samples" in capsys.readouterr().out


def test_dry_run_minutes_come_from_a_rate_measured_on_this_machine(capsys, monkeypatch):
    """The minutes are the samples at the rate `fcl.bench.step_rate` measures for the base
    config (the test replaces it by 500 samples/s) plus Ray's start of each trial, over the trials
    that run at once; a real measurement of the smoke model is positive."""
    import fcl.bench
    from fcl.tune import cost
    from fcl.tune.cost import RUN_FIXED_S
    assert fcl.bench.step_rate(fcl.configure("smoke"), (3, 32, 32), [2] * 5, 1, 0.2) > 0
    monkeypatch.setattr(fcl.bench, "step_rate",
                        lambda cfg, shape, classes, threads, seconds: 500.0)
    monkeypatch.setattr(cost, "_RATES", {})           # no rate an earlier test measured
    assert run_study_cli(load_study("search"), ["--preset", "smoke", "--dry-run",
                                                "--max-concurrent", "2"]) == 0
    out = capsys.readouterr().out
    minutes = (13_500 / 500 + 20 * RUN_FIXED_S) / 2 / 60
    assert f"; about {minutes:.1f} min (at most " in out
    assert "at 500 training samples/s per trial (measured by this command: SGD steps" in out


def test_a_command_measures_each_models_rate_once(monkeypatch):
    """Pricing a second study of the same model, compute mode and threads reuses the rate this
    command measured (run_all's dry run prices every study); a longer look, another thread
    count or another model measures again."""
    import fcl.bench
    from fcl.tune import cost
    looks = []

    def step_rate(cfg, shape, classes, threads, seconds):
        looks.append((cfg.model.width, threads, seconds))
        return 100.0 * len(looks)

    monkeypatch.setattr(fcl.bench, "step_rate", step_rate)
    monkeypatch.setattr(cost, "_RATES", {})
    cfg = fcl.configure("smoke")
    datasets = {cost.dataset_key(cfg): _Shape()}
    other_lr = fcl.configure("smoke", {"client.lr": 0.5, "rounds": 10})
    wider = fcl.configure("smoke", {"model.width": 32})
    assert cost.measured_rate(cfg, datasets, 1, seconds=0.5) == 100.0
    assert cost.measured_rate(other_lr, datasets, 1, seconds=0.5) == 100.0   # the same model
    assert cost.measured_rate(cfg, datasets, 1, seconds=2.0) == 200.0         # a longer look
    assert cost.measured_rate(cfg, datasets, 1, seconds=0.5) == 200.0
    assert cost.measured_rate(cfg, datasets, 2, seconds=0.5) == 300.0
    assert cost.measured_rate(wider, datasets, 1, seconds=0.5) == 400.0
    assert looks == [(16, 1, 0.5), (16, 1, 2.0), (16, 2, 0.5), (32, 1, 0.5)]


class _Shape:
    """What `measured_rate` reads of a data set: its image shape and classes."""
    image_shape = (3, 32, 32)
    num_classes = 10


def test_fcl_run_help_shows_the_presets_values_as_defaults():
    def help_of(*argv):
        out = subprocess.run([sys.executable, "-m", "fcl", "run", "--help", *argv],
                             capture_output=True, text=True, check=True, cwd=REPO).stdout
        return {line.split()[0]: line.split()[2] for line in out.splitlines()
                if line.startswith("  ") and " default " in line}

    local, smoke = help_of("--preset", "local"), help_of("--preset", "smoke")
    assert local["eval.every"] == "5" and local["run.precision"] == "'fp32'"
    assert smoke["rounds"] == str(preset("smoke").rounds)
    assert help_of() == local                                   # `fcl run`'s default preset


# The Ray minors whose Ray-facing tests passed, the oldest and the newest admitted
# (docs/development.md, "Ray versions")
RAY_TESTED = ("2.58", "2.60")


def test_package_metadata_bounds_and_extras():
    meta = tomllib.loads(open(os.path.join(REPO, "pyproject.toml")).read())["project"]
    deps = {d.split(">")[0].split("<")[0].split("[")[0]: d for d in meta["dependencies"]}
    assert "<" not in deps["torch"] and "<" not in deps["torchvision"]
    # only the Ray minors between the tested ones (fcl reaches Ray internals: test_ray_edge.py)
    oldest, newest = (int(v.split(".")[1]) for v in (RAY_TESTED[0], RAY_TESTED[-1]))
    assert deps["ray"] == f"ray[tune]>=2.{oldest},<2.{newest + 1}"
    assert oldest <= int(ray.__version__.split(".")[1]) <= newest and "matplotlib" in deps
    assert any(d.startswith("playwright") for d in meta["optional-dependencies"]["dev"])
    extras = meta["optional-dependencies"]
    assert {"viz", "mlflow", "wandb", "dev"} <= set(extras)
    assert any(d.startswith("optuna-dashboard") for d in extras["viz"])
    assert any(d.startswith("mlflow") for d in extras["dev"])
