"""The one kind of a worker's output the driver drops: the traceback Ray's own SIGTERM handler
leaves when Tune ends a trial's worker (a failed trial's, or one at the end of a study).

Ray's worker handles SIGTERM by raising SystemExit. Where the signal lands inside a weakref or
`__del__` callback, Python cannot raise it there and prints "Exception ignored in: ..." with a
traceback ending in `sigterm_handler` and `SystemExit: 1`, which Ray forwards to the user's
terminal as if the trial had crashed (seen in CI beside a failed trial's one-line report). Every
other line, other tracebacks included, passes unchanged."""
from __future__ import annotations

_STARTS = ("Exception ignored in", "Traceback (most recent call last):")
_INSIDE = ("During handling of the above exception", "The above exception was the direct cause")
_MAX_HELD = 400                          # a block longer than this is not Ray's: let it through


class SigtermTracebacks:
    """Call with a worker's batch of lines; returns those to print. Holds an unfinished
    traceback per worker (a traceback can span two of Ray's batches) until its last line."""

    def __init__(self):
        self._held: dict[tuple, list[str]] = {}

    def __call__(self, worker: tuple, lines: list[str]) -> list[str]:
        out: list[str] = []
        held = self._held.pop(worker, None)
        for line in lines:
            if held is None:
                if line.startswith(_STARTS):
                    held = [line]
                else:
                    out.append(line)
                continue
            held.append(line)
            if _ends_traceback(line):
                if not _is_sigterm_exit(held):
                    out.extend(held)
                held = None
            elif len(held) > _MAX_HELD:
                out.extend(held)
                held = None
        if held is not None:
            self._held[worker] = held
        return out


def _ends_traceback(line: str) -> bool:
    """The exception line that closes a traceback: flush left, not one of its own headers."""
    return bool(line) and not line[0].isspace() and not line.startswith(_STARTS + _INSIDE)


def _is_sigterm_exit(block: list[str]) -> bool:
    return block[-1].startswith("SystemExit") and any("in sigterm_handler" in l for l in block)
