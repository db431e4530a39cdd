"""More seeds over a stored study (`fcl.tune.extend`), through real Ray Tune: only the lacking
trials run, the whole study is re-exported with rows equal to one run of all seeds, the stored
rows stay as they were, the manifest lists both parts; a study stored at other settings, or
at more seeds, is refused in one line."""
import json
import os

import pandas as pd
import pytest

pytest.importorskip("ray")

from fcl.config import ConfigError  # noqa: E402
from fcl.tune import Study, StudyOptions, grid, run_study  # noqa: E402

STUDY = Study("grid2", {"client.lr": grid(0.02, 0.1)})
TIMING = ["wall_s", "samples_per_s", "tune_trial_id", "tune_trial_dir"]


def opts(results, seeds, **kw) -> StudyOptions:
    return StudyOptions(preset="smoke", seeds=seeds, results=str(results), **kw)


def frames(results):
    return {n: pd.read_parquet(os.path.join(results, "grid2", f"{n}.parquet"))
            for n in ("trials", "rounds", "tasks")}


def without_timing(f):
    return {"trials": f["trials"].drop(columns=TIMING),
            "rounds": f["rounds"].drop(columns="wall_s"), "tasks": f["tasks"]}


@pytest.fixture(scope="module")
def all_at_once(local_ray, tmp_path_factory):
    results = tmp_path_factory.mktemp("all_at_once")
    run_study(STUDY, opts(results, 2))
    return frames(results)


def test_added_seeds_run_only_the_missing_trials_and_equal_one_run_of_all(all_at_once, tmp_path):
    first = run_study(STUDY, opts(tmp_path, 1))
    assert first.trials == 2
    stored = frames(tmp_path)
    # the finished study's Tune state makes way: no --fresh, no --resume needed
    outcome = run_study(STUDY, opts(tmp_path, 2))
    assert len(outcome.result_grid) == 2                     # Tune ran the seed-1 trials only
    assert (outcome.trials, outcome.finished, outcome.failed) == (4, 4, 0)
    got = frames(tmp_path)
    for name, df in without_timing(got).items():
        pd.testing.assert_frame_equal(df, without_timing(all_at_once)[name])
    # the stored rows are the stored rows, timing included
    kept = got["trials"][got["trials"]["seed"] == 0].reset_index(drop=True)
    pd.testing.assert_frame_equal(kept, stored["trials"], check_like=True)
    manifest = json.loads((tmp_path / "grid2" / "study.json").read_text())
    assert manifest["seeds"] == [0, 1]
    assert [(p["seeds"], p["trials"]) for p in manifest["extended"]] == [([0], 2), ([1], 2)]
    # the extended study is finished like any other: a plain rerun is refused
    with pytest.raises(ConfigError, match="--resume to continue it, or --fresh"):
        run_study(STUDY, opts(tmp_path, 2))
    # fewer seeds than stored is another study, as before
    with pytest.raises(ConfigError, match="this run differs in seeds"):
        run_study(STUDY, opts(tmp_path, 1, fresh=False, resume=False, storage=str(tmp_path / "s")))


def test_seeds_are_added_only_at_the_stored_settings(local_ray, tmp_path):
    run_study(STUDY, opts(tmp_path, 1, sets={"client.momentum": "0.5"}))
    before = {p.name: p.read_bytes() for p in (tmp_path / "grid2").iterdir()}
    with pytest.raises(ConfigError, match=r"holds study grid2 at seeds 0; seeds are added to it "
                                          r"only at its settings \(stored at client.momentum=0.5"
                                          r"\).*allowed: the as-stored settings with --set"):
        run_study(STUDY, opts(tmp_path, 2))
    # a run.* key moved: the manifests agree (run.* keys change how, not what), the ids do not
    run_study(STUDY, opts(tmp_path / "b", 1, sets={"run.channels_last": "true"}))
    with pytest.raises(ConfigError, match=r"the stored trials in .* are not this plan's at seeds "
                                          r"0 \(stored at run.channels_last=true\)"):
        run_study(STUDY, opts(tmp_path / "b", 2))
    assert {p.name: p.read_bytes() for p in (tmp_path / "grid2").iterdir()} == before
