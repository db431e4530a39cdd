"""One self-contained interactive HTML page of the stored studies, each shown as what it is.

    python analysis/dashboard.py --results results/ --out dashboard.html

Open the file in any browser, offline: plotly.js is inlined. The page is titled after the
studies it holds; a selector picks a study and data set (`dashboard.html#view-2` opens the
third). A grid's view shows ACC and BWT_f per setting with 95% intervals over seeds (x: the
optimizer when it varies, colour: eta), per-round accuracy of every task with the phase
boundaries, client drift (Eq. 2) over rounds, and, where the bytes sent differ between settings
(the FLoCoRA studies), bytes against accuracy with the Pareto front. A search's view
(`analysis/dashboard_search.py`) shows its trials in the order Optuna drew them with the best
so far, the sampled keys against ACC, and the trials ASHA stopped early.

The page records its own script errors and the number of charts it drew in attributes of
<body> (`data-errors`, `data-charts-expected`, `data-charts-rendered`), so a headless browser
test can read them from the DOM.
"""
from __future__ import annotations

import argparse
import ast
import html
import json
import sys
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):     # run as `python analysis/dashboard.py`: import from the repo root
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pandas as pd  # noqa: E402
import plotly.graph_objects as go  # noqa: E402
from plotly.offline import get_plotlyjs  # noqa: E402
from plotly.utils import PlotlyJSONEncoder  # noqa: E402

from analysis import dashboard_search, drift_figures  # noqa: E402
from analysis.seed_stats import per_trial_round, seed_summary  # noqa: E402
from analysis.study_tables import (MissingStudy, SchemaError, Study, fmt_value,  # noqa: E402
                                   load_study, varying_settings)
from fcl.atomic_file import write_text_atomic  # noqa: E402
from fcl.cli_args import EXIT_USAGE  # noqa: E402

SHORT = {"server.optimizer": "", "server.lr": "η", "client.lr": "client lr",
         "client.local_epochs": "K", "data.num_clients": "N", "data.alpha": "α",
         "participation.straggler_prob": "p_straggle", "schedule.order": "",
         "model.lora_rank": "r", "model.lora_alpha": "lora α", "compression.bits": "bits"}


# Study-specific replacements of the two per-setting metric charts.
STUDY_CHARTS = {"drift_correction": drift_figures.dashboard_charts}


@dataclass(frozen=True)
class View:
    key: str                 # "<study>/<data set>"
    title: str
    charts: list[dict]       # plotly figure specs (data + layout)
    note: str = ""           # one line under the title: what the study is, how to read it


def study_doc(name: str) -> str:
    """The first paragraph of studies/<name>.py's docstring, as one line ("" where there is no
    such script)."""
    path = Path(__file__).resolve().parent.parent / "studies" / f"{name}.py"
    try:
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    except (OSError, SyntaxError):
        return ""
    return " ".join(doc.strip().split("\n\n")[0].split())


def _label(row: pd.Series, keys: list[str]) -> str:
    parts = []
    for k in keys:
        name = SHORT.get(k, k.split(".")[-1])
        parts.append(fmt_value(row[k]) if name == "" else f"{name}={fmt_value(row[k])}")
    return ", ".join(parts) or "all trials"


def _axes(trials: pd.DataFrame) -> tuple[list[str], str | None]:
    """(keys along x, key for colour): the optimizer on x and eta as colour when they vary,
    otherwise the study's own varying settings."""
    varying = varying_settings(trials, exclude=("dataset",))
    colour = "server.lr" if "server.lr" in varying else (varying[1] if len(varying) > 1 else None)
    return [k for k in varying if k != colour], colour


def _metric_chart(trials: pd.DataFrame, metric: str, title: str) -> go.Figure:
    xkeys, colour = _axes(trials)
    t = trials.assign(_x=[_label(r, xkeys) for _, r in trials.iterrows()])
    fig = go.Figure()
    groups = [(None, t)] if colour is None else list(t.groupby(colour, sort=True))
    for value, g in groups:
        s = seed_summary(g, ["_x"], metric)
        fig.add_bar(x=s["_x"], y=s["mean"], name=(_label(pd.Series({colour: value}), [colour])
                                                   if colour else metric),
                    error_y=dict(type="data", array=s["ci95"].fillna(0).tolist(), visible=True),
                    customdata=s["n"], hovertemplate="%{x}: %{y:.2f} (n=%{customdata})")
    fig.update_layout(title=title, barmode="group", yaxis_title=metric, height=380,
                      margin=dict(t=50, b=60), legend_title=SHORT.get(colour or "", colour))
    return fig


def _settings_label(df: pd.DataFrame, keys: list[str]) -> pd.Series:
    return df.apply(lambda r: _label(r, keys), axis=1) if len(df) else pd.Series(dtype=str)


def _phase_shapes(fig: go.Figure, trials: pd.DataFrame) -> None:
    if trials["rounds"].nunique() != 1 or trials["data.num_tasks"].nunique() != 1:
        return                  # the boundaries differ between settings: none drawn
    rounds, tasks = int(trials["rounds"].iloc[0]), int(trials["data.num_tasks"].iloc[0])
    for p in range(1, tasks):
        fig.add_vline(x=p * rounds // tasks - 0.5, line_dash="dash", line_color="grey",
                      line_width=1)


def _task_curves(rounds: pd.DataFrame, trials: pd.DataFrame, keys: list[str]) -> go.Figure:
    """Mean accuracy (over seeds) of every task at each evaluated round; a menu picks the
    setting, whose T curves are shown together."""
    ev = rounds[rounds["accuracy"].notna()]
    ev = ev.assign(_s=_settings_label(ev, keys))
    settings = sorted(ev["_s"].unique())
    fig = go.Figure()
    owner = []
    for s in settings:
        stats = seed_summary(ev[ev["_s"] == s], ["task", "round"], "accuracy")
        for task, g in stats.groupby("task"):
            fig.add_scatter(x=g["round"], y=g["mean"], mode="lines+markers",
                            name=f"task {task + 1}", visible=(s == settings[0]),
                            legendgroup=str(task),
                            hovertemplate=f"{s}, task {task + 1}: " + "%{y:.2f} @ round %{x}")
            owner.append(s)
    buttons = [dict(label=s, method="update",
                    args=[{"visible": [o == s for o in owner]},
                          {"title": f"accuracy per task: {s}"}])
               for s in settings]
    fig.update_layout(title=f"accuracy per task: {settings[0] if settings else ''}",
                      xaxis_title="round", yaxis_title="accuracy (%)", height=400,
                      updatemenus=[dict(buttons=buttons, x=1.0, y=1.18, xanchor="right")]
                      if len(settings) > 1 else [], margin=dict(t=70))
    _phase_shapes(fig, trials)
    return fig


def _band_curves(df: pd.DataFrame, value: str, keys: list[str], title: str, ytitle: str,
                 trials: pd.DataFrame) -> go.Figure:
    df = df.assign(_s=_settings_label(df, keys))
    fig = go.Figure()
    for i, (s, g) in enumerate(df.groupby("_s", sort=True)):
        st = seed_summary(g, ["round"], value).sort_values("round")
        ci = st["ci95"].fillna(0)
        colour = f"hsl({(i * 67) % 360},60%,45%)"
        fig.add_scatter(x=pd.concat([st["round"], st["round"][::-1]]),
                        y=pd.concat([st["mean"] + ci, (st["mean"] - ci)[::-1]]),
                        fill="toself", line=dict(width=0), fillcolor=colour, opacity=0.2,
                        hoverinfo="skip", showlegend=False, legendgroup=s)
        fig.add_scatter(x=st["round"], y=st["mean"], mode="lines", name=s, legendgroup=s,
                        line=dict(color=colour))
    fig.update_layout(title=title, xaxis_title="round", yaxis_title=ytitle, height=400)
    _phase_shapes(fig, trials)
    return fig


def _pareto(trials: pd.DataFrame, keys: list[str]) -> go.Figure:
    t = trials.assign(_s=_settings_label(trials, keys),
                      _mb=(trials["bytes_up"] + trials["bytes_down"]) / 1e6)
    acc = seed_summary(t, ["_s"], "acc")
    mb = t.groupby("_s")["_mb"].mean().rename("mb").reset_index()
    s = acc.merge(mb, on="_s").sort_values("mb")
    front, best = [], -float("inf")
    for _, r in s.iterrows():        # cheapest first: on the front if it beats every cheaper one
        if r["mean"] > best:
            front.append(r)
            best = r["mean"]
    fig = go.Figure()
    fig.add_scatter(x=s["mb"], y=s["mean"], mode="markers+text", text=s["_s"],
                    textposition="top center", name="settings",
                    error_y=dict(type="data", array=s["ci95"].fillna(0).tolist(), visible=True))
    front = pd.DataFrame(front)
    fig.add_scatter(x=front["mb"], y=front["mean"], mode="lines", name="Pareto front",
                    line=dict(dash="dot"))
    fig.update_layout(title="bytes (up + down, whole run) vs ACC", xaxis_type="log",
                      xaxis_title="MB communicated", yaxis_title="ACC (%)", height=420)
    return fig


def search_views(study: Study) -> list[View]:
    """A search as a search: one view of every trial it ran (early-stopped ones included)."""
    raw = pd.read_parquet(study.folder / "trials.parquet")
    charts = dashboard_search.search_charts(raw)
    mb = study.trials["bytes_up"] + study.trials["bytes_down"]
    if mb.nunique() > 1:
        charts.append(_pareto(study.trials, dashboard_search.sampled_keys(study.trials)[:2]))
    stopped = int((raw["status"] == "EARLY_STOPPED").sum())
    title = (f"{study.name} · search ({raw['optuna_trial'].nunique()} Optuna trials, "
             f"{stopped} stopped early)")
    return [View(f"{study.name}/search", title, [c.to_plotly_json() for c in charts],
                 study_doc(study.name))]


def study_views(study: Study) -> list[View]:
    if dashboard_search.is_search(study.trials):
        return search_views(study)
    views = []
    for dataset, trials in study.trials.groupby("dataset", sort=True):
        keys = varying_settings(trials, exclude=("dataset",))
        charts = [_metric_chart(trials, "acc", "ACC per setting (mean, 95% CI over seeds)"),
                  _metric_chart(trials, "bwt_f", "BWT_f per setting (mean, 95% CI over seeds)")]
        if study.name in STUDY_CHARTS:          # a study whose settings read better as methods
            charts = STUDY_CHARTS[study.name](trials)
        if study.rounds is not None:
            rounds = study.rounds[study.rounds["trial_id"].isin(trials["trial_id"])]
            charts.append(_task_curves(rounds, trials, keys))
            settings = [c for c in rounds.columns if "." in c or c in ("rounds", "dataset")]
            drift = per_trial_round(rounds, "drift", settings)
            charts.append(_band_curves(drift, "drift", keys, "client drift (Eq. 2) over rounds "
                                       "(mean, 95% band)", "drift", trials))
        mb = trials["bytes_up"] + trials["bytes_down"]
        if study.name.startswith("flocora") or mb.nunique() > 1:
            charts.append(_pareto(trials, keys))
        views.append(View(f"{study.name}/{dataset}", f"{study.name} · {dataset} "
                          f"({len(trials)} trials)", [c.to_plotly_json() for c in charts],
                          study_doc(study.name) + " Bars: mean over seeds with 95% "
                          "t-intervals."))
    return views


def stored_studies(results: Path) -> list[str]:
    return sorted(p.parent.name for p in results.glob("*/trials.parquet"))


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<script>
window.__errors = [];
function __note() {{ if (document.body) document.body.setAttribute("data-errors", String(window.__errors.length)); }}
window.addEventListener("error", function (e) {{ window.__errors.push(String(e.message)); __note(); }});
window.addEventListener("unhandledrejection", function (e) {{ window.__errors.push(String(e.reason)); __note(); }});
(function () {{ var ce = console.error; console.error = function () {{
  window.__errors.push(Array.prototype.join.call(arguments, " ")); __note(); return ce.apply(console, arguments); }}; }})();
</script>
<script>{plotly}</script>
<style>body{{font-family:sans-serif;margin:1em 2em}} .view{{display:none}} .view.on{{display:block}}
.chart{{width:100%;max-width:1100px}} select{{font-size:1em}}</style></head>
<body data-errors="0" data-charts-expected="{n_charts}" data-charts-rendered="0">
<h1>{title}</h1>
<p>From {results}: {summary}.</p>
<label>study / data set: <select id="view-select">{options}</select></label>
{views}
<script id="specs" type="application/json">{specs}</script>
<script>
(function () {{
  var specs = JSON.parse(document.getElementById("specs").textContent);
  var jobs = [];
  Object.keys(specs).forEach(function (id) {{
    var s = specs[id];
    jobs.push(Plotly.newPlot(id, s.data, s.layout, {{responsive: true, displaylogo: false}}));
  }});
  Promise.all(jobs).then(function () {{
    var n = 0;
    document.querySelectorAll(".chart").forEach(function (c) {{ if (c.querySelector(".main-svg")) n++; }});
    document.body.setAttribute("data-charts-rendered", String(n));
  }});
  var select = document.getElementById("view-select");
  function show(id) {{
    document.querySelectorAll(".view").forEach(function (v) {{ v.classList.toggle("on", v.id === id); }});
    document.querySelectorAll("#" + CSS.escape(id) + " .chart").forEach(function (c) {{ Plotly.Plots.resize(c); }});
  }}
  select.addEventListener("change", function () {{ show(select.value); }});
  var wanted = location.hash.slice(1);
  if (wanted && document.getElementById(wanted)) {{ select.value = wanted; show(wanted); }}
}})();
</script></body></html>
"""


def page_title(studies: list[str]) -> str:
    """The page's title: the study it shows (with its script's first doc line), or the list."""
    if len(studies) == 1:
        doc = study_doc(studies[0])
        return f"fcl study {studies[0]}" + (f": {doc.rstrip('.')}" if doc else "")
    return "fcl studies: " + ", ".join(studies) if studies else "fcl studies"


def render_page(views: list[View], results: Path) -> str:
    specs, blocks, options = {}, [], []
    for i, v in enumerate(views):
        vid = f"view-{i}"
        options.append(f'<option value="{vid}">{html.escape(v.title)}</option>')
        divs = []
        for j, chart in enumerate(v.charts):
            cid = f"{vid}-chart-{j}"
            specs[cid] = chart
            divs.append(f'<div class="chart" id="{cid}"></div>')
        note = f'<p class="note">{html.escape(v.note)}</p>' if v.note else ""
        blocks.append(f'<div class="view{" on" if i == 0 else ""}" id="{vid}">'
                      f'<h2>{html.escape(v.title)}</h2>{note}{"".join(divs)}</div>')
    spec_json = json.dumps(specs, cls=PlotlyJSONEncoder).replace("</", "<\\/")
    studies = list(dict.fromkeys(v.key.split("/")[0] for v in views))
    return PAGE.format(plotly=get_plotlyjs(), n_charts=len(specs), title=html.escape(
                           page_title(studies)), results=html.escape(str(results)),
                       summary=f"{len(studies)} studies ({', '.join(studies)})",
                       options="".join(options), views="\n".join(blocks), specs=spec_json)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--results", type=Path, default=Path("results"),
                   help="folder with <study>/trials.parquet (default: results/)")
    p.add_argument("--out", type=Path, default=Path("dashboard.html"), help="the HTML file")
    args = p.parse_args(argv)
    names = stored_studies(args.results) if args.results.is_dir() else []
    names.sort(key=lambda n: n != "optimizers")     # the optimizer comparison opens first
    if not names:
        print(f"error: --results={args.results}: no <study>/trials.parquet found", file=sys.stderr)
        return EXIT_USAGE
    views = []
    for name in names:
        try:
            views += study_views(load_study(args.results, name))
        except SchemaError as bad:
            print(f"error: {bad}", file=sys.stderr)
            return EXIT_USAGE
        except MissingStudy as missing:
            print(f"skip {missing}", file=sys.stderr)
    write_text_atomic(render_page(views, args.results), args.out)
    print(f"{args.out}: {len(views)} views, {sum(len(v.charts) for v in views)} charts "
          f"from {len(names)} studies", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
