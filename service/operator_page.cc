#include "hourglass/operator_page.h"

namespace hourglass {
namespace {

// Every value from the service goes into the page as text (textContent, never markup): a feature
// is any client's bytes.
constexpr std::string_view kPage = R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>hourglass</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 0 auto; max-width: 1200px; padding: 1em;
         color: #1d2430; background: #fafbfc; }
  h1 { font-size: 1.4em; margin: 0 0 .2em; } h2 { font-size: 1.1em; margin: 1.2em 0 .4em; }
  .muted { color: #667; } .bad { color: #b3261e; font-weight: 600; } .ok { color: #1b6e3a; }
  table { border-collapse: collapse; width: 100%; background: #fff; }
  th, td { text-align: left; padding: .25em .6em; border-bottom: 1px solid #e3e6ea; }
  th { font-weight: 600; background: #f0f2f5; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
  section { margin-bottom: 1.2em; } a { color: #0b57d0; cursor: pointer; }
  .chart { background: #fff; border: 1px solid #e3e6ea; margin: .3em 0; }
  .chart rect { fill: #5b8def; } .chart line { stroke: #b3261e; stroke-dasharray: 4 3; }
  .chart text { font-size: 11px; fill: #445; }
  form { margin: .4em 0; } input { font: inherit; padding: .15em .4em; }
  pre { background: #fff; border: 1px solid #e3e6ea; padding: .6em; overflow: auto; }
</style>
</head>
<body>
<h1>hourglass</h1>
<div id="status" class="muted">loading...</div>
<form id="login" hidden>The admin calls need this service's token (hourglass serve
--admin-token-file): <input id="token" type="password" size="30"> <button>use it</button></form>

<section>
<h2>Limited now (last 5 minutes, most denied first)</h2>
<div id="limited"></div>
</section>

<section>
<h2>A feature's timeline</h2>
<form id="lookup"><label>event <select id="event"></select></label>
<label>feature <input id="feature" size="40"></label> <button>show</button></form>
<div id="feature-view"></div>
</section>

<section>
<h2>The store</h2>
<div id="store"></div>
</section>

<section>
<h2>The policy in force</h2>
<div id="policy"></div>
</section>

<script>
"use strict";
const $ = (id) => document.getElementById(id);
let token = sessionStorage.getItem("hourglass-admin-token");

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}
function row(cells, header) {
  const tr = el("tr");
  for (const c of cells) {
    const td = el(header ? "th" : "td");
    if (c instanceof Node) td.appendChild(c); else td.textContent = c === undefined ? "" : String(c);
    if (typeof c === "number") td.className = "num";
    tr.appendChild(td);
  }
  return tr;
}
function table(headers, rows) {
  const t = el("table");
  t.appendChild(row(headers, true));
  for (const r of rows) t.appendChild(row(r));
  return t;
}
function time(unix) { return new Date(unix * 1000).toISOString().replace(".000Z", "Z"); }

// GET or POST on this service, with the admin token once given; a 401 shows the token form.
async function call(path, body) {
  const headers = {};
  if (token) headers["Authorization"] = "Bearer " + token;
  const init = body === undefined ? { headers } : { method: "POST", headers, body: JSON.stringify(body) };
  const r = await fetch(path, init);
  if (r.status === 401) $("login").hidden = false;
  return r;
}

// The Prometheus text of /metrics: [{name, labels, value}].
function samples(text) {
  const out = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const m = line.match(/^([a-z_]+)(\{(.*)\})? (\S+)$/);
    if (!m) continue;
    const labels = {};
    for (const l of (m[3] || "").matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[4]) });
  }
  return out;
}

// What a hit now would get: "free at", "blocked to", "banned" or "ok", and the binding limit.
function standing(peek) {
  if (!peek || !peek.limits || peek.limits.length === 0) return { now: "-", binds: "-" };
  let binds = peek.limits[0];
  for (const l of peek.limits) {
    if (peek.allowed ? l.remaining < binds.remaining
                     : (l.retry_after === null || (binds.retry_after !== null && l.retry_after > binds.retry_after))) binds = l;
  }
  if (peek.limits.some((l) => l.limit === 0)) return { now: "banned", binds: "ban", bad: true };
  if (peek.allowed) return { now: "ok", binds: binds.spec };
  if (peek.retry_after === null || peek.retry_after === undefined) return { now: "never", binds: binds.spec, bad: true };
  const until = time(peek.at + peek.retry_after);
  return { now: (peek.blocked_until ? "blocked to " : "free at ") + until, binds: binds.spec, bad: true };
}

async function showLimited(policy) {
  const box = $("limited");
  box.replaceChildren();
  for (const event of Object.keys(policy.events)) {
    const r = await call("/v1/top?event=" + encodeURIComponent(event) + "&window=5m&by=denied&n=10");
    if (!r.ok) { box.appendChild(el("p", event + ": " + r.status, "bad")); continue; }
    const top = await r.json();
    const rows = [];
    for (const f of top.features) {
      const peek = await (await call("/v1/check", { event, feature: f.feature, record: false })).json();
      const s = standing(peek);
      const link = el("a", f.feature);
      link.addEventListener("click", () => { $("event").value = event; $("feature").value = f.feature; showFeature(); });
      rows.push([link, f.estimate, f.error, (f.last_decision.allowed ? "allowed " : "denied ") + time(f.last_decision.at),
                 s.binds, el("span", s.now, s.bad ? "bad" : "ok")]);
    }
    box.appendChild(el("h3", event + " (" + top.total + " denied, a feature not listed: at most " + top.bound + ")"));
    box.appendChild(rows.length ? table(["feature", "denied~", "+-error", "last decision", "binds", "now"], rows)
                                : el("p", "no denial in the last 5 minutes", "muted"));
  }
}

// A bar chart of `values` (oldest first), with `limit` as a dashed line when given.
function chart(title, values, limit) {
  const w = 720, h = 110, pad = 24, max = Math.max(1, limit || 0, ...values);
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("class", "chart"); svg.setAttribute("width", w); svg.setAttribute("height", h);
  svg.setAttribute("role", "img"); svg.setAttribute("aria-label", title);
  const bw = (w - pad) / values.length;
  values.forEach((v, i) => {
    const r = document.createElementNS(ns, "rect");
    const bh = (h - pad) * v / max;
    r.setAttribute("x", pad + i * bw); r.setAttribute("y", h - 14 - bh);
    r.setAttribute("width", Math.max(1, bw - 1)); r.setAttribute("height", bh);
    const tip = document.createElementNS(ns, "title"); tip.textContent = String(v); r.appendChild(tip);
    svg.appendChild(r);
  });
  if (limit) {
    const y = h - 14 - (h - pad) * limit / max, l = document.createElementNS(ns, "line");
    l.setAttribute("x1", pad); l.setAttribute("x2", w); l.setAttribute("y1", y); l.setAttribute("y2", y);
    svg.appendChild(l);
  }
  const t = document.createElementNS(ns, "text");
  t.setAttribute("x", pad); t.setAttribute("y", 11);
  t.textContent = title + " (max " + Math.max(...values) + (limit ? ", limit " + limit : "") + ")";
  svg.appendChild(t);
  return svg;
}

async function showFeature() {
  const event = $("event").value, feature = $("feature").value, box = $("feature-view");
  box.replaceChildren();
  if (!feature) return;
  location.hash = "event=" + encodeURIComponent(event) + "&feature=" + encodeURIComponent(feature);
  const r = await call("/v1/inspect?event=" + encodeURIComponent(event) + "&feature=" + encodeURIComponent(feature));
  if (!r.ok) { box.appendChild(el("p", "inspect: " + r.status + " " + (await r.text()), "bad")); return; }
  const i = await r.json();
  const peek = await (await call("/v1/check", { event, feature, record: false })).json();
  const s = standing(peek);
  const limitOf = (w) => { const l = (peek.limits || []).find((x) => x.window === w); return l ? l.limit : 0; };
  box.appendChild(el("p", event + " " + feature + " at " + time(i.at) + ": a hit now: " + s.now +
                          (s.binds !== "-" ? " (" + s.binds + " binds)" : ""), s.bad ? "bad" : "ok"));
  if (i.seconds) box.appendChild(chart("per second, last minute", i.seconds, limitOf(1)));
  if (i.minutes) box.appendChild(chart("per minute, last hour", i.minutes, limitOf(60)));
  if (i.hours) box.appendChild(chart("per hour, last day", i.hours, limitOf(3600)));
  box.appendChild(table(["limit", "count", "remaining", "free in"],
    (peek.limits || []).map((l) => [l.spec, l.count, l.remaining, l.retry_after === null ? "never" : (l.retry_after > 0 ? l.retry_after + " s" : "-")])));
}

async function showStore(metrics, ready) {
  const box = $("store");
  box.replaceChildren();
  box.appendChild(el("p", ready.ok ? "ready" : "not ready: " + (await ready.text()), ready.ok ? "ok" : "bad"));
  const servers = {};
  const at = (s) => servers[s] || (servers[s] = { errors: 0, evictions: 0, bytes: "", limit: "", clock: "", losses: 0 });
  for (const s of metrics) {
    const server = s.labels.server;
    if (!server) continue;
    if (s.name === "hourglass_store_errors_total") at(server).errors += s.value;
    if (s.name === "hourglass_store_evictions_total") at(server).evictions += s.value;
    if (s.name === "hourglass_store_bytes") at(server).bytes = s.value;
    if (s.name === "hourglass_store_limit_bytes") at(server).limit = s.value;
    if (s.name === "hourglass_clock_offset_seconds") at(server).clock = s.value;
    if (s.name === "hourglass_store_losses_total") at(server).losses += s.value;
  }
  const rows = Object.entries(servers).map(([s, v]) =>
    [s, v.errors, v.evictions, v.losses, v.bytes, v.limit, v.clock]);
  box.appendChild(rows.length ? table(["server", "errors", "evictions", "losses", "bytes", "limit bytes", "clock offset s"], rows)
                              : el("p", "no figures from the store yet (--stats-interval)", "muted"));
  // on_store_failure: local: what this service decided alone, and what it still owes the store.
  const value = (name) => { const s = metrics.find((x) => x.name === name); return s ? s.value : 0; };
  const pending = value("hourglass_fallback_pending_hits");
  box.appendChild(el("p", "decided here while the store failed: " + pending + " hits to write back (" +
    value("hourglass_fallback_pending_features") + " features), " +
    value("hourglass_fallback_written_back_hits_total") + " written back, " +
    value("hourglass_fallback_expired_hits_total") + " expired; services sharing the store: " +
    value("hourglass_fallback_services"), pending > 0 ? "bad" : "muted"));
}

function showPolicy(policy) {
  const box = $("policy");
  box.replaceChildren();
  box.appendChild(el("p", "file: " + (policy.file || "(none)"), "muted"));
  const rows = Object.entries(policy.events).map(([e, p]) =>
    [e, (p.limits || []).join(", "), p.mode, p.on_store_failure, p.block_for ? p.block_for + " s" : "-",
     Object.keys(p.overrides || {}).length]);
  box.appendChild(table(["event", "limits", "mode", "store down", "penalty", "overrides"], rows));
  const select = $("event");
  select.replaceChildren(...Object.keys(policy.events).map((e) => el("option", e)));
}

async function refresh() {
  try {
    const [p, m, ready] = await Promise.all([call("/v1/policy"), fetch("/metrics"), fetch("/readyz")]);
    if (!p.ok) { $("status").textContent = "/v1/policy: " + p.status + " " + (await p.text()); $("status").className = "bad"; return; }
    const policy = await p.json(), metrics = samples(await m.text());
    const build = metrics.find((s) => s.name === "hourglass_build_info");
    const loaded = metrics.find((s) => s.name === "hourglass_config_last_reload_success_timestamp_seconds");
    const reloadOk = metrics.find((s) => s.name === "hourglass_config_last_reload_successful");
    $("status").textContent = "version " + (build ? build.labels.version : "?") + ", policy loaded " +
      (loaded ? time(loaded.value) : "?") + (reloadOk && reloadOk.value === 0 ? ", LAST RELOAD REFUSED (the log says why)" : "") +
      ", " + new Date().toISOString();
    $("status").className = reloadOk && reloadOk.value === 0 ? "bad" : "muted";
    showPolicy(policy);
    await showLimited(policy);
    await showStore(metrics, ready);
    document.body.dataset.loaded = "true";
  } catch (e) {
    $("status").textContent = "error: " + e; $("status").className = "bad";
  }
}

$("lookup").addEventListener("submit", (e) => { e.preventDefault(); showFeature(); });
$("login").addEventListener("submit", (e) => {
  e.preventDefault();
  token = $("token").value;
  sessionStorage.setItem("hourglass-admin-token", token);
  $("login").hidden = true;
  refresh();
});
(async () => {
  await refresh();
  const hash = new URLSearchParams(location.hash.slice(1));
  if (hash.get("feature")) {
    $("event").value = hash.get("event") || $("event").value;
    $("feature").value = hash.get("feature");
    await showFeature();
  }
  document.body.dataset.ready = "true";
  setInterval(refresh, 10000);
})();
</script>
</body>
</html>
)HTML";

}  // namespace

std::string_view OperatorPageHtml() { return kPage; }

}  // namespace hourglass
