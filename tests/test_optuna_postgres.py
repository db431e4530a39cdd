"""A search on a real PostgreSQL server (`--optuna-storage postgresql://...`, as docs/studies.md
documents it): the test starts Debian's PostgreSQL in a temporary folder (a Unix socket only,
no TCP), runs a small search there, reads its trials back as another process would, and
stops the server. Skipped, with the reason, where the server or its Python driver is not
there."""
import io
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

optuna = pytest.importorskip("optuna")
pytest.importorskip("psycopg", reason="postgresql:// needs psycopg 3 (the postgres extra)")

from ray import tune  # noqa: E402

from fcl.tune import Study, StudyOptions, run_study  # noqa: E402
from fcl.tune.optuna_storage import open_storage  # noqa: E402

SMALL = {"model.weights": "", "model.width": "8", "rounds": "5", "data.test_per_class": "10"}
PORT = 54329


def as_postgres(*cmd: str, **kw) -> subprocess.CompletedProcess:
    """`cmd` as the `postgres` user (the server refuses to run as root)."""
    runner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    return subprocess.run([*runner, *cmd], capture_output=True, text=True, timeout=120, **kw)


@pytest.fixture(scope="module")
def postgres_url():
    if not (shutil.which("initdb") and shutil.which("pg_ctl")):
        pytest.skip("no PostgreSQL server here (Debian's postgresql: initdb, pg_ctl)")
    if os.geteuid() == 0 and subprocess.run(["id", "postgres"], capture_output=True).returncode:
        pytest.skip("running as root without a postgres user to start the server as")
    folder = Path(tempfile.mkdtemp(prefix="fcl-pg-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    data = folder / "data"
    init = as_postgres("initdb", "-D", str(data), "-A", "trust", "-U", "postgres")
    if init.returncode:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(f"initdb failed: {init.stderr.strip()[-300:]}")
    start = as_postgres("pg_ctl", "-D", str(data), "-l", str(folder / "log"), "-w", "-t", "120",
                        "-o", f"-k {folder} -p {PORT} -c listen_addresses=''", "start")
    if start.returncode:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(f"the PostgreSQL server did not start: {start.stdout.strip()[-300:]}")
    try:
        yield f"postgresql://postgres@/postgres?host={folder}&port={PORT}"
    finally:
        as_postgres("pg_ctl", "-D", str(data), "-m", "immediate", "stop")
        deadline = time.monotonic() + 60
        while (data / "postmaster.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        shutil.rmtree(folder, ignore_errors=True)


def test_a_search_on_postgresql_lands_its_trials_there(local_ray, tmp_path, postgres_url):
    study = Study("search", {"client.lr": tune.loguniform(0.01, 0.1)}, searcher="optuna")
    out = io.StringIO()
    outcome = run_study(study, StudyOptions(preset="smoke", sets=SMALL, num_samples=2,
                                            results=str(tmp_path / "results"),
                                            optuna_storage=postgres_url), out)
    assert (outcome.trials, outcome.finished, outcome.failed) == (2, 2, 0)
    stored = optuna.load_study(study_name="search-acc", storage=open_storage(postgres_url))
    assert [t.state for t in stored.trials] == [optuna.trial.TrialState.COMPLETE] * 2
    exported = outcome.frames["trials"]
    assert sorted(exported["acc"]) == sorted(t.value for t in stored.trials)
