"""What `analysis` refuses before it draws: a study folder whose manifest is missing or disagrees
with its files (analysis/study_folder.py), and an output path it cannot write
(analysis/output_paths.py); each one line `error: ...` and exit code 2 for `figures`, `dashboard`
and `paired`, nothing written. Also: what every figure and table says it was drawn from."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from analysis import paired
from analysis.dashboard.page import main as dashboard_main
from analysis.figures.catalog import main as figures_main
from analysis.figures.files import add_footer
from analysis.study_tables import MissingStudy, load_study
from fcl.manifest import read_manifest, write_manifest
from study_fixture import study_results  # noqa: F401  (the session fixture)
from tmpfs import tmpfs

GOOD = ("ablation_lr", "scalability")          # fig5a and fig5c read these


@pytest.fixture
def results(study_results, tmp_path) -> Path:
    for name in GOOD:
        shutil.copytree(study_results / name, tmp_path / "results" / name)
    return tmp_path / "results"


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def refused_everywhere(results: Path, capsys, tmp_path: Path) -> str:
    """The line `figures` prints for the scalability folder; `dashboard` and `paired` print
    the same, all exit 2, and nothing is written (ablation_lr is whole: no fig5a either)."""
    figs, page = tmp_path / "figs", tmp_path / "page.html"
    assert figures_main(["--only", "fig5a", "fig5c", "--results", str(results),
                         "--out", str(figs)]) == 2
    line = one_error_line(capsys)
    assert line.startswith(f"error: {results / 'scalability'}: refused: ")
    assert not figs.exists()                   # not even an empty --out folder
    assert dashboard_main(["--results", str(results), "--out", str(page)]) == 2
    assert one_error_line(capsys) == line and not page.exists()
    assert paired.main(["scalability", "--results", str(results),
                        "--ref", "data.num_clients=2"]) == 2
    assert one_error_line(capsys) == line
    return line


def test_a_folder_without_a_manifest_is_refused_saying_how_to_export_it_again(
        results, capsys, tmp_path):
    (results / "scalability" / "study.json").unlink()
    line = refused_everywhere(results, capsys, tmp_path)
    assert "no study.json" in line
    assert f"run the study's script again with --results {results} and --resume" in line


def test_a_table_of_another_schema_is_refused_saying_how_to_export_it_again(
        results, capsys, tmp_path):
    """Schema 1 (an fcl older than the three files): one line, no attempt to read it."""
    path = results / "scalability" / "trials.parquet"
    pd.read_parquet(path).assign(schema_version=1).to_parquet(path)
    write_manifest(path.parent, read_manifest(path.parent))      # the files agree with it
    assert figures_main(["--only", "fig5c", "--results", str(results),
                         "--out", str(tmp_path / "figs")]) == 2
    line = one_error_line(capsys)
    assert line.startswith(f"error: {path}: schema_version [1] is not the one this analysis "
                           "reads (2); run the study's script again")
    assert not any((tmp_path / "figs").glob("fig5c*"))


def test_half_an_export_without_a_manifest_is_refused(results, capsys, tmp_path):
    """Killed after trials.parquet, before the other files and the manifest."""
    for f in ("rounds.parquet", "tasks.parquet", "study.json"):
        (results / "scalability" / f).unlink()
    assert "no study.json" in refused_everywhere(results, capsys, tmp_path)


def test_a_truncated_parquet_file_is_refused(results, capsys, tmp_path):
    path = results / "scalability" / "rounds.parquet"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    assert refused_everywhere(results, capsys, tmp_path).endswith(
        "rounds.parquet is not readable Parquet (truncated?) (replaced or half-written after "
        "the manifest)")


def test_a_parquet_file_replaced_after_its_manifest_is_refused(results, capsys, tmp_path):
    path = results / "scalability" / "trials.parquet"
    trials = pd.read_parquet(path)
    trials.to_parquet(path, compression="gzip")              # same rows, other bytes
    assert "trials.parquet has another sha256 than study.json" in refused_everywhere(
        results, capsys, tmp_path)
    trials.iloc[:1].to_parquet(path)
    assert f"trials.parquet has 1 rows, study.json says {len(trials)}" in refused_everywhere(
        results, capsys, tmp_path)


def test_a_manifest_naming_a_missing_file_is_refused(results, capsys, tmp_path):
    (results / "scalability" / "tasks.parquet").unlink()
    assert "tasks.parquet is named in study.json but missing" in refused_everywhere(
        results, capsys, tmp_path)


def test_a_manifest_without_trials_parquet_is_refused(results, capsys, tmp_path):
    """Half an export: the manifest and two tables, no trials.parquet."""
    (results / "scalability" / "trials.parquet").unlink()
    assert "trials.parquet is named in study.json but missing" in refused_everywhere(
        results, capsys, tmp_path)
    manifest = results / "scalability" / "study.json"
    data = json.loads(manifest.read_text())
    del data["files"]["trials"]
    manifest.write_text(json.dumps(data))
    assert "study.json names no trials.parquet" in refused_everywhere(results, capsys, tmp_path)


def test_a_parquet_file_the_manifest_does_not_name_is_refused(results, capsys, tmp_path):
    manifest = results / "scalability" / "study.json"
    data = json.loads(manifest.read_text())
    del data["files"]["tasks"]
    manifest.write_text(json.dumps(data))
    assert "tasks.parquet is not named in study.json (written after it)" in refused_everywhere(
        results, capsys, tmp_path)


def test_an_unreadable_manifest_is_refused(results, capsys, tmp_path):
    (results / "scalability" / "study.json").write_text('{"study": ')
    assert "study.json: not a readable manifest" in refused_everywhere(results, capsys, tmp_path)


def test_temp_leftovers_of_a_killed_export_are_ignored(results, capsys, tmp_path):
    (results / "scalability" / ".tmp-abc123.parquet").write_bytes(b"")
    (results / "noniid").mkdir()                              # killed before any file landed
    (results / "noniid" / ".tmp-def456.parquet").write_bytes(b"")
    assert len(load_study(results, "scalability").trials) > 0
    with pytest.raises(MissingStudy):
        load_study(results, "noniid")
    assert figures_main(["--only", "fig5c", "fig5d", "--results", str(results),
                         "--out", str(tmp_path / "figs")]) == 0
    assert (tmp_path / "figs" / "fig5c.png").is_file()
    assert dashboard_main(["--results", str(results), "--out", str(tmp_path / "d.html")]) == 0


# --- outputs checked before any work ------------------------------------------------------------
def test_figures_out_that_cannot_be_a_folder_is_one_line(results, tmp_path, capsys):
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    for out, said in ((a_file, "is a file, not a folder"),
                      (a_file / "figs", f"is under {a_file}, a file")):
        assert figures_main(["--results", str(results), "--out", str(out)]) == 2
        assert one_error_line(capsys) == f"error: --out={out}: {said}"


def test_dashboard_out_that_cannot_be_written_is_one_line(results, tmp_path, capsys):
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    out = a_file / "d.html"
    assert dashboard_main(["--results", str(results), "--out", str(out)]) == 2
    assert one_error_line(capsys) == f"error: --out={out}: its folder {a_file} is a file, not a folder"
    assert dashboard_main(["--results", str(results), "--out", str(tmp_path)]) == 2
    assert "is a folder; give a file name" in one_error_line(capsys)


@pytest.fixture
def read_only(tmp_path):
    with tmpfs(tmp_path / "ro", "ro,size=1m") as folder:
        yield folder


@pytest.fixture
def full_disk(tmp_path):
    with tmpfs(tmp_path / "full", "size=64k") as folder:
        fd = os.open(folder / "fill", os.O_WRONLY | os.O_CREAT)
        try:                                           # fill it to the last block
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        yield folder


def test_outputs_on_a_read_only_disk_are_one_line_before_any_study_is_read(
        results, read_only, capsys, monkeypatch):
    def no_reading(*args, **kwargs):
        raise AssertionError("a study was read before --out was checked")
    for module in ("analysis.figures.catalog", "analysis.dashboard.page"):
        monkeypatch.setattr(f"{module}.load_study", no_reading, raising=False)
    monkeypatch.setattr("analysis.figures.catalog.load_studies", no_reading)
    assert figures_main(["--results", str(results), "--out", str(read_only / "figs")]) == 2
    assert one_error_line(capsys) == (f"error: --out={read_only / 'figs'}: is not writable "
                                      "(Read-only file system)")
    assert dashboard_main(["--results", str(results), "--out", str(read_only / "d.html")]) == 2
    assert one_error_line(capsys) == (f"error: --out={read_only / 'd.html'}: its folder "
                                      f"{read_only} is not writable (Read-only file system)")


def test_outputs_on_a_full_disk_are_one_line(results, full_disk, capsys):
    assert figures_main(["--results", str(results), "--out", str(full_disk / "figs")]) == 2
    assert one_error_line(capsys) == (f"error: --out={full_disk / 'figs'}: is not writable "
                                      "(No space left on device)")
    assert dashboard_main(["--results", str(results), "--out", str(full_disk / "d.html")]) == 2
    assert "is not writable (No space left on device)" in one_error_line(capsys)


# --- what every figure and table was drawn from -------------------------------------------------
def test_tables_end_with_the_line_they_were_drawn_from_and_csvs_stay_data(study_results,
                                                                          tmp_path):
    assert figures_main(["--only", "table3", "fig5a", "--results", str(study_results),
                         "--out", str(tmp_path)]) == 0
    line = (f"drawn from {study_results.name}/optimizers · preset smoke · data set "
            f"{load_study(study_results, 'optimizers').manifest.dataset} · commit fixture")
    assert (tmp_path / "table3.md").read_text().endswith(f"|\n\n{line}\n")
    for csv in ("table3.csv", "fig5a.csv"):
        assert "drawn from" not in (tmp_path / csv).read_text()


def test_the_footer_lies_under_everything_the_figure_draws():
    import matplotlib.pyplot as plt           # the Agg backend: chosen by analysis.figures
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(6, 3))
    ax.plot([0, 1], [0, 1], label="a line")
    ax.set(xlabel="round", title="a title")
    bx.set_xticks([0, 1], ["a long rotated label", "b"], rotation=60)
    ax.legend(loc="upper left", bbox_to_anchor=(0, -0.3))     # a legend below the axes
    renderer = fig.canvas.get_renderer()
    before = fig.get_tightbbox(renderer)
    add_footer(fig, "drawn from results/x · preset p · data set d · commit c")
    footer = fig.texts[-1].get_window_extent(renderer)
    others = [a.get_window_extent(renderer) for a in (*fig.axes, ax.get_legend(), *fig.texts[:-1])]
    others += [a.get_tightbbox(renderer) for a in fig.axes]
    assert footer.y1 < min(b.y0 for b in others)                 # below all of them
    assert footer.y1 < before.y0 * fig.dpi and footer.height > 5    # and a readable size
    assert fig.texts[-1].get_text().startswith("drawn from results/x")
    plt.close(fig)


def test_no_analysis_output_is_left_as_a_probe_file(results, tmp_path):
    out = tmp_path / "figs"
    assert figures_main(["--only", "fig5c", "--results", str(results), "--out", str(out)]) == 0
    assert not [p for p in os.listdir(out) if p.startswith(".tmp-")]


def test_several_results_folders_read_each_study_from_the_first_that_has_it(results, tmp_path,
                                                                             capsys):
    """The committed figures' command: `--results results-pretrained results`."""
    first = tmp_path / "first"
    shutil.copytree(results / "ablation_lr", first / "ablation_lr")
    out = tmp_path / "figs"
    assert figures_main(["--only", "fig5a", "fig5c", "fig5d", "--results", str(first),
                         str(results), "--out", str(out)]) == 0
    lines = capsys.readouterr()
    assert f"drawn from first/ablation_lr" in lines.out       # from the first folder
    assert f"drawn from results/scalability" in lines.out     # only in the second
    assert "skip fig5d" in lines.err and "noniid" in lines.err  # in neither: one skip line
    assert figures_main(["--results", str(first), str(tmp_path / "none"),
                         "--out", str(out)]) == 2
    assert one_error_line(capsys) == f"error: --results={tmp_path / 'none'}: not a folder"
