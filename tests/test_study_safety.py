"""What a study refuses before Ray starts (one line, `ConfigError`, exit 2), with no Ray at all:
replacing results of another preset, data set or space, or of the same study with no Tune state
(a fresh clone); `--resume` with nothing to resume; outputs it cannot write; a second driver of
a study another holds (named), and `--fresh` then too; a dead holder's lock is taken over; an
export killed part-way leaves no old manifest beside new files, and the next export cleans up."""
import json
import os
import runpy
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from fcl import results_io
from fcl.config import ConfigError
from fcl.manifest import read_manifest, replace_study_files, verify, write_manifest
from fcl.tune import state as states
from fcl.tune.plan import plan_study
from fcl.tune.run import run_study
from fcl.tune.study import StudyOptions
from tmpfs import tmpfs

REPO = Path(__file__).resolve().parent.parent
STRAGGLERS = runpy.run_path(str(REPO / "studies" / "stragglers.py"))["STUDY"]


def smoke(results, **kw) -> StudyOptions:
    return StudyOptions(preset="smoke", seeds=1, results=str(results), **kw)


def no_ray_work(results) -> bool:
    """Nothing Ray or Tune would have left: no Tune state (a session's Ray may be up already)."""
    return not (Path(results) / ".tune").exists()


def test_stored_results_of_another_preset_are_not_replaced_in_a_fresh_clone(tmp_path):
    """README's example in a clone: the stored CIFAR-10 stragglers study, no results/.tune."""
    shutil.copytree(REPO / "results" / "stragglers", tmp_path / "stragglers")
    before = {p.name: p.read_bytes() for p in (tmp_path / "stragglers").iterdir()}
    with pytest.raises(ConfigError, match=r"holds study stragglers at preset cifar10-local on "
                                          r"cifar10; this run differs in preset, dataset"):
        run_study(STRAGGLERS, smoke(tmp_path))
    assert no_ray_work(tmp_path)
    assert {p.name: p.read_bytes() for p in (tmp_path / "stragglers").iterdir()} == before
    # --fresh is the way to replace them: the guard lets it through
    plan = plan_study(STRAGGLERS, smoke(tmp_path, fresh=True))
    got = states.claim_state("stragglers", plan.opts, None, plan.manifest())
    assert not got.can_restore


def test_same_study_without_tune_state_refuses_a_plain_rerun_naming_fresh(tmp_path):
    plan = plan_study(STRAGGLERS, smoke(tmp_path))
    write_manifest(tmp_path / "stragglers", plan.manifest())
    with pytest.raises(ConfigError, match=r"already holds this study's results .* no Tune state"
                                          r".*allowed: --fresh"):
        run_study(STRAGGLERS, smoke(tmp_path))
    # another space (a --set that the base config records) is named
    with pytest.raises(ConfigError, match=r"differs in base rounds"):
        run_study(STRAGGLERS, replace(smoke(tmp_path), sets={"rounds": "20"}))
    assert no_ray_work(tmp_path)


def test_parquet_without_a_manifest_is_refused(tmp_path):
    (tmp_path / "stragglers").mkdir()
    results_io.write_parquet_atomic(pd.DataFrame({"a": [1]}),
                                    str(tmp_path / "stragglers" / "trials.parquet"))
    with pytest.raises(ConfigError, match=r"holds trials.parquet but no manifest"):
        run_study(STRAGGLERS, smoke(tmp_path))


def test_resume_with_no_saved_state_refuses_nothing_to_resume(tmp_path):
    with pytest.raises(ConfigError, match=r"--resume=on: nothing to resume: study stragglers "
                                          r"has no Tune state in"):
        run_study(STRAGGLERS, smoke(tmp_path, resume=True))
    assert no_ray_work(tmp_path)


def test_resume_of_a_study_killed_before_tune_wrote_its_state_starts_it_again(tmp_path, capsys):
    """The driver writes fcl's record, then Tune its state: a kill between the two (the driver
    said `--resume`) leaves the record only; `--resume` then starts the study from the
    beginning (no trial ran: nothing is lost)."""
    plan = plan_study(STRAGGLERS, smoke(tmp_path, resume=True))
    path = tmp_path / ".tune" / "stragglers"
    states.write_record(str(path), plan.manifest())
    state = states.claim_state("stragglers", plan.opts, None, plan.manifest())
    assert not state.can_restore and not path.exists()
    assert capsys.readouterr().err.strip() == (
        f"study stragglers was stopped before Tune wrote its state ({path} holds fcl's record "
        "of it only): it starts from the beginning")


def test_results_and_storage_that_cannot_be_written_are_refused_first(tmp_path):
    (tmp_path / "a-file").write_text("x")
    for opts, flag in ((smoke(tmp_path / "a-file"), "--results"),
                       (smoke(tmp_path / "a-file" / "below"), "--results"),
                       (smoke(tmp_path / "ok", storage=str(tmp_path / "a-file")), "--storage")):
        with pytest.raises(ConfigError, match=rf"^{flag}=.*: cannot write there \("):
            run_study(STRAGGLERS, opts)
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "stragglers").write_text("a file where the study's folder goes")
    with pytest.raises(ConfigError, match=r"stragglers: cannot write there \(it is a file"):
        run_study(STRAGGLERS, smoke(tmp_path / "r"))


def test_an_object_store_that_cannot_be_reached_is_one_line(tmp_path):
    """An s3:// storage whose endpoint refuses connections (a local port nothing listens on:
    no network needed): one line naming it, before any Ray work, and --results not created."""
    unreachable = "s3://fcl-bucket/fcl?endpoint_override=127.0.0.1:9&scheme=http&region=us-east-1"
    with pytest.raises(ConfigError, match=r"^--storage=s3://fcl-bucket/fcl\S*: cannot be "
                                          r"reached \(.*allowed: a bucket this machine reaches"):
        run_study(STRAGGLERS, smoke(tmp_path / "r", storage=unreachable))
    assert not (tmp_path / "r").exists()


def test_a_read_only_results_folder_is_refused(tmp_path):
    with tmpfs(tmp_path / "ro") as ro:
        with pytest.raises(ConfigError, match=r"cannot write there \(Read-only file system\)"):
            run_study(STRAGGLERS, smoke(ro))


HOLDER = """
import sys, time
from fcl.tune import state
with state.hold(sys.argv[1], "stragglers", "python studies/stragglers.py"):
    print("held", flush=True)
    time.sleep(60)
"""


@pytest.fixture
def held(tmp_path):
    """Another driver (a process) holding study stragglers in tmp_path."""
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(HOLDER), str(tmp_path)],
                            stdout=subprocess.PIPE, text=True, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_a_second_driver_is_refused_naming_the_holder_and_fresh_too(tmp_path, held):
    tune_state = tmp_path / ".tune" / "stragglers"
    tune_state.mkdir(parents=True)
    (tune_state / "sentinel").write_text("the first driver's state")
    for opts in (smoke(tmp_path), smoke(tmp_path, fresh=True), smoke(tmp_path, resume=True)):
        with pytest.raises(ConfigError, match=rf"study stragglers is held by another driver: "
                                              rf"host {os.uname().nodename}, pid {held.pid}, "
                                              rf"since 20"):
            run_study(STRAGGLERS, opts)
    assert (tune_state / "sentinel").exists()            # --fresh deleted nothing
    held.kill()
    held.wait()                                          # kill -9: a stale lock file is left
    lock = Path(states.lock_path(str(tmp_path), "stragglers"))
    assert json.loads(lock.read_text())["pid"] == held.pid
    with states.hold(str(tmp_path), "stragglers") as stale:
        assert stale["pid"] == held.pid                  # taken over, and said so
        assert json.loads(lock.read_text())["pid"] == os.getpid()
    assert not lock.exists()


def test_a_shared_storage_is_held_too(tmp_path):
    """Two drivers of one study, each with its own --results, one --storage: the second is
    refused before it touches the Tune state (with --fresh too)."""
    storage = tmp_path / "shared-tune"
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(HOLDER), str(storage)],
                            stdout=subprocess.PIPE, text=True, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert proc.stdout.readline().strip() == "held"
        (storage / "stragglers").mkdir(parents=True)
        (storage / "stragglers" / "sentinel").write_text("the first driver's state")
        opts = smoke(tmp_path / "mine", storage=str(storage), fresh=True)
        with pytest.raises(ConfigError, match=rf"^--storage={storage}: study stragglers is held "
                                              rf"by another driver: host .*, pid {proc.pid}"):
            run_study(STRAGGLERS, opts)
        assert (storage / "stragglers" / "sentinel").exists()
        assert not (tmp_path / "mine" / ".stragglers.lock").exists()    # its own lock released
    finally:
        proc.kill()
        proc.wait()


def test_another_results_folders_default_storage_is_held_by_that_folders_driver(held, tmp_path):
    """Driver A runs with --results A (its Tune state in A/.tune, its lock A's); driver B with
    --results B --storage A/.tune --fresh would delete A's live state: refused, nothing touched."""
    state = tmp_path / ".tune" / "stragglers"
    state.mkdir(parents=True)
    (state / "sentinel").write_text("driver A's state")
    opts = smoke(tmp_path / "b", storage=str(tmp_path / ".tune"), fresh=True)
    with pytest.raises(ConfigError, match=rf"^--storage={tmp_path}: study stragglers is held "
                                          rf"by another driver: host .*, pid {held.pid}"):
        run_study(STRAGGLERS, opts)
    assert (state / "sentinel").exists()
    assert not (tmp_path / ".tune" / ".stragglers.lock").exists()   # its own lock released


def test_a_drivers_own_default_storage_named_explicitly_is_held_once(tmp_path):
    with states.hold(str(tmp_path), "stragglers"):
        with states.hold_storage(smoke(tmp_path, storage=str(tmp_path / ".tune")),
                                 "stragglers"):
            pass


def test_a_storage_that_is_the_results_folder_is_held_once(tmp_path):
    """--storage naming the results folder (or a link to it): one lock file, which the driver
    holds once; a second flock of its own would find it held and refuse the driver itself."""
    (tmp_path / "link").symlink_to(tmp_path)
    with states.hold(str(tmp_path), "stragglers"):
        for storage in (str(tmp_path), f"{tmp_path}/", str(tmp_path / "link")):
            with states.hold_storage(smoke(tmp_path, storage=storage), "stragglers"):
                pass


def test_an_object_store_cannot_be_locked_and_says_so(capsys):
    with states.hold_storage(smoke("r", storage="s3://bucket/fcl"), "stragglers"):
        pass
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("warning: --storage=s3://bucket/fcl: an object")


def test_a_dead_pids_lock_is_taken_over_and_released_on_error(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    lock = Path(states.lock_path(str(tmp_path), "s"))
    lock.write_text(json.dumps({"host": os.uname().nodename, "pid": int(dead),
                                "since": "2026-01-01T00:00:00+00:00"}))
    with pytest.raises(RuntimeError), states.hold(str(tmp_path), "s") as stale:
        assert stale["pid"] == int(dead)
        raise RuntimeError("the study failed")
    assert not lock.exists()
    with states.hold(str(tmp_path), "s") as stale:        # free again, nothing stale
        assert stale is None
        t0 = time.monotonic()
        with pytest.raises(ConfigError, match=rf"pid {os.getpid()}"):
            with states.hold(str(tmp_path), "s"):          # one process, two drivers: refused
                pass
        assert time.monotonic() - t0 < 1


def test_an_export_killed_part_way_leaves_no_old_manifest_and_the_next_one_cleans_up(
        tmp_path, monkeypatch):
    plan = plan_study(STRAGGLERS, smoke(tmp_path))
    folder = tmp_path / "stragglers"
    frames = {n: pd.DataFrame({"x": [i, i + 1]}) for i, n in enumerate(results_io.FILES)}
    replace_study_files(frames, folder, plan.manifest())
    assert verify(folder, read_manifest(folder)) == []
    new = {n: f.assign(x=f["x"] * 10) for n, f in frames.items()}
    real = results_io.write_parquet_atomic

    def killed_at_rounds(df, path):
        if path.endswith("rounds.parquet"):
            (folder / ".tmp-killed.parquet").write_bytes(b"")   # what a kill -9 leaves
            raise KeyboardInterrupt
        real(df, path)

    monkeypatch.setattr(results_io, "write_parquet_atomic", killed_at_rounds)
    with pytest.raises(KeyboardInterrupt):
        replace_study_files(new, folder, plan.manifest())
    assert read_manifest(folder) is None               # not the old manifest beside new trials
    assert pd.read_parquet(folder / "trials.parquet")["x"].tolist() == [0, 10]
    with pytest.raises(ConfigError, match="no manifest"):
        states.check_results(str(folder), plan.manifest())
    monkeypatch.setattr(results_io, "write_parquet_atomic", real)
    replace_study_files(new, folder, plan.manifest())
    assert not list(folder.glob(".tmp-*"))
    assert verify(folder, read_manifest(folder)) == []
    assert read_manifest(folder).files["rounds"]["rows"] == 2


def test_a_state_stopped_before_tunes_first_snapshot_starts_over_on_resume(tmp_path, capsys):
    """A driver killed after Tune wrote tuner.pkl but before any experiment state: no trial is
    on record, so --resume starts the study from the beginning, and says so (it refused, as if
    the state were damaged); an experiment state cut short is still refused."""
    state = tmp_path / ".tune" / "stragglers"
    state.mkdir(parents=True)
    (state / "tuner.pkl").write_bytes(b"a tuner")
    plan = plan_study(STRAGGLERS, smoke(tmp_path, resume=True))
    got = states.claim_state("stragglers", plan.opts, None, plan.manifest())
    assert not got.can_restore and not state.exists()
    assert capsys.readouterr().err.startswith("study stragglers was stopped before Tune "
                                              "recorded any trial")
    state.mkdir(parents=True)
    (state / "tuner.pkl").write_bytes(b"a tuner")
    (state / "experiment_state-2026-12-06_09-00-00.json").write_text("")   # cut short
    with pytest.raises(ConfigError, match=r"does not read back whole"):
        states.claim_state("stragglers", plan.opts, None, plan.manifest())
