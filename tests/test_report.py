"""`fcl report FOLDER --out DIR`: one Markdown page over the stored studies of a folder, with
each study's provenance and best setting, the figures drawn from it and the claims judged on
it; refused in one line without a study, and nothing written then."""
from __future__ import annotations

from analysis.report import main
from fcl.study_folders import named_studies
from study_fixture import study_results  # noqa: F401  (the session fixture)


def test_the_report_holds_every_study_its_figures_and_its_claims(study_results, tmp_path,
                                                                 capsys):
    folder = str(study_results)
    out = tmp_path / "report"
    assert main([folder, "--out", str(out)]) == 0
    text = (out / "report.md").read_text()
    names = [name for _, name in named_studies(folder)]
    assert names
    studies = text[text.index("## Studies"):text.index("## Best settings")]
    best = text[text.index("## Best settings"):text.index("## Figures and tables")]
    assert all(f"| {name} |" in studies for name in names)
    assert all(f"- **{name}**: " in best for name in names)
    assert "best ACC" in best or "no best configuration" in best
    images = [line[line.index("(") + 1:-1] for line in text.splitlines()
              if line.startswith("![")]
    assert images and all((out / image).is_file() for image in images)
    claims = text[text.index("## Claims"):]
    assert "| claim | study | paper |" in claims and "**" in claims
    assert capsys.readouterr().out.strip() == f"wrote {out / 'report.md'}"


def test_a_folder_without_a_study_is_one_line_and_nothing_is_written(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    out = tmp_path / "report"
    assert main([str(empty), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {empty}: no stored study at or below it; allowed: a results "
                   "folder (fcl ls lists them)"]
    assert not out.exists()
