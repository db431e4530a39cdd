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
