"""The storage check before a multi-node study (`fcl.tune.storage_probe`) leaves no crash dump:
its workers once exited the graceful way when idle and, having used pyarrow's filesystems,
aborted in about 1 of 3 studies ("Fatal Python error: Aborted" and ~20 lines in the driver's
output). On a real 3-node Ray whose idle workers exit at once, the check runs several times;
neither the driver's output nor any worker's log may hold such a dump."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("ray")

REPO = Path(__file__).resolve().parent.parent
CHECKS = 3
DRIVER = textwrap.dedent('''
    import os, sys, time
    import ray
    from ray.cluster_utils import Cluster
    from fcl.tune import cluster, nodes
    from fcl.tune.storage_probe import check_storage

    temp, storage, checks = sys.argv[1], sys.argv[2], int(sys.argv[3])

    def workers():           # this cluster's worker processes
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                cmd = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
            except OSError:
                continue
            if "default_worker.py" in cmd and temp in cmd:
                found.append(pid)
        return found

    # idle workers exit at once (the graceful exit that aborted), not when a trial needs the CPU
    c = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "include_dashboard": False, "temp_dir": temp,
        "_system_config": {"num_workers_soft_limit": 0}})
    for _ in range(2):
        c.add_node(num_cpus=1)
    c.wait_for_nodes()
    ray.init(address=c.address, log_to_driver=True, runtime_env=cluster.ship_fcl())
    on = nodes.alive_nodes()
    before = len(workers())
    for _ in range(checks):
        check_storage(storage, on)
        print("checked", len(on), "nodes", flush=True)
    deadline = time.monotonic() + 240
    while len(workers()) > before and time.monotonic() < deadline:
        time.sleep(0.5)
    print("probe workers left:", len(workers()) - before, flush=True)
    ray.shutdown()
    c.shutdown()
''')


def test_the_storage_check_leaves_no_crash_dump(tmp_path):
    temp = tempfile.mkdtemp(prefix="fclp-", dir="/tmp")      # short: Ray's socket paths
    try:
        (tmp_path / "driver.py").write_text(DRIVER)
        env = {**os.environ, "PYTHONPATH": str(REPO), "RAY_ADDRESS": ""}
        done = subprocess.run([sys.executable, str(tmp_path / "driver.py"), temp,
                               str(tmp_path / "storage"), str(CHECKS)], env=env, cwd=REPO,
                              capture_output=True, text=True, timeout=900)
        output = done.stdout + done.stderr
        assert done.returncode == 0, output[-3000:]
        assert output.count("checked 3 nodes") == CHECKS
        assert "probe workers left: 0" in output       # each prober's process has ended
        assert "Fatal Python error" not in output
        dumps = [p.name for p in Path(temp).glob("session_*/logs/worker-*")
                 if "Fatal Python error" in p.read_text(errors="replace")]
        assert not dumps, f"crash dumps in {dumps}"
    finally:
        shutil.rmtree(temp, ignore_errors=True)
