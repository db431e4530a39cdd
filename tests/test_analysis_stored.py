"""The stored results (results/: the random frozen backbone; results-pretrained/: the FCL
studies rerun on the pretrained one) against what analysis/ makes of them: the committed figures'
tables rewritten byte for byte by the command README gives, a manifest per stored study that
matches its files and its trials and declares what its study script declares (the dashboard's
axes come from the manifest's `varying`). Reads results*/ and figures/, writes only under
tmp_path."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pandas as pd
import pytest

from analysis.dashboard.views import study_views
from analysis.figures.catalog import main as figures_main
from analysis.flocora_table1 import main as table1_main
from analysis.provenance import recorded
from analysis.study_tables import load_study
from fcl.manifest import read_manifest, verify

REPO = Path(__file__).resolve().parent.parent
RESULTS, PRETRAINED, FIGURES = REPO / "results", REPO / "results-pretrained", REPO / "figures"
DRIFT = REPO / "results-drift"
LOWRANK = REPO / "results-lowrank"
AUTO = REPO / "results-auto"          # studies run with --seeds auto
# the committed figures read each study from the first of these folders that stores it
FIGURE_SOURCES = (PRETRAINED, RESULTS)
STORED_FOLDERS = sorted(p.parent for p in (*RESULTS.glob("*/trials.parquet"),
                                           *PRETRAINED.glob("*/trials.parquet"),
                                           *PRETRAINED.glob("*/*/trials.parquet"),
                                           *DRIFT.glob("*/trials.parquet"),
                                           *LOWRANK.glob("*/trials.parquet"),
                                           *AUTO.glob("*/trials.parquet")))
PRESET = {RESULTS: "cifar10-local", PRETRAINED: "cifar10-local-pretrained",
          DRIFT: "cifar10-drift", LOWRANK: "flocora-cifar10-lowrank", AUTO: "cifar10-local"}


def source_of(study: str) -> Path:
    return next(r for r in FIGURE_SOURCES if (r / study / "trials.parquet").is_file())


def test_figures_rewrite_the_committed_tables_and_csvs_byte_for_byte(tmp_path, monkeypatch):
    """CSV and Markdown alike, the Markdown's last line saying what it was drawn from; the bare
    command from the repo root reads the committed figures' sources, FIGURE_SOURCES."""
    monkeypatch.chdir(REPO)
    assert figures_main(["--out", str(tmp_path)]) == 0
    assert table1_main(["--out", str(tmp_path)]) == 0         # counted from models, no study
    committed = sorted(p.name for p in FIGURES.iterdir() if p.suffix in (".csv", ".md"))
    assert len(committed) == 25                 # 11 figures' CSVs, 7 tables' CSV + MD
    differ = [n for n in committed if (tmp_path / n).read_bytes() != (FIGURES / n).read_bytes()]
    assert differ == []
    for md in (p for p in FIGURES.glob("*.md") if p.stem != "flocora_table1"):
        study = {"table3": "optimizers", "table4": "fcl_methods",
                 "flocora_table2": "flocora_layers", "flocora_table3": "flocora_quantization",
                 "flocora_table4": "flocora_compare",
                 "drift_correction_table": "drift_correction"}[md.stem]
        source = source_of(study)
        manifest = read_manifest(source / study)
        lines = md.read_text().splitlines()
        last = lines[-1]
        if md.stem == "table4":     # the random backbone's rows beside the pretrained ones
            assert last == (f"drawn from results/{study} · preset cifar10-local · data set "
                            f"cifar10 · commit {read_manifest(RESULTS / study).commits}")
            last = lines[-2]
        assert last.split("; FedAvg ")[0] == (
            f"drawn from {source.name}/{study} · preset {manifest.preset} · data set "
            f"{manifest.dataset} · commit {manifest.commits}")
        if md.stem == "flocora_table3":     # FedAvg's row: from the study that ran it
            assert last.split("; FedAvg ")[1].startswith(
                f"drawn from {source_of('flocora_rank_alpha').name}/flocora_rank_alpha · ")
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
    # a study run again with more seeds: each part's commit (study.json's `extended`)
    # (where the commit does not resolve, `unknown`, and the id recorded in its note)
    parts = [recorded(p["fcl_git"], p.get("provenance", "")) for p in manifest.extended] or \
        [recorded(manifest.fcl_git, manifest.provenance)]
    # rows copied from another study (`--copy-from`) keep the commit they ran at, one its
    # `copied` entry names
    copied = trials["copied_from"].notna() if "copied_from" in trials else trials["seed"] < 0
    assert sorted(set(parts)) == sorted(trials.loc[~copied, "fcl_git"].unique().tolist())
    sources = {c for entry in manifest.copied for c in entry["fcl_git"].split(" + ")}
    assert set(trials.loc[copied, "fcl_git"]) <= sources
    assert set(trials.loc[copied].get("copied_from", ())) == {e["study"] for e in manifest.copied}
    assert recorded(manifest.fcl_git, manifest.provenance) == parts[-1]
    assert list(manifest.seeds) == sorted(trials["seed"].unique().tolist())
    varied = {c for c in manifest.base if trials[c].nunique(dropna=False) > 1} - {"seed"}
    assert varied <= set(manifest.varying)     # every key that differs was declared varied
    assert (manifest.searcher == "optuna") == (name == "search")


def declared(name: str, preset: str) -> dict:
    """What `studies/<name>.py` declares at `preset`, as the export writes it into the manifest
    (`fcl.tune.study_manifest`: the varying keys and axes in the space's order)."""
    from fcl.tune.study_manifest import space_axes     # imports Ray, as the study scripts do
    spec = importlib.util.spec_from_file_location(f"stored_{name}", REPO / "studies" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)                     # the script's `main` is not run
    study = module.STUDY
    axes = space_axes(study.space_for(preset))
    return {"doc": study.doc or "", "searcher": study.searcher, "num_samples": study.num_samples,
            "axes": axes, "varying": tuple(dict.fromkeys(k for ks in axes.values() for k in ks))}


@pytest.mark.parametrize("folder", STORED_FOLDERS, ids=lambda p: str(p.relative_to(REPO)))
def test_each_stored_manifest_declares_what_its_study_script_declares(folder):
    manifest = read_manifest(folder)
    stored = {k: getattr(manifest, k) for k in ("doc", "searcher", "num_samples", "axes",
                                                "varying")}
    assert stored == declared(manifest.study, manifest.preset)


def test_every_dashboard_view_of_the_stored_studies_says_what_it_was_drawn_from():
    for folder in STORED_FOLDERS:
        study = load_study(folder.parent, folder.name)
        preset = PRESET[next(root for root in (PRETRAINED, DRIFT, LOWRANK, AUTO, RESULTS)
                             if root in folder.parents)]
        for view in study_views(study):
            assert view.source == (f"preset {preset} · data set cifar10 · commit "
                                   f"{study.manifest.commits}"), folder
            assert view.charts and view.doc == study.doc != ""


@pytest.mark.parametrize("folder", STORED_FOLDERS, ids=lambda p: str(p.relative_to(REPO)))
def test_each_stored_trial_id_is_the_hash_of_its_stored_config(folder):
    """A trial id stays what it was when a key's type grows (run.channels_last: a bool, then
    auto/true/false), when keys are added (at their defaults) and when a method gets a name of
    its own (ZeroFL, stored as `full`): every stored config, read back as today spells it
    (`as_today`), hashes to its stored id."""
    from fcl.config import field_types, from_flat
    from fcl.results_io import as_today, config_hash
    trials, keys = as_today(pd.read_parquet(folder / "trials.parquet")), field_types()
    for row in trials.to_dict("records"):
        cfg = from_flat({k: v for k, v in row.items() if k in keys and not pd.isna(v)})
        assert config_hash(cfg) == row["trial_id"], row["trial_id"]


def test_the_claims_table_in_results_readme_is_what_its_command_prints(capsys, monkeypatch):
    """results/README.md's claims table is the output of the command it gives, over the folders
    that command names (a stored study added or extended without regenerating it fails)."""
    from analysis.claims import main as claims_main
    readme = (RESULTS / "README.md").read_text()
    command = next(line for line in readme.splitlines()
                   if line.startswith("python -m analysis claims --results "))
    monkeypatch.chdir(REPO)
    assert claims_main(command.split()[4:]) == 0
    printed = capsys.readouterr().out.strip()
    assert printed.splitlines()[0].startswith("| claim | study | paper |")
    assert printed in readme
    # the prose around it cites the same numbers: every `mean ± half-width` it gives is in the
    # table, or in a committed figure's table (figures/**/*.md, themselves regenerated)
    section = readme[readme.index("## The papers' claims on both backbones"):
                     readme.index("## The papers beside ours")]
    prose = " ".join(line for line in section.splitlines() if not line.startswith("|"))
    figures = " ".join(p.read_text() for p in FIGURES.rglob("*.md"))
    unsigned = re.compile(r"[+-]?(\d+\.\d+) ± (\d+\.\d+)")
    known = set(unsigned.findall(printed)) | set(unsigned.findall(figures))
    cited = unsigned.findall(prose)
    assert cited and [c for c in cited if c not in known] == []


@pytest.mark.parametrize("folder", sorted(p.parent for p in AUTO.glob("*/trials.parquet")),
                         ids=lambda p: str(p.relative_to(REPO)))
def test_a_stored_seeds_auto_study_records_the_seeds_its_rows_hold(folder):
    """study.json's `seeds_auto`: the rule ended, its looks ran every row, and each setting
    holds the seeds it says (the settings named by the keys the study varies)."""
    manifest = read_manifest(folder)
    record = manifest.seeds_auto
    trials = pd.read_parquet(folder / "trials.parquet")
    assert record["done"] and sum(look["trials"] for look in record["looks"]) == len(trials)
    assert sorted(record["seeds_per_setting"].values()) == sorted(
        trials.groupby(list(manifest.varying), dropna=False).size().tolist())
    assert record["looks"][0]["seeds"] == list(range(record["first"]))
