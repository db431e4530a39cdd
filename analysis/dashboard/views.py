"""What the dashboard shows of a study, decided from its manifest (`Study.manifest`): a search
as a search (`Manifest.searcher`), a grid per data set with ACC and BWT_f per setting (the
settings: `Manifest.varying`), as methods where a variant axis sets the client algorithm and
the server optimizer together (`Manifest.axes`), and bytes against ACC where the study compares
messages (it varies the compression or the adapter, or its base config is a LoRA one). Every
view's header says the preset, data set and commit it was drawn from. A folder without a
manifest is refused before any view is drawn (`analysis/study_folder.py`)."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis.dashboard import charts, optimizers, search
from analysis.dashboard.methods import METHOD_AXIS_KEYS, method_charts
from analysis.seed_stats import per_trial_round
from analysis.study_tables import Study, is_config_key
from fcl.results_io import EARLY_STOPPED

# Config keys whose values change what a message costs: a study varying one compares messages.
MESSAGE_KEYS = ("compression.", "model.adapter", "model.lora_")


@dataclass(frozen=True)
class View:
    key: str                 # "<study>/<data set>"
    title: str
    charts: list[dict]       # plotly figure specs (data + layout)
    note: str = ""           # under the title: what the study is, how to read it
    source: str = ""         # under the title: preset, data set and commit drawn from
    doc: str = ""            # the study's doc, first paragraph (the page title of one study)
    fixed: str = ""          # under the source: `fixed: server.tau=0.1 · ...` (the manifest's)


def compares_methods(study: Study) -> bool:
    return any(METHOD_AXIS_KEYS <= set(keys) for keys in study.manifest.axes.values())


def compares_messages(study: Study, trials: pd.DataFrame) -> bool:
    mb = trials["bytes_up"] + trials["bytes_down"]
    if mb.nunique() > 1:
        return True
    m = study.manifest
    return (any(k.startswith(MESSAGE_KEYS) for k in m.varying)
            or m.base.get("model.adapter") == "lora")


def search_views(study: Study) -> list[View]:
    """A search as a search: one view of every trial it ran (early-stopped ones included)."""
    raw = pd.read_parquet(study.folder / "trials.parquet")
    keys = search.sampled_keys(raw, study.settings)
    found = search.search_charts(raw, keys)
    if compares_messages(study, study.trials):
        found.append(charts.pareto_chart(study.trials, [k for k in keys if k in study.trials][:2]))
    stopped = int((raw["status"] == EARLY_STOPPED).sum())
    title = (f"{study.name} · search ({raw['optuna_trial'].nunique()} Optuna trials, "
             f"{stopped} stopped early)")
    return [View(f"{study.name}/search", title, [c.to_plotly_json() for c in found],
                 study.doc, study.drawn_from(), study.doc)]


def grid_charts(study: Study, trials: pd.DataFrame, keys: list[str]) -> list:
    """One data set's charts of a grid study."""
    if compares_methods(study):       # settings that read better as methods
        found = method_charts(trials)
    else:
        found = [charts.metric_chart(trials, keys, "acc",
                                     "ACC per setting (mean, 95% CI over seeds)"),
                 charts.metric_chart(trials, keys, "bwt_f",
                                     "BWT_f per setting (mean, 95% CI over seeds)")]
    rounds = None if study.rounds is None else \
        study.rounds[study.rounds["trial_id"].isin(trials["trial_id"])]
    by_optimizer = optimizers.OPTIMIZER in keys and not compares_methods(study)
    if by_optimizer:                  # paired to FedSGD, accuracy and drift per optimizer
        found += optimizers.optimizer_charts(trials, rounds, keys)
    if rounds is not None:
        found.append(charts.task_curves(rounds, trials, keys))
    if rounds is not None and not by_optimizer:
        carried = [c for c in rounds.columns if is_config_key(c) or c == "dataset"]
        drift = per_trial_round(rounds, "drift", carried)
        found.append(charts.band_curves(drift, "drift", keys, "client drift (Eq. 2) over "
                                        "rounds (mean, 95% band, cut at 0)", "drift", trials,
                                        floor=0.0))
    if compares_messages(study, trials):
        found.append(charts.pareto_chart(trials, keys))
    return found


def study_views(study: Study) -> list[View]:
    """A search's one view, or a grid's view per data set."""
    if study.is_search:
        return search_views(study)
    views = []
    for dataset, trials in study.trials.groupby("dataset", sort=True):
        keys = study.varying(trials, exclude=("dataset",))
        found = grid_charts(study, trials, keys)
        views.append(View(f"{study.name}/{dataset}",
                          f"{study.name} · {dataset} ({len(trials)} trials)",
                          [c.to_plotly_json() for c in found],
                          study.doc + " Bars: mean over seeds with 95% t-intervals.",
                          study.drawn_from(dataset), study.doc,
                          optimizers.fixed_line(study.manifest.base, keys,
                                                study.manifest.preset)))
    return views
