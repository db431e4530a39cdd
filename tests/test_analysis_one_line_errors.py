"""One line and a non-zero exit, never a traceback, where `python -m analysis` meets a disk that
fills while the dashboard is written and a `study.json` whose fields have the wrong types under
`figures` and `dashboard`; nothing half-written is left behind."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from analysis.dashboard.page import main as dashboard_main
from analysis.figures.catalog import main as figures_main
from study_fixture import study_results  # noqa: F401  (the session fixture)
from tmpfs import tmpfs


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("error: ")
    return err.strip()


@pytest.fixture
def one_study(study_results, tmp_path) -> Path:
    results = tmp_path / "results"
    results.mkdir()
    shutil.copytree(study_results / "noniid", results / "noniid")
    return results


def test_dashboard_on_a_disk_that_fills_while_writing_is_one_line_and_leaves_nothing(
        one_study, tmp_path, capsys):
    """The probe byte fits, the page (megabytes) does not: the temp file is removed, --out is
    never created."""
    with tmpfs(tmp_path / "small", "size=256k") as folder:
        out = folder / "d.html"
        assert dashboard_main(["--results", str(one_study), "--out", str(out)]) == 2
        line = one_error_line(capsys)
        assert line == f"error: --out={out}: not written (No space left on device)"
        assert list(Path(folder).iterdir()) == []          # no page, no .tmp- leftover


def test_dashboard_write_failure_is_one_line_without_a_mount(one_study, tmp_path, capsys,
                                                             monkeypatch):
    """The same path where mount is refused: the write itself raises ENOSPC half-way."""
    from fcl.atomic_file import atomic_path

    def half_then_full(text, path):
        with atomic_path(path) as tmp:
            Path(tmp).write_text(text[: len(text) // 2])
            raise OSError(28, "No space left on device")

    monkeypatch.setattr("analysis.dashboard.page.write_text_atomic", half_then_full)
    out = tmp_path / "out" / "d.html"
    assert dashboard_main(["--results", str(one_study), "--out", str(out)]) == 2
    assert one_error_line(capsys) == f"error: --out={out}: not written (No space left on device)"
    assert list(out.parent.iterdir()) == []


@pytest.mark.parametrize("field, value, says", [
    ("files", [1], "field files is a list, not an object of"),
    ("files", {"trials": 5}, "field files is an object, not an object of"),
    ("seeds", "x", "field seeds is text, not a list of whole numbers"),
    ("varying", "abc", "field varying is text, not a list of config keys"),
    ("base", [1, 2], "field base is a list, not an object"),
    ("preset", 5, "field preset is a number, not text"),
    ("axes", [1], "field axes is a list, not an object of lists of config keys"),
    ("num_samples", "3", "field num_samples is text, not a whole number"),
])
def test_figures_and_dashboard_over_a_manifest_with_wrong_types_are_one_line(
        one_study, tmp_path, capsys, field, value, says):
    path = one_study / "noniid" / "study.json"
    manifest = json.loads(path.read_text())
    manifest[field] = value
    path.write_text(json.dumps(manifest))
    assert figures_main(["--results", str(one_study), "--only", "fig5d",
                         "--out", str(tmp_path / "figs")]) == 2
    line = one_error_line(capsys)
    assert line == f"error: {one_study / 'noniid'}: refused: study.json: {line.split(': study.json: ')[1]}"
    assert says in line
    assert not any((tmp_path / "figs").glob("fig5d*"))
    assert dashboard_main(["--results", str(one_study), "--out", str(tmp_path / "d.html")]) == 2
    assert says in one_error_line(capsys)
    assert not (tmp_path / "d.html").exists()


def test_a_manifest_that_is_not_a_json_object_is_one_line(one_study, tmp_path, capsys):
    """`[1,2,3]` as study.json was an AttributeError traceback (28 lines) in both commands."""
    (one_study / "noniid" / "study.json").write_text("[1, 2, 3]")
    says = "study.json: not a readable manifest (TypeError: a JSON list, not an object)"
    assert figures_main(["--results", str(one_study), "--only", "fig5d",
                         "--out", str(tmp_path / "figs")]) == 2
    assert one_error_line(capsys) == f"error: {one_study / 'noniid'}: refused: {says}"
    assert not (tmp_path / "figs").exists()            # --out is made after the studies read
    assert dashboard_main(["--results", str(one_study), "--out", str(tmp_path / "d.html")]) == 2
    assert says in one_error_line(capsys) and not (tmp_path / "d.html").exists()


def test_figures_whose_study_is_not_stored_are_refused_before_out_is_made(one_study, tmp_path,
                                                                          capsys):
    """Was 'skip ... 0 of 1 figures/tables written', exit 0 and an empty --out."""
    out = tmp_path / "figs"
    assert figures_main(["--only", "fig5a", "fig5c", "--results", str(one_study),
                         "--out", str(out)]) == 2
    assert one_error_line(capsys) == (f"error: --only=fig5a fig5c: no stored study for any of "
                                      f"them in --results={one_study}; allowed: fig5d")
    assert not out.exists()


LONG = "a" * 300


@pytest.mark.parametrize("command", ["figures", "dashboard", "flocora_table1"])
def test_an_out_with_a_too_long_component_or_empty_is_one_line_and_makes_nothing(
        one_study, tmp_path, capsys, monkeypatch, command):
    """A 300-byte component left its parent folder behind and said no `allowed:`; '' (Path's
    '.') wrote into the working directory."""
    from analysis.__main__ import main
    monkeypatch.chdir(tmp_path)
    results = [] if command == "flocora_table1" else ["--results", str(one_study)]
    out = tmp_path / "parent" / LONG / ("d.html" if command == "dashboard" else "x")
    assert main([command, *results, "--out", str(out)]) == 2
    assert one_error_line(capsys) == (f"error: --out={LONG[:24]}...: a path component of 300 "
                                      "bytes; allowed: components of at most 255 bytes")
    assert not (tmp_path / "parent").exists()
    before = sorted(tmp_path.iterdir())
    assert main([command, *results, "--out", ""]) == 2
    kind = "file" if command == "dashboard" else "folder"
    assert one_error_line(capsys) == ("error: --out=: empty (not taken as the working "
                                      f"directory); allowed: a {kind} path")
    assert sorted(tmp_path.iterdir()) == before


@pytest.mark.parametrize("command", ["figures", "claims", "dashboard", "paired"])
def test_a_results_with_a_too_long_component_is_one_line(tmp_path, capsys, command):
    """Was an OSError 'File name too long' traceback from is_dir()."""
    from analysis.__main__ import main
    argv = [command, *(["x", "--ref", "a=1"] if command == "paired" else []),
            "--results", str(tmp_path / LONG),
            *(["--out", str(tmp_path / "o")] if command in ("figures", "dashboard") else [])]
    assert main(argv) == 2
    assert one_error_line(capsys) == (f"error: --results={LONG[:24]}...: a path component of "
                                      "300 bytes; allowed: components of at most 255 bytes")
    assert list(tmp_path.iterdir()) == []


def test_figures_on_a_disk_that_fills_while_drawing_is_one_line(one_study, tmp_path, capsys,
                                                                monkeypatch):
    """PIL's OSError through analysis/figures/files.py was a 65-line traceback."""
    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr("matplotlib.figure.Figure.savefig", full)
    out = tmp_path / "figs"
    assert figures_main(["--only", "fig5d", "--results", str(one_study), "--out", str(out)]) == 2
    assert one_error_line(capsys) == f"error: --out={out}: not written (No space left on device)"
    assert list(out.iterdir()) == []                      # no figure, no .tmp- leftover
