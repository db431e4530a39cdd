"""What a study that stopped, or left trials behind, says about continuing: the user's command
with `--resume` (and `--retry-errored`), the interrupted study's line."""
from __future__ import annotations

from fcl.tune.study import StudyOptions, StudyOutcome


def resume_command(opts: StudyOptions, *extra: str) -> str:
    """The user's command with --resume (and `extra` flags) added where missing."""
    words = [w for w in (opts.command or "the same command").split() if w != "--fresh"]
    return " ".join(words + [f for f in ("--resume", *extra) if f not in words])


def rerun_lines(opts: StudyOptions, failed: int, unfinished: int) -> list[str]:
    """What a rerun would do, truthfully: --resume continues the unfinished trials only; the
    failed ones rerun with --retry-errored."""
    out = []
    if unfinished:
        out.append(f"{unfinished} trials did not finish; continue them with: "
                   f"{resume_command(opts)}")
    if failed:
        out.append(f"{failed} trials failed; --resume leaves them failed, rerun them with: "
                   f"{resume_command(opts, '--retry-errored')}")
    return out


def interrupted_line(outcome: StudyOutcome, opts: StudyOptions) -> str:
    resume = resume_command(opts)
    how = "terminated (SIGTERM)" if outcome.terminated else "interrupted"
    return (f"{how}: {outcome.finished} of {outcome.trials} trials finished "
            f"({outcome.unfinished} to go); continue with: {resume}")
