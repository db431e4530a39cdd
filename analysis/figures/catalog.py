"""Regenerate the papers' figures and tables from stored study results (Parquet only).

    python -m analysis figures                                  # the committed figures/
    python -m analysis figures --only fig5a --results results/ --out /tmp/figs

With several `--results` folders each study is read from the first one that stores it. The
default is the committed figures' sources, `results-pretrained results` (the FCL studies rerun on
the pretrained backbone, the others from results/; just `results` where there is no
results-pretrained/), so that the bare command redraws figures/ as committed.

`--out` is checked writable before anything is read. Then every study the chosen figures read
is loaded (and checked against its manifest, `analysis/study_folder.py`) before any figure is
drawn: one folder that is not whole (no `study.json`, or one that disagrees with its files), or a
Parquet file that is not a study table, refuses the whole run with one line `error: ...` and exit
code 2, and nothing is written: a regeneration never mixes figures of whole studies with none of
a broken one. A figure whose study is not stored at all is skipped with one line; where none of
the chosen figures' studies is stored, the run is refused in one line before --out is made. A
write that fails half-way (a disk that fills) is one line `error: --out=...: not written`.
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from analysis.figures import (drift_correction, fcl_paper, fcl_paper_tables, flocora,
                              flocora_table2, flocora_table4)
from analysis.figures.files import Produced, save_data_csv
from analysis.output_paths import first_path_problem, unwritable_folder
from analysis.study_folder import holds_study
from analysis.study_tables import MissingStudy, SchemaError, Study, load_study
from fcl.cli_args import EXIT_USAGE


# the committed figures' sources, in order (results-pretrained/: the FCL studies on the
# pretrained frozen backbone); where only results/ is there, the figures come from it
DEFAULT_RESULTS = (Path("results-pretrained"), Path("results"))


@dataclass(frozen=True)
class Figure:
    studies: tuple[str, ...]          # the first of these that is stored is used
    make: Callable[..., Produced]
    what: str
    refs: tuple[str, ...] = ()        # also drawn from where stored (FLoCoRA's FedAvg baseline)
    beside: bool = False              # the same study from the later --results folders too
    #                                   (Table 4's random-backbone rows beside the pretrained)


FIGURES: dict[str, Figure] = {
    "fig3a": Figure(("task_order",), fcl_paper.fig3a,
                    "FCL Fig. 3a: task-wise accuracy per order"),
    "fig3b": Figure(("task_order",), fcl_paper.fig3b, "FCL Fig. 3b: cosine drift per order"),
    "fig4a": Figure(("optimizers", "task_order"), fcl_paper.fig4a,
                    "FCL Fig. 4a: one task over rounds, FedSGD vs FedAdam"),
    "fig4b": Figure(("optimizers", "task_order"), fcl_paper.fig4b,
                    "FCL Fig. 4b: drift spikes, FedSGD vs FedAdam"),
    "fig5a": Figure(("ablation_lr",), fcl_paper.fig5a, "FCL Fig. 5a: client x server LR"),
    "fig5b": Figure(("ablation_rounds_epochs",), fcl_paper.fig5b,
                    "FCL Fig. 5b: rounds x local epochs"),
    "fig5c": Figure(("scalability",), fcl_paper.fig5c, "FCL Fig. 5c: number of clients"),
    "fig5d": Figure(("noniid",), fcl_paper.fig5d, "FCL Fig. 5d: Dirichlet alpha"),
    "fig5e": Figure(("stragglers",), fcl_paper.fig5e, "FCL Fig. 5e: stragglers"),
    "table3": Figure(("optimizers",), fcl_paper_tables.table3, "FCL Table 3: optimizer x eta"),
    "table4": Figure(("fcl_methods", "optimizers"), fcl_paper_tables.table4,
                     "FCL Table 4: size and communication", beside=True),
    "flocora_fig2": Figure(("flocora_rank_alpha",), flocora.fig2_flocora,
                           "FLoCoRA Fig. 2: accuracy vs rank, alpha = 2r / 16r vs FedAvg"),
    "flocora_fig3": Figure(("flocora_quantization",), flocora.fig3_flocora,
                           "FLoCoRA Fig. 3: accuracy over rounds, FedAvg vs FP vs quantized",
                           ("flocora_rank_alpha",)),
    "flocora_table2": Figure(("flocora_layers",), flocora_table2.table_ii_flocora,
                             "FLoCoRA Table II: which layers train beside the adapters"),
    "flocora_table3": Figure(("flocora_quantization",), flocora.table_iii_flocora,
                             "FLoCoRA Table III: TCC against FedAvg and accuracy per bit width",
                             ("flocora_rank_alpha",)),
    "flocora_table4": Figure(("flocora_compare",), flocora_table4.table_iv_flocora,
                             "FLoCoRA Table IV: ACC against total communication, LoRA vs "
                             "pruning, FedPara, ZeroFL"),
    "drift_correction": Figure(("drift_correction",), drift_correction.drift_correction,
                               "Beyond the papers: FedProx / SCAFFOLD / FedAdam, ACC and BWT_f"),
}


def load_studies(results: Path | list[Path], names: list[str]
                 ) -> dict[str, Study | MissingStudy]:
    """Every study these figures read, by name: the Study from the first of the `results`
    folders that stores it, or why none does. A study folder that is not whole raises
    SchemaError (the run is refused before anything is drawn)."""
    folders = [results] if isinstance(results, Path) else list(results)
    loaded: dict[str, Study | MissingStudy] = {}
    wanted = (s for name in names for s in (*FIGURES[name].studies, *FIGURES[name].refs))
    for study_name in dict.fromkeys(wanted):
        missing = []
        for folder in folders:
            try:
                loaded[study_name] = load_study(folder, study_name)
                break
            except MissingStudy as why:
                missing.append(str(why))
        else:
            loaded[study_name] = MissingStudy("; ".join(missing))
    for study_name in dict.fromkeys(s for n in names if FIGURES[n].beside
                                    for s in FIGURES[n].studies):
        first = loaded[study_name]
        for folder in folders:
            if isinstance(first, Study) and folder != first.folder.parent and \
                    holds_study(folder / study_name):
                loaded[beside_key(study_name, folder)] = load_study(folder, study_name)
    return loaded


def beside_key(study_name: str, folder: Path) -> str:
    return f"{study_name}@{folder}"


def beside_of(study: Study, loaded: dict[str, Study | MissingStudy]) -> list[Study]:
    """The copies of `study` stored in the other --results folders (loaded beside it)."""
    prefix = f"{study.name}@"
    return [s for k, s in loaded.items() if k.startswith(prefix) and isinstance(s, Study)]


def make_figure(name: str, results: Path | list[Path], out: Path,
                loaded: dict[str, Study | MissingStudy] | None = None) -> tuple[Produced, Study]:
    """Draw one figure from the first stored study it reads (from `loaded` where given);
    MissingStudy if none is stored."""
    figure = FIGURES[name]
    loaded = loaded if loaded is not None else load_studies(results, [name])
    notices = []
    for study_name in figure.studies:
        study = loaded[study_name]
        if isinstance(study, MissingStudy):
            notices.append(str(study))
            continue
        refs = {r: loaded[r] for r in figure.refs if isinstance(loaded[r], Study)}
        produced = figure.make(study, out, refs=refs) if figure.refs else \
            figure.make(study, out, beside=beside_of(study, loaded)) if figure.beside else \
            figure.make(study, out)
        if not any(p.suffix == ".csv" for p in produced.paths):   # the numbers behind a plot
            produced = replace(produced, paths=[*produced.paths,
                                                save_data_csv(produced.data, out, name)])
        return produced, study
    raise MissingStudy(f"{name}: skipped, no stored study ({'; '.join(notices)})")


def no_study(results: list[Path]) -> str | None:
    """Folders without a single <study>/trials.parquet drew nothing and exited 0: a typo in
    --results looked like success."""
    if any(next(r.glob("*/trials.parquet"), None) for r in results):
        return None
    return (f"--results={' '.join(map(str, results))}: no study found; allowed: folders "
            "holding <study>/trials.parquet")


def none_stored(names: list[str], results: list[Path], only: list[str] | None) -> str | None:
    """None of the chosen figures' studies is stored in `results`: each was skipped, and '0 of
    N written' exited 0 with an empty --out; one line naming the figures whose study is there."""
    def stored(name: str) -> bool:
        return any(holds_study(r / s) for r in results for s in FIGURES[name].studies)
    if any(stored(n) for n in names):
        return None
    folders = " ".join(map(str, results))
    if only:
        here = [n for n in FIGURES if stored(n)]
        return (f"--only={' '.join(only)}: no stored study for any of them in --results="
                f"{folders}; allowed: {', '.join(here) or 'none (no study a figure reads)'}")
    wanted = dict.fromkeys(s for f in FIGURES.values() for s in f.studies)
    return (f"--results={folders}: no study any figure reads; allowed: folders holding one of "
            + ", ".join(wanted))


def main(argv: list[str] | None = None, prog: str = "python -m analysis figures") -> int:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0],
                                epilog="figures: " + ", ".join(FIGURES))
    p.add_argument("--only", nargs="+", choices=sorted(FIGURES), metavar="NAME",
                   help="only these figures/tables (default: all)")
    p.add_argument("--results", type=Path, nargs="+", default=None,
                   help="folders with <study>/trials.parquet, each study read from the first "
                        "that has it (default: results-pretrained results, as figures/ is "
                        "drawn)")
    p.add_argument("--out", default="figures",      # text: Path('') would be '.'
                   help="where PNG/PDF/Markdown/CSV go (default: figures/)")
    args = p.parse_args(argv)
    names = args.only or list(FIGURES)
    if args.results is None:
        args.results = [p for p in DEFAULT_RESULTS if p.is_dir()] or [Path("results")]
    existed = os.path.exists(args.out)
    problem = first_path_problem(args.results, "--results") or next(
        (f"--results={r}: not a folder" for r in args.results if not r.is_dir()), None) \
        or no_study(args.results) or none_stored(names, args.results, args.only) \
        or unwritable_folder(args.out, "--out")
    made_out = problem is None and not existed
    args.out = Path(args.out)
    if problem is None:
        try:
            loaded = load_studies(args.results, names)
        except SchemaError as bad:
            problem = str(bad)
            if made_out and not any(args.out.iterdir()):
                args.out.rmdir()              # a refused study leaves no empty --out behind
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    made = 0
    for name in names:
        try:
            produced, study = make_figure(name, args.results, args.out, loaded)
        except MissingStudy as missing:
            print(f"skip {missing}", file=sys.stderr)
            continue
        except SchemaError as bad:            # a column a figure needs is not there
            print(f"error: {bad}", file=sys.stderr)
            return EXIT_USAGE
        except OSError as exc:                # a full or read-only disk: the temp file is gone
            print(f"error: --out={args.out}: not written ({exc.strerror or type(exc).__name__})",
                  file=sys.stderr)
            return EXIT_USAGE
        made += 1
        print(f"{name:<15} {study.name:<24} " + " ".join(str(p) for p in produced.paths)
              + f"  ({study.provenance})")
        if study.failed:
            print(f"note {name}: {study.failed} failed trial(s) of {study.name} left out",
                  file=sys.stderr)
    print(f"{made} of {len(names)} figures/tables written to {args.out}",
          file=sys.stderr)
    return 0
