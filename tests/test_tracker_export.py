"""`fcl export`: two stored studies (a grid and an Optuna search, copied from `results/`) into
MLflow, TensorBoard and Optuna, read back there as each tool's reader would: a run per trial,
its settings, its summary metrics equal to trials.parquet's, its per-round history equal to
rounds.parquet's; exporting again replaces rather than doubles; bad input is one line."""
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from fcl.tracker_export import export

REPO = Path(__file__).resolve().parents[1]
STUDIES = ("stragglers", "search")


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    folder = tmp_path_factory.mktemp("stored") / "results"
    for name in STUDIES:
        shutil.copytree(REPO / "results" / name, folder / name)
    return folder


def frames(stored, name):
    return (pd.read_parquet(stored / name / "trials.parquet"),
            pd.read_parquet(stored / name / "rounds.parquet"))


def test_mlflow_holds_a_run_per_trial_with_its_numbers_and_again_does_not_double(stored,
                                                                               tmp_path):
    mlflow = pytest.importorskip("mlflow")
    db = tmp_path / "mlflow.db"
    for _ in range(2):
        studies, runs, view = export([str(stored)], "mlflow", str(db))
    assert view == f"mlflow ui --backend-store-uri sqlite:///{db}"
    client = mlflow.tracking.MlflowClient(tracking_uri=f"sqlite:///{db}")
    for name in STUDIES:
        trials, rounds = frames(stored, name)
        exp = client.get_experiment_by_name(f"results/{name}")
        found = client.search_runs([exp.experiment_id], max_results=1000)
        assert len(found) == len(trials)
        status = {r.data.tags["fcl.trial_id"]: r.info.status for r in found}
        assert status == {t: {"TERMINATED": "FINISHED", "EARLY_STOPPED": "KILLED"}.get(s, "FAILED")
                          for t, s in zip(trials.trial_id, trials.status)}
        row = trials[trials.status == "TERMINATED"].iloc[0]
        run = next(r for r in found if r.data.tags["fcl.trial_id"] == row["trial_id"])
        assert run.data.metrics["summary.acc"] == pytest.approx(row["acc"])
        assert run.data.params["client.lr"] == str(row["client.lr"])
        mine = rounds[(rounds.trial_id == row["trial_id"]) & rounds.mean_acc.notna()]
        history = sorted((m.step, m.value) for m in
                         client.get_metric_history(run.info.run_id, "mean_acc"))
        assert [step for step, _ in history] == list(mine["round"])
        assert [v for _, v in history] == pytest.approx(list(mine["mean_acc"]))


def events(path: Path) -> list:
    """The records of a TensorBoard event file (TFRecord framing: length, its CRC, the data,
    its CRC), parsed as tensorboardX's Event protos."""
    from tensorboardX.proto import event_pb2
    data, out, at = path.read_bytes(), [], 0
    while at < len(data):
        (length,) = struct.unpack("<Q", data[at:at + 8])
        event = event_pb2.Event()
        event.ParseFromString(data[at + 12:at + 12 + length])
        out.append(event)
        at += 12 + length + 4
    return out


def test_tensorboard_has_each_trials_curves_summary_and_hparams(stored, tmp_path):
    pytest.importorskip("tensorboardX")
    dest = tmp_path / "tb"
    studies, runs, view = export([str(stored)], "tensorboard", str(dest))
    trials, rounds = frames(stored, "stragglers")
    assert runs == sum(len(frames(stored, n)[0]) for n in STUDIES)
    row = trials.iloc[0]
    files = list((dest / "results" / "stragglers" / row["trial_id"]).glob("events.out.*"))
    assert len(files) == 1
    scalars, plugins = {}, set()
    for event in events(files[0]):
        for value in event.summary.value:
            if value.metadata.plugin_data.plugin_name:
                plugins.add(value.metadata.plugin_data.plugin_name)
            if value.HasField("simple_value"):
                scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
    assert scalars["summary/acc"][0][1] == pytest.approx(row["acc"], rel=1e-6)
    mine = rounds[(rounds.trial_id == row["trial_id"]) & rounds.mean_acc.notna()]
    assert [step for step, _ in scalars["mean_acc"]] == list(mine["round"])
    assert [v for _, v in scalars["mean_acc"]] == pytest.approx(list(mine["mean_acc"]),
                                                                rel=1e-6)
    assert any(tag.startswith("acc/task_") for tag in scalars)
    assert "hparams" in plugins


def test_optuna_holds_each_study_with_its_values_and_a_search_its_params(stored, tmp_path):
    optuna = pytest.importorskip("optuna")
    url = f"sqlite:///{tmp_path / 'new' / 'optuna.db'}"     # its folder made, as for mlflow
    for _ in range(2):
        export([str(stored)], "optuna", url)
    names = optuna.get_all_study_names(url)
    assert sorted(names) == ["results/search-acc", "results/stragglers-acc"]
    trials, _ = frames(stored, "search")
    study = optuna.load_study(study_name="results/search-acc", storage=url)
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    finished = trials[trials.status == "TERMINATED"]
    assert sorted(t.value for t in done) == pytest.approx(sorted(finished["acc"]))
    by_id = {t.user_attrs["fcl.trial_id"]: t for t in study.trials}
    row = finished.iloc[0]
    assert by_id[row["trial_id"]].params["client.lr"] == pytest.approx(row["client.lr"])
    assert len(study.trials) == len(trials)


def test_bad_input_is_one_line(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    empty = subprocess.run([sys.executable, "-m", "fcl", "export", str(tmp_path), "--to",
                            "mlflow", "--dest", str(tmp_path / "m.db")], capture_output=True,
                           text=True, env=env, timeout=300)
    assert empty.returncode == 2 and empty.stderr.strip() == (
        f"error: FOLDER={tmp_path}: holds no stored study (no study.json at or below it); "
        "allowed: a results folder or a study folder")
    unknown = subprocess.run([sys.executable, "-m", "fcl", "export", str(tmp_path), "--to",
                              "aim", "--dest", "x"], capture_output=True, text=True, env=env,
                             timeout=300)
    assert unknown.returncode == 2 and "invalid choice: 'aim'" in unknown.stderr
    assert len(unknown.stderr.strip().splitlines()) == 1


def test_a_run_exports_itself_after_it_writes_its_files(tmp_path):
    mlflow = pytest.importorskip("mlflow")
    env = {**os.environ, "PYTHONPATH": str(REPO), "FCL_OFFLINE": "1"}
    db = tmp_path / "mlflow.db"
    done = subprocess.run([sys.executable, "-m", "fcl", "run", "--preset", "smoke", "--quiet",
                           "--set", "rounds=5", "--out", str(tmp_path / "runs" / "first"),
                           "--export-to", f"mlflow={db}"], capture_output=True, text=True,
                          env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"exported the run to mlflow at {db}" in done.stdout
    trials = pd.read_parquet(tmp_path / "runs" / "first" / "trials.parquet")
    client = mlflow.tracking.MlflowClient(tracking_uri=f"sqlite:///{db}")
    exp = client.get_experiment_by_name("runs/first")
    [run] = client.search_runs([exp.experiment_id])
    assert run.data.metrics["summary.acc"] == pytest.approx(trials["acc"][0])
