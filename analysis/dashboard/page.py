"""One self-contained interactive HTML page of the stored studies, each shown as what it is.

    python -m analysis dashboard --results results/ --out dashboard.html

Open the file in any browser, offline: plotly.js is inlined. The page is titled after the
studies it holds; a selector picks a study and data set (`dashboard.html#view-2` opens the
third); each view's header says the preset, data set and commit it was drawn from (the study's
manifest, `study.json`). A grid's view shows ACC and BWT_f per setting with 95% intervals over
seeds (x: the optimizer when it varies, colour: eta), per-round accuracy of every task with the
phase boundaries, client drift (Eq. 2) over rounds, and, where the study compares messages (the
FLoCoRA studies), bytes against accuracy with the Pareto front. A search's view
(`analysis/dashboard/search.py`) shows its trials in the order Optuna drew them with the best
so far, the sampled keys against ACC, and the trials ASHA stopped early. Which study gets which
charts is decided in `analysis/dashboard/views.py`, from the manifest.

`--out` is checked writable before any study is read; every study folder under `--results` is
loaded, and checked against its manifest (`analysis/study_folder.py`), before the page is
written: one that is not whole refuses the page with one line `error: ...` and exit code 2.

The page records its own script errors and the number of charts it drew in attributes of
<body> (`data-errors`, `data-charts-expected`, `data-charts-rendered`), so a headless browser
test can read them from the DOM.
"""
from __future__ import annotations

import argparse
import html
import json
import sys
from pathlib import Path

from plotly.offline import get_plotlyjs
from plotly.utils import PlotlyJSONEncoder

from analysis.dashboard.views import View, study_views
from analysis.output_paths import unwritable_file
from analysis.study_folder import study_folders
from analysis.study_tables import MissingStudy, SchemaError, load_study
from fcl.atomic_file import write_text_atomic
from fcl.cli_args import EXIT_USAGE


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
.chart{{width:100%;max-width:1100px}} select{{font-size:1em}}
.source,.fixed{{color:#555;font-family:monospace;margin:.2em 0}}</style></head>
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
    document.querySelectorAll(".view").forEach(function (v) {{
      var drawn = Array.prototype.filter.call(v.querySelectorAll(".chart"),
                                              function (c) {{ return c.querySelector(".main-svg"); }});
      v.setAttribute("data-charts-rendered", String(drawn.length));
    }});
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


def page_title(views: list[View]) -> str:
    """The page's title: the study it shows (with its doc's first paragraph), or the list."""
    studies = list(dict.fromkeys(v.key.split("/")[0] for v in views))
    if len(studies) == 1:
        doc = views[0].doc
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
        source = f'<p class="source">{html.escape(v.source)}</p>' if v.source else ""
        note = f'<p class="note">{html.escape(v.note)}</p>' if v.note else ""
        fixed = f'<p class="fixed">{html.escape(v.fixed)}</p>' if v.fixed else ""
        blocks.append(f'<div class="view{" on" if i == 0 else ""}" id="{vid}">'
                      f'<h2>{html.escape(v.title)}</h2>{source}{fixed}{note}{"".join(divs)}</div>')
    spec_json = json.dumps(specs, cls=PlotlyJSONEncoder).replace("</", "<\\/")
    studies = list(dict.fromkeys(v.key.split("/")[0] for v in views))
    return PAGE.format(plotly=get_plotlyjs(), n_charts=len(specs), title=html.escape(
                           page_title(views)), results=html.escape(str(results)),
                       summary=f"{len(studies)} studies ({', '.join(studies)})",
                       options="".join(options), views="\n".join(blocks), specs=spec_json)


def main(argv: list[str] | None = None, prog: str = "python -m analysis dashboard") -> int:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    p.add_argument("--results", type=Path, default=Path("results"),
                   help="folder with <study>/trials.parquet (default: results/)")
    p.add_argument("--out", type=Path, default=Path("dashboard.html"), help="the HTML file")
    args = p.parse_args(argv)
    problem = unwritable_file(args.out, "--out")
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    names = study_folders(args.results)      # whole or not: a broken one is refused below
    names.sort(key=lambda n: n != "optimizers")     # the optimizer comparison opens first
    if not names:
        print(f"error: --results={args.results}: no <study>/trials.parquet found", file=sys.stderr)
        return EXIT_USAGE
    studies = []
    for name in names:                     # every folder checked before any view is drawn
        try:
            studies.append(load_study(args.results, name))
        except SchemaError as bad:
            print(f"error: {bad}", file=sys.stderr)
            return EXIT_USAGE
        except MissingStudy as missing:
            print(f"skip {missing}", file=sys.stderr)
    views = [view for study in studies for view in study_views(study)]
    write_text_atomic(render_page(views, args.results), args.out)
    print(f"{args.out}: {len(views)} views, {sum(len(v.charts) for v in views)} charts "
          f"from {len(names)} studies", file=sys.stderr)
    return 0
