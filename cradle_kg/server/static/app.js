// cradle-kg web page, part 1: helpers, the query page, the provenance graph. Vanilla JS,
// no CDN; people.js has the runs, the run view, the inbox and the routing.
// Every value from the graph is put in the page as text (textContent), never as HTML.
"use strict";

const ID = "https://w3id.org/cradle/id/";
const RUN = "https://w3id.org/cradle/run/";
const PREFIXES = [["https://w3id.org/cradle#", "cradle:"], ["http://www.w3.org/ns/prov#", "prov:"],
  ["http://www.w3.org/1999/02/22-rdf-syntax-ns#", "rdf:"], [ID, ""], [RUN, "run graph "]];
const $ = (sel) => document.querySelector(sel);

// What a browser obeys instead of showing: C0 and C1 controls (but tab and line breaks),
// the bidi marks, embeddings, overrides and isolates, and the zero-width characters. An
// agent's value carrying them read otherwise than it is ("acct-\u202e21\u202c" showed
// as acct-12): shown as \uXXXX, the value's own characters in their own order (the CLI
// strips the controls and bidi marks: tests/security/test_324).
const HIDDEN = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g;
function shown(text) {
  return String(text).replace(HIDDEN, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
}
// the attributes a person reads (a tooltip, a label); the others stay exact (selectors)
const READ = new Set(["title", "aria-label"]);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, READ.has(k) ? shown(v) : v);
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(shown(c)));
  return node;
}

function status(text) { $("#status").textContent = shown(text || ""); }

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

// the signed-in person's token, when there is one: a server started with
// `--graph-readers approvers|tokens` answers the graph only to a token
function graphAuth() {
  const t = sessionStorage.getItem("cradle-token");
  return t ? { Authorization: `Bearer ${t}` } : {};
}

function sparql(query) {
  return fetchJSON("/sparql", { method: "POST", headers: { ...RESULTS_JSON, ...graphAuth(),
    "Content-Type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ query }) });
}

function named(name, params = {}) {
  return fetchJSON(`/queries/${encodeURIComponent(name)}?` + new URLSearchParams(params), { headers: { ...RESULTS_JSON, ...graphAuth() } });
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
    title: q.question, onclick: () => pick(q) }, el("strong", { class: "title" }, titleOf(q)),
    el("small", {}, q.question)))));
}

// "denied-proposals" -> "Denied proposals" (a pack's queries keep their pack as a prefix)
function titleOf(q) {
  const words = q.name.replace(/[-_]+/g, " ").trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

function pick(q) {
  selected = q;
  for (const b of document.querySelectorAll("#named button")) b.classList.toggle("active", b.dataset.query === q.name);
  $("#question").replaceChildren(el("strong", {}, titleOf(q)), el("div", {}, q.question),
    ...(q.example ? [el("small", {}, `e.g. ${q.example}`)] : []));
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

// --- provenance graph -------------------------------------------------------------------

const COLUMNS = { agent: 0, task: 0, proposal: 1, fact: 1, decision: 2, policy: 2, approval: 3,
  action: 4, tool: 4, resource: 4, observation: 5, evidence: 5, verification: 6, transition: 7, state: 8 };
const COLOURS = { agent: "#8e9aaf", task: "#8e9aaf", proposal: "#5b8def", fact: "#7aa6f5", decision: "#b072d1",
  policy: "#d3a6e8", approval: "#e0a03a", action: "#2f9e78", tool: "#9cc9b8", resource: "#9cc9b8",
  observation: "#63b3c9", evidence: "#e6c65c", verification: "#3c8dbc", transition: "#4f6d7a", state: "#a7b7c0" };
const BAD = new Set(["Deny", "Failed", "Aborted", "Rejected", "Inconclusive", "Expired"]);
const SVGNS = "http://www.w3.org/2000/svg";

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, READ.has(k) ? shown(v) : v);
  if (text !== undefined) node.textContent = shown(text);
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
  // colours from the stylesheet (the CSP allows no inline style)
  $("#legend").replaceChildren(...Object.keys(COLOURS).map((k) => el("span", {}, el("i", { class: `kind-${k}` }), k)));
}
