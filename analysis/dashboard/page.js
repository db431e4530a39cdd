// The dashboard page's script (analysis/dashboard/page.py inlines it): inflates plotly.js and
// the page's data (both gzip + base64, embedded once), draws the charts built in Python, and
// builds each view's run table, run overlay, settings diff and group-by charts from the run sets.
(function () {
  "use strict";
  function note(e) { window.__errors.push(String(e && e.stack || e)); __note(); console.error(e); }

  async function inflate(id) {
    var b64 = document.getElementById(id).textContent.trim();
    var bin = atob(b64), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return await new Response(stream).text();
  }

  var DATA, T975;
  var PALETTE = ["#636efa", "#ef553b", "#00cc96", "#ab63fa", "#ffa15a", "#19d3f3", "#ff6692",
                 "#b6e880", "#ff97ff", "#fecb52", "#1f77b4", "#8c564b"];
  var DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"];
  var CURVES = {acc: ["mean accuracy over tasks (%)", "accuracy"], drift: ["client drift (Eq. 2)", "drift"]};

  // `η=0.5`, `fedadam`, `K=2`: a key's value as analysis/labels.py writes it
  function named(k, v) {
    if (k === "folder") return fmt(v);
    var sym = DATA.symbols.hasOwnProperty(k) ? DATA.symbols[k] : k.split(".").pop();
    return sym === "" ? fmt(v) : sym + "=" + fmt(v);
  }
  function t975(df) { return df < 1 ? NaN : (df <= T975.length ? T975[df - 1] : 1.96); }
  function fmt(v) {
    if (v === null || v === undefined) return "—";
    if (typeof v === "number") return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(4)));
    return String(v);
  }
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function stats(vals) {
    var n = vals.length, mean = vals.reduce(function (a, b) { return a + b; }, 0) / n;
    if (n < 2) return {mean: mean, ci: 0, n: n};
    var sd = Math.sqrt(vals.reduce(function (a, b) { return a + (b - mean) * (b - mean); }, 0) / (n - 1));
    return {mean: mean, ci: t975(n - 1) * sd / Math.sqrt(n), n: n};
  }

  // ---- the runs of a view: rows from one or several run sets, columns that differ ----
  function runsOf(ids) {
    var sets = ids.map(function (id) { return DATA.runsets[id]; });
    var rows = [];
    sets.forEach(function (rs) {
      rs.rows.forEach(function (r) {
        var v = {}, m = {};
        Object.keys(rs.fixed).forEach(function (k) { v[k] = rs.fixed[k]; });
        rs.keys.forEach(function (k, i) { v[k] = r.s[i]; });
        rs.metrics.forEach(function (k, i) { m[k] = r.m[i]; });
        if (sets.length > 1) v.folder = rs.folder;
        rows.push({rs: rs, id: r.id, status: r.status, v: v, m: m, acc: r.acc, drift: r.drift});
      });
    });
    var all = [];
    if (sets.length > 1) all.push("folder");
    sets.forEach(function (rs) { rs.keys.forEach(function (k) { if (all.indexOf(k) < 0) all.push(k); }); });
    sets.forEach(function (rs) { Object.keys(rs.fixed).sort().forEach(function (k) { if (all.indexOf(k) < 0) all.push(k); }); });
    var keys = all.filter(function (k) {
      var seen = {};
      // a key a run set does not hold at all is no difference (null, a value held, is one)
      rows.forEach(function (r) { if (r.v[k] !== undefined) seen[JSON.stringify(r.v[k])] = 1; });
      return Object.keys(seen).length > 1;
    });
    var metrics = [], labels = {};
    sets.forEach(function (rs) {
      rs.metrics.forEach(function (k, i) { if (metrics.indexOf(k) < 0) { metrics.push(k); labels[k] = rs.metric_labels[i]; } });
    });
    var varying = [];
    if (sets.length > 1) varying.push("folder");
    sets.forEach(function (rs) { rs.varying.forEach(function (k) { if (varying.indexOf(k) < 0) varying.push(k); }); });
    return {sets: sets, rows: rows, keys: keys, allKeys: all, metrics: metrics, labels: labels,
            varying: varying.filter(function (k) { return keys.indexOf(k) >= 0; })};
  }

  function value(row, col) {
    if (col === "status") return row.status;
    if (col === "trial") return row.id;
    if (row.m.hasOwnProperty(col)) return row.m[col];
    return row.v[col] === undefined ? null : row.v[col];
  }

  // A filter cell: `>60`, `<=0.5`, `=fedadam`, `!=sgd`, or text found in the value.
  function passes(text, v) {
    text = text.trim();
    if (!text) return true;
    var m = /^(>=|<=|!=|>|<|=)\s*(.*)$/.exec(text);
    if (m) {
      var num = Number(m[2]), isNum = m[2] !== "" && !isNaN(num) && typeof v === "number";
      if (v === null) return m[1] === "!=";
      if (m[1] === "=") return isNum ? v === num : fmt(v).toLowerCase() === m[2].toLowerCase();
      if (m[1] === "!=") return isNum ? v !== num : fmt(v).toLowerCase() !== m[2].toLowerCase();
      if (!isNum) return false;
      return m[1] === ">" ? v > num : m[1] === "<" ? v < num : m[1] === ">=" ? v >= num : v <= num;
    }
    return fmt(v).toLowerCase().indexOf(text.toLowerCase()) >= 0;
  }

  function compare(a, b) {
    if (a === b) return 0;
    if (a === null) return 1;
    if (b === null) return -1;
    if (typeof a === "number" && typeof b === "number") return a - b;
    return String(a).localeCompare(String(b), undefined, {numeric: true});
  }

  function runLabel(row, model) {
    var parts = model.varying.filter(function (k) { return k !== "folder"; })
      .map(function (k) { return named(k, row.v[k]); });
    if (row.v.seed !== undefined && model.keys.indexOf("seed") >= 0) parts.push("seed " + fmt(row.v.seed));
    return (model.sets.length > 1 ? row.rs.folder + " · " : "") + (parts.join(", ") || row.id);
  }

  function buildPanel(panel) {
    var model = runsOf(panel.getAttribute("data-runsets").split(" "));
    var cols = ["trial", "status"].concat(model.keys, model.metrics);
    var state = {sort: null, desc: false, filters: {}, selected: {}};
    panel.innerHTML = "";
    var head = el("p", {"class": "runs-head"});
    head.textContent = "Runs: " + model.rows.length + " stored trials" +
      (model.sets.length > 1 ? " in " + model.sets.map(function (s) { return s.folder; }).join(" and ") : "") +
      ". Click a column to sort it, type in the row under it to filter (text, or >60, <=0.5, =fedadam), " +
      "tick runs to overlay their curves and compare their settings.";
    panel.appendChild(head);
    var wrap = el("div", {"class": "table-wrap"});
    var table = el("table", {"class": "runs"});
    var thead = el("thead"), hr = el("tr"), fr = el("tr", {"class": "filters"});
    hr.appendChild(el("th", {}, "✓"));
    fr.appendChild(el("td"));
    cols.forEach(function (c) {
      var th = el("th", {"data-col": c, title: "sort by " + c}, model.labels[c] || c);
      th.addEventListener("click", function () {
        state.desc = state.sort === c ? !state.desc : false;
        state.sort = c;
        draw();
      });
      hr.appendChild(th);
      var td = el("td"), inp = el("input", {"data-col": c, placeholder: "filter", size: "6"});
      inp.addEventListener("input", function () { state.filters[c] = inp.value; draw(); });
      td.appendChild(inp);
      fr.appendChild(td);
    });
    thead.appendChild(hr);
    thead.appendChild(fr);
    table.appendChild(thead);
    var tbody = el("tbody");
    table.appendChild(tbody);
    wrap.appendChild(table);
    panel.appendChild(wrap);
    var count = el("p", {"class": "runs-count"});
    panel.appendChild(count);

    var controls = el("div", {"class": "controls"});
    function selectOf(name, options, chosen) {
      var label = el("label", {}, name + " ");
      var s = el("select", {"class": name.replace(/\W+/g, "-")});
      options.forEach(function (o) {
        var opt = el("option", {value: o[0]}, o[1]);
        if (o[0] === chosen) opt.selected = true;
        s.appendChild(opt);
      });
      label.appendChild(s);
      controls.appendChild(label);
      return s;
    }
    var groupable = model.keys.filter(function (k) { return k !== "seed"; });
    // opens grouped by the first varied key with few values (a search's sampled floats
    // would make one group per run), else by the key with the fewest values
    function nvalues(k) { return new Set(model.rows.map(function (r) { return JSON.stringify(r.v[k]); })).size; }
    var candidates = model.varying.concat(groupable.filter(function (k) { return model.varying.indexOf(k) < 0; }));
    var firstGroup = candidates.filter(function (k) { return nvalues(k) <= 8; })[0] ||
      candidates.slice().sort(function (a, b) { return nvalues(a) - nvalues(b); })[0] || "";
    var curveSel = selectOf("curve", [["acc", "accuracy"], ["drift", "client drift"]], "acc");
    var groupSel = selectOf("group by", groupable.map(function (k) { return [k, k]; }), firstGroup);
    var colourSel = selectOf("colour by", [["", "(the group)"]].concat(groupable.map(function (k) { return [k, k]; })), "");
    panel.appendChild(controls);
    var overlay = el("div", {"class": "dyn overlay"});
    var diff = el("div", {"class": "diff"});
    var groupCurves = el("div", {"class": "dyn group-curves"});
    var groupBars = el("div", {"class": "dyn group-bars"});
    var groupHead = el("h3", {}, "Grouped (the runs the filters leave)");
    var selHead = el("h3", {}, "Selected runs");
    panel.appendChild(selHead);
    var hint = el("p", {"class": "hint"}, "Tick runs in the table to overlay their curves and compare their settings here.");
    panel.appendChild(hint);
    panel.appendChild(overlay);
    panel.appendChild(diff);
    panel.appendChild(groupHead);
    panel.appendChild(groupCurves);
    panel.appendChild(groupBars);
    [curveSel, groupSel, colourSel].forEach(function (s) { s.addEventListener("change", function () { drawGroups(); drawOverlay(); }); });

    function shown() {
      var rows = model.rows.filter(function (r) {
        return cols.every(function (c) { return passes(state.filters[c] || "", value(r, c)); });
      });
      if (state.sort) {
        rows = rows.slice().sort(function (a, b) {
          var av = value(a, state.sort), bv = value(b, state.sort);
          if (av === null || bv === null) return compare(av, bv);       // nulls last both ways
          return state.desc ? compare(bv, av) : compare(av, bv);
        });
      }
      return rows;
    }

    function draw() {
      hr.querySelectorAll("th[data-col]").forEach(function (th) {
        var c = th.getAttribute("data-col");
        th.setAttribute("data-sort", c === state.sort ? (state.desc ? "desc" : "asc") : "");
      });
      var rows = shown();
      tbody.innerHTML = "";
      rows.forEach(function (r) {
        var key = r.rs.folder + "/" + r.id;
        var tr = el("tr", {"data-run": key, "class": "status-" + r.status.replace(/\W+/g, "-")});
        var td = el("td"), box = el("input", {type: "checkbox"});
        box.checked = !!state.selected[key];
        box.addEventListener("change", function () {
          if (box.checked) state.selected[key] = r; else delete state.selected[key];
          drawOverlay();
        });
        td.appendChild(box);
        tr.appendChild(td);
        cols.forEach(function (c) {
          var v = value(r, c);
          tr.appendChild(el("td", {"data-col": c, "class": typeof v === "number" ? "num" : ""},
                            c === "trial" ? String(v).split("_").pop() : fmt(v)));
        });
        tbody.appendChild(tr);
      });
      var sel = Object.keys(state.selected).length;
      count.textContent = rows.length + " of " + model.rows.length + " runs shown · " + sel + " selected";
      panel.setAttribute("data-shown", String(rows.length));
      drawGroups();
    }

    function drawOverlay() {
      var chosen = Object.keys(state.selected).map(function (k) { return state.selected[k]; });
      var curve = curveSel.value;
      panel.setAttribute("data-selected", String(chosen.length));
      count.textContent = panel.getAttribute("data-shown") + " of " + model.rows.length + " runs shown · " + chosen.length + " selected";
      hint.style.display = chosen.length ? "none" : "";
      if (!chosen.length) {
        Plotly.purge(overlay);
        diff.innerHTML = "";
        return;
      }
      var traces = chosen.map(function (r, i) {
        var c = r[curve] || [[], []];
        return {x: c[0], y: c[1], mode: "lines+markers", name: runLabel(r, model) + " [" + r.status + "]",
                line: {color: PALETTE[i % PALETTE.length]}};
      });
      Plotly.react(overlay, traces, {title: {text: CURVES[curve][0] + " of the selected runs"},
        xaxis: {title: {text: "round"}}, yaxis: {title: {text: CURVES[curve][0]}}, height: 380,
        legend: {orientation: "h", y: -0.25}, margin: {t: 50}}, {responsive: true, displaylogo: false});
      drawDiff(chosen);
    }

    function drawDiff(chosen) {
      diff.innerHTML = "";
      var t = el("table", {"class": "diff-table"});
      var h = el("tr");
      h.appendChild(el("th", {}, "setting"));
      chosen.forEach(function (r) { h.appendChild(el("th", {title: r.id}, runLabel(r, model))); });
      t.appendChild(h);
      var keys = ["status"].concat(model.metrics, model.allKeys);
      var same = [];
      keys.forEach(function (k) {
        var vals = chosen.map(function (r) { return k === "status" ? r.status : value(r, k); });
        var differs = new Set(vals.map(function (v) { return JSON.stringify(v); })).size > 1;
        if (!differs && model.metrics.indexOf(k) < 0 && k !== "status") { same.push(k); return; }
        var tr = el("tr", {"class": differs ? "differs" : "", "data-key": k});
        tr.appendChild(el("td", {}, model.labels[k] || k));
        vals.forEach(function (v) { tr.appendChild(el("td", {}, fmt(v))); });
        t.appendChild(tr);
      });
      diff.appendChild(el("p", {}, "Settings of the selected runs: keys whose values differ are highlighted; " +
        same.length + " keys they share are listed below the table."));
      diff.appendChild(t);
      var d = el("details"), s = el("summary", {}, same.length + " shared keys");
      d.appendChild(s);
      d.appendChild(el("p", {"class": "shared"}, same.map(function (k) { return k + "=" + fmt(value(chosen[0], k)); }).join(" · ")));
      diff.appendChild(d);
    }

    // A group's values for its interval: each setting's mean over its seeds (runs that differ
    // in another key are not repeats of one measurement, so they are not pooled as if they
    // were); a group of one setting gives that setting's seeds.
    function settingMeans(rows, metric) {
      var keys = model.keys.filter(function (k) { return k !== "seed"; });
      var by = {}, order = [];
      rows.forEach(function (r) {
        var v = r.m[metric];
        if (v === null || v === undefined) return;
        var key = JSON.stringify(keys.map(function (k) { return r.v[k]; }));
        if (!by[key]) { by[key] = []; order.push(key); }
        by[key].push(v);
      });
      if (order.length === 1) return by[order[0]];
      return order.map(function (k) { return by[k].reduce(function (a, b) { return a + b; }, 0) / by[k].length; });
    }

    function drawGroups() {
      var g = groupSel.value, c = colourSel.value, curve = curveSel.value;
      var rows = shown().filter(function (r) { return r.status === "finished" || r.status === "diverged"; });
      panel.setAttribute("data-group", g);
      if (!g || !rows.length) { Plotly.purge(groupCurves); Plotly.purge(groupBars); return; }
      var combos = {}, order = [];
      rows.forEach(function (r) {
        var gv = r.v[g], cv = c ? r.v[c] : null;
        var key = JSON.stringify([gv, cv]);
        if (!combos[key]) { combos[key] = {g: gv, c: cv, rows: []}; order.push(key); }
        combos[key].rows.push(r);
      });
      // folders in the order --results gave them (the side-by-side bars' colours), else by value
      var folders = model.sets.map(function (rs) { return rs.folder; });
      function byKey(k, a, b) {
        return k === "folder" ? folders.indexOf(a) - folders.indexOf(b) : compare(a, b);
      }
      order.sort(function (a, b) { return byKey(g, combos[a].g, combos[b].g) || byKey(c, combos[a].c, combos[b].c); });
      var gvals = [], cvals = [];
      order.forEach(function (k) {
        if (gvals.indexOf(combos[k].g) < 0) gvals.push(combos[k].g);
        if (cvals.indexOf(combos[k].c) < 0) cvals.push(combos[k].c);
      });
      var traces = [];
      order.forEach(function (k) {
        var o = combos[k], byRound = {};
        o.rows.forEach(function (r) {
          var cu = r[curve];
          if (!cu) return;
          cu[0].forEach(function (x, i) { if (cu[1][i] !== null) (byRound[x] = byRound[x] || []).push(cu[1][i]); });
        });
        var xs = Object.keys(byRound).map(Number).sort(function (a, b) { return a - b; });
        if (!xs.length) return;
        var st = xs.map(function (x) { return stats(byRound[x]); });
        var colour = PALETTE[(c ? cvals.indexOf(o.c) : gvals.indexOf(o.g)) % PALETTE.length];
        var name = named(g, o.g) + (c ? ", " + named(c, o.c) : "");
        // bands stay in the metric's domain: accuracy 0-100, drift from 0
        var lo = st.map(function (s) { return Math.max(s.mean - s.ci, 0); });
        var hi = st.map(function (s) { return curve === "acc" ? Math.min(s.mean + s.ci, 100) : s.mean + s.ci; });
        traces.push({x: xs.concat(xs.slice().reverse()), y: hi.concat(lo.reverse()),
                     fill: "toself", mode: "lines", line: {width: 0}, fillcolor: colour, opacity: 0.18,
                     hoverinfo: "skip", showlegend: false, legendgroup: name});
        traces.push({x: xs, y: st.map(function (s) { return s.mean; }), mode: "lines", name: name + " (" + o.rows.length + " runs)",
                     legendgroup: name, line: {color: colour, dash: c ? DASHES[gvals.indexOf(o.g) % DASHES.length] : "solid"},
                     customdata: st.map(function (s) { return s.n; }),
                     hovertemplate: name + ": %{y:.3g} @ round %{x} (n=%{customdata})<extra></extra>"});
      });
      Plotly.react(groupCurves, traces, {
        title: {text: CURVES[curve][0] + " by " + g + (c ? " and " + c : "") + " (mean over the other settings and seeds, 95% band)"},
        xaxis: {title: {text: "round"}}, yaxis: {title: {text: CURVES[curve][0]}}, height: 400,
        margin: {t: 60}}, {responsive: true, displaylogo: false});
      var metric = model.metrics.indexOf("acc") >= 0 ? "acc" : model.metrics[0];
      var bars = [], ends = [];
      cvals.forEach(function (cv, ci) {
        var xs = [], ys = [], es = [], em = [], ns = [];
        gvals.forEach(function (gv) {
          var o = combos[JSON.stringify([gv, cv])];
          if (!o) return;
          var vals = settingMeans(o.rows, metric);
          if (!vals.length) return;
          var s = stats(vals);
          // an interval stays in the metric's domain, as the bands do: ACC within 0-100
          var top = metric === "acc" ? Math.min(s.mean + s.ci, 100) : s.mean + s.ci;
          var bottom = metric === "acc" ? Math.max(s.mean - s.ci, 0) : s.mean - s.ci;
          xs.push(fmt(gv)); ys.push(s.mean); es.push(top - s.mean); em.push(s.mean - bottom); ns.push(s.n);
          ends.push(bottom, top);
        });
        // dots, not bars: a bar drawn from an axis that starts at 55 makes a 1-point gap look large
        bars.push({type: "scatter", mode: "markers", x: xs, y: ys, name: c ? named(c, cv) : (model.labels[metric] || metric),
                   marker: {size: 10, color: c ? PALETTE[ci % PALETTE.length]
                     : xs.map(function (x, i) { return PALETTE[i % PALETTE.length]; })},
                   error_y: {type: "data", symmetric: false, array: es, arrayminus: em, visible: true}, customdata: ns,
                   hovertemplate: "%{x}: %{y:.3g} (n=%{customdata})<extra></extra>"});
      });
      var lo = Math.min.apply(null, ends), hi = Math.max.apply(null, ends), pad = hi > lo ? (hi - lo) * 0.08 : 1;
      Plotly.react(groupBars, bars, {
        title: {text: (model.labels[metric] || metric) + " by " + g + (c ? ", colour " + c : "") + " (mean over the settings' seed means, 95% CI; n: settings, or seeds of one setting)"},
        scattermode: "group", xaxis: {title: {text: g}, type: "category"}, yaxis: {title: {text: model.labels[metric] || metric}, range: [lo - pad, hi + pad]},
        height: 360, margin: {t: 50}}, {responsive: true, displaylogo: false});
    }

    draw();
    drawOverlay();
    panel.setAttribute("data-built", "1");
  }

  function show(id) {
    document.querySelectorAll(".view").forEach(function (v) { v.classList.toggle("on", v.id === id); });
    var view = document.getElementById(id);
    if (!view) return;
    view.querySelectorAll(".runs-panel:not([data-built])").forEach(function (p) {
      try { buildPanel(p); } catch (e) { note(e); }
    });
    view.querySelectorAll(".chart, .dyn").forEach(function (c) { if (c.querySelector(".main-svg")) Plotly.Plots.resize(c); });
  }

  (async function () {
    (0, eval)(await inflate("plotly-gz"));
    DATA = JSON.parse(await inflate("payload"));
    T975 = DATA.t975;
    var jobs = Object.keys(DATA.specs).map(function (id) {
      var s = DATA.specs[id];
      return Plotly.newPlot(id, s.data, s.layout, {responsive: true, displaylogo: false});
    });
    var select = document.getElementById("view-select");
    select.addEventListener("change", function () { show(select.value); });
    var wanted = location.hash.slice(1);
    if (wanted && document.getElementById(wanted)) select.value = wanted;
    show(select.value);
    await Promise.all(jobs);
    var n = 0;
    document.querySelectorAll(".chart").forEach(function (c) { if (c.querySelector(".main-svg")) n++; });
    document.body.setAttribute("data-charts-rendered", String(n));
    document.querySelectorAll(".view").forEach(function (v) {
      var drawn = Array.prototype.filter.call(v.querySelectorAll(".chart"),
                                              function (c) { return c.querySelector(".main-svg"); });
      v.setAttribute("data-charts-rendered", String(drawn.length));
    });
    document.body.setAttribute("data-ready", "1");
  })().catch(note);
})();
