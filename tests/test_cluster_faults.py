"""Studies on a real multi-node Ray cluster (Ray's own `ray.cluster_utils.Cluster`: a head and
two workers of 1 CPU each, shared by the module), each driven as a user would: a study script
in a subprocess with `--address`, its exit code, its stderr lines and its Parquet. Faults: a
trial larger than every node, trials that fail (exit code, one line each, rows), trials that
fail before their first report (their worker cannot import the trainable), and a storage that
a node cannot see. And `--copy-from`, which asks every node the kind of machine it is."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

import pandas as pd
import pytest

from fcl.machine_kind import cpu_kind

pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = ["rounds=4", "data.num_tasks=2", "data.train_per_class=20", "data.test_per_class=10",
        "client.local_epochs=1", "model.width=8", "model.weights=", "eval.every=4"]
DRIVER = textwrap.dedent('''
    import sys
    from fcl.tune import Study, grid
    from fcl.tune.cli import main
    SPACES = {"devices": {"run.device": grid("cpu", "cuda")},
              "lrs": {"client.lr": grid(0.02, 0.1)}, "unimportable": {"client.lr": grid(0.1)},
              "lrs_high": {"client.lr": grid(0.1, 0.3)}}
    if __name__ == "__main__":
        name = sys.argv.pop(1)
        if name == "unimportable":       # the trainable lives in a module only the driver has
            import driveronly
            import fcl.tune.tuner
            fcl.tune.tuner.train_trial = driveronly.train_trial
        main(Study(name, SPACES.get(name, SPACES["lrs"])))
''')
DRIVER_ONLY = textwrap.dedent('''
    from fcl.tune.trial import train_trial as _train
    def train_trial(config, **kw):
        return _train(config, **kw)
''')


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Three nodes of 1 CPU (3 CPUs in all, none larger than 1); its address, and a folder
    holding the driver script (and, apart, a module only the driver can import)."""
    tmp = tmp_path_factory.mktemp("cluster")
    temp = tempfile.mkdtemp(prefix="fclc-", dir="/tmp")     # short: Ray's socket paths
    c = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "include_dashboard": False, "temp_dir": temp})
    for _ in range(2):
        c.add_node(num_cpus=1)
    (tmp / "driver.py").write_text(DRIVER)
    (tmp / "only").mkdir()
    (tmp / "only" / "driveronly.py").write_text(DRIVER_ONLY)
    yield c.address, tmp
    c.shutdown()
    shutil.rmtree(temp, ignore_errors=True)


def study(cluster, name: str, results, *flags: str, timeout: float = 900):
    """Run the driver's study `name` at smoke (tiny) against the cluster: (rc, stdout, stderr,
    seconds)."""
    address, tmp = cluster
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([REPO, str(tmp / "only")]),
           "RAY_ADDRESS": ""}
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, str(tmp / "driver.py"), name, "--preset", "smoke",
                        "--seeds", "1", "--results", str(results), "--address", address,
                        "--set", *TINY, *flags], env=env, cwd=REPO, capture_output=True,
                       text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr, time.perf_counter() - t0


def test_a_trial_larger_than_every_node_is_refused_before_any_trial(cluster, tmp_path):
    """3 CPUs in all, but no node has 2: one line, exit 2, naming the nodes' sizes."""
    rc, out, err, _ = study(cluster, "lrs", tmp_path, "--cpus-per-trial", "2")
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: --cpus-per-trial=2: a trial runs on one node")
    assert "no node has 2 CPUs (nodes: 1, 1 and 1 CPUs)" in lines[0]
    assert "allowed: 0 < cpus <= 1" in lines[0]
    assert not (tmp_path / "lrs" / "trials.parquet").exists()


def test_failed_trials_exit_1_with_a_line_and_a_row_each(cluster, tmp_path):
    """One trial finishes, one fails (run.device=cuda on CPU nodes): exit 1, one line naming
    the failed trial's id, its config and its error; both rows there, each with its node."""
    rc, out, err, _ = study(cluster, "devices", tmp_path)
    assert rc == 1, err
    trials = pd.read_parquet(tmp_path / "devices" / "trials.parquet").set_index("run.device")
    assert list(trials["status"].sort_index()) == ["TERMINATED", "ERROR"]
    failed = [line for line in err.splitlines() if line.startswith("failed: trial ")]
    cuda = trials.loc["cuda"]
    assert cuda["node_ip"] != ""                # it reported nothing, but its error says where
    assert failed == [f"failed: trial {cuda['trial_id']} (run.device=cuda, seed=0) on "
                      f"{cuda['node_ip']}: {cuda['error']}"]
    assert "no CUDA device" in trials.loc["cuda", "error"]
    assert "1 trials finished, 1 failed" in out
    assert "Traceback" not in err         # each failed attempt is one line; its error.txt has it
    assert "3 trials at once (1 CPU each)" in out
    assert trials.loc["cpu", "node_ip"] != "" and trials.loc["cpu", "hostname"] != ""
    assert "1 trials failed; --resume leaves them failed, rerun them with: " in out


def test_trials_failing_before_their_first_report_are_rows_and_resume_says_so(cluster,
                                                                              tmp_path):
    """The workers cannot import the trainable (ModuleNotFoundError before any report): each
    trial is an ERROR row with its config and error, the summary counts them, exit 1; and
    --resume says it will leave them failed (not that they 'did not finish')."""
    rc, out, err, _ = study(cluster, "unimportable", tmp_path)
    assert rc == 1, err
    trials = pd.read_parquet(tmp_path / "unimportable" / "trials.parquet")
    assert len(trials) == 1 and set(trials["status"]) == {"ERROR"}
    assert list(trials["client.lr"]) == [0.1] and list(trials["rounds"]) == [4]
    assert (trials["error"] == "ModuleNotFoundError: No module named 'driveronly' (the "
            "trial's worker died: ActorDiedError)").all(), trials["error"].tolist()
    assert (trials["node_ip"] != "").all()         # from Ray's error: it never reported
    assert "0 trials finished, 1 failed" in out and "did not finish" not in out
    assert "Traceback" not in err and "Failed to fetch metrics" not in err
    failed = [line for line in err.splitlines() if line.startswith("failed: trial ")]
    assert len(failed) == 1 and all("[Ray: This may be because needed library dependencies "
                                    "are not installed in the worker environment.]" in line
                                    for line in failed), failed
    rc, out, err, _ = study(cluster, "unimportable", tmp_path, "--resume")
    assert rc == 1, err
    assert "0 finished kept, 0 unfinished continue, 1 failed stay failed (add " \
           "--retry-errored to rerun them)" in out, err[-2000:]


@pytest.mark.skipif(shutil.which("unshare") is None or os.geteuid() != 0,
                    reason="needs root and util-linux's unshare")
def test_a_driver_on_a_machine_that_is_not_a_node_is_one_line(cluster, tmp_path):
    """A driver that sees no raylet of the cluster on its machine (here: its own PID
    namespace, so no Ray process is visible) is refused in one line, not a C++ crash."""
    address, tmp = cluster
    env = {**os.environ, "PYTHONPATH": REPO, "RAY_ADDRESS": ""}
    p = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", sys.executable,
                        str(tmp / "driver.py"), "lrs", "--preset", "smoke", "--results",
                        str(tmp_path), "--address", address, "--set", *TINY],
                       env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr[-2000:]
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"error: --address={address}: this machine is not a node of that cluster"), p.stderr
    assert "ray job submit" in lines[0] and "ray://" in lines[0]


def test_copies_on_a_cluster_come_from_the_kind_every_node_says_it_is(cluster, tmp_path):
    """Each node answers a task placed there with its kind (`fcl.tune.node_kinds`), in the dry
    run (which joins just to ask) and in the study; the nodes agree, and the stored trial of
    that kind is copied, the other one run."""
    rc, out, err, _ = study(cluster, "lrs", tmp_path)
    assert rc == 0, err
    rc, out, err, _ = study(cluster, "lrs_high", tmp_path, "--copy-from", "lrs", "--dry-run")
    assert rc == 0, err
    assert "copies 1 trial stored by lrs (1): the same config and seed; runs 1" in out, out
    rc, out, err, _ = study(cluster, "lrs_high", tmp_path, "--copy-from", "lrs")
    assert rc == 0, err
    assert "copied 1 trial stored by lrs (1): the same config and seed; ran 1" in out, out
    trials = pd.read_parquet(tmp_path / "lrs_high" / "trials.parquet")
    assert sorted(trials["copied_from"].fillna("-")) == ["-", "lrs"]
    assert set(trials["cpu"]) == {cpu_kind()}
