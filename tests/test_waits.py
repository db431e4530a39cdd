"""A driver never waits without a word (`fcl.tune.waits`): on a database that accepts the
connection and never answers (a socket that listens and says nothing), and on Tune's state
that cannot be read (its `tuner.pkl` a named pipe no one writes, as a hung network disk
holds a read), the study prints what it waits for, gives up at `--wait-deadline` in one error
line with exit 2, and a resume once the storage answers again ends with the same rows."""
import os
import re
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pandas as pd
import pytest

from fcl.tune import waits

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMALL = ["model.weights=", "model.width=8", "rounds=5", "data.test_per_class=10"]
SEARCH = """
from ray import tune
from fcl.tune import Study, main
STUDY = Study("search", {"client.lr": tune.loguniform(0.01, 0.1)}, searcher="optuna")
if __name__ == "__main__":
    main(STUDY)
"""
GRID = """
from fcl.tune import Study, grid, main
STUDY = Study("tiny", {"client.lr": grid(0.05)})
if __name__ == "__main__":
    main(STUDY)
"""


def run(script, args, timeout=600):
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": REPO}, timeout=timeout)


def test_a_wait_that_ends_in_time_says_nothing_and_one_that_ends_early_stops_the_watch(capsys):
    with waits.announced("nothing", 60, "never printed"):
        pass
    arrived = threading.Event()
    arrived.set()
    with waits.announced("nothing", 0.2, "never printed", until=arrived):
        time.sleep(1.5)        # past the deadline: a watch still running would have exited
    assert capsys.readouterr().err == ""


def test_a_database_that_never_answers_is_one_line_at_the_deadline(tmp_path):
    pytest.importorskip("optuna")
    pytest.importorskip("psycopg", reason="postgresql:// needs psycopg 3 (the postgres extra)")
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)           # the kernel completes the connect; no one ever answers
    port = silent.getsockname()[1]
    script = tmp_path / "search.py"
    script.write_text(textwrap.dedent(SEARCH))
    url = f"postgresql+psycopg://fcl@127.0.0.1:{port}/fcl"
    start = time.monotonic()
    done = run(script, ["--preset", "smoke", "--num-samples", "2", "--results",
                        str(tmp_path / "results"), "--optuna-storage", url,
                        "--wait-deadline", "6", "--set", *SMALL])
    silent.close()
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode == 2, done.stderr[-3000:]
    assert errors == [f"error: --wait-deadline=6: waited 6 s for the study's storage to answer "
                      f"(Tune's state in {tmp_path / 'results' / '.tune' / 'search'}; the "
                      f"Optuna storage {url}); the driver gave up; check that the storage "
                      "answers, then run the same command again"], done.stderr[-3000:]
    waiting = [line for line in done.stderr.splitlines() if line.startswith("waiting for")]
    assert waiting and all(re.fullmatch(
        re.escape(f"waiting for the study's storage to answer (Tune's state in "
                  f"{tmp_path / 'results' / '.tune' / 'search'}; the Optuna storage {url}): ")
        + r"\d+ s so far \(the driver gives up at 6 s, --wait-deadline\)", line)
        for line in waiting), waiting
    assert time.monotonic() - start < 300 and "Traceback" not in done.stderr


def test_tune_state_that_cannot_be_read_is_one_line_and_a_resume_later_ends_the_same(tmp_path):
    script = tmp_path / "tiny.py"
    script.write_text(textwrap.dedent(GRID))
    args = ["--preset", "smoke", "--seeds", "1", "--results", str(tmp_path / "results"),
            "--set", *SMALL]
    first = run(script, args)
    assert first.returncode == 0, first.stderr[-3000:]
    rows = pd.read_parquet(tmp_path / "results" / "tiny" / "trials.parquet")
    pkl = tmp_path / "results" / ".tune" / "tiny" / "tuner.pkl"
    kept = pkl.read_bytes()
    pkl.unlink()
    os.mkfifo(pkl)             # a read of it blocks, as on a network disk that hangs
    hung = run(script, [*args, "--resume", "--wait-deadline", "8"])
    errors = [line for line in hung.stderr.splitlines() if line.startswith("error:")]
    assert hung.returncode == 2, hung.stderr[-3000:]
    assert len(errors) == 1 and errors[0].startswith(
        f"error: --wait-deadline=8: waited 8 s for Tune to restore the study from "
        f"{pkl.parent}; the driver gave up; check its storages, then continue with: "), errors
    assert "waiting for Tune to restore the study from" in hung.stderr
    pkl.unlink()
    pkl.write_bytes(kept)
    again = run(script, [*args, "--resume"])
    assert again.returncode == 0, again.stderr[-3000:]
    after = pd.read_parquet(tmp_path / "results" / "tiny" / "trials.parquet")
    assert after.drop(columns=["wall_s", "samples_per_s"]).equals(
        rows.drop(columns=["wall_s", "samples_per_s"]))
