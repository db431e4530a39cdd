"""The stored results (results/: the random frozen backbone; results-pretrained/: the FCL
studies rerun on the pretrained one) against what analysis/ makes of them: the committed figures'
tables rewritten byte for byte by the command README gives, a manifest per stored study that
matches its files and its trials, and the migration that wrote results/'s manifests rebuilding
them exactly. Reads results*/ and figures/, writes only under tmp_path."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest

from analysis.dashboard.views import study_views
from analysis.figures.catalog import main as figures_main
from analysis.study_tables import load_study
from fcl.manifest import read_manifest, verify

REPO = Path(__file__).resolve().parent.parent
RESULTS, PRETRAINED, FIGURES = REPO / "results", REPO / "results-pretrained", REPO / "figures"
# the committed figures read each study from the first of these folders that stores it
FIGURE_SOURCES = (PRETRAINED, RESULTS)
STORED = sorted(p.parent.name for p in RESULTS.glob("*/trials.parquet"))
STORED_FOLDERS = sorted(p.parent for p in (*RESULTS.glob("*/trials.parquet"),
                                           *PRETRAINED.glob("*/trials.parquet"),
                                           *PRETRAINED.glob("*/*/trials.parquet")))
PRESET = {RESULTS: "cifar10-local", PRETRAINED: "cifar10-local-pretrained"}


def source_of(study: str) -> Path:
    return next(r for r in FIGURE_SOURCES if (r / study / "trials.parquet").is_file())


def test_figures_rewrite_the_committed_tables_and_csvs_byte_for_byte(tmp_path, monkeypatch):
    """CSV and Markdown alike, the Markdown's last line saying what it was drawn from; the bare
    command from the repo root reads the committed figures' sources, FIGURE_SOURCES."""
    monkeypatch.chdir(REPO)
    assert figures_main(["--out", str(tmp_path)]) == 0
    committed = sorted(p.name for p in FIGURES.iterdir() if p.suffix in (".csv", ".md"))
    assert len(committed) == 19                 # 15 figures' CSVs, 4 tables' CSV + MD
    differ = [n for n in committed if (tmp_path / n).read_bytes() != (FIGURES / n).read_bytes()]
    assert differ == []
    for md in (p for p in FIGURES.glob("*.md")):
        study = {"table3": "optimizers", "table4": "optimizers", "flocora_table3":
                 "flocora_quantization", "drift_correction_table": "drift_correction"}[md.stem]
        source = source_of(study)
        manifest = read_manifest(source / study)
        assert md.read_text().splitlines()[-1] == (
            f"drawn from {source.name}/{study} · preset {manifest.preset} · data set "
            f"{manifest.dataset} · commit {manifest.fcl_git}")
    assert not [p for p in FIGURES.glob("*.csv") if "drawn from" in p.read_text()]


@pytest.mark.parametrize("folder", STORED_FOLDERS, ids=lambda p: str(p.relative_to(REPO)))
def test_each_stored_study_has_a_manifest_matching_its_files_and_trials(folder):
    name = folder.name
    manifest = read_manifest(folder)
    assert manifest is not None and manifest.study == name
    assert verify(folder, manifest) == []
    assert set(manifest.files) == {"trials", "rounds", "tasks"}
    trials = pd.read_parquet(folder / "trials.parquet")
    assert manifest.files["trials"]["rows"] == len(trials)
    assert [manifest.preset] == trials["preset"].unique().tolist()
    assert [manifest.fcl_git] == trials["fcl_git"].unique().tolist()
    assert list(manifest.seeds) == sorted(trials["seed"].unique().tolist())
    varied = {c for c in manifest.base if trials[c].nunique(dropna=False) > 1} - {"seed"}
    assert varied <= set(manifest.varying)     # every key that differs was declared varied
    assert (manifest.searcher == "optuna") == (name == "search")


def test_the_migration_rebuilds_the_committed_manifests():
    from analysis.stored_manifest import stored_manifest     # imports Ray (the study scripts)
    for name in STORED:
        committed = read_manifest(RESULTS / name)
        built = stored_manifest(RESULTS / name)
        assert dataclasses.replace(built, files=committed.files) == committed, name


def test_every_dashboard_view_of_the_stored_studies_says_what_it_was_drawn_from():
    for folder in STORED_FOLDERS:
        study = load_study(folder.parent, folder.name)
        preset = PRESET[PRETRAINED if PRETRAINED in folder.parents else RESULTS]
        for view in study_views(study):
            assert view.source == (f"preset {preset} · data set cifar10 · commit "
                                   f"{study.manifest.fcl_git}"), folder
            assert view.charts and view.doc == study.doc != ""


@pytest.mark.parametrize("folder", STORED_FOLDERS, ids=lambda p: str(p.relative_to(REPO)))
def test_each_stored_trial_id_is_the_hash_of_its_stored_config(folder):
    """A trial id stays what it was when a key's type grows (run.channels_last: a bool, then
    auto/true/false): every stored config, read back, hashes to its stored id."""
    from fcl.config import field_types, from_flat
    from fcl.results_io import config_hash
    trials, keys = pd.read_parquet(folder / "trials.parquet"), field_types()
    for row in trials.to_dict("records"):
        cfg = from_flat({k: v for k, v in row.items() if k in keys and not pd.isna(v)})
        assert config_hash(cfg) == row["trial_id"], row["trial_id"]
