"""The dashboard's run table, run overlay, settings diff, group-by and side-by-side view
(analysis/dashboard/runs.py, compare.py, page.js), driven in headless Chromium through
Playwright: sort, filter, select two runs, switch group-by, no console error. Screenshots of
each step go to the test's output folder (the path is printed)."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from analysis.dashboard.page import main
from analysis.dashboard.compare import compare_view
from analysis.dashboard.runs import base_differences, run_set, status_of
from analysis.study_tables import load_study
from fcl.manifest import read_manifest, write_manifest
from fcl.results_io import DEFAULTS, added_keys, as_today, write_parquet_atomic
from study_fixture import study_results  # noqa: F401  (the session fixture)

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-background-networking"]
WAIT_MS = 180_000                    # a busy machine: generous deadlines, never fixed sleeps
needs_chromium = pytest.mark.skipif(not CHROMIUM.exists(),
                                    reason="/usr/bin/chromium absent (apt-get install chromium)")


def test_status_words_include_diverged_failed_and_stopped():
    rows = [{"status": "TERMINATED", "acc": 60.0, "diverged": False},
            {"status": "TERMINATED", "acc": 10.0, "diverged": True},
            {"status": "ERROR", "acc": None},
            {"status": "EARLY_STOPPED", "acc": None},
            {"status": "TERMINATED", "acc": None}]
    assert [status_of(pd.Series(r)) for r in rows] == [
        "finished", "diverged", "failed", "stopped early", "failed"]


def test_a_run_set_holds_every_trial_its_differing_keys_and_curves(study_results):
    study = load_study(study_results, "optimizers")
    rs = run_set(study, "results")
    raw = pd.read_parquet(study_results / "optimizers" / "trials.parquet")
    assert len(rs["rows"]) == len(raw)
    assert rs["keys"][:3] == ["server.optimizer", "server.lr", "seed"]
    assert "server.optimizer" not in rs["fixed"] and rs["fixed"]["rounds"] == 4
    assert rs["metrics"][0] == "acc" and rs["folder"] == "results" and rs["preset"] == "smoke"
    row = rs["rows"][0]
    rounds, acc = row["acc"]
    assert rounds and len(rounds) == len(acc) and len(row["drift"][0]) == 4
    search = run_set(load_study(study_results, "search"), "results")
    assert {r["status"] for r in search["rows"]} == {"finished", "stopped early"}
    # rounds are counted as a run's progress line counts them: a finished R-round trial
    # completed R (its last round's index, `round_reached` in the Parquet, is R - 1)
    done = search["metrics"].index("rounds_done")
    assert search["metric_labels"][done] == "rounds completed"
    finished = {r["m"][done] for r in search["rows"] if r["status"] == "finished"}
    assert finished == {search["fixed"]["rounds"]}
    assert {r["m"][done] for r in search["rows"] if r["status"] == "stopped early"} == {2}


@pytest.fixture(scope="module")
def two_folders(study_results, tmp_path_factory) -> Path:
    """The fixture's results, and a copy of two of its studies in a second folder: a page with
    a side-by-side view of each."""
    root = tmp_path_factory.mktemp("two-folders")
    other = root / "results-other"
    other.mkdir()
    for name in ("optimizers", "noniid"):
        shutil.copytree(study_results / name, other / name)
    folder = other / "optimizers"                   # one of its runs diverged
    trials = pd.read_parquet(folder / "trials.parquet")
    trials["diverged"] = [i == 0 for i in range(len(trials))]
    write_parquet_atomic(trials, str(folder / "trials.parquet"))
    write_manifest(folder, read_manifest(folder))   # the manifest vouches for the new file
    out = root / "dash.html"
    assert main(["--results", str(study_results), str(other), "--out", str(out)]) == 0
    return out


def test_a_study_in_two_folders_gets_a_side_by_side_view(two_folders):
    text = two_folders.read_text()
    options = re.findall(r'<option value="view-\d+">([^<]*)</option>', text)
    assert options[0].startswith("optimizers · side by side: ")
    assert sum("side by side" in o for o in options) == 2          # optimizers, noniid
    assert any(o.endswith(" · results-other") for o in options)    # each view names its folder
    assert "every shared setting is the same in" in text           # a copy: no difference


@needs_chromium
def test_the_run_table_sorts_filters_selects_and_groups_in_chromium(two_folders, tmp_path_factory):
    from playwright.sync_api import sync_playwright
    out = tmp_path_factory.mktemp("dashboard-runs-screenshots")
    print(f"screenshots: {out}")
    errors = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 1000})
            page.set_default_timeout(WAIT_MS)
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(two_folders.resolve().as_uri() + "#view-1")   # optimizers, one folder
            page.wait_for_selector("body[data-ready='1']")
            panel = page.locator("#view-1 .runs-panel")
            page.wait_for_selector("#view-1 .runs-panel[data-built='1']")
            rows = panel.locator("table.runs tbody tr")
            total = rows.count()
            assert total == 12                                      # 3 optimizers x 2 eta x 2 seeds

            # sort by ACC: ascending, then descending on a second click
            panel.locator("th[data-col='acc']").click()
            accs = [float(t) for t in panel.locator("tbody td[data-col='acc']").all_inner_texts()]
            assert accs == sorted(accs)
            panel.locator("th[data-col='acc']").click()
            accs = [float(t) for t in panel.locator("tbody td[data-col='acc']").all_inner_texts()]
            assert accs == sorted(accs, reverse=True)

            # filter: a setting by text, then a metric by a bound
            panel.locator("input[data-col='server.optimizer']").fill("fedadam")
            page.wait_for_function("document.querySelector('#view-1 .runs-panel')"
                                   ".getAttribute('data-shown') === '4'")
            opts = panel.locator("tbody td[data-col='server.optimizer']").all_inner_texts()
            assert opts == ["fedadam"] * 4
            page.screenshot(path=str(out / "1-filtered.png"), full_page=True)
            panel.locator("input[data-col='server.optimizer']").fill("")
            bound = max(accs)                  # tiny runs may tie: count what the bound keeps
            want = sum(a >= bound for a in accs)
            panel.locator("input[data-col='acc']").fill(f">={bound}")
            page.wait_for_function(f"document.querySelector('#view-1 .runs-panel')"
                                   f".getAttribute('data-shown') === '{want}'")
            kept = [float(t) for t in panel.locator("tbody td[data-col='acc']").all_inner_texts()]
            assert kept and all(a >= bound for a in kept)
            panel.locator("input[data-col='acc']").fill("")
            page.wait_for_function(f"document.querySelector('#view-1 .runs-panel')"
                                   f".getAttribute('data-shown') === '{total}'")

            # select two runs: their curves overlaid, their settings diffed
            boxes = panel.locator("tbody input[type=checkbox]")
            boxes.nth(0).check()
            boxes.nth(5).check()
            page.wait_for_selector("#view-1 .overlay .main-svg", state="attached")
            assert page.evaluate("document.querySelector('#view-1 .overlay').data.length") == 2
            differing = panel.locator("table.diff-table tr.differs td:first-child")
            assert differing.count() >= 1
            assert panel.locator("table.diff-table tr[data-key='seed'], "
                                 "table.diff-table tr[data-key='server.lr'], "
                                 "table.diff-table tr[data-key='server.optimizer']").count() >= 1
            page.screenshot(path=str(out / "2-selected.png"), full_page=True)

            # group by eta, then colour by optimizer
            panel.locator("select.group-by").select_option("server.lr")
            page.wait_for_function("document.querySelector('#view-1 .runs-panel')"
                                   ".getAttribute('data-group') === 'server.lr'")
            names = page.evaluate("document.querySelector('#view-1 .group-curves').data"
                                  ".map(t => t.name).filter(Boolean)")
            assert len(names) == 2 and all(n.startswith("η=") for n in names)   # labels.py
            panel.locator("select.colour-by").select_option("server.optimizer")
            page.wait_for_function("document.querySelector('#view-1 .group-bars').data.length === 3")
            page.screenshot(path=str(out / "3-grouped.png"), full_page=True)
            ends = page.evaluate("document.querySelector('#view-1 .group-bars').data.map(t => "
                                 "t.y.map((y, i) => [y - t.error_y.arrayminus[i], "
                                 "y + t.error_y.array[i]]))")
            assert all(0 <= lo <= hi <= 100 for bar in ends for lo, hi in bar)  # ACC: 0-100

            # the other folder's copy: its diverged run says so, and filters by status
            page.select_option("#view-select", "view-2")
            page.wait_for_selector("#view-2 .runs-panel[data-built='1']")
            other = page.locator("#view-2 .runs-panel")
            other.locator("input[data-col='status']").fill("diverged")
            page.wait_for_function("document.querySelector('#view-2 .runs-panel')"
                                   ".getAttribute('data-shown') === '1'")
            assert other.locator("tbody tr.status-diverged").count() == 1

            # the side-by-side view: both folders' runs, grouped by folder
            page.select_option("#view-select", "view-0")
            page.wait_for_selector("#view-0 .runs-panel[data-built='1']")
            side = page.locator("#view-0 .runs-panel")
            assert side.locator("tbody tr").count() == 2 * total
            assert page.evaluate("document.querySelector('#view-0 .runs-panel')"
                                 ".getAttribute('data-group')") == "folder"
            page.screenshot(path=str(out / "4-side-by-side.png"), full_page=True)
            assert page.evaluate("window.__errors.length") == 0
        finally:
            browser.close()
    assert errors == []
    assert len(list(out.glob("*.png"))) == 4


REPO = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(not (REPO / "results").is_dir() or not (REPO / "results-pretrained").is_dir(),
                    reason="the stored results are not in this checkout")
def test_the_page_of_both_stored_folders_embeds_its_data_once_under_3_mb(tmp_path):
    import base64
    import gzip
    import json
    out = tmp_path / "dashboard.html"
    assert main(["--results", str(REPO / "results-pretrained"), str(REPO / "results"),
                 "--out", str(out)]) == 0
    text = out.read_text()
    assert len(text.encode()) < 3_000_000
    assert text.count('<script id="payload"') == 1 and text.count('<script id="plotly-gz"') == 1
    assert not re.search(r"<script[^>]+src=|<link[^>]+href=", text)          # nothing fetched
    blob = re.search(r'<script id="payload"[^>]*>([^<]*)</script>', text).group(1)
    data = json.loads(gzip.decompress(base64.b64decode(blob)))
    studies = {(rs["folder"], rs["study"]) for rs in data["runsets"].values()}
    assert len(studies) == len(data["runsets"]) >= 19           # each run set once
    assert ("results-pretrained", "optimizers") in studies and ("results", "search") in studies


def test_why_the_numbers_differ_ignores_spelling_and_keys_a_folder_does_not_hold():
    def rs(fixed, keys=()):
        return {"fixed": fixed, "keys": list(keys)}
    sets = [rs({"run.channels_last": "false", "run.divergence_loss": 1000, "a": 1.0,
                "model.weights": "w.pt", "only.here": 3}),
            rs({"run.channels_last": False, "run.divergence_loss": 1000.0, "a": 1,
                "model.weights": None})]
    assert base_differences(sets) == ["model.weights: w.pt | (none)"]
    varied = [rs({"server.lr": 1.0}), rs({}, keys=["server.lr"])]     # varied in one: varies
    assert base_differences(varied) == ["server.lr: 1 | varies"]


def test_stored_trials_are_spelled_as_today_keys_added_since_at_their_defaults():
    old = pd.DataFrame({"trial_id": ["a"], "run.channels_last": [False]})
    today = as_today(old)
    assert today["run.channels_last"].tolist() == ["false"]
    assert all(today[k].iloc[0] == DEFAULTS[k] for k in added_keys())
    assert "run.channels_last" in today and old["run.channels_last"].dtype == bool  # a copy


@pytest.mark.skipif(not (REPO / "results").is_dir() or not (REPO / "results-pretrained").is_dir(),
                    reason="the stored results are not in this checkout")
def test_the_stored_optimizers_differ_by_preset_and_weights_only():
    folders = ("results-pretrained", "results")
    studies = [load_study(REPO / f, "optimizers") for f in folders]
    sets = [run_set(s, f) for s, f in zip(studies, folders)]
    why = compare_view(studies, sets, ("rs-0", "rs-1")).why
    assert [line.split(":")[0] for line in why[1:]] == ["preset", "model.weights"]
    assert why[2] == "model.weights: fcl:resnet_tiny-cifar10_rest.pt | (none)"
    for s in sets:       # the run table gains no column for a key one folder lacks
        assert not [k for k in s["keys"] if k in added_keys() or k.startswith("run.")]
        assert all(k in s["fixed"] for k in added_keys())
