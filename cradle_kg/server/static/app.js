// cradle-kg web page: query page, run browser, approvals inbox. Vanilla JS, no CDN.
// Every value from the graph is put in the page as text (textContent), never as HTML.
"use strict";

const ID = "https://w3id.org/cradle/id/";
const RUN = "https://w3id.org/cradle/run/";
const PREFIXES = [["https://w3id.org/cradle#", "cradle:"], ["http://www.w3.org/ns/prov#", "prov:"],
  ["http://www.w3.org/1999/02/22-rdf-syntax-ns#", "rdf:"], [ID, ""], [RUN, "run graph "]];
const $ = (sel) => document.querySelector(sel);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

function status(text) { $("#status").textContent = text || ""; }

function short(value) {
  for (const [ns, p] of PREFIXES) if (value.startsWith(ns)) return p + decodeURIComponent(value.slice(ns.length));
  return value;
}

async function fetchJSON(url, opts = {}) {
  const res = await fetch(url, opts);
  const text = await res.text();
  if (!res.ok) {
    let message = text;
    try { const body = JSON.parse(text); message = (body.detail && (body.detail.message || JSON.stringify(body.detail))) || text; } catch (e) { /* plain text */ }
    throw new Error(`${res.status}: ${message}`);
  }
  return text ? JSON.parse(text) : null;
}

const RESULTS_JSON = { Accept: "application/sparql-results+json" };

function sparql(query) {
  return fetchJSON("/sparql", { method: "POST", headers: { ...RESULTS_JSON,
    "Content-Type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ query }) });
}

function named(name, params = {}) {
  return fetchJSON(`/queries/${encodeURIComponent(name)}?` + new URLSearchParams(params), { headers: RESULTS_JSON });
}

function runIdOf(graphIri) { return decodeURIComponent(graphIri.slice(RUN.length)); }

function cell(term) {
  if (!term) return "";
  if (term.type === "uri" && term.value.startsWith(RUN)) {
    const id = runIdOf(term.value);
    return el("a", { href: "#/run/" + encodeURIComponent(id), class: "run" }, id);
  }
  return term.type === "uri" ? short(term.value) : term.value;
}

function renderResults(target, doc) {
  target.replaceChildren();
  if (doc && "boolean" in doc) { target.append(el("p", {}, `ASK: ${doc.boolean}`)); return; }
  const vars = doc.head.vars;
  const table = el("table", {}, el("thead", {}, el("tr", {}, ...vars.map((v) => el("th", {}, v)))));
  const body = el("tbody");
  for (const row of doc.results.bindings) body.append(el("tr", {}, ...vars.map((v) => el("td", {}, cell(row[v])))));
  table.append(body);
  target.append(table, el("p", {}, `${doc.results.bindings.length} rows`));
}

function showError(target, err) { target.replaceChildren(el("p", { class: "error" }, String(err.message || err))); }

// --- query page -------------------------------------------------------------------------

let catalog = [];
let selected = null;

async function loadCatalog() {
  catalog = await fetchJSON("/queries");
  const list = $("#named");
  list.replaceChildren(...catalog.map((q) => el("li", {}, el("button", { type: "button", "data-query": q.name,
    onclick: () => pick(q) }, q.name, el("small", {}, q.question)))));
}

function pick(q) {
  selected = q;
  for (const b of document.querySelectorAll("#named button")) b.classList.toggle("active", b.dataset.query === q.name);
  $("#question").textContent = q.question + (q.example ? `  —  e.g. ${q.example}` : "");
  $("#editor").value = q.text;
  $("#params").replaceChildren(...q.params.map((p) => el("label", {}, `${p.name}${p.required ? "" : " (optional)"}`,
    el("input", { name: p.name, placeholder: p.description || p.kind, "data-param": p.name }))));
}

async function runQuery() {
  const out = $("#results");
  const text = $("#editor").value;
  status("running…");
  try {
    let doc;
    if (selected && text === selected.text) {
      const params = {};
      for (const input of document.querySelectorAll("#params input")) if (input.value) params[input.name] = input.value;
      doc = await named(selected.name, params);
    } else {
      doc = await sparql(text);
    }
    renderResults(out, doc);
  } catch (err) { showError(out, err); }
  status("");
}

// --- run browser ------------------------------------------------------------------------

async function showRuns() {
  const target = $("#runs-list");
  try { renderResults(target, await named("runs")); } catch (err) { showError(target, err); }
}

const COLUMNS = { agent: 0, task: 0, proposal: 1, fact: 1, decision: 2, policy: 2, approval: 3,
  action: 4, tool: 4, resource: 4, observation: 5, evidence: 5, verification: 6, transition: 7, state: 8 };
const COLOURS = { agent: "#8e9aaf", task: "#8e9aaf", proposal: "#5b8def", fact: "#7aa6f5", decision: "#b072d1",
  policy: "#d3a6e8", approval: "#e0a03a", action: "#2f9e78", tool: "#9cc9b8", resource: "#9cc9b8",
  observation: "#63b3c9", evidence: "#e6c65c", verification: "#3c8dbc", transition: "#4f6d7a", state: "#a7b7c0" };
const BAD = new Set(["Deny", "Failed", "Aborted", "Rejected", "Inconclusive", "Expired"]);
const SVGNS = "http://www.w3.org/2000/svg";

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function kindOf(iri) { return iri.startsWith(ID) ? iri.slice(ID.length).split("/")[0] : "other"; }

function labelOf(iri) {
  const rest = decodeURIComponent(iri.slice(ID.length).split("/").slice(1).join("/"));
  const tail = rest.includes("/") ? rest.slice(rest.lastIndexOf("/") + 1) : rest;
  return tail.length > 24 ? tail.slice(0, 22) + "…" : tail;
}

function drawGraph(target, doc) {
  const nodes = new Map();
  const edges = [];
  const states = new Map();
  for (const row of doc.results.bindings) {
    if (row.p) { edges.push([row.s.value, short(row.p.value), row.o.value]); }
    else if (row.status) states.set(row.s.value, row.status.value);
  }
  for (const [s, , o] of edges) for (const n of [s, o]) if (!nodes.has(n)) nodes.set(n, { iri: n, kind: kindOf(n) });
  const columns = [];
  for (const n of nodes.values()) {
    const col = COLUMNS[n.kind] ?? 9;
    (columns[col] = columns[col] || []).push(n);
  }
  const W = 170, H = 46, GX = 60, GY = 18, PAD = 20;
  let rows = 0;
  columns.forEach((list, col) => {
    if (!list) return;
    list.sort((a, b) => (a.kind + a.iri).localeCompare(b.kind + b.iri));
    list.forEach((n, i) => { n.x = PAD + col * (W + GX); n.y = PAD + i * (H + GY); });
    rows = Math.max(rows, list.length);
  });
  const width = PAD * 2 + columns.length * (W + GX);
  const height = PAD * 2 + Math.max(rows, 1) * (H + GY);
  const root = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": "provenance graph of the run" });
  const defs = svg("defs");
  const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" });
  marker.append(svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#6b7785" }));
  defs.append(marker);
  root.append(defs);
  for (const [s, p, o] of edges) {
    const a = nodes.get(s), b = nodes.get(o);
    const forward = a.x <= b.x;
    const x1 = forward ? a.x + W : a.x, x2 = forward ? b.x : b.x + W;
    const y1 = a.y + H / 2, y2 = b.y + H / 2;
    const mid = (x1 + x2) / 2;
    const g = svg("g", { class: "edge", "data-predicate": p });
    g.append(svg("path", { d: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`, fill: "none",
      stroke: "#9aa5b1", "stroke-width": 1.2, "marker-end": "url(#arrow)" }));
    g.append(svg("title", {}, `${short(s)} ${p} ${short(o)}`));
    root.append(g);
  }
  for (const n of nodes.values()) {
    const state = states.get(n.iri);
    const g = svg("g", { class: "node", "data-kind": n.kind, "data-iri": n.iri, ...(state ? { "data-status": state } : {}) });
    g.append(svg("rect", { x: n.x, y: n.y, width: W, height: H, rx: 6, fill: COLOURS[n.kind] || "#ccc",
      stroke: state && BAD.has(state) ? "#b3261e" : "#33404d", "stroke-width": state && BAD.has(state) ? 3 : 1 }));
    g.append(svg("text", { x: n.x + 8, y: n.y + 16, "font-weight": 600 }, n.kind + (state ? ` · ${state}` : "")));
    g.append(svg("text", { x: n.x + 8, y: n.y + 33 }, labelOf(n.iri)));
    g.append(svg("title", {}, short(n.iri)));
    root.append(g);
  }
  target.replaceChildren(root);
  $("#legend").replaceChildren(...Object.entries(COLOURS).map(([k, c]) => el("span", {}, el("i", { style: `background:${c}` }), k)));
}

async function showRun(runId) {
  $("#run-title").textContent = `Run ${runId}`;
  const graph = $("#run-graph"), timeline = $("#run-timeline");
  graph.replaceChildren(el("p", {}, "loading…"));
  try {
    const [events, edges] = await Promise.all([named("run-timeline", { run: runId }), named("run-graph", { run: runId })]);
    renderResults(timeline, events);
    drawGraph(graph, edges);
    graph.dataset.loaded = String(events.results.bindings.length);
  } catch (err) { showError(graph, err); }
}

// --- approvals inbox --------------------------------------------------------------------

function token() { return sessionStorage.getItem("cradle-token") || ""; }

function authed(url, opts = {}) {
  return fetchJSON(url, { ...opts, headers: { ...(opts.headers || {}), Authorization: `Bearer ${token()}`,
    "Content-Type": "application/json" } });
}

async function showInbox() {
  const inbox = $("#inbox");
  if (!token()) { inbox.replaceChildren(el("p", {}, "Enter an approver token to see pending approvals.")); return; }
  try {
    const me = await authed("/api/whoami");
    $("#whoami").textContent = `signed in as ${me.identity} (${me.roles.join(", ")})`;
    const pending = await authed("/api/approvals?pending=true");
    if (!pending.length) { inbox.replaceChildren(el("p", { id: "inbox-empty" }, "No pending approvals.")); return; }
    inbox.replaceChildren(...pending.map(approvalCard));
  } catch (err) { showError(inbox, err); }
}

function approvalCard(a) {
  const reason = el("input", { placeholder: "reason (to reject)", "data-reason": a.id });
  const details = el("pre", {}, "");
  authed(`/api/approvals/${encodeURIComponent(a.id)}`).then((v) => {
    details.textContent = JSON.stringify({ action: v.action, proposed_by: v.proposed_by }, null, 2);
  }).catch(() => {});
  return el("div", { class: "card", "data-approval": a.id },
    el("strong", {}, a.id), ` — run `, el("a", { href: "#/run/" + encodeURIComponent(a.run_id) }, a.run_id),
    el("div", {}, `requested by ${a.requested_by} at ${a.requested_at}; scope: ${a.scope || "-"}`),
    details,
    el("div", { class: "bar" },
      el("button", { type: "button", "data-approve": a.id, onclick: () => decide(a, "approve", {}) }, "Approve once"),
      reason,
      el("button", { type: "button", class: "reject", "data-reject": a.id,
        onclick: () => decide(a, "reject", { reason: reason.value }) }, "Reject")));
}

async function decide(a, verb, body) {
  const out = $("#decision-result");
  try {
    const res = await authed(`/api/approvals/${encodeURIComponent(a.id)}/${verb}`, { method: "POST", body: JSON.stringify(body) });
    const next = res.outcome ? ` — run ${res.outcome.run_id} continued: ${res.outcome.status}` : "";
    out.replaceChildren(el("p", { "data-decided": a.id }, `${a.id}: ${res.approval.status}${next} `,
      el("a", { href: "#/run/" + encodeURIComponent(a.run_id) }, "open the run")));
    await showInbox();
  } catch (err) { showError(out, err); }
}

// --- routing ----------------------------------------------------------------------------

function route() {
  const hash = location.hash || "#/query";
  const [, tab, arg] = hash.split("/");
  for (const s of document.querySelectorAll("main > section")) s.hidden = true;
  for (const a of document.querySelectorAll("nav a[data-tab]")) a.classList.toggle("active", a.dataset.tab === (tab === "run" ? "runs" : tab));
  if (tab === "run" && arg) { $("#tab-run").hidden = false; showRun(decodeURIComponent(arg)); }
  else if (tab === "runs") { $("#tab-runs").hidden = false; showRuns(); }
  else if (tab === "approvals") { $("#tab-approvals").hidden = false; showInbox(); }
  else { $("#tab-query").hidden = false; }
}

$("#run-query").addEventListener("click", runQuery);
$("#editor").addEventListener("keydown", (e) => { if (e.key === "Enter" && e.ctrlKey) runQuery(); });
$("#token-form").addEventListener("submit", (e) => {
  e.preventDefault();
  sessionStorage.setItem("cradle-token", $("#token").value);
  $("#token").value = "";
  showInbox();
});
window.addEventListener("hashchange", route);

// --- lineage of a run's arguments (issue 15): a table under the run view ----------------

async function showLineage() {
  const [, tab, arg] = (location.hash || "").split("/");
  if (tab !== "run" || !arg) return;
  let box = document.getElementById("run-lineage");
  if (!box) {
    box = el("div", { id: "run-lineage", class: "results" });
    $("#tab-run").append(el("h3", {}, "Lineage: where each argument came from"), box);
  }
  try {
    const rows = await named("run-lineage", { run: decodeURIComponent(arg) });
    if (!rows.results.bindings.length) { box.replaceChildren(el("p", {}, "no traced arguments")); return; }
    renderResults(box, rows);
  } catch (err) { showError(box, err); }
}
window.addEventListener("hashchange", showLineage);
loadCatalog().catch((err) => showError($("#results"), err));
route();
showLineage();
