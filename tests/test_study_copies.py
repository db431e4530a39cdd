"""Trials copied from another stored study (`--copy-from`, `fcl.tune.copies`), through real Ray
Tune: Tune runs only the trials no source stores, the study's rows equal one run of all of them,
each copied row keeps its source's values and names it; a trial computed on another kind of
machine, or in a row that does not say which, is not copied; bad sources are refused in one
line."""
import json
import os
import re
import shutil

import pandas as pd
import pytest

pytest.importorskip("ray")

from fcl.config import ConfigError, RunConfig  # noqa: E402
from fcl.machine_kind import Kind, cpu_kind, this_kind  # noqa: E402
from fcl.manifest import read_manifest, write_manifest  # noqa: E402
from fcl.tune import Study, StudyOptions, grid, run_study  # noqa: E402
from fcl.tune.cli import run_study_cli  # noqa: E402
from fcl.tune.copies import find_copies  # noqa: E402

SOURCE = Study("lr_low", {"client.lr": grid(0.02, 0.1)})
TARGET = Study("lr_high", {"client.lr": grid(0.1, 0.3)})
TIMING = ["wall_s", "samples_per_s", "tune_trial_id", "tune_trial_dir"]


def opts(results, seeds=1, **kw) -> StudyOptions:
    return StudyOptions(preset="smoke", seeds=seeds, results=str(results), **kw)


def frames(results, name):
    return {n: pd.read_parquet(os.path.join(results, name, f"{n}.parquet"))
            for n in ("trials", "rounds", "tasks")}


def without_timing(f):
    return {"trials": f["trials"].drop(columns=TIMING + ["copied_from"], errors="ignore"),
            "rounds": f["rounds"].drop(columns="wall_s"), "tasks": f["tasks"]}


@pytest.fixture(scope="module")
def target_alone(local_ray, tmp_path_factory):
    results = tmp_path_factory.mktemp("alone")
    run_study(TARGET, opts(results))
    return frames(results, "lr_high")


@pytest.fixture(scope="module")
def with_source(local_ray, tmp_path_factory):
    results = tmp_path_factory.mktemp("shared")
    run_study(SOURCE, opts(results))
    return results


def test_copied_trials_are_not_run_and_the_study_equals_one_run_of_all(
        with_source, target_alone, tmp_path, capsys):
    results = tmp_path / "r"
    shutil.copytree(with_source, results, ignore=shutil.ignore_patterns(".tune"))
    outcome = run_study(TARGET, opts(results, copy_from=("lr_low",)))
    assert len(outcome.result_grid) == 1                     # Tune ran lr 0.3 only
    assert (outcome.trials, outcome.finished, outcome.failed) == (2, 2, 0)
    assert "copied 1 trial stored by lr_low (1): the same config and seed; ran 1" in \
        capsys.readouterr().out
    got = frames(results, "lr_high")
    for name, df in without_timing(got).items():
        pd.testing.assert_frame_equal(df, without_timing(target_alone)[name])
    trials = got["trials"].set_index("client.lr")
    assert trials.loc[0.1, "copied_from"] == "lr_low"
    assert pd.isna(trials.loc[0.3, "copied_from"])
    # the copied row is the source's row, timing and commit included; only `study` moved
    source = frames(results, "lr_low")["trials"].set_index("client.lr").loc[0.1]
    for col in ("trial_id", "acc", "wall_s", "tune_trial_dir", "fcl_git", "cpu"):
        assert trials.loc[0.1, col] == source[col]
    assert set(got["rounds"]["study"]) == {"lr_high"}
    # every row says which CPU computed it, from the trial's own process: this machine's
    assert set(trials["cpu"]) == {cpu_kind()} and set(trials["gpu"]) == {""}
    manifest = json.loads((results / "lr_high" / "study.json").read_text())
    assert [(c["study"], c["trials"], c["seeds"], c["machine"]) for c in manifest["copied"]] == \
        [("lr_low", 1, [0], [this_kind().words()])]


def test_seeds_added_later_copy_again_and_keep_the_record(with_source, tmp_path):
    results = tmp_path / "r"
    shutil.copytree(with_source, results, ignore=shutil.ignore_patterns(".tune"))
    run_study(SOURCE, opts(results, 2))                      # the source now holds seeds 0-1
    run_study(TARGET, opts(results, copy_from=("lr_low",)))
    outcome = run_study(TARGET, opts(results, 2, copy_from=("lr_low",)))
    assert len(outcome.result_grid) == 1                     # seed 1's lr 0.3 only
    trials = frames(results, "lr_high")["trials"]
    assert sorted(trials["copied_from"].fillna("-")) == ["-", "-", "lr_low", "lr_low"]
    manifest = read_manifest(results / "lr_high")
    assert [(c["study"], c["seeds"]) for c in manifest.copied] == [("lr_low", [0]),
                                                                    ("lr_low", [1])]
    assert [p["trials"] for p in manifest.extended] == [2, 2]


def test_bad_sources_are_refused_in_one_line_before_any_trial(with_source, tmp_path):
    results = tmp_path / "r"
    shutil.copytree(with_source, results, ignore=shutil.ignore_patterns(".tune"))
    with pytest.raises(ConfigError, match=r"--copy-from=nope: no stored study in .*; "
                                          r"allowed: lr_low"):
        run_study(TARGET, opts(results, copy_from=("nope",)))
    with pytest.raises(ConfigError, match=r"--copy-from=lr_high: is this study itself"):
        run_study(TARGET, opts(results, copy_from=("lr_high",)))
    with pytest.raises(ConfigError, match="nothing is left to run"):
        run_study(Study("lr_same", {"client.lr": grid(0.02, 0.1)}),
                  opts(results, copy_from=("lr_low",)))
    # a second source that stores the same trial with another ACC: computed otherwise
    shutil.copytree(results / "lr_low", results / "lr_other")
    trials = pd.read_parquet(results / "lr_other" / "trials.parquet")
    trials["acc"] = trials["acc"] + 1.0
    trials.to_parquet(results / "lr_other" / "trials.parquet")
    write_manifest(results / "lr_other", read_manifest(results / "lr_other"))
    with pytest.raises(ConfigError, match=r"trial \w+ is stored by lr_low \(ACC .*\) and "
                                          r"lr_other \(ACC .*\): the same config computed"):
        run_study(TARGET, opts(results, copy_from=("lr_low", "lr_other")))
    # a source whose files no longer match its manifest
    trials.to_parquet(results / "lr_other" / "trials.parquet", compression="gzip")
    with pytest.raises(ConfigError, match="--copy-from=lr_other: its files do not match"):
        run_study(TARGET, opts(results, copy_from=("lr_other",)))
    assert not (results / "lr_high").exists()
    # a refusal leaves no state in the way: the same study with a good source runs as usual
    outcome = run_study(TARGET, opts(results, copy_from=("lr_low",)))
    assert (outcome.trials, outcome.finished, len(outcome.result_grid)) == (2, 2, 1)


def test_the_dry_run_prices_only_what_would_run(with_source, capsys):
    outcome = run_study(TARGET, opts(with_source, copy_from=("lr_low",), dry_run=True))
    printed = capsys.readouterr().out
    assert outcome.trials == 1
    assert "copies 1 trial stored by lr_low (1): the same config and seed; runs 1" in printed
    assert "1 trials;" in printed and "lr=0.3" in printed and "lr=0.1," not in printed


def stored_as(results, source: str, name: str, change) -> None:
    """`source`'s stored study again as `name`, its trials changed by `change` (a function of
    the frame), with a manifest that matches."""
    shutil.copytree(results / source, results / name)
    trials = change(pd.read_parquet(results / name / "trials.parquet"))
    trials.to_parquet(results / name / "trials.parquet")
    write_manifest(results / name, read_manifest(results / name))


def test_only_trials_computed_on_the_kind_the_new_ones_run_on_are_copied(with_source, tmp_path):
    results = tmp_path / "r"
    shutil.copytree(with_source, results, ignore=shutil.ignore_patterns(".tune"))
    here = this_kind()
    amd = "AMD EPYC 7B13 (AVX2, AVX-512, AVX512-BF16)"
    stored_as(results, "lr_low", "lr_amd", lambda t: t.assign(cpu=amd))
    stored_as(results, "lr_low", "lr_old", lambda t: t.drop(columns=["cpu", "gpu"]))
    stored_as(results, "lr_low", "lr_old_torch",
              lambda t: t.drop(columns=["cpu", "gpu"]).assign(torch_version="2.0.0"))
    with pytest.raises(ConfigError, match=rf"lr_amd computed trial \w+ on {re.escape(amd)}, "
                                          r"torch .*; this study's trials run on .*allowed: a "
                                          r"study computed on the kind this one runs on"):
        run_study(TARGET, opts(results, copy_from=("lr_amd",)))
    with pytest.raises(ConfigError, match=r"lr_old stored trial \w+ before rows recorded the "
                                          r"machine that computed them; allowed: "
                                          r"--copy-unrecorded-cpu where lr_old ran on"):
        run_study(TARGET, opts(results, copy_from=("lr_old",)))
    with pytest.raises(ConfigError, match=r"lr_old_torch computed trial \w+ on torch 2.0.0"):
        run_study(TARGET, opts(results, copy_from=("lr_old_torch",), copy_unrecorded_cpu=True))
    other = Kind(amd, "", here.torch)
    with pytest.raises(ConfigError, match=r"the nodes that run trials are of 2 kinds \(.*"
                                          r"\(10.0.0.2\)\)"):
        find_copies(str(results), ("lr_low",), "lr_high", RunConfig(), TARGET.space, None, 1,
                    {here: ["10.0.0.1"], other: ["10.0.0.2"]})
    assert not (results / "lr_high").exists()
    # on the user's word, rows from before the column are copied; the manifest says so
    run_study(TARGET, opts(results, copy_from=("lr_old",), copy_unrecorded_cpu=True))
    got = frames(results, "lr_high")["trials"].set_index("client.lr")
    assert got.loc[0.1, "copied_from"] == "lr_old" and pd.isna(got.loc[0.1, "cpu"])
    assert got.loc[0.3, "cpu"] == cpu_kind()
    assert [c["machine"] for c in read_manifest(results / "lr_high").copied] == [["unrecorded"]]


def test_copy_unrecorded_cpu_without_copy_from_is_one_line(tmp_path, capsys):
    assert run_study_cli(TARGET, ["--copy-unrecorded-cpu", "--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --copy-unrecorded-cpu=on: copies nothing without --copy-from; "
                   "allowed: --copy-from STUDY ..."]
