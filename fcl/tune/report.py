"""The report a trial sends Tune after each round, as one typed record, and the names of the keys
Tune itself adds to it.

Everything that reads a trial's reports (the searcher, the ASHA scheduler, the progress line, the
trackers, the export) reads them through `TrialReport.from_tune` and the names below, so a key
is spelled in one place. On the wire (`to_tune`) a report is the flat dict Tune stores in its
experiment state and in a trial's checkpoint: `round`, `acc`, `drift`, `train_loss`, `bytes`,
`wall_s`, `seeds`; the last report of a trial that ran all its rounds adds the run summary's
numbers (`bwt_f`, `bytes_up`, ...), `done` and `finished`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Mapping

# The fcl keys other modules name: Tune's time attribute (ASHA's rungs, Optuna's steps), the
# metric a study maximises, and the bytes a Pareto search minimises
TIME_ATTR, METRIC, BYTES = "round", "acc", "bytes"
FINISHED = "finished"    # True in a trial's last report only when it ran all its rounds (a
#                          trial the scheduler stops never reports it; Tune's `done` can't tell)

# Tune's own keys in every `Result.metrics` / `last_result` (auto-filled by Ray)
TUNE_TRIAL_ID, TUNE_DONE, TUNE_ITERATION = "trial_id", "done", "training_iteration"
TUNE_TIME_TOTAL, TUNE_NODE_IP, TUNE_HOSTNAME = "time_total_s", "node_ip", "hostname"


@dataclass(frozen=True)
class TrialReport:
    round: int               # the round just trained (0-based)
    acc: float               # mean accuracy at the latest evaluated round; NaN before the first
    drift: float
    train_loss: float
    bytes: float             # bytes sent so far, both links (the run's TCC)
    wall_s: float            # the trial's wall time so far
    seeds: int = 1           # seeds the numbers are the mean of
    finished: bool = False   # the last report of a trial that ran all its rounds
    summary: Mapping[str, float] = field(default_factory=dict)   # the run's numbers, if finished

    @classmethod
    def after(cls, records: list, bytes_total: int, wall_s: float) -> "TrialReport":
        """The report after the last of a seed's round `records`; `acc` is the latest evaluated
        round's, so the progress table shows it as it moves, and it equals the run's ACC after
        the last round."""
        record = records[-1]
        evaluated = [r for r in records if r["evaluated"]]
        return cls(record["round"], evaluated[-1]["mean_acc"] if evaluated else math.nan,
                   record["drift"], record["train_loss"], bytes_total, wall_s)

    @classmethod
    def final(cls, result) -> "TrialReport":
        """The last report of a seed's finished run (`fcl.engine.RunResult`): its last round
        and the numbers of its summary."""
        s = result.summary
        last = cls.after(result.records, s.bytes_up + s.bytes_down, s.wall_s)
        numbers = {k: v for k, v in s.items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool)}
        return cls(**{**last.__dict__, "finished": True, "summary": numbers})

    @classmethod
    def mean(cls, per_seed: list["TrialReport"], wall_s: float | None = None) -> "TrialReport":
        """One report for a trial of several seeds: each number the mean over the seeds (so the
        scheduler and the searcher compare configurations, not lucky seeds); `wall_s`, where
        given, is the trial's whole time."""
        n, first = len(per_seed), per_seed[0]

        def avg(values):
            return sum(values) / n
        summary = {k: avg([r.summary[k] for r in per_seed]) for k in first.summary}
        return cls(first.round, avg([r.acc for r in per_seed]),
                   avg([r.drift for r in per_seed]), avg([r.train_loss for r in per_seed]),
                   avg([r.bytes for r in per_seed]),
                   avg([r.wall_s for r in per_seed]) if wall_s is None else wall_s,
                   n, first.finished, summary)

    def to_tune(self) -> dict:
        """The flat dict `tune.report` sends."""
        out = {**self.summary, **{f.name: getattr(self, f.name) for f in fields(self)
                                  if f.name not in ("summary", "finished")}}
        return {**out, TUNE_DONE: True, FINISHED: True} if self.finished else out

    @classmethod
    def from_tune(cls, metrics: Mapping | None) -> "TrialReport | None":
        """The report in Tune's `Result.metrics` / `last_result` (Tune's own keys ignored); None
        for a trial that never reported."""
        metrics = metrics or {}
        if TIME_ATTR not in metrics:
            return None
        core = CORE_NAMES
        summary = {k: v for k, v in metrics.items() if k not in core and k not in TUNE_KEYS
                   and isinstance(v, (int, float)) and not isinstance(v, bool)}
        finished = bool(metrics.get(FINISHED))
        present = {k: metrics[k] for k in core if k in metrics}
        missing = {k: math.nan for k in core - {"seeds"} if k not in metrics}
        return cls(**present, **missing, finished=finished, summary=summary if finished else {})

    def value(self, name: str) -> float | None:
        """A number of the report by its wire name (a searcher's objective); None if absent."""
        if name in self.summary:
            return self.summary[name]
        return getattr(self, name, None) if name in CORE_NAMES else None


CORE_NAMES = frozenset(f.name for f in fields(TrialReport)) - {"summary", "finished"}
TUNE_KEYS = frozenset({TUNE_TRIAL_ID, TUNE_DONE, TUNE_ITERATION, TUNE_TIME_TOTAL,
                       TUNE_NODE_IP, TUNE_HOSTNAME, FINISHED, "timestamp", "time_this_iter_s",
                       "pid", "date", "time_since_restore", "iterations_since_restore",
                       "checkpoint_dir_name", "config", "experiment_tag"})
