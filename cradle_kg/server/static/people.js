// cradle-kg web page, part 2: runs (with their state, refreshed while they move), the run
// view (why it waits, its workflow's steps, one lane per proposal; the full graph one click
// away), and one inbox for approvals, human tasks and human workflow steps.
// Every value is put in the page as text (textContent), never as HTML.
"use strict";

const REFRESH_MS = 3000;
let refresher = null;
// every route() starts a new view: an answer that comes back for an older one is dropped
let view = 0;

function token() { return sessionStorage.getItem("cradle-token") || ""; }

function authed(url, opts = {}) {
  return fetchJSON(url, { ...opts, headers: { ...(opts.headers || {}), Authorization: `Bearer ${token()}`,
    "Content-Type": "application/json" } });
}

function runLink(id) { return el("a", { href: "#/run/" + encodeURIComponent(id), class: "run" }, id); }

function badge(state) { return el("span", { class: "badge", "data-state": state }, state.replace(/_/g, " ")); }

function stopRefresh() {
  if (refresher) clearTimeout(refresher);
  refresher = null;
}

// Refresh view `mine` while it is shown; `fn` returns true when nothing is left to refresh.
// Never for a view that was left: the runs list's first answer, late under load, once set
// its refresh over the run page's (the page that had opened since stopped updating). One
// refresh at a time, the next REFRESH_MS after the last answered: overlapping ones could
// answer out of order and draw an older state over a newer one, then stop.
function every(mine, fn) {
  if (mine !== view) return;
  stopRefresh();
  const tick = async () => {
    refresher = null;
    if (mine !== view) return;
    let done = false;
    try { done = !document.hidden && await fn(); } catch (err) { status(`refresh failed: ${err.message || err}`); }
    if (!done && mine === view && refresher === null) refresher = setTimeout(tick, REFRESH_MS);
  };
  refresher = setTimeout(tick, REFRESH_MS);
}

async function whoami() {
  if (!token()) { $("#whoami").textContent = "not signed in"; return null; }
  try {
    const me = await authed("/api/whoami");
    $("#whoami").textContent = shown(`signed in as ${me.identity} (${me.roles.join(", ")})`);
    return me;
  } catch (err) { $("#whoami").textContent = shown(err.message || err); return null; }
}

// --- runs -------------------------------------------------------------------------------

let runFilter = "";

async function showRuns() {
  const target = $("#runs-list");
  const mine = view;
  if (!token()) {
    $("#run-counts").replaceChildren(el("p", {}, "Sign in with a token to see each run's state."));
    try {
      const doc = await named("runs");
      if (mine === view) renderResults(target, doc);
    } catch (err) { if (mine === view) showError(target, err); }
    return;
  }
  const load = async () => {
    try {
      const query = runFilter ? `?status=${encodeURIComponent(runFilter)}` : "";
      const [overview, runs] = await Promise.all([authed("/api/overview"), authed("/api/runs" + query)]);
      if (mine !== view) return;
      $("#run-counts").replaceChildren(
        el("button", { type: "button", class: runFilter ? "filter" : "filter active", "data-state-filter": "",
          onclick: () => { runFilter = ""; load(); } }, "all"),
        ...Object.entries(overview.runs).map(([state, n]) => el("button", { type: "button",
          class: runFilter === state ? "filter active" : "filter", "data-state-filter": state,
          onclick: () => { runFilter = state; load(); } }, badge(state), ` ${n}`)),
        el("span", { class: "inbox-count" }, `inbox: ${overview.inbox}`));
      const head = el("tr", {}, ...["run", "state", "why", "last outcome", "proposals", "updated"].map((h) => el("th", {}, h)));
      const rows = runs.map((r) => el("tr", { "data-run": r.run_id, "data-state": r.state },
        el("td", {}, runLink(r.run_id)), el("td", {}, badge(r.state)), el("td", {}, (r.why || []).join("; ")),
        el("td", {}, r.status), el("td", {}, String(r.proposal_count ?? r.proposals.length)), el("td", {}, r.updated_at)));
      target.replaceChildren(el("table", {}, el("thead", {}, head), el("tbody", {}, ...rows)));
      status("");
    } catch (err) {  // a refresh that fails keeps the last list and says so
      if (target.querySelector("table")) status(`refresh failed: ${err.message || err}`);
      else showError(target, err);
    }
  };
  await load();
  every(mine, load);
}

// --- one run ----------------------------------------------------------------------------

function stepRow(s) {
  const detail = s.asked || s.reason || (s.output ? JSON.stringify(s.output) : "");
  return el("li", { class: "step", "data-step": s.id, "data-state": s.state },
    el("strong", {}, s.id), ` (${s.kind}) `, badge(s.state), detail ? el("div", {}, detail) : "",
    s.state === "waiting_for_person" && s.answers && s.answers.length
      ? el("div", {}, `answers: ${s.answers.join(", ")} — `, el("a", { href: "#/approvals" }, "answer in the inbox")) : "");
}

function laneRow(lane) {
  const chips = lane.stages.map((s) => el("span", { class: "stage", "data-stage": s.stage, "data-state": s.state,
    title: [s.stage + (s.label ? `: ${s.label}` : ""), ...s.reasons].join("\n") }, s.stage));
  return el("div", { class: "lane", "data-proposal": lane.proposal_id, "data-outcome": lane.outcome || "",
    title: lane.reasons.join("\n") },
    el("div", { class: "lane-head" }, el("strong", {}, lane.proposal_id), ` ${lane.tool || ""} → ${lane.target || ""} `,
      lane.outcome ? el("span", { class: "outcome" }, lane.outcome) : ""),
    el("div", { class: "chips" }, ...chips));
}

async function showRunSummary(runId) {
  const head = $("#run-state");
  if (!token()) { head.replaceChildren(el("p", {}, "Sign in with a token to see why the run is where it is.")); return null; }
  const mine = view;
  try {
    const v = await authed(`/api/runs/${encodeURIComponent(runId)}/view`);
    if (mine !== view) return null;
    head.replaceChildren(el("div", { id: "run-status", "data-state": v.state }, badge(v.state)),
      el("ul", { id: "run-why" }, ...(v.why || []).map((w) => el("li", {}, w))));
    const wf = v.workflow_status;
    // a run whose workflow file changed since: its steps as it recorded them, and why
    const changed = v.workflow_error ? [el("p", { class: "note", id: "run-workflow-error" },
      wf ? `${v.workflow_error.message}: the steps as the run recorded them, without their questions`
         : `the workflow's steps cannot be shown: ${v.workflow_error.message}`)] : [];
    $("#run-steps").replaceChildren(...(wf ? [el("h3", {}, `Workflow ${wf.workflow} v${wf.version}`),
      ...changed, el("ol", {}, ...wf.steps.map(stepRow))] : changed));
    // the view reads one page of the run's events (its oldest); a longer run says so
    const note = v.more ? [el("p", { class: "note", id: "run-more" },
      `lanes of the first ${v.events_total === undefined ? "" : `${v.limit} of ${v.events_total} `}events; ` +
      `the rest: cradle-kg runs show ${runId} --after-seq ${v.next_after_seq}`)] : [];
    $("#run-lanes").replaceChildren(...(v.lanes.length ? [el("h3", {}, "Proposals")] : []), ...v.lanes.map(laneRow), ...note);
    status("");
    return v.state;
  } catch (err) {
    if ($("#run-status")) status(`refresh failed: ${err.message || err}`);
    else showError(head, err);
    return null;
  }
}

async function showRunGraph(runId) {
  const graph = $("#run-graph"), timeline = $("#run-timeline");
  graph.replaceChildren(el("p", {}, "loading…"));
  try {
    const mine = view;
    const [events, edges] = await Promise.all([named("run-timeline", { run: runId }), named("run-graph", { run: runId })]);
    if (mine !== view) return;
    renderResults(timeline, events);
    drawGraph(graph, edges);
    graph.dataset.loaded = String(events.results.bindings.length);
  } catch (err) { showError(graph, err); }
}

async function showRun(runId) {
  const mine = view;
  $("#run-title").textContent = shown(`Run ${runId}`);
  for (const id of ["#run-state", "#run-steps", "#run-lanes"]) $(id).replaceChildren();
  const state = await showRunSummary(runId);
  showRunGraph(runId);
  // refreshed until it completes, also when its first load failed (the next may not)
  if (!token() || (state && state.startsWith("completed"))) return;
  every(mine, async () => {
    const now = await showRunSummary(runId);
    if (!now || !now.startsWith("completed")) return false;
    showRunGraph(runId);
    return true;
  });
}

// --- the inbox --------------------------------------------------------------------------

function facts(item) {
  const rows = [["run", runLink(item.run_id)], ["asked", item.asked_at]];
  if (item.digest) rows.push(["digest", item.digest]);
  if (item.policies.length) rows.push(["asked by policies", item.policies.join(", ")]);
  if (item.reasons.length) rows.push(["why", item.reasons.join("; ")]);
  // a few of the blobs cited; the approval's own view lists them all (test_413)
  if (item.evidence.length) rows.push(["evidence", item.evidence.join(", ") +
    (item.evidence_total > item.evidence.length ? ` (${item.evidence_total} cited in all: cradle-kg approvals show ${item.id})` : "")]);
  if (item.proposed_by) rows.push(["proposed by", item.proposed_by]);
  // an approval covers the action under the tool's version it was asked for, no other
  if (item.tool && item.tool.asked) rows.push(["tool version", item.tool.asked]);
  if (item.tool && item.tool.changed) rows.push(["tool now", item.tool.now]);
  return el("table", { class: "facts" }, el("tbody", {}, ...rows.map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, v)))));
}

// an approval's item carries a preview of a large action (test_361): the person is shown the
// whole action — the approval's own view — before "Approve once" may be pressed
function wholeAction(item, pre, approve) {
  if (!item.action_cut) return "";
  approve.disabled = true;
  approve.title = "show the whole action first";
  const said = el("p", { "data-action-cut": item.id },
    `the action is shown cut (${item.action_bytes} bytes): see it whole before approving `);
  said.append(el("button", { type: "button", "data-whole-action": item.id, onclick: async () => {
    try {
      const view = await authed(item.whole_action);
      pre.textContent = JSON.stringify(view.action, null, 2);
      said.replaceChildren(`the whole action (${item.action_bytes} bytes)`);
      approve.disabled = false;
      approve.title = "";
    } catch (err) { showError(said, err); }
  } }, "Show the whole action"));
  return said;
}

// a step's item carries a preview of a large input (test_341): the person is shown the whole
// input — the run's workflow status — and the question whole before an answer may be given
// (test_414), as an approval's whole action before it may be approved (test_361)
function wholeInput(item, pre, asked, answers) {
  if (!item.action || !item.action.input_cut) return "";
  for (const b of answers) { b.disabled = true; b.title = "show the whole input first"; }
  const said = el("p", { "data-input-cut": item.id },
    `the run's input is shown cut (${item.action.input_bytes} bytes): whole in `, runLink(item.run_id), " ");
  said.append(el("button", { type: "button", "data-whole-input": item.id, onclick: async () => {
    try {
      const run = await authed(item.action.whole_input);
      const step = (run.steps || []).find((s) => s.id === item.step && s.state === "waiting_for_person");
      if (!step) throw new Error(`step ${item.step} of run ${item.run_id} no longer waits`);
      pre.textContent = JSON.stringify({ input: step.input, suggestion: item.action.suggestion }, null, 2);
      if (step.asked) asked.textContent = shown(step.asked);
      said.replaceChildren(`the whole input (${item.action.input_bytes} bytes)`);
      for (const b of answers) { b.disabled = false; b.title = ""; }
    } catch (err) { showError(said, err); }
  } }, "Show the whole input"));
  return said;
}

function card(item) {
  const note = el("input", { placeholder: item.kind === "approval" ? "reason (to reject)" : "note", "data-note": item.id });
  const asked = el("strong", {}, item.question || item.title);
  const pre = item.action ? el("pre", {}, JSON.stringify(item.action, null, 2)) : "";
  let buttons;
  let whole = "";
  if (item.kind === "approval") {
    const approve = el("button", { type: "button", "data-approve": item.id,
      onclick: () => answer(item, `/api/approvals/${encodeURIComponent(item.id)}/approve`, {}) }, "Approve once");
    whole = wholeAction(item, pre, approve);
    buttons = [approve,
    note, el("button", { type: "button", class: "reject", "data-reject": item.id,
      onclick: () => answer(item, `/api/approvals/${encodeURIComponent(item.id)}/reject`, { reason: note.value }) }, "Reject")];
  } else if (item.kind === "task") {
    buttons = [note, el("button", { type: "button", "data-resolve": item.id,
      onclick: () => answer(item, `/api/tasks/${encodeURIComponent(item.id)}/resolve`, { note: note.value }) }, "Resolve")];
  } else {
    const url = `/api/steps/${encodeURIComponent(item.run_id)}/${encodeURIComponent(item.step)}/decide`;
    const answers = item.answers.map((a) => el("button", { type: "button", "data-answer": a, "data-step": item.id,
      onclick: () => answer(item, url, { answer: a, ...(note.value ? { note: note.value } : {}) }) }, a));
    whole = wholeInput(item, pre, asked, answers);
    buttons = [...answers, note];
  }
  return el("div", { class: "card", "data-kind": item.kind, [`data-${item.kind === "approval" ? "approval" : "item"}`]: item.id },
    el("div", { class: "card-head" }, el("span", { class: "kind" }, item.kind), asked),
    item.question ? el("div", {}, item.title) : "", facts(item),
    pre, whole,
    // said before the buttons: the tool changed since the request, approving covers nothing now
    item.tool && item.tool.note ? el("p", { class: "warning", "data-tool-changed": item.id }, item.tool.note) : "",
    el("div", { class: "bar" }, ...buttons));
}

// the inbox is read a page at a time (the API's `limit`/`offset`, oldest first), one more
// item than shown to know whether another page follows; `inboxKind` ("": all three) is
// kept while paging, and choosing another starts again at the first page
let inboxPageSize = 50;
let inboxOffset = 0;
let inboxKind = "";

function inboxQuery() {
  const params = new URLSearchParams({ limit: String(inboxPageSize + 1), offset: String(inboxOffset) });
  if (inboxKind) params.append("kind", inboxKind);
  return "/api/inbox?" + params;
}

function inboxFilters() {
  return el("div", { id: "inbox-kinds", class: "bar" }, ...["", "approval", "task", "step"].map((k) =>
    el("button", { type: "button", class: inboxKind === k ? "filter active" : "filter", "data-inbox-kind": k,
      onclick: () => { inboxKind = k; inboxOffset = 0; showInbox(); } }, k || "all")));
}

function pageButton(label, which, enabled, offset) {
  const attrs = { type: "button", class: "filter", "data-inbox-page": which,
    onclick: () => { inboxOffset = offset; showInbox(); } };
  if (!enabled) attrs.disabled = "";
  return el("button", attrs, label);
}

function inboxPager(shown, more, total) {
  const first = inboxOffset + 1, last = inboxOffset + shown;
  const of = total === null ? "" : ` of ${total}`;
  return el("div", { id: "inbox-pager", class: "bar" },
    pageButton("← previous", "prev", inboxOffset > 0, Math.max(0, inboxOffset - inboxPageSize)),
    el("span", { id: "inbox-range" }, `items ${first} to ${last}${of}, oldest first`),
    pageButton("next →", "next", more, inboxOffset + inboxPageSize));
}

// each showInbox() draws only if no later one started (a click on "next" while an answer of
// the page before was on its way must not draw that page over this one)
let inboxLoad = 0;

async function showInbox() {
  const inbox = $("#inbox");
  const mine = ++inboxLoad;
  const me = await whoami();
  if (mine !== inboxLoad) return;
  if (!me) { inbox.replaceChildren(el("p", {}, "Enter an approver token to see what waits for you.")); return; }
  try {
    // one page, oldest first; the overview counts them all (every kind: said when unfiltered)
    const [items, overview] = await Promise.all([authed(inboxQuery()), authed("/api/overview")]);
    if (mine !== inboxLoad) return;
    if (!items.length && inboxOffset > 0) {  // the page emptied (answered): the one before it
      inboxOffset = Math.max(0, inboxOffset - inboxPageSize);
      await showInbox();
      return;
    }
    if (!items.length) {
      inbox.replaceChildren(inboxFilters(), el("p", { id: "inbox-empty" }, "Nothing waits for a person."));
      return;
    }
    const more = items.length > inboxPageSize;
    const shown = items.slice(0, inboxPageSize);
    inbox.replaceChildren(inboxFilters(), ...shown.map(card),
      inboxPager(shown.length, more, inboxKind ? null : overview.inbox));
  } catch (err) { if (mine === inboxLoad) showError(inbox, err); }
}

function said(item, res) {
  if (res.approval) return `${item.id}: ${res.approval.status}` + (res.outcome ? ` — run ${res.outcome.run_id} continued: ${res.outcome.status}` : "") +
    (res.tool && res.tool.note ? ` — ${res.tool.note}` : "") +
    // the decision stands; its workflow could not walk on (tests/security/test_168)
    (res.workflow && res.workflow.error ? ` — workflow run ${res.workflow.run_id} did not continue: ${res.workflow.error.message}` : "");
  if (res.resolved_by) return `${item.id}: resolved by ${res.resolved_by}`;
  return `${item.id}: answered — run ${res.run_id}: ${res.status}`;
}

async function answer(item, url, body) {
  const out = $("#decision-result");
  try {
    const res = await authed(url, { method: "POST", body: JSON.stringify(body) });
    out.replaceChildren(el("p", { "data-decided": item.id }, said(item, res) + " ",
      el("a", { href: "#/run/" + encodeURIComponent(item.run_id) }, "open the run")));
    await showInbox();
  } catch (err) { showError(out, err); }
}

// --- routing ----------------------------------------------------------------------------

function route() {
  view += 1;
  stopRefresh();
  const hash = location.hash || "#/query";
  const [, raw, arg] = hash.split("/");
  const tab = raw === "inbox" ? "approvals" : raw;
  for (const s of document.querySelectorAll("main > section")) s.hidden = true;
  for (const a of document.querySelectorAll("nav a[data-tab]")) a.classList.toggle("active", a.dataset.tab === (tab === "run" ? "runs" : tab));
  if (tab === "run" && arg) { $("#tab-run").hidden = false; showRun(decodeURIComponent(arg)); }
  else if (tab === "runs") { $("#tab-runs").hidden = false; showRuns(); }
  else if (tab === "approvals") { $("#tab-approvals").hidden = false; inboxOffset = 0; showInbox(); }
  else { $("#tab-query").hidden = false; }
}

$("#run-query").addEventListener("click", runQuery);
$("#editor").addEventListener("keydown", (e) => { if (e.key === "Enter" && e.ctrlKey) runQuery(); });
$("#token-form").addEventListener("submit", (e) => {
  e.preventDefault();
  sessionStorage.setItem("cradle-token", $("#token").value);
  $("#token").value = "";
  whoami();
  route();
});
window.addEventListener("hashchange", route);
loadCatalog().catch((err) => showError($("#results"), err));
whoami();
route();

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
showLineage();
