/**
 * The admin port's live page: one self-contained HTML document (inline CSS
 * and script, no build step, nothing fetched from elsewhere). It reads
 * `/contract` (the contract document of docs/metrics.md: `{ rows, findings }`,
 * the rows drawn as a table of the limit's clauses, purpose, key, algorithm
 * and bound, status, fail mode, store, shadow and reason, with every other
 * field of a row under "more"; the findings as a list) and polls `/stats.json` (a `StatsSnapshot`) every second, drawing
 * per limit a small SVG chart of the admitted, rejected, shadow-rejected and
 * fallback rates, and the store health table; and polls `/shadow.json` (a
 * `ShadowSnapshot`), drawing a section per shadowed limit: time in shadow,
 * the would-reject rate, the top-10 share and the top keys it would have
 * rejected (principals by name, other keys by keyed hash), hidden while no
 * limit is in shadow. An answer of another shape is shown as an error,
 * never as an empty contract.
 *
 * The document holds no data: everything it shows arrives as JSON and is
 * put in the page with `textContent` and `setAttribute` only, never parsed
 * as HTML, so a limit name, reason or error cannot inject markup.
 */
export function renderAdminPage(): string {
  return PAGE;
}

const STYLE = `
:root { color-scheme: light dark; --fg: #1d2330; --muted: #5d6778; --bg: #f6f7f9; --card: #fff; --line: #d9dde4;
  --admitted: #2f855a; --rejected: #c53030; --shadow: #d69e2e; --fallback: #6b46c1; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e8ec; --muted: #9aa3b2; --bg: #14171c; --card: #1c2027; --line: #333a45; } }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; align-items: baseline; gap: 16px; padding: 12px 20px; border-bottom: 1px solid var(--line); background: var(--card); }
h1 { font-size: 18px; margin: 0; }
h2 { font-size: 15px; margin: 20px 0 8px; }
h2 small, .meta, .totals { color: var(--muted); font-weight: normal; font-size: 12px; }
main { padding: 0 20px 24px; }
#status[data-state="error"] { color: var(--rejected); }
.legend span { margin-right: 14px; font-size: 12px; }
.legend i { display: inline-block; width: 10px; height: 3px; margin-right: 4px; vertical-align: middle; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(300px, 1fr)); gap: 12px; }
.limit { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; }
.limit h3 { font-size: 14px; margin: 0; font-family: ui-monospace, monospace; }
.chart { width: 100%; height: 80px; display: block; margin: 6px 0 2px; border-bottom: 1px solid var(--line); }
.chart polyline { fill: none; stroke-width: 1.5; vector-effect: non-scaling-stroke; }
.s-admitted { stroke: var(--admitted); } .s-rejected { stroke: var(--rejected); }
.s-shadowRejected { stroke: var(--shadow); stroke-dasharray: 4 2; } .s-fallback { stroke: var(--fallback); }
i.s-admitted { background: var(--admitted); } i.s-rejected { background: var(--rejected); }
i.s-shadowRejected { background: var(--shadow); } i.s-fallback { background: var(--fallback); }
table { border-collapse: collapse; background: var(--card); border: 1px solid var(--line); font-size: 12px; }
th, td { padding: 4px 8px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; white-space: nowrap; }
td.long { white-space: normal; min-width: 22em; max-width: 36em; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th { font-weight: 600; white-space: nowrap; }
td.state-open, td.state-half-open, td.not-ready { color: var(--rejected); font-weight: 600; }
.scroll { overflow-x: auto; }
.empty { color: var(--muted); }
td.error { color: var(--rejected); font-weight: 600; }
h3 { font-size: 14px; margin: 14px 0 6px; }
h3 small { color: var(--muted); font-weight: normal; font-size: 12px; }
td.more dl { display: grid; grid-template-columns: auto auto; gap: 0 8px; margin: 4px 0 0; }
td.more dt { color: var(--muted); } td.more dd { margin: 0; white-space: normal; max-width: 36em; }
#findings { margin: 0; padding-left: 20px; font-size: 12px; }
#findings .severity-error { color: var(--rejected); font-weight: 600; }
#findings .severity-warn { color: var(--shadow); }
.shadow-limit { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; margin-bottom: 12px; }
.shadow-limit h3 { margin: 0 0 4px; font-family: ui-monospace, monospace; }
.shadow-limit table { margin-top: 6px; }
.shadow-limit td.key { font-family: ui-monospace, monospace; }
`;

// Plain ES2017 in the browser; no template literals inside, so this TypeScript string needs no escaping.
const SCRIPT = `
"use strict";
(function () {
  var SERIES = [["admitted", "admitted"], ["rejected", "rejected"], ["shadowRejected", "shadow-rejected"], ["fallback", "fallback"]];
  var SVG = "http://www.w3.org/2000/svg";
  var W = 300, H = 80;
  // [field, heading]: the contract's clauses (a serve contract's rows and an rls config's rules both), as the banner names them.
  var CLAUSES = [["rule", "rule"], ["path", "descriptors"], ["name", "limit"], ["purpose", "purpose"], ["key", "key"], ["algorithm", "algorithm"], ["bound", "bound"],
    ["status", "status"], ["onError", "on error"], ["failMode", "fail mode"], ["store", "store"], ["shadow", "shadow"], ["reason", "reason"]];
  var cards = new Map();

  function el(tag, className, text) {
    var e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function cellText(v) {
    if (v === null || v === undefined) return "\\u2014";
    if (typeof v === "number") return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(4)));
    if (typeof v === "object") return JSON.stringify(v);
    return String(v);
  }

  function cell(v) {
    var text = cellText(v);
    return el("td", typeof v === "number" ? "num" : text.length > 40 ? "long" : "", text);
  }

  function setStatus(state, text) {
    var s = document.getElementById("status");
    s.setAttribute("data-state", state);
    s.textContent = text;
  }

  function emptyRow(body, className, text) {
    var tr = el("tr");
    tr.appendChild(el("td", className, text));
    body.appendChild(tr);
  }

  // The contract document: { rows: [...], findings: [...] } (docs/metrics.md, The contract document).
  function renderContract(doc) {
    var table = document.getElementById("contract");
    var head = table.tHead, body = table.tBodies[0];
    var list = document.getElementById("findings");
    head.replaceChildren();
    body.replaceChildren();
    list.replaceChildren();
    var rows = doc && typeof doc === "object" ? doc.rows : undefined;
    var findings = doc && typeof doc === "object" ? doc.findings : undefined;
    if (!Array.isArray(rows) || !Array.isArray(findings)) {
      emptyRow(body, "error", "/contract answered something other than { rows, findings }");
      throw new Error("/contract: not a contract document");
    }
    if (rows.length === 0) emptyRow(body, "empty", "no limits");
    else {
      // The clauses of a limit, in the order the contract states them; every other field in "more".
      var present = {};
      rows.forEach(function (row) {
        if (row && typeof row === "object") Object.keys(row).forEach(function (k) { present[k] = true; });
      });
      var columns = CLAUSES.filter(function (c) { return present[c[0]]; });
      var shown = {};
      columns.forEach(function (c) { shown[c[0]] = true; });
      var tr = el("tr");
      columns.forEach(function (c) {
        var th = el("th", "", c[1]);
        th.setAttribute("data-field", c[0]);
        tr.appendChild(th);
      });
      var more = el("th", "", "more");
      more.setAttribute("data-field", "");
      tr.appendChild(more);
      head.appendChild(tr);
      rows.forEach(function (row) {
        var r = el("tr");
        if (row && typeof row.name === "string") r.setAttribute("data-limit", row.name);
        columns.forEach(function (c) {
          var td = cell(row ? row[c[0]] : undefined);
          td.setAttribute("data-field", c[0]);
          r.appendChild(td);
        });
        var rest = row && typeof row === "object" ? Object.keys(row).filter(function (k) { return !shown[k]; }) : [];
        var td = el("td", "more");
        if (rest.length > 0) {
          var details = el("details");
          details.appendChild(el("summary", "", rest.length + " more"));
          var dl = el("dl");
          rest.forEach(function (k) {
            dl.appendChild(el("dt", "", k));
            dl.appendChild(el("dd", "", cellText(row[k])));
          });
          details.appendChild(dl);
          td.appendChild(details);
        }
        r.appendChild(td);
        body.appendChild(r);
      });
    }
    document.getElementById("findings-count").textContent = findings.length === 0 ? "none" : String(findings.length);
    findings.forEach(function (f) {
      var li = el("li", f && typeof f.severity === "string" ? "severity-" + f.severity : "");
      if (f && typeof f.code === "string") li.setAttribute("data-code", f.code);
      li.textContent = [f && f.severity, f && f.code, f && f.subject].map(cellText).join(" ") + ": " + cellText(f && f.message);
      list.appendChild(li);
    });
  }

  function card(limit) {
    var c = cards.get(limit.name);
    if (c) return c;
    var root = el("div", "limit");
    root.setAttribute("data-limit", limit.name);
    root.appendChild(el("h3", "", limit.name));
    var meta = el("div", "meta");
    root.appendChild(meta);
    var svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("class", "chart");
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    svg.setAttribute("preserveAspectRatio", "none");
    svg.setAttribute("role", "img");
    var lines = {};
    // Drawn so that rejections, the line to watch, lie on top.
    [SERIES[3], SERIES[2], SERIES[0], SERIES[1]].forEach(function (s) {
      var p = document.createElementNS(SVG, "polyline");
      p.setAttribute("class", "s-" + s[0]);
      p.setAttribute("data-series", s[1]);
      svg.appendChild(p);
      lines[s[0]] = p;
    });
    root.appendChild(svg);
    var totals = el("div", "totals");
    root.appendChild(totals);
    c = { root: root, meta: meta, svg: svg, lines: lines, totals: totals };
    cards.set(limit.name, c);
    return c;
  }

  function renderLimits(snapshot) {
    var grid = document.getElementById("limits");
    var seen = new Set();
    var minutes = Math.round(snapshot.windowMs / 60000 * 10) / 10;
    document.getElementById("window").textContent = "per second, last " + minutes + " min";
    snapshot.limits.forEach(function (limit) {
      seen.add(limit.name);
      var c = card(limit);
      if (c.root.parentNode !== grid) grid.appendChild(c.root);
      c.meta.textContent = [limit.purpose, "on error: " + limit.onError, "store: " + limit.store].concat(limit.shadow ? ["shadow"] : []).join(" \\u00b7 ");
      var max = 1;
      SERIES.forEach(function (s) { limit.series[s[0]].forEach(function (n) { if (n > max) max = n; }); });
      SERIES.forEach(function (s) {
        var values = limit.series[s[0]];
        var step = values.length > 1 ? W / (values.length - 1) : W;
        var points = values.map(function (n, i) { return (i * step).toFixed(1) + "," + (H - 2 - (n / max) * (H - 4)).toFixed(1); });
        c.lines[s[0]].setAttribute("points", points.join(" "));
        // A line with nothing in the window would only paint over the baseline.
        c.lines[s[0]].setAttribute("visibility", s[0] !== "admitted" && limit.totals[s[0]] === 0 ? "hidden" : "visible");
        c.svg.setAttribute("data-" + s[1], String(limit.totals[s[0]]));
      });
      c.svg.setAttribute("data-max", String(max));
      c.svg.setAttribute("aria-label", limit.name + ": up to " + max + " per second");
      c.totals.textContent = "admitted " + limit.totals.admitted + " \\u00b7 rejected " + limit.totals.rejected +
        " \\u00b7 shadow " + limit.totals.shadowRejected + " \\u00b7 fallback " + limit.totals.fallback + " \\u00b7 peak " + max + "/s";
    });
    cards.forEach(function (c, name) {
      if (!seen.has(name)) { c.root.remove(); cards.delete(name); }
    });
    if (snapshot.limits.length === 0) grid.replaceChildren(el("p", "empty", "no limits"));
  }

  function renderStores(snapshot) {
    var body = document.getElementById("stores").tBodies[0];
    body.replaceChildren();
    snapshot.stores.forEach(function (s) {
      var r = el("tr");
      r.setAttribute("data-store", s.name);
      r.appendChild(el("td", "", s.name));
      r.appendChild(el("td", "state-" + s.state, s.state));
      r.appendChild(el("td", "", (s.failureRate * 100).toFixed(1) + "%"));
      r.appendChild(el("td", "", String(s.calls)));
      r.appendChild(el("td", "", String(s.inFlight)));
      r.appendChild(el("td", s.ready ? "" : "not-ready", s.ready ? "yes" : "no"));
      r.appendChild(el("td", "", s.p99Ms === null ? "\\u2014" : s.p99Ms.toFixed(2) + " ms (" + s.latencySamples + " calls)"));
      body.appendChild(r);
    });
    document.getElementById("replicas").textContent = snapshot.replicas === null ? "" : "replicas k = " + snapshot.replicas;
  }

  function duration(ms) {
    var s = Math.floor(ms / 1000);
    if (s < 120) return s + " s";
    var m = Math.floor(s / 60);
    if (m < 120) return m + " min";
    var h = Math.floor(m / 60);
    return h < 48 ? h + " h " + (m % 60) + " min" : Math.floor(h / 24) + " d " + (h % 24) + " h";
  }

  function percent(x) {
    return (x * 100).toFixed(x < 0.1 ? 2 : 1) + "%";
  }

  // /shadow.json: { now, limits: [ShadowEntry] } (docs/metrics.md, Shadow report). One section per shadowed limit.
  function renderShadow(snapshot) {
    var section = document.getElementById("shadow");
    var list = document.getElementById("shadow-limits");
    var limits = snapshot && Array.isArray(snapshot.limits) ? snapshot.limits : null;
    if (limits === null) throw new Error("/shadow.json: not a shadow snapshot");
    section.hidden = limits.length === 0;
    list.replaceChildren();
    limits.forEach(function (r) {
      var box = el("div", "shadow-limit");
      box.setAttribute("data-limit", String(r.limitName));
      box.setAttribute("data-limiter", String(r.limiter));
      var h = el("h3", "", String(r.limitName) + " ");
      h.appendChild(el("small", "", String(r.limiter) + " \u00b7 key " + String(r.keySpec)));
      box.appendChild(h);
      var meta = el("div", "meta", "in shadow " + duration(r.inShadowMs) + " \u00b7 would reject " + percent(r.wouldRejectRate) + " of " + r.checks +
        " checks (" + r.wouldReject + ") in the last " + duration(r.periodMs) + " \u00b7 top 10 keys: " + percent(r.top10Share) + " of would-be rejections");
      meta.setAttribute("data-rate", String(r.wouldRejectRate));
      meta.setAttribute("data-top10", String(r.top10Share));
      box.appendChild(meta);
      var table = el("table");
      var head = el("tr");
      ["key", "kind", "would reject", "at least"].forEach(function (t) { head.appendChild(el("th", "", t)); });
      var thead = el("thead");
      thead.appendChild(head);
      table.appendChild(thead);
      var body = el("tbody");
      if (!Array.isArray(r.top) || r.top.length === 0) emptyRow(body, "empty", "nothing it would have rejected");
      else r.top.forEach(function (k) {
        var tr = el("tr");
        tr.setAttribute("data-key", String(k.key));
        tr.appendChild(el("td", "key", String(k.key)));
        tr.appendChild(el("td", "", String(k.kind)));
        tr.appendChild(el("td", "num", String(k.wouldReject)));
        tr.appendChild(el("td", "num", String(k.atLeast)));
        body.appendChild(tr);
      });
      table.appendChild(body);
      box.appendChild(table);
      var sketch = r.sketch || {};
      box.appendChild(el("div", "meta", "sketch: " + sketch.counters + " of at most " + sketch.maxCounters + " counters (at most " + Math.round(sketch.maxBytes / 1024) + " KiB)"));
      list.appendChild(box);
    });
  }

  function getJson(path) {
    return fetch(path, { cache: "no-store", headers: { accept: "application/json" } }).catch(function () {
      throw new Error("cannot reach the service");
    }).then(function (res) {
      if (!res.ok) throw new Error(path + ": HTTP " + res.status);
      return res.json();
    });
  }

  var contractShown = 0;
  function poll() {
    var now = Date.now();
    var work = [getJson("stats.json").then(function (snapshot) {
      renderLimits(snapshot);
      renderStores(snapshot);
      document.body.setAttribute("data-updated", String(snapshot.now));
    }), getJson("shadow.json").then(renderShadow)];
    // The contract changes only on a reload: fetched at start, then every 10 s.
    if (now - contractShown > 10000) work.push(getJson("contract").then(function (doc) { renderContract(doc); contractShown = now; }));
    Promise.all(work).then(function () {
      setStatus("live", "live \\u00b7 updated " + new Date().toLocaleTimeString());
    }, function (error) {
      setStatus("error", error && error.message ? error.message : String(error));
    }).then(function () { setTimeout(poll, 1000); });
  }
  poll();
})();
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; connect-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src 'self' data:">
<title>ratecontract admin</title>
<style>${STYLE}</style>
</head>
<body>
<header><h1>ratecontract</h1><span id="status" data-state="connecting">connecting\u2026</span><span id="replicas" class="meta"></span></header>
<main>
<section>
<h2>Limits <small id="window">per second</small></h2>
<div class="legend"><span><i class="s-admitted"></i>admitted</span><span><i class="s-rejected"></i>rejected</span><span><i class="s-shadowRejected"></i>shadow-rejected</span><span><i class="s-fallback"></i>fallback (fail mode)</span></div>
<div id="limits" class="grid"></div>
</section>
<section id="shadow" hidden>
<h2>Shadow <small>who the limits in shadow would have rejected</small></h2>
<div id="shadow-limits"></div>
</section>
<section>
<h2>Stores</h2>
<table id="stores"><thead><tr><th>store</th><th>breaker</th><th>failure rate</th><th>calls in window</th><th>in flight</th><th>ready</th><th>p99 latency (1 min)</th></tr></thead><tbody></tbody></table>
</section>
<section>
<h2>Contract</h2>
<div class="scroll"><table id="contract"><thead></thead><tbody></tbody></table></div>
<h3>Findings <small id="findings-count"></small></h3>
<ul id="findings"></ul>
</section>
</main>
<script>${SCRIPT}</script>
</body>
</html>
`;
