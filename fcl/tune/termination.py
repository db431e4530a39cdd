"""SIGTERM (a scheduler's stop, `timeout`, Kubernetes) ends a study script in one line and exit
143 wherever it comes, not only inside Tune's loop (`fcl.tune.progress.sigterm_as_ctrl_c`) and
the export (`deferred_sigterm`): before Ray is up Python's default would end the driver without
a word, once Ray is up its own handler exits 15, and after the export the driver would die
during its teardown with the study whole and nothing said.

`install` sets the handler for the script's run (`fcl.tune.cli`; a study script keeps it until
the process ends, a caller of `run_study_cli` gets its own back); `ray.init` replaces it, so
the driver starts or joins Ray inside `across_ray_init`, which answers a SIGTERM during
`ray.init` as the handler would and puts the handler back after it. Outside the loop and the
export the handler raises `Terminated`, which the CLI turns into its line; once the study is
exported (`exported`), it says so and ends the process at once (`os._exit`: the interpreter's
teardown, Ray's atexit shutdown among it, is what it interrupted; a local Ray's processes are
reaped as after a `kill -9`, `fcl.tune.reaper`).
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

EXIT_SIGTERM = 143               # the shell's 128 + 15
WHOLE_LINE = "terminated (SIGTERM) after the export: the study is whole"


class Terminated(BaseException):
    """SIGTERM outside Tune's loop and the export (a BaseException, as KeyboardInterrupt is: no
    `except Exception` on the way swallows it)."""


_installed = False
_exported = False


def _on_sigterm(signum, frame) -> None:
    if _exported:
        print(WHOLE_LINE, file=sys.stderr, flush=True)
        os._exit(EXIT_SIGTERM)
    raise Terminated()


def install():
    """The handler, until `uninstall` (main thread only: elsewhere none can be set). Returns
    the handler it replaced."""
    global _installed, _exported
    if threading.current_thread() is not threading.main_thread():
        return None
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    _installed, _exported = True, False
    return previous


def uninstall(previous) -> None:
    """The handler `install` replaced, back (a study run from Python leaves none behind)."""
    global _installed
    if _installed and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
        _installed = False


def reinstall() -> None:
    """After `ray.init`, which sets its own SIGTERM handler."""
    if _installed and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)


@contextlib.contextmanager
def across_ray_init():
    """The block around `ray.init`. As it begins, `ray.init` sets a SIGTERM handler of its own
    (`sys.exit(15)`), and Ray's core worker then a C++ one that dumps its stack and calls that
    one: a SIGTERM while Ray starts or is joined would end the driver with exit 15 and no line
    (seen once in 30 random kills of `tests/test_kill_anywhere.py`). Inside the block it raises
    `Terminated` as anywhere else; when the block ends the handler is back."""
    try:
        yield
        reinstall()
    except SystemExit as e:
        if not _installed or e.code != signal.SIGTERM:     # not Ray's handler answering one
            raise
        reinstall()
        _on_sigterm(signal.SIGTERM, None)


def outer():
    """The handler a block that set its own restores where the one it replaced was not a
    Python one (Ray's reads back as None)."""
    return _on_sigterm if _installed else signal.SIG_DFL


def exported() -> None:
    """The study's files are written: a SIGTERM from now on stops nothing."""
    global _exported
    _exported = True
