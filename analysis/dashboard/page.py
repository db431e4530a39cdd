"""One self-contained interactive HTML page of the stored studies, each shown as what it is.

    python -m analysis dashboard --results results-pretrained results --out dashboard.html

Open the file in any browser, offline: plotly.js and the page's data (every chart spec and every
run set) are embedded once, gzip-compressed and base64-encoded, and inflated by the page's own
script (`page.js`, `DecompressionStream`). The page is titled after the studies it holds; a
selector picks a study and data set (`dashboard.html#view-2` opens the third); each view's
header says the results folder, preset, data set and commit it was drawn from (the study's
manifest, `study.json`); a study whose first declared axis is the server optimizer opens first.
A grid's view shows ACC and BWT_f per setting with 95% intervals over seeds (colour: the last
axis the study declares, x: the others), per-round accuracy of every task with the
phase boundaries, client drift (Eq. 2) over rounds, and, where the study compares messages (the
FLoCoRA studies), bytes against accuracy with the Pareto front. A search's view
(`analysis/dashboard/search.py`) shows its trials in the order Optuna drew them with the best
so far, the hyperparameter importance, the sampled keys against ACC, and the trials ASHA stopped
early. Which study gets which charts is decided in `analysis/dashboard/views.py`, from the
manifest. Under every view, a run table of its trials (`analysis/dashboard/runs.py`): sort,
filter, tick runs to overlay their curves and diff their settings, group and colour by any
varied key. A study stored in several `--results` folders also gets a side-by-side view
(`analysis/dashboard/compare.py`).

`--out` is checked writable before any study is read; every study folder under each `--results`
folder is loaded, and checked against its manifest (`analysis/study_folder.py`), before the page
is written: one that is not whole refuses the page with one line `error: ...` and exit code 2.
The page goes to a temporary file renamed onto `--out` once whole: a disk that fills on the way
ends in one line, exit 2, and no file.

The page records its own script errors and the number of charts it drew in attributes of
<body> (`data-errors`, `data-charts-expected`, `data-charts-rendered`, and `data-ready` once
drawn), so a headless browser test can read them from the DOM.
"""
from __future__ import annotations

import argparse
import base64
import dataclasses
import functools
import gzip
import html
import json
import sys
from pathlib import Path

from plotly.offline import get_plotlyjs
from plotly.utils import PlotlyJSONEncoder

from analysis.dashboard.compare import compare_view
from analysis.dashboard.runs import run_set
from analysis.dashboard.views import View, opens_first, study_views
from analysis.labels import KEY_SYMBOLS
from analysis.output_paths import first_path_problem, unwritable_file
from analysis.study_folder import nested_results, study_folders
from analysis.study_tables import MissingStudy, SchemaError, load_study
from fcl.atomic_file import write_text_atomic
from fcl.cli_args import EXIT_USAGE
from fcl.intervals import t975


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
<style>body{{font-family:sans-serif;margin:1em 2em}} .view{{display:none}} .view.on{{display:block}}
.chart,.dyn{{width:100%;max-width:1100px}} select{{font-size:1em}}
.source,.regime,.fixed,.why{{color:#555;font-family:monospace;margin:.2em 0}}
.table-wrap{{max-height:420px;overflow:auto;border:1px solid #ccc;max-width:1400px}}
table.runs{{border-collapse:collapse;font-size:12px}} table.runs th,table.runs td{{padding:2px 6px;border-bottom:1px solid #eee;white-space:nowrap}}
table.runs thead th{{position:sticky;top:0;background:#f4f4f4;cursor:pointer}} table.runs thead tr.filters td{{position:sticky;top:20px;background:#fafafa}}
table.runs th[data-sort=asc]::after{{content:" \\25B2"}} table.runs th[data-sort=desc]::after{{content:" \\25BC"}}
td.num{{text-align:right;font-variant-numeric:tabular-nums}} tr.status-diverged td,tr.status-failed td{{color:#b00}}
tr.status-stopped-early td{{color:#777}} .controls label{{margin-right:1.5em}}
table.diff-table{{border-collapse:collapse;font-size:12px}} table.diff-table td,table.diff-table th{{border:1px solid #ddd;padding:2px 6px}}
tr.differs td{{background:#fff3b0;font-weight:bold}} .shared{{font-family:monospace;font-size:11px;color:#555}}
.verdicts{{margin:.3em 0}}</style></head>
<body data-errors="0" data-charts-expected="{n_charts}" data-charts-rendered="0" data-ready="0">
<h1>{title}</h1>
<p>From {results}: {summary}.</p>
<label>study / data set: <select id="view-select">{options}</select></label>
{views}
<script id="plotly-gz" type="application/octet-stream">{plotly}</script>
<script id="payload" type="application/octet-stream">{payload}</script>
<script>{script}</script></body></html>
"""


def packed(text: str) -> str:
    """`text` gzip-compressed and base64-encoded: the page inflates it (DecompressionStream)."""
    return base64.b64encode(gzip.compress(text.encode("utf-8"), 9, mtime=0)).decode("ascii")


@functools.cache
def packed_plotly() -> str:
    return packed(get_plotlyjs())


def page_title(views: list[View]) -> str:
    """The page's title: the study it shows (with its doc's first paragraph), or the list."""
    studies = list(dict.fromkeys(v.key.split("/")[0] for v in views))
    if len(studies) == 1:
        doc = views[0].doc
        return f"fcl study {studies[0]}" + (f": {doc.rstrip('.')}" if doc else "")
    return "fcl studies: " + ", ".join(studies) if studies else "fcl studies"


def render_page(views: list[View], results, runsets: dict | None = None) -> str:
    """The page of `views` (their charts, and a run table over each view's run sets, ids into
    `runsets`); `results`: the folder(s) drawn from, for the page's first line."""
    specs, blocks, options = {}, [], []
    for i, v in enumerate(views):
        vid = f"view-{i}"
        options.append(f'<option value="{vid}">{html.escape(v.title)}</option>')
        divs = []
        for j, chart in enumerate(v.charts):
            cid = f"{vid}-chart-{j}"
            specs[cid] = chart
            divs.append(f'<div class="chart" id="{cid}"></div>')
        source = f'<p class="source">{html.escape(v.source)}</p>' if v.source else ""
        note = f'<p class="note">{html.escape(v.note)}</p>' if v.note else ""
        fixed = f'<p class="fixed">{html.escape(v.fixed)}</p>' if v.fixed else ""
        why = "".join(f'<p class="why">{html.escape(line)}</p>' for line in v.why)
        regime = "".join(f'<p class="regime">{html.escape(line)}</p>' for line in v.regime)
        verdicts = (f'<p class="verdicts">{html.escape(v.verdicts)}</p>' if v.verdicts else "")
        runs = (f'<div class="runs-panel" data-runsets="{" ".join(v.runs)}"></div>'
                if v.runs else "")
        blocks.append(f'<div class="view{" on" if i == 0 else ""}" id="{vid}">'
                      f'<h2>{html.escape(v.title)}</h2>{source}{regime}{fixed}{why}{note}'
                      f'{verdicts}{"".join(divs)}{runs}</div>')
    payload = json.dumps({"specs": specs, "runsets": runsets or {},
                          "t975": [round(t975(df), 4) for df in range(1, 61)],
                          "symbols": KEY_SYMBOLS},
                         cls=PlotlyJSONEncoder, separators=(",", ":"))
    studies = list(dict.fromkeys(v.key.split("/")[0] for v in views))
    folders = ", ".join(str(r) for r in results) if isinstance(results, (list, tuple)) \
        else str(results)
    script = (Path(__file__).with_name("page.js").read_text(encoding="utf-8")
              .replace("</", "<\\/"))
    return PAGE.format(plotly=packed_plotly(), n_charts=len(specs), title=html.escape(
                           page_title(views)), results=html.escape(folders),
                       summary=f"{len(studies)} studies ({', '.join(studies)})",
                       options="".join(options), views="\n".join(blocks),
                       payload=packed(payload), script=script)


def folder_labels(folders: list[Path]) -> list[str]:
    """Each results folder's name, or its whole path where two share a name."""
    names = [f.resolve().name or str(f) for f in folders]
    return [n if names.count(n) == 1 else str(f) for n, f in zip(names, folders)]


def main(argv: list[str] | None = None, prog: str = "python -m analysis dashboard") -> int:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    p.add_argument("--results", type=Path, nargs="+", default=[Path("results")],
                   help="one or more folders with <study>/trials.parquet (default: results/); "
                        "a study stored in several is also shown side by side")
    p.add_argument("--out", default="dashboard.html", help="the HTML file")  # text: not '.'
    args = p.parse_args(argv)
    problem = first_path_problem(args.results, "--results") or unwritable_file(args.out, "--out")
    args.out = Path(args.out)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    folders = list(dict.fromkeys(args.results))
    labels = folder_labels(folders)
    loaded = []                            # (folder label, study)
    for folder, label in zip(folders, labels):
        names = study_folders(folder)      # whole or not: a broken one is refused below
        if not names:
            print(f"error: --results={folder}: no <study>/trials.parquet found", file=sys.stderr)
            return EXIT_USAGE
        nested = nested_results(folder)
        if nested:                         # read only when named: say so, not skip in silence
            print(f"note: --results={folder} also holds the results folder(s) "
                  f"{', '.join(str(n) for n in nested)}, not read: add them to --results",
                  file=sys.stderr)
        for name in names:                 # every folder checked before any view is drawn
            try:
                loaded.append((label, load_study(folder, name)))
            except SchemaError as bad:
                print(f"error: {bad}", file=sys.stderr)
                return EXIT_USAGE
            except MissingStudy as missing:
                print(f"skip {missing}", file=sys.stderr)
    # a study about the server optimizer opens first (`opens_first`); a study's folders together
    loaded.sort(key=lambda ls: (not opens_first(ls[1]), ls[1].name, labels.index(ls[0])))
    several = len(folders) > 1
    runsets, views = {}, []
    by_study: dict[str, list[str]] = {}
    for label, study in loaded:
        rid = f"rs-{len(runsets)}"
        runsets[rid] = run_set(study, label)
        by_study.setdefault(study.name, []).append(rid)
        for view in study_views(study):
            views.append(dataclasses.replace(
                view, runs=(rid,), title=f"{view.title} · {label}" if several else view.title))
    for name, rids in by_study.items():
        if len(rids) > 1:                  # stored in several folders: side by side, first
            first = next(i for i, v in enumerate(views) if v.key.split("/")[0] == name)
            views.insert(first, compare_view([s for lbl, s in loaded if s.name == name],
                                             [runsets[r] for r in rids], tuple(rids)))
    try:
        write_text_atomic(render_page(views, folders, runsets), args.out)
    except OSError as exc:                 # a full or read-only disk: nothing half-written
        print(f"error: --out={args.out}: not written ({exc.strerror or type(exc).__name__})",
              file=sys.stderr)
        return EXIT_USAGE
    print(f"{args.out}: {len(views)} views, {sum(len(v.charts) for v in views)} charts "
          f"from {len(loaded)} studies in {len(folders)} folder(s)", file=sys.stderr)
    return 0
