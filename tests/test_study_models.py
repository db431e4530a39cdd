"""A study's trained models on request (`--save-models`, `fcl.tune.trial_models`): one folder
per trials.parquet row under `<results>/<study>/models/<trial_id>`, loaded by
`fcl.load_model`, giving that row's last per-task accuracy exactly; without the flag none (and
a previous export's folder goes)."""
import json
import os

import pandas as pd
import pytest

pytest.importorskip("ray")

import fcl  # noqa: E402
from fcl.engine import prepare_data  # noqa: E402
from fcl.results_io import TERMINATED  # noqa: E402
from fcl.config import from_flat  # noqa: E402
from fcl.tune import Study, StudyOptions, grid, run_study  # noqa: E402
from test_saved_model import accuracy_of  # noqa: E402

SPACE = {"client.lr": grid(0.05)}


def test_study_keeps_each_rows_model_on_request(local_ray, tmp_path):
    opts = StudyOptions(preset="smoke", seeds=2, results=str(tmp_path), save_models=True)
    outcome = run_study(Study("kept", SPACE), opts)
    assert (outcome.finished, outcome.failed) == (2, 0)
    folder = tmp_path / "kept"
    trials = pd.read_parquet(folder / "trials.parquet")
    tasks = pd.read_parquet(folder / "tasks.parquet")
    assert sorted(os.listdir(folder / "models")) == sorted(trials["trial_id"])
    for row in trials.itertuples():
        assert row.status == TERMINATED
        models = fcl.load_model(str(folder / "models" / row.trial_id))
        mine = tasks[tasks["trial_id"] == row.trial_id]
        last = mine[mine["round"] == mine["round"].max()].sort_values("task")["accuracy"]
        meta = json.loads((folder / "models" / row.trial_id / "model.json").read_text())
        cfg = from_flat(meta["config"])
        assert cfg.seed == row.seed and meta["summary"]["acc"] == row.acc
        assert accuracy_of(models, prepare_data(cfg)) == last.tolist()      # exactly
    assert not [n for n in os.listdir(folder) if n.startswith(".tmp-")]

    again = run_study(Study("kept", SPACE), StudyOptions(preset="smoke", seeds=2,
                                                         results=str(tmp_path), fresh=True))
    assert again.finished == 2 and not (folder / "models").exists()
