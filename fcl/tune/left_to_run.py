"""What Tune runs of a study's grid, decided once for the study and for its dry run: the grid
without the trials its stored results already hold (`--seeds` added later, `fcl.tune.extend`)
and without those `--copy-from` copies (`fcl.tune.copies`, computed on the kind of machine the
new trials run on)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

from fcl.config import RunConfig
from fcl.machine_kind import Kind
from fcl.tune import copies, extend
from fcl.tune.space import Space, grid_points


@dataclass(frozen=True)
class LeftToRun:
    space: Space                          # what Tune runs
    part: extend.StoredPart | None        # the stored trials this study adds seeds to
    copied: copies.Copies | None          # the trials other studies stored

    def notes(self) -> list[str]:
        """A line for each part that does not run: what the dry run prints."""
        out = []
        if self.part is not None:
            out.append(f"keeps the {len(self.part.frames['trials'])} stored trials of seeds "
                       f"{extend.seed_range(self.part.seeds)}; runs the new seeds' only")
        if self.copied is not None:
            out.append(self.copied.line(len(grid_points(self.space)), planned=True))
        return out


def left_to_run(plan, cfg: RunConfig, where: Callable[[], dict[Kind, list[str]]]
                ) -> LeftToRun:
    """`plan`'s (`fcl.tune.plan.StudyPlan`) grid over `cfg` (its threads resolved: a trial's id
    holds them) less what is stored (found again on `--resume`: the stored results stay in
    place until the export replaces them; `--fresh` keeps no stored part); `where()`, asked only with `--copy-from`, gives the kinds
    of machine the trials run on (`fcl.tune.node_kinds.trial_kinds`)."""
    part = None
    if plan.study.searcher is None and not plan.opts.fresh:
        part = extend.stored_part(os.path.join(plan.opts.results, plan.name), plan.manifest(),
                                  plan.space, cfg)
    space = extend.missing_space(plan.space, part) if part is not None else plan.space
    copied = None
    if plan.opts.copy_from:
        copied = copies.find_copies(plan.opts.results, plan.opts.copy_from, plan.name, cfg,
                                    space, plan.study.searcher, plan.opts.num_samples, where(),
                                    plan.opts.copy_unrecorded_cpu)
    return LeftToRun(copied.space_left if copied is not None else space, part, copied)
