"""SIGTERM outside Tune's loop and the export (`fcl.tune.termination`): before the study's
files are written it raises `Terminated` (the CLI's line, exit 143); after them it says the
study is whole and ends the process with 143; a caller of `run_study_cli` gets its own handler
back."""
import os
import signal
import subprocess
import sys
import textwrap

from fcl.tune import termination

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sigterm_self(body: str) -> subprocess.CompletedProcess:
    script = textwrap.dedent("""
        import os, signal, time
        from fcl.tune import termination
        termination.install()
    """) + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": REPO}, timeout=300)


def test_before_the_export_sigterm_raises_and_after_it_ends_with_143_and_the_line():
    before = sigterm_self("""
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(60)
        except termination.Terminated:
            print("raised")
    """)
    assert before.returncode == 0 and before.stdout.strip() == "raised"
    after = sigterm_self("""
        termination.exported()
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(60)
        print("not reached")
    """)
    assert after.returncode == 143 and after.stdout == ""
    assert after.stderr.strip() == termination.WHOLE_LINE


def test_the_handler_it_replaced_comes_back():
    def mine(signum, frame):
        pass
    original = signal.signal(signal.SIGTERM, mine)
    try:
        previous = termination.install()
        assert signal.getsignal(signal.SIGTERM) is termination._on_sigterm
        termination.uninstall(previous)
        assert signal.getsignal(signal.SIGTERM) is mine
        assert termination.outer() is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if original is None else original)


def test_in_tunes_loop_sigterm_is_ctrl_c_only_where_tunes_handler_takes_it():
    """Inside `sigterm_as_ctrl_c` a SIGTERM becomes Tune's SIGINT stop; where no SIGINT handler
    but Python's is in place (before `tuner.fit` sets Tune's, after a first stop) it ends the
    driver as terminated, never as a KeyboardInterrupt (exit 130, "interrupted")."""
    out = sigterm_self("""
        from fcl.tune import progress, stop_request
        with progress.sigterm_as_ctrl_c():
            try:                                   # Python's SIGINT handler: no KeyboardInterrupt
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(60)
            except termination.Terminated:
                print("terminated")
            got = []
            signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))   # Tune's
            os.kill(os.getpid(), signal.SIGTERM)
            deadline = time.monotonic() + 60
            while not got and time.monotonic() < deadline:
                time.sleep(0.01)
            print("stopped as Ctrl-C" if got == [signal.SIGINT] and stop_request.stops(
                stop_request.SIGTERM) else "not stopped")
    """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["terminated", "stopped as Ctrl-C"]


SIGTERM_IN_RAY_INIT = """
import os, signal, sys, time
import ray
import ray._private.utils as ray_utils
from fcl.tune import Study, grid, main

def sigterm_self():
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(120)                    # the handler raises before it ends

if sys.argv.pop(1) == "start":         # just after ray.init has set its own handler
    set_handler = ray_utils.set_sigterm_handler
    ray_utils.set_sigterm_handler = lambda handler: (set_handler(handler), sigterm_self())
else:                                  # once Ray's core worker (its C++ handler) is up
    init = ray.init
    ray.init = lambda *a, **k: (init(*a, **k), sigterm_self())
main(Study("sigterm_in_init", {"client.lr": grid(0.1)}))
"""


def test_sigterm_while_ray_init_joins_ends_in_the_line_and_143(local_ray, tmp_path):
    """Ray's handlers during `ray.init` (its `sys.exit(15)`, then its core worker's stack dump
    calling that) would end the driver with exit 15 and no line; `across_ray_init` answers
    them with the CLI's line, at the start of `ray.init` and at its end, joining a Ray or
    starting one."""
    script = tmp_path / "driver.py"
    script.write_text(SIGTERM_IN_RAY_INIT)
    for when, join in (("start", ["--address", local_ray]), ("end", ["--address", local_ray]),
                       ("end", [])):
        out = subprocess.run(
            [sys.executable, str(script), when, "--preset", "smoke", "--seeds", "1",
             "--results", str(tmp_path / f"{when}{len(join)}"), *join],
            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": REPO}, timeout=300)
        assert out.returncode == termination.EXIT_SIGTERM, (when, join, out.stderr[-1500:])
        assert "terminated (SIGTERM) before the study ended" in out.stderr, (when, join)
