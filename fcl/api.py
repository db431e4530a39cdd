"""fcl from Python: one run by preset name (or a whole `RunConfig`), the same run `fcl run`
makes.

    import fcl
    result = fcl.run("smoke", {"server.optimizer": "fedadam", "seed": 1})   # a line per round
    result = fcl.run("smoke", progress=False)   # quiet
    result.summary.acc, result.accuracy        # ACC (%); the (tasks x rounds) accuracy matrix
"""
from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from fcl.config import RunConfig, check_read, with_overrides
from fcl.engine import RunResult, RunState
from fcl.engine import run as engine_run
from fcl.presets import preset as preset_config
from fcl.records import RoundRecord


def configure(preset: str | RunConfig = "smoke", overrides: dict[str, Any] | None = None
           ) -> RunConfig:
    """A preset's config (`fcl.presets.PRESETS`) or `preset` itself when it is a `RunConfig`,
    with `overrides` applied: flat keys as on the command line (`{"server.lr": 0.5}`; strings
    are parsed as `--set` parses them). Bad keys or values raise `fcl.config.ConfigError`."""
    if isinstance(preset, RunConfig):
        cfg = with_overrides(preset, overrides or {})
        check_read(cfg, overrides or {})
        return cfg
    return preset_config(preset, overrides)


def run(preset: str | RunConfig = "smoke", overrides: dict[str, Any] | None = None,
        on_round: Callable[[RoundRecord, RunState], None] | None = None,
        progress: bool | TextIO = True) -> RunResult:
    """One whole FCL run (`fcl run --preset P --set K=V ...`): the config of
    `configure(preset, overrides)` through `fcl.engine.run`. `on_round(record, state)` is called
    after every round. `progress`: a line per round, as `fcl run` prints it, on stderr (True,
    the default: a paper-size run takes minutes), on a stream of your own, or none (False).
    Returns the `RunResult`: `config`, `records` (one per round), `accuracy` (tasks x rounds,
    percent, NaN where not evaluated) and `summary` (ACC, BWT_f, bytes, wall time)."""
    cfg = configure(preset, overrides)
    if progress is False:
        return engine_run(cfg, on_round)
    from fcl.run_command import progress_line
    stream = sys.stderr if progress is True else progress
    t0 = time.perf_counter()

    def report(rec: RoundRecord, state: RunState) -> None:
        print(progress_line(rec, cfg.rounds, time.perf_counter() - t0), file=stream, flush=True)
        if on_round is not None:
            on_round(rec, state)
    return engine_run(cfg, report)
