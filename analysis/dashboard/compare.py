"""The side-by-side view of a study stored in several results folders (say the random and the
pretrained backbone): each folder's preset, data set and commit, the shared settings that differ
between them (why their numbers differ), ACC per setting with a bar per folder, and one run
table over the runs of every folder (group by `folder` to overlay their curves)."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from analysis.dashboard.charts import fitted_range, settings_labels
from analysis.dashboard.message_methods import message_method_labels
from analysis.dashboard.optimizers import colour
from analysis.dashboard.runs import base_differences
from analysis.dashboard.views import View, regime_lines
from analysis.labels import over_seeds
from analysis.seed_stats import seed_summary
from analysis.study_tables import Study


def acc_by_folder(studies: list[Study], folders: list[str], keys: list[str]) -> go.Figure:
    """ACC per setting (the keys every folder varies), one bar colour per folder: mean over
    seeds with its 95% interval. Message methods (`flocora_compare`) named as Table IV names
    them, in its order."""
    every = pd.concat([study.trials for study in studies], ignore_index=True)
    labels = message_method_labels(every, [keys]) or settings_labels
    fig, ends, ns = go.Figure(), [], []
    for i, (study, folder) in enumerate(zip(studies, folders)):
        t = study.trials.assign(_x=labels(study.trials, keys).to_numpy())
        s = seed_summary(t, ["_x"], "acc")
        ci = s["ci95"].fillna(0)
        ns += s["n"].tolist()
        ends += [(s["mean"] - ci).min(), (s["mean"] + ci).max()]
        fig.add_bar(x=s["_x"], y=s["mean"], name=f"{folder} ({study.manifest.preset})",
                    marker_color=colour(i), error_y=dict(type="data", array=ci.tolist(),
                                                         visible=True),
                    customdata=s["n"], hovertemplate="%{x}: %{y:.2f} (n=%{customdata})")
    fig.update_layout(title=f"ACC per setting and results folder ({over_seeds(ns, 'and 95% CI')})",
                      barmode="group", yaxis_title="ACC (%)", height=400, margin=dict(t=50, b=80),
                      legend_title="results folder (preset)")
    if ends:
        fig.update_yaxes(range=fitted_range(min(ends), max(ends)))
    if hasattr(labels, "order"):
        fig.update_xaxes(categoryorder="array", categoryarray=labels.order(every, keys))
    return fig


def compare_view(studies: list[Study], runsets: list[dict], rids: tuple[str, ...]) -> View:
    name = studies[0].name
    folders = [rs["folder"] for rs in runsets]
    keys = [k for k in studies[0].settings
            if all(k in s.trials and k in s.settings for s in studies) and k != "seed"
            and pd.concat([s.trials[k] for s in studies]).nunique() > 1]
    source = " | ".join(f"{rs['folder']}: preset {rs['preset']} · data set {rs['dataset']} · "
                        f"commit {rs['commit']}" for rs in runsets)
    presets = [f"preset: {' | '.join(rs['preset'] for rs in runsets)}"] \
        if len({rs["preset"] for rs in runsets}) > 1 else []
    differ = presets + base_differences(runsets)
    why = (("why the numbers differ: the shared settings that are not the same "
            f"({' | '.join(folders)}):",) + tuple(differ)) if differ else \
        ("every shared setting is the same in " + " and ".join(folders),)
    return View(f"{name}/compare", f"{name} · side by side: {' | '.join(folders)}",
                [acc_by_folder(studies, folders, keys).to_plotly_json()],
                "The same study from each results folder. The run table holds the runs of "
                "every folder; group by `folder` to overlay their curves.", source,
                studies[0].doc, runs=rids, why=why,
                regime=tuple(line for study, folder in zip(studies, folders)
                             for line in regime_lines(study.trials, folder)))
