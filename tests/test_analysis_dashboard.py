"""analysis/dashboard/ (`python -m analysis dashboard`): one self-contained HTML page, opened
in headless Chromium (which also takes a screenshot of every view into the test's output
folder); what each study shows is decided from its manifest."""
from __future__ import annotations

import base64
import dataclasses
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.dashboard.page import main, render_page
from analysis.dashboard.views import study_views
from analysis.study_tables import load_study
from fcl.manifest import read_manifest, write_manifest
from study_fixture import study_results  # noqa: F401  (the session fixture)

CHROMIUM = Path("/usr/bin/chromium")
needs_chromium = pytest.mark.skipif(not CHROMIUM.exists(),
                                    reason="/usr/bin/chromium absent (apt-get install chromium)")


def screenshot(page: Path, view: str, png: Path, profile: Path) -> None:
    """Chromium's picture of the page opened at `#view` (the page shows that view)."""
    subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", f"--user-data-dir={profile}", "--window-size=1200,1800",
         "--virtual-time-budget=20000", f"--screenshot={png}", page.resolve().as_uri() + "#" + view],
        capture_output=True, text=True, timeout=120, check=True)


def open_in_chromium(page: Path, profile: Path) -> tuple[dict, str]:
    """Load the page headless, let its scripts run, and return the <body> attributes of the
    rendered DOM plus Chromium's log (console messages appear there as `CONSOLE` lines)."""
    proc = subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
         "--virtual-time-budget=20000", "--dump-dom", page.resolve().as_uri()],
        capture_output=True, text=True, timeout=120)
    body = re.search(r"<body([^>]*)>", proc.stdout)
    assert body, f"no DOM dumped (exit {proc.returncode}): {proc.stderr[-500:]}"
    return dict(re.findall(r'(data-[\w-]+)="([^"]*)"', body.group(1))), proc.stderr


def values(array) -> list:
    """A trace array as plotly serialises it: a list, or {dtype, bdata} (base64, plotly >= 6)."""
    if isinstance(array, dict):
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"]).tolist()
    return list(array)


def console_errors(log: str) -> list[str]:
    return [line for line in log.splitlines()
            if "CONSOLE" in line and re.search(r"error|uncaught", line, re.I)]


@pytest.fixture(scope="module")
def page(study_results, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dashboard") / "dashboard.html"
    assert main(["--results", str(study_results), "--out", str(out)]) == 0
    return out


def test_page_is_self_contained_with_a_view_per_study_and_data_set(page, study_results):
    text = page.read_text()
    assert not re.search(r"<script[^>]+src=", text)           # plotly.js inlined, no fetch
    assert not re.search(r"https?://cdn", text)
    assert '<script id="plotly-gz"' in text and len(text) > 1_000_000
    studies = sorted(p.name for p in study_results.iterdir())
    options = re.findall(r"<option value=\"view-\d+\">([^<]*)</option>", text)
    assert sorted(o.split(" · ")[0] for o in options) == studies
    assert options[0].startswith("optimizers")                  # the comparison opens first


def test_acc_bars_are_seed_means_per_optimizer_and_eta(study_results):
    (view,) = study_views(load_study(study_results, "optimizers"))
    acc_chart = view.charts[0]
    trials = pd.read_parquet(study_results / "optimizers" / "trials.parquet")
    want = trials.groupby(["server.lr", "server.optimizer"])["acc"].mean()
    bars = {(trace["name"], x): y for trace in acc_chart["data"]
            for x, y in zip(values(trace["x"]), values(trace["y"]))}
    assert len(bars) == 6
    for (lr, opt), mean in want.items():
        assert bars[(f"η={lr:g}", opt)] == pytest.approx(mean)
    kinds = [c["layout"]["title"]["text"] for c in view.charts]
    assert any("accuracy per task" in k for k in kinds) and any("drift" in k for k in kinds)


def test_title_and_notes_follow_the_studies_shown(study_results, tmp_path):
    one = tmp_path / "one"
    one.mkdir()
    (one / "noniid").symlink_to(study_results / "noniid")
    assert main(["--results", str(one), "--out", str(tmp_path / "one.html")]) == 0
    text = (tmp_path / "one.html").read_text()
    title = re.search(r"<title>([^<]*)</title>", text).group(1)
    assert title.startswith("fcl study noniid: ") and "ptimizer" not in title
    assert re.search(r"<h1>fcl study noniid: ", text)
    (view,) = study_views(load_study(study_results, "task_order"))
    assert view.note.startswith("Fig. 3 and 4 of the FCL paper: task order (FMTL / synchronous")


def test_a_search_is_shown_as_a_search_with_its_stopped_trials(study_results):
    from study_fixture import SEARCH, SEARCH_STOPPED
    (view,) = study_views(load_study(study_results, "search"))
    assert view.title.startswith(f"search · search ({len(SEARCH)} Optuna trials, "
                                 f"{len(SEARCH_STOPPED)} stopped early)")
    kinds = [t["type"] for c in view.charts for t in c["data"]]
    assert "parcoords" in kinds
    bars = [c for c in view.charts if any(t["type"] == "bar" for t in c["data"])]
    assert [c["layout"]["title"]["text"].split(" (")[0] for c in bars] == [
        "hyperparameter importance for ACC"]                 # no per-setting bars of a grid
    importance = bars[0]["data"][0]
    assert set(importance["y"]) <= {"client.lr", "server.lr", "client.local_epochs"}
    assert sum(values(importance["x"])) == pytest.approx(1.0)
    history = {t["name"]: t for t in view.charts[0]["data"]}
    raw = pd.read_parquet(study_results / "search" / "trials.parquet")
    stopped = raw[raw["status"] == "EARLY_STOPPED"]
    done = raw[raw["status"] == "TERMINATED"].sort_values("optuna_trial")
    early = history["stopped early (ACC reached)"]
    assert values(early["x"]) == sorted(SEARCH_STOPPED)                  # drawn, not dropped
    assert values(early["y"]) == pytest.approx(stopped.sort_values("optuna_trial")
                                               ["acc_reached"].tolist())
    best = history["best ACC so far"]
    assert values(best["x"]) == done["optuna_trial"].tolist()
    assert values(best["y"]) == pytest.approx(done["acc"].cummax().tolist())
    parcoords = next(t for c in view.charts for t in c["data"] if t["type"] == "parcoords")
    labels = [d["label"] for d in parcoords["dimensions"]]
    assert {"client lr", "η", "K", "status", "ACC (%)"} <= set(labels)      # short labels
    assert len(values(parcoords["dimensions"][0]["values"])) == len(SEARCH)


def test_best_so_far_is_the_running_max_of_finished_trials_only():
    from analysis.dashboard.search import search_charts
    raw = pd.DataFrame({
        "optuna_trial": [0, 1, 2, 3, 4, 5], "seed": 0, "client.lr": [.1, .2, .3, .4, .5, .6],
        "status": ["TERMINATED", "EARLY_STOPPED", "TERMINATED", "TERMINATED", "EARLY_STOPPED",
                   "TERMINATED"],
        "acc": [40.0, None, 35.0, 52.0, None, 50.0], "acc_reached": [40, 70, 35, 52, 30, 50],
        "round_reached": [9, 2, 9, 9, 2, 9], "rounds": 10, "bytes_up": 1, "bytes_down": 1})
    history = {t.name: t for t in search_charts(raw)[0].data}
    best = history["best ACC so far"]
    assert list(best.x) == [0, 2, 3, 5] and list(best.y) == [40.0, 40.0, 52.0, 52.0]
    early = history["stopped early (ACC reached)"]                # 70: reached, never best
    assert list(early.x) == [1, 4] and list(early.y) == [70.0, 30.0]
    assert "diverged" not in " ".join(history["finished"].text)      # no flag: none marked


def test_a_search_marks_the_trials_whose_seeds_diverged():
    from analysis.dashboard.search import search_charts
    raw = pd.DataFrame({
        "optuna_trial": [0, 0, 1, 1, 2], "seed": [0, 1, 0, 1, 0],
        "client.lr": [.1, .1, .2, .2, .3], "status": "TERMINATED", "acc": [40.0, 42.0, 10.0, 12.0, 50.0],
        "acc_reached": [40.0, 42.0, 10.0, 12.0, 50.0], "diverged": [False, False, True, True, None],
        "round_reached": 9, "rounds": 10, "bytes_up": 1, "bytes_down": 1})
    finished = {t.name: t for t in search_charts(raw)[0].data}["finished"]
    assert list(finished.x) == [0, 1, 2] and list(finished.text) == ["", "2 diverged", ""]
    assert "2 diverged" in finished.customdata[1]


def test_flocora_views_have_a_pareto_chart(study_results):
    for name in ("flocora_rank_alpha", "flocora_quantization"):
        (view,) = study_views(load_study(study_results, name))
        assert "bytes" in view.charts[-1]["layout"]["title"]["text"]


def test_every_view_header_says_its_preset_data_set_and_commit(page, study_results):
    text = page.read_text()
    heads = re.findall(r'<h2>([^<]*)</h2><p class="source">([^<]*)</p>', text)
    assert len(heads) == len(list(study_results.iterdir()))
    for title, source in heads:
        manifest = read_manifest(study_results / title.split(" · ")[0])
        assert source == (f"preset {manifest.preset} · data set {manifest.dataset} · "
                          f"commit {manifest.commits}")


def test_charts_follow_the_manifest_not_the_study_name(study_results, tmp_path):
    """Bytes against ACC where the manifest says the study compares messages, whatever the
    folder is called; a study named flocora_* that varies no message key gets none."""
    for folder, source in (("renamed", "flocora_quantization"), ("flocora_lr", "ablation_lr")):
        shutil.copytree(study_results / source, tmp_path / folder)
    titles = {name: [c["layout"]["title"]["text"] for c in
                     study_views(load_study(tmp_path, name))[0].charts]
              for name in ("renamed", "flocora_lr")}
    assert any("bytes" in t for t in titles["renamed"])
    assert not any("bytes" in t for t in titles["flocora_lr"])
    manifest = read_manifest(tmp_path / "flocora_lr")
    write_manifest(tmp_path / "flocora_lr", dataclasses.replace(
        manifest, base={**manifest.base, "model.adapter": "lora"}))     # a LoRA base config
    (view,) = study_views(load_study(tmp_path, "flocora_lr"))
    assert "bytes" in view.charts[-1]["layout"]["title"]["text"]


def test_bars_are_coloured_by_the_last_declared_axis_a_variant_axis_kept_whole():
    from analysis.dashboard.charts import bar_axes
    keys = ["schedule.order", "server.optimizer", "server.lr", "server.aggregate"]
    assert bar_axes(keys, [["schedule.order"], ["server.optimizer", "server.lr"],
                           ["server.aggregate"]]) == (keys[:3], ["server.aggregate"])
    assert bar_axes(keys[:3], [["schedule.order"], ["server.optimizer", "server.lr"]]) == (
        ["schedule.order"], ["server.optimizer", "server.lr"])
    adapter = ["model.adapter", "model.lora_rank", "model.lora_alpha"]
    assert bar_axes(adapter, [adapter]) == (adapter, [])           # one axis: no colour
    assert bar_axes(["client.lr", "server.lr"]) == (["client.lr"], ["server.lr"])


def redeclared(study_results: Path, tmp_path: Path, name: str, varying: tuple[str, ...],
               axes: dict[str, list[str]] | None = None) -> Path:
    """A copy of the fixture's study whose manifest declares `varying` (and `axes`)."""
    shutil.copytree(study_results / name, tmp_path / name)
    manifest = read_manifest(tmp_path / name)
    write_manifest(tmp_path / name, dataclasses.replace(
        manifest, varying=varying, axes=axes or {k: [k] for k in varying}))
    return tmp_path


def test_bar_colours_follow_the_order_the_manifest_declares(study_results, tmp_path):
    """The same trials, their two axes declared in either order: the last one colours the
    bars, whatever the columns' order; declared as one variant axis, one series of bars."""
    def legend(results: Path) -> set[str]:
        (view,) = study_views(load_study(results, "ablation_rounds_epochs"))
        return {trace["name"] for trace in view.charts[0]["data"]}
    epochs, rounds = "client.local_epochs", "rounds"
    assert legend(redeclared(study_results, tmp_path / "a", "ablation_rounds_epochs",
                             (epochs, rounds))) == {"rounds=2", "rounds=4"}
    assert legend(redeclared(study_results, tmp_path / "b", "ablation_rounds_epochs",
                             (rounds, epochs))) == {"K=1", "K=2"}
    results = redeclared(study_results, tmp_path / "c", "ablation_rounds_epochs",
                         (epochs, rounds), {"budget": [epochs, rounds]})
    (view,) = study_views(load_study(results, "ablation_rounds_epochs"))
    (bars,) = view.charts[0]["data"]
    assert sorted(values(bars["x"])) == ["K=1, rounds=2", "K=1, rounds=4", "K=2, rounds=2",
                                         "K=2, rounds=4"]


def test_a_study_about_the_server_optimizer_opens_the_page_whatever_its_name(
        study_results, tmp_path):
    """The page opens on the study whose first declared axis is `server.optimizer`."""
    def first_option(results: Path) -> str:
        out = results / "page.html"
        assert main(["--results", str(results), "--out", str(out)]) == 0
        return re.findall(r"<option value=\"view-\d+\">([^<]*)</option>", out.read_text())[0]
    for name in ("ablation_lr", "task_order"):
        shutil.copytree(study_results / name, tmp_path / "a" / name)
    redeclared(study_results, tmp_path / "a", "optimizers", ("server.lr", "server.optimizer"))
    assert first_option(tmp_path / "a").startswith("ablation_lr")
    redeclared(study_results, tmp_path / "b", "task_order", ("server.optimizer",
                                                             "schedule.order"))
    shutil.copytree(study_results / "ablation_lr", tmp_path / "b" / "ablation_lr")
    assert first_option(tmp_path / "b").startswith("task_order")


def test_a_search_is_told_by_its_manifest(study_results, tmp_path):
    shutil.copytree(study_results / "search", tmp_path / "search")
    manifest = read_manifest(tmp_path / "search")
    write_manifest(tmp_path / "search", dataclasses.replace(manifest, searcher=None))
    (view,) = study_views(load_study(tmp_path, "search"))
    assert "Optuna trials" not in view.title             # declared a grid: shown as one


def test_no_results_is_one_error_line(tmp_path, capsys):
    assert main(["--results", str(tmp_path), "--out", str(tmp_path / "d.html")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_a_results_folder_inside_another_is_named_not_skipped_in_silence(study_results, tmp_path,
                                                                         capsys):
    """--results R where R/tau_0.001 holds studies of its own: read R's studies, and say that
    R/tau_0.001 was not read and how to add it."""
    outer = tmp_path / "outer"
    shutil.copytree(Path(study_results) / "stragglers", outer / "stragglers")
    shutil.copytree(Path(study_results) / "stragglers", outer / "tau_0.001" / "stragglers")
    assert main(["--results", str(outer), "--out", str(tmp_path / "d.html")]) == 0
    err = capsys.readouterr().err
    assert f"note: --results={outer} also holds the results folder(s) {outer / 'tau_0.001'}, " \
           f"not read: add them to --results" in err


def titles(view) -> list[str]:
    return [c["layout"]["title"]["text"] for c in view.charts]


def test_optimizer_view_pairs_to_fedsgd_and_draws_one_panel_per_optimizer(study_results):
    from analysis.paired import paired
    study = load_study(study_results, "optimizers")
    (view,) = study_views(study)
    kinds = titles(view)
    diff = view.charts[next(i for i, k in enumerate(kinds) if "FedSGD η=1 on the same seed" in k)]
    table = paired(study.trials, {"server.optimizer": "fedsgd", "server.lr": "1"}, ["acc"],
                   study.settings)                     # what `python -m analysis paired` prints
    drawn = {(t["name"], y.split(" ")[0]): (x, e, y) for t in diff["data"] if t["type"] == "bar"
             for y, x, e in zip(values(t["y"]), values(t["x"]), values(t["error_x"]["array"]))}
    assert len(drawn) == len(table) == 3 * 2 - 1       # every setting but the reference
    for _, r in table.iterrows():
        x, e, label = drawn[(f"η={r['server.lr']:g}", r["server.optimizer"])]
        assert x == pytest.approx(r["acc diff"]) and e == pytest.approx(r["acc ci95"])
        # the verdict in words beside each bar, as analysis claims judges it
        holds = abs(r["acc diff"]) > r["acc ci95"]
        assert label.endswith("holds") if holds else label.endswith("not resolved at 2 seeds")
    assert "seeds" in view.verdicts or "holds" in view.verdicts
    optimizers = sorted(study.trials["server.optimizer"].unique())
    for word in ("mean accuracy over tasks per optimizer", "client drift (Eq. 2) per optimizer"):
        chart = view.charts[next(i for i, k in enumerate(kinds) if k.startswith(word))]
        panels = [a["text"] for a in chart["layout"]["annotations"]]
        assert panels == optimizers                     # small multiples, one per optimizer
        axes = {t.get("yaxis", "y") for t in chart["data"]}
        assert len(axes) == len(optimizers)
        shared = [chart["layout"][f"yaxis{i}"].get("matches") == "y"
                  for i in range(2, len(optimizers) + 1)]
        # accuracy on one shared y; drift per panel (one axis flattened the small drifts)
        assert all(shared) if word.startswith("mean accuracy") else not any(shared)
    drift = view.charts[next(i for i, k in enumerate(kinds) if "drift" in k)]
    bands = [y for t in drift["data"] if t.get("fill") == "toself" for y in values(t["y"])]
    assert bands and min(bands) >= 0                    # drift >= 0: its band cut at 0
    assert view.fixed.startswith("fixed: server.tau=") and "server.aggregate=" in view.fixed
    assert "server.optimizer" not in view.fixed and "preset smoke" in view.fixed


def test_mean_accuracy_over_rounds_is_the_mean_over_tasks_then_over_seeds():
    from analysis.dashboard.optimizers import mean_accuracy_rounds
    rounds = pd.DataFrame({"trial_id": ["a"] * 4 + ["b"] * 4, "seed": [0] * 4 + [1] * 4,
                           "round": [0, 0, 1, 1] * 2, "task": [0, 1] * 4,
                           "server.optimizer": "fedadam",
                           "accuracy": [50, 60, None, None, 70, 80, 55, None]})
    got = mean_accuracy_rounds(rounds, ["server.optimizer"])
    assert got[["trial_id", "round", "accuracy"]].values.tolist() == [
        ["a", 0, 55.0], ["b", 0, 75.0], ["b", 1, 55.0]]   # rounds with no evaluation: none


def test_task_curves_number_tasks_from_0_as_fcl_does():
    from analysis.dashboard.charts import task_curves
    rounds = pd.DataFrame({"trial_id": "a", "seed": 0, "round": [0, 0, 1, 1], "task": [0, 1] * 2,
                           "server.optimizer": "fedadam", "accuracy": [50, 60, 55, 65]})
    trials = pd.DataFrame({"rounds": [2], "data.num_tasks": [2]})
    fig = task_curves(rounds, trials, ["server.optimizer"])
    assert [t.name for t in fig.data] == ["task 0", "task 1"]
    assert fig.data[0].hovertemplate.startswith("fedadam, task 0: ")


def accuracies_55_to_70() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = [{"server.optimizer": o, "server.lr": lr, "seed": s, "acc": 55 + 15 * rng.random()}
            for o in ("fedsgd", "fedadam") for lr in (0.1, 1.0) for s in range(3)]
    return pd.DataFrame(rows)


def test_acc_bars_y_range_is_fitted_to_the_data_and_its_intervals():
    from analysis.dashboard.charts import metric_chart
    from analysis.seed_stats import seed_summary
    t = accuracies_55_to_70()
    fig = metric_chart(t, ["server.optimizer", "server.lr"], "acc", "ACC")
    low, high = fig.layout.yaxis.range
    s = seed_summary(t, ["server.optimizer", "server.lr"], "acc")
    assert low > 0 and low < (s["mean"] - s["ci95"]).min()       # 0 is not on the axis
    assert high > (s["mean"] + s["ci95"]).max()
    assert high - low < 1.3 * ((s["mean"] + s["ci95"]).max() - (s["mean"] - s["ci95"]).min())


def test_acc_bars_mark_the_seeds_that_diverged():
    """A bar whose seeds include diverged runs says how many, on the bar and in its hover;
    trials stored before the flag (no `diverged` column) mark none."""
    from analysis.dashboard.charts import metric_chart
    t = accuracies_55_to_70()
    t["diverged"] = ((t["server.lr"] == 1.0) & (t["server.optimizer"] == "fedadam")
                     & (t["seed"] < 2))
    fig = metric_chart(t, ["server.optimizer", "server.lr"], "acc", "ACC")
    by_lr = {bar.name: bar for bar in fig.data}
    assert list(by_lr["η=1"].text) == ["2 diverged", ""]      # x: fedadam, fedsgd
    assert list(by_lr["η=0.1"].text) == ["", ""]
    assert by_lr["η=1"].customdata[0][1] == "2 diverged"
    assert "%{customdata[1]}" in by_lr["η=1"].hovertemplate
    old = metric_chart(t.drop(columns="diverged"), ["server.optimizer", "server.lr"], "acc", "ACC")
    assert all(m == "" for bar in old.data for m in bar.text)


def y_ticks(dom: str, chart: str) -> list[float]:
    """The y tick labels Chromium drew in the chart's <div> (its first axis)."""
    block = dom[dom.index(f'id="{chart}"'):]
    block = block[:block.find('<div class="chart"', 1) % len(block) or None]
    return [float(v) for v in re.findall(r'class="ytick"><text[^>]*data-unformatted="([^"]*)"',
                                         block)]


@needs_chromium
def test_optimizer_view_draws_its_charts_with_a_fitted_acc_axis(page, study_results, tmp_path):
    """The optimizer view (it opens first) draws every chart; ACC bars of data in 55-70 are
    drawn on an axis that does not start at 0."""
    from analysis.dashboard.charts import metric_chart
    from analysis.dashboard.views import View
    (view,) = study_views(load_study(study_results, "optimizers"))
    assert len(view.charts) == 6         # ACC, BWT_f, paired, accuracy, tasks, drift
    dom = subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--user-data-dir={tmp_path / 'p1'}", "--virtual-time-budget=20000", "--dump-dom",
         page.resolve().as_uri()], capture_output=True, text=True, timeout=120).stdout
    drawn = re.search(r'<div class="view on" id="view-0" data-charts-rendered="(\d+)"', dom)
    assert drawn and int(drawn.group(1)) == len(view.charts)
    fig = metric_chart(accuracies_55_to_70(), ["server.optimizer", "server.lr"], "acc", "ACC")
    one = tmp_path / "one.html"
    one.write_text(render_page([View("x/y", "x · y", [fig.to_plotly_json()])], tmp_path))
    attrs, log = open_in_chromium(one, tmp_path / "p2")
    assert attrs["data-charts-rendered"] == "1" and attrs["data-errors"] == "0"
    dom = subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--user-data-dir={tmp_path / 'p3'}", "--virtual-time-budget=20000", "--dump-dom",
         one.resolve().as_uri()], capture_output=True, text=True, timeout=120).stdout
    ticks = y_ticks(dom, "view-0-chart-0")
    assert ticks and min(ticks) >= 45 and max(ticks) <= 80


@needs_chromium
def test_dashboard_renders_every_chart_without_console_errors(page, tmp_path):
    attrs, log = open_in_chromium(page, tmp_path / "profile")
    assert int(attrs["data-charts-expected"]) >= 9 * 3
    assert attrs["data-charts-rendered"] == attrs["data-charts-expected"]
    assert attrs["data-errors"] == "0"
    assert console_errors(log) == []


@needs_chromium
def test_every_view_is_drawn_in_a_screenshot(page, study_results, tmp_path_factory):
    """One PNG per view in the test's output folder (look at them: the path is printed)."""
    from concurrent.futures import ThreadPoolExecutor
    out = tmp_path_factory.mktemp("dashboard-screenshots")
    ids = re.findall(r'<option value="(view-\d+)">([^<]*)</option>', page.read_text())

    def shoot(view):
        vid, title = view
        name = re.sub(r"[^\w.-]+", "_", title.split(" (")[0])
        screenshot(page, vid, out / f"{vid}-{name}.png", out / f"profile-{vid}")

    with ThreadPoolExecutor(2) as pool:                 # Chromium starts slowly: two at once
        list(pool.map(shoot, ids))
    pngs = sorted(out.glob("*.png"))
    print(f"screenshots: {out}")
    assert len(pngs) == len(ids) == len(list(study_results.iterdir()))   # one data set each
    sizes = [p.stat().st_size for p in pngs]
    assert min(sizes) > 20_000                                    # charts, not a blank page
    assert len({p.read_bytes() for p in pngs}) == len(pngs)       # each shows its own view


@needs_chromium
def test_the_error_probe_sees_a_broken_page(tmp_path):
    """Control: the same page machinery with a chart spec that throws is reported."""
    page = tmp_path / "broken.html"
    text = render_page([], tmp_path).replace("<script id=\"payload\"",
                                             "<script>no_such_function();</script><script id=\"payload\"")
    page.write_text(text)
    attrs, log = open_in_chromium(page, tmp_path / "profile")
    assert attrs["data-errors"] == "1"
    assert any("no_such_function" in line for line in console_errors(log))


def method_trials(fedadam_gain: list[float]) -> pd.DataFrame:
    rows = []
    for seed, gain in enumerate(fedadam_gain):
        for order in ("async", "sync"):
            common = {"seed": seed, "schedule.order": order, "client.algorithm": "sgd",
                      "client.prox_mu": 0.0, "bwt_f": -1.0}
            rows.append({**common, "server.optimizer": "fedsgd", "server.lr": 1.0,
                         "acc": 50.0 + seed})
            rows.append({**common, "server.optimizer": "fedadam", "server.lr": 0.01,
                         "acc": 50.0 + seed + gain})
    return pd.DataFrame(rows)


def test_method_bars_say_their_seed_count_and_verdict_against_fedavg():
    from analysis.dashboard.methods import method_charts
    acc, bwt = method_charts(method_trials([10.0, 10.2, 9.9]))
    assert "over 3 seeds" in acc.layout.title.text and "over 3 seeds" in bwt.layout.title.text
    bars = {b.name: b for b in acc.data}
    assert list(bars["Async FCL"].x) == ["FedAvg", "FedAdam"]
    assert list(bars["Async FCL"].text) == ["", "higher"]           # paired within the order
    assert bars["Async FCL"].customdata[1][1].startswith("+10.03 ± ")
    assert list(bwt.data[0].text) == ["", ""]                        # no difference: no word
    unresolved, _ = method_charts(method_trials([5.0, -4.0, 1.0]))
    assert list(unresolved.data[0].text) == ["", ""]
    assert unresolved.data[0].customdata[1][1].endswith("not resolved at 3 seeds")


def test_side_by_side_bars_say_their_seed_count(study_results, tmp_path):
    from analysis.dashboard.compare import acc_by_folder
    study = load_study(study_results, "optimizers")
    fig = acc_by_folder([study, study], ["a", "b"], ["server.optimizer", "server.lr"])
    n = study.trials["seed"].nunique()
    assert f"over {n} seeds" in fig.layout.title.text


def test_pareto_labels_are_not_clipped_at_the_axes():
    import math
    from analysis.dashboard.charts import pareto_chart
    t = pd.DataFrame({"seed": [0, 1] * 3, "acc": [50.0, 51, 60, 61, 70, 71],
                      "bytes_up": [1e6] * 2 + [1e7] * 2 + [1e8] * 2, "bytes_down": [0.0] * 6,
                      "compression.bits": [8, 8, 16, 16, 32, 32]})
    fig = pareto_chart(t, ["compression.bits"])
    assert fig.data[0].cliponaxis is False
    low, high = fig.layout.xaxis.range                    # log10 of MB, padded both sides
    assert low < math.log10(1) and high > math.log10(100)


def test_method_studies_name_their_curves_by_method_and_task_order():
    from analysis.dashboard import charts
    from analysis.dashboard.views import method_labels
    keys = ["client.algorithm", "client.prox_mu", "server.optimizer", "server.lr",
            "schedule.order"]
    rows = pd.DataFrame({"client.algorithm": ["fedprox", "sgd"], "client.prox_mu": [0.001, 0.0],
                         "server.optimizer": ["fedsgd", "fedadam"], "server.lr": [1.0, 0.01],
                         "schedule.order": ["async", "sync"]})
    assert method_labels(rows, keys).tolist() == ["FedProx μ=0.001, Async FCL",
                                                  "FedAdam, Sync FCL"]
    drift = pd.concat([rows.assign(round=r, seed=0, drift=0.1 * r) for r in range(3)])
    fig = charts.band_curves(drift, "drift", keys, "drift", "drift",
                             pd.DataFrame({"rounds": [3, 4], "data.num_tasks": [1, 1]}),
                             labels=method_labels)
    assert {d.name for d in fig.data if d.name} == {"FedProx μ=0.001, Async FCL",
                                                    "FedAdam, Sync FCL"}


REPO = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(not (REPO / "results" / "drift_correction").is_dir(),
                    reason="the stored drift_correction is not in this checkout")
def test_the_stored_drift_correction_legends_name_methods():
    view = study_views(load_study(REPO / "results", "drift_correction"))[0]
    names = [d.get("name", "") for c in view.charts for d in c["data"]]
    menus = [b["label"] for c in view.charts for m in c["layout"].get("updatemenus", [])
             for b in m["buttons"]]
    assert "FedAvg, Async FCL" in names and "FedAvg, Async FCL" in menus
    assert not [n for n in names + menus if "algorithm=" in n or "async" in n]


def test_search_titles_wrap_their_axes_and_say_when_trials_are_few():
    from analysis.dashboard.search import importance_chart, parallel_chart
    keys = ["client.lr", "server.lr", "server.tau", "client.local_epochs", "data.alpha"]
    rng = np.random.default_rng(0)

    def trials(n):
        t = pd.DataFrame({k: rng.uniform(0.01, 1, n) for k in keys})
        return t.assign(status="TERMINATED", value=rng.uniform(40, 60, n), number=range(n))
    title = parallel_chart(trials(6), keys).layout.title.text
    assert title.count("<br>") == 2                          # 5 axes: 2 lines, 3 then 2
    assert all(line.count(" = ") <= 3 for line in title.split("<br>"))
    few = importance_chart(trials(6), keys).layout.title.text
    assert "over 6 finished trials" in few and "(so few: indicative only)" in few
    assert "indicative" not in importance_chart(trials(12), keys).layout.title.text


def test_settings_labels_are_each_rows_label_made_once_per_setting():
    """`settings_labels` names each distinct setting once and gives every row its setting's
    name: the same as labelling row by row, NaN, ints, floats and repeats included."""
    from analysis.dashboard.charts import setting_label, settings_labels
    df = pd.DataFrame({"server.optimizer": ["fedadam", "fedavg", "fedadam", "fedavg", "fedadam"],
                       "server.lr": [0.5, 1.0, 0.5, float("nan"), 0.05],
                       "client.local_epochs": [1, 2, 1, 2, 1], "acc": [1.0, 2, 3, 4, 5]},
                      index=[10, 11, 12, 13, 14])
    keys = ["server.optimizer", "server.lr", "client.local_epochs"]
    rows = pd.Series([setting_label(r, keys) for _, r in df.iterrows()], index=df.index)
    assert settings_labels(df, keys).equals(rows)
    assert settings_labels(df, []).tolist() == ["all trials"] * 5
    assert settings_labels(df.iloc[:0], keys).empty
