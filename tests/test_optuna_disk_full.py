"""A search whose Optuna storage fills its disk (a journal on an 8 KiB tmpfs; an SQLite file
on a disk filled whole 3 trials into the search) ends in one line, exit 2, no traceback;
after the disk grows, `--resume` (for a journal: dropping its partial last record, which the next append would
otherwise run on from into a line no reader parses: the resume failed to restore and hung)
finishes, exports every trial, and leaves no Optuna trial RUNNING
(`fcl.tune.optuna_storage.reconcile`). Unit checks of the repair and the reconciliation
first. The full-disk case needs root (mount); skipped, with the reason, where not permitted."""
import contextlib
import os
import sqlite3
import subprocess
import sys
import textwrap
import time

import pandas as pd
import pytest

from tmpfs import tmpfs

optuna = pytest.importorskip("optuna")

from fcl.tune.optuna_storage import open_storage, reconcile, repair_journal  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
State = optuna.trial.TrialState
SCRIPT = """
from ray import tune
from fcl.tune import Study, main
STUDY = Study("search", {"client.lr": tune.loguniform(0.01, 0.1)}, searcher="optuna")
if __name__ == "__main__":
    main(STUDY)
"""
SMALL = ["model.weights=", "model.width=8", "rounds=5", "data.test_per_class=10"]


def test_a_partial_last_record_is_dropped_and_a_whole_journal_left_alone(tmp_path):
    journal = tmp_path / "optuna.journal"
    journal.write_bytes(b'{"op_code": 0}\n{"op_code": 1}\n')
    assert repair_journal(str(journal)) == 0
    journal.write_bytes(b'{"op_code": 0}\n{"op_code": 1, "worker')
    assert repair_journal(str(journal)) == len(b'{"op_code": 1, "worker')
    assert journal.read_bytes() == b'{"op_code": 0}\n'
    assert repair_journal(str(tmp_path / "none.journal")) == 0
    assert not list(tmp_path.glob("*.lock"))              # the journal's lock released


def test_running_trials_are_set_from_the_exported_rows(tmp_path):
    url = f"journal://{tmp_path}/optuna.journal"
    study = optuna.create_study(study_name="s-acc", storage=open_storage(url),
                                direction="maximize")
    for _ in range(4):
        study.ask().set_user_attr("tune_trial_id", "t")   # RUNNING, as a stop leaves them
    study.ask()                                            # asked, never handed to Tune
    lost = study.ask()               # handed to a Tune trial that Tune's saved state lost
    lost.set_user_attr("fcl_study", "/r/s")
    lost.set_user_attr("tune_trial_id", "u")
    other = study.ask()              # another driver's, still running
    other.set_user_attr("fcl_study", "/elsewhere/s")
    other.set_user_attr("tune_trial_id", "v")
    study.tell(3, 50.0)
    rows = pd.DataFrame({"optuna_trial": [0, 1, 3], "status": ["TERMINATED", "ERROR",
                                                               "TERMINATED"],
                         "acc": [61.5, float("nan"), 50.0]})
    assert reconcile(url, "s-acc", rows, ["acc"], owner="/r/s") == 4
    trials = optuna.load_study(study_name="s-acc", storage=open_storage(url)).trials
    assert [(t.state, t.value) for t in trials] == [
        (State.COMPLETE, 61.5), (State.FAIL, None), (State.RUNNING, None), (State.COMPLETE, 50.0),
        (State.FAIL, None), (State.FAIL, None), (State.RUNNING, None)]


def completed(db: str, study: str) -> int:
    """Trials of `study` an SQLite Optuna storage holds COMPLETE (0 before it exists), read
    without writing: the file opened read-only."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as con:
            return con.execute("SELECT count(*) FROM trials JOIN studies USING (study_id) "
                               "WHERE study_name = ? AND state = 'COMPLETE'",
                               (study,)).fetchone()[0]
    except sqlite3.Error:
        return 0


def run_until_full(cmd: list[str], env: dict, disk, db: str | None):
    """The search; with an SQLite `db`, its disk filled whole once 3 trials are in it, so the
    disk fills in mid-search (SQLite keeps free room in its pages, which a fixed small disk
    would fill at a moment that depends on Optuna's schema)."""
    if db is None:
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    deadline = time.monotonic() + 600
    while completed(db, "search-acc") < 3 and proc.poll() is None:
        assert time.monotonic() < deadline, "no 3 trials in 600 s"
        time.sleep(0.2)
    stat = os.statvfs(disk)
    with open(os.path.join(disk, "filler"), "wb") as f:
        with contextlib.suppress(OSError):
            f.write(b"\0" * stat.f_bavail * stat.f_frsize)
    out, err = proc.communicate(timeout=600)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


@pytest.mark.parametrize("kind", ["journal", "sqlite"])
def test_a_full_storage_disk_is_one_line_and_resume_exports_every_trial(tmp_path, kind):
    script = tmp_path / "search.py"
    script.write_text(textwrap.dedent(SCRIPT))
    with tmpfs(tmp_path / "disk", "size=8k" if kind == "journal" else "size=1m") as disk:
        db = f"{disk}/optuna.db" if kind == "sqlite" else None
        url = f"sqlite:///{db}" if db else f"journal://{disk}/optuna.journal"
        cmd = [sys.executable, str(script), "--preset", "smoke", "--num-samples", "14",
               "--results", str(tmp_path / "results"), "--optuna-storage", url,
               "--set", *SMALL]
        env = {**os.environ, "PYTHONPATH": REPO}
        full = run_until_full(cmd, env, disk, db)
        errors = [line for line in full.stderr.splitlines() if line.startswith("error:")]
        assert full.returncode == 2, full.stderr[-3000:]
        assert len(errors) == 1 and errors[0].startswith(
            f"error: --optuna-storage={url}: the disk filled up (writing the search's Optuna "
            "storage: No space left on device)") and "--resume" in errors[0]
        assert "Traceback" not in full.stderr, full.stderr[-3000:]
        subprocess.run(["mount", "-o", "remount,size=4m", str(disk)], check=True)
        resumed = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, env=env,
                                 timeout=600)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        exported = pd.read_parquet(tmp_path / "results" / "search" / "trials.parquet")
        assert len(exported) == 14 and (exported["status"] == "TERMINATED").all()
        trials = optuna.load_study(study_name="search-acc", storage=open_storage(url)).trials
        assert len(trials) >= 14
        done = [t for t in trials if t.state == State.COMPLETE]
        assert sorted(t.value for t in done) == sorted(exported["acc"])
        # a draw the full disk cut short before Tune got it: failed, never left RUNNING
        # or handed to a Tune trial that never reached Tune's saved state
        assert all(t.state == State.FAIL for t in trials if t not in done), \
            [(t.number, t.state, t.user_attrs) for t in trials if t not in done]


def test_a_search_that_cannot_open_its_study_on_a_full_disk_is_one_config_error(tmp_path):
    from ray import tune

    from fcl.config import ConfigError
    from fcl.tune.searchers import optuna_searcher
    with tmpfs(tmp_path / "disk", "size=16k") as disk:     # SQLite's empty schema: 112 KiB
        url = f"sqlite:///{disk}/optuna.db"
        with pytest.raises(ConfigError) as error:
            optuna_searcher("s", "acc", str(tmp_path), 0, 1,
                            {"client.lr": tune.loguniform(0.01, 0.1)}, url)
    assert str(error.value) == (f"--optuna-storage={url}: the disk filled up (opening the "
                                "search's Optuna study: No space left on device); allowed: free "
                                "some space, then run the same command again")
