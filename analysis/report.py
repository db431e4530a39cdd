"""`fcl report FOLDER... --out DIR`: one offline Markdown page over stored studies, DIR/report.md,
with its figures beside it in DIR/figures/.

For every study at or below the folders (nested ones too): its date, commit and whether that
commit is in the checkout's history (its provenance), trials and seeds, whether its files match
its manifest, and its best setting with its verdict, judged as a study judges it at its end
(`fcl.tune.progress.best_line`: a best is named only where its same-seed difference from the
runner-up has a 95% interval clear of 0 and its ACC is clear of chance). Then the papers'
figures drawn from those folders and every claim judged on them (`analysis.claims`). Nothing is
written unless DIR can be; report.md is written last, whole (temp file, then rename).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import subprocess
import sys
from pathlib import Path

import pandas as pd

from analysis.output_paths import unwritable_folder
from fcl.atomic_file import write_text_atomic
from fcl.cli_args import EXIT_USAGE
from fcl.manifest import read_manifest
from fcl.study_folders import Listing, list_studies, named_studies


def chance(base: dict) -> tuple[float, int] | None:
    """ACC of guessing and the test images, from the study's data set where it can be read
    (None: not found, and the best line then does not check chance)."""
    from fcl.config import from_flat
    from fcl.data.datasets import load_dataset
    from fcl.data.federated import chance_accuracy
    try:
        cfg = from_flat(base)
        return chance_accuracy(load_dataset(cfg.data.name, cfg.data.root, cfg.data), cfg.data)
    except Exception:  # a data set absent here, or a stored config this code cannot read
        return None


def best_setting(path: str) -> str:
    """The study's best line from its stored trials, as the study printed it at its end."""
    from fcl.tune.progress import best_line
    manifest = read_manifest(path)
    trials = pd.read_parquet(Path(path) / "trials.parquet")
    odds = chance(manifest.base)
    line = best_line(trials, list(manifest.varying), odds) or "no trial finished"
    return line if odds else f"{line} (chance not checked: the data set could not be read)"


def provenance(row: Listing, where: str) -> str:
    """The study's commit, with its date where the checkout holding the folder has it in its
    history (a study from a commit that never landed says so)."""
    if not row.commit:
        return "no commit recorded"
    return f"`{row.commit}` ({row.date})" if _in_history(row.commit, where) else \
        f"`{row.commit}`: not in the history of the checkout that holds it"


def _in_history(commit: str, where: str) -> bool:
    try:
        done = subprocess.run(["git", "merge-base", "--is-ancestor", commit, "HEAD"],
                              capture_output=True, timeout=30, cwd=where)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def studies_section(folders: list[str]) -> list[str]:
    lines = ["## Studies", "", "| study | commit | trials (finished / failed / other) | seeds | "
             "files |", "|---|---|---|---|---|"]
    for folder in folders:
        lines += [f"| {r.name} | {provenance(r, folder)} | {r.finished} / {r.failed} / "
                  f"{r.other} | {r.seeds} | {r.status} |" for r in list_studies([folder])]
    lines += ["", "## Best settings", ""]
    for folder in folders:
        for path, name in named_studies(folder):
            lines.append(f"- **{name}**: {_quiet(best_setting, path)}")
    return lines


def _quiet(fn, *args):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return fn(*args)


def figures_section(folders: list[str], out: Path) -> list[str]:
    from analysis.figures.catalog import main as figures_main
    target = out / "figures"
    code = _quiet(figures_main, ["--results", *folders, "--out", str(target)])
    drawn = sorted(target.glob("*.png")) + sorted(target.glob("*.md")) if target.is_dir() else []
    lines = ["", "## Figures and tables", ""]
    if code != 0 or not drawn:
        return lines + ["No figure of the papers is drawn from these folders."]
    for path in drawn:          # a figure as an image, a table as its Markdown
        lines += [f"### {path.stem}", "", f"![{path.stem}](figures/{path.name})"
                  if path.suffix == ".png" else path.read_text().strip(), ""]
    return lines


def claims_section(folders: list[str], out: Path) -> list[str]:
    from analysis.claims import main as claims_main
    table = out / "claims.md"
    code = _quiet(claims_main, ["--results", *folders, "--out", str(table)])
    rows = table.read_text().strip().splitlines() if code == 0 and table.is_file() else []
    judged = [r for r in rows[2:] if not all(cell.strip().startswith("not run")
                                             for cell in r.strip("|").split(" | ")[3:])]
    if not judged:
        return ["", "## Claims", "", "No claim of the papers is judged on these folders."]
    return ["", "## Claims", "", "The claims whose study is in these folders (`fcl claims`: "
            "all of them).", "", *rows[:2], *judged]


def main(argv: list[str] | None = None, prog: str = "python -m analysis report") -> int:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    p.add_argument("folders", nargs="+", help="results folders (their nested studies too)")
    p.add_argument("--out", default="report", help="the report's folder (default: report)")
    args = p.parse_args(argv)
    out = Path(args.out)
    missing = [f for f in args.folders if not named_studies(f)]
    if missing:
        print(f"error: {missing[0]}: no stored study at or below it; allowed: a results "
              f"folder (fcl ls lists them)", file=sys.stderr)
        return EXIT_USAGE
    problem = unwritable_folder(out, "--out")
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    out.mkdir(parents=True, exist_ok=True)
    lines = [f"# fcl report: {', '.join(args.folders)}", "",
             f"Made by `fcl report {' '.join(args.folders)} --out {out}`.", "",
             *studies_section(args.folders), *figures_section(args.folders, out),
             *claims_section(args.folders, out)]
    write_text_atomic("\n".join(lines) + "\n", out / "report.md")
    print(f"wrote {out / 'report.md'}")
    return 0
