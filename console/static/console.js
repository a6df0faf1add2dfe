// The approval console. Everything that comes from an action is put into
// the page as text nodes and textContent only (no HTML parsing), after control and
// bidirectional characters have been made visible as ⟨U+202E⟩ markers (the
// server does so too).
"use strict";

(function () {
  const POLL_MS = 3000;
  const state = { csrf: "", selected: "", timer: 0, list: [] };

  const $ = (id) => document.getElementById(id);

  // Characters that change how text around them looks without being
  // visible: C0 and C1 controls but tab and newline, DEL, format
  // characters (bidi embeddings, overrides and isolates, zero-width
  // characters, BOM, tags), line and paragraph separators.
  const INVISIBLE = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u00AD\u0600-\u0605\u061C\u06DD\u070F\u180E\u200B-\u200F\u202A-\u202E\u2028\u2029\u2060-\u2064\u2066-\u206F\uFEFF\uFFF9-\uFFFB]|\uDB40[\uDC01-\uDC7F]/g;

  function visible(s) {
    if (typeof s !== "string") s = s === undefined || s === null ? "" : String(s);
    return s.replace(INVISIBLE, (c) => {
      const cp = c.codePointAt(0).toString(16).toUpperCase();
      return "⟨U+" + "0000".slice(cp.length > 4 ? 4 : cp.length) + cp + "⟩";
    });
  }

  const MARKER = /(⟨U\+[0-9A-F]{4,6}⟩|⟨0x[0-9a-f]{1,2}⟩)/;

  // text returns a fragment of s with every escape marker highlighted.
  function text(s) {
    const frag = document.createDocumentFragment();
    for (const part of visible(s).split(MARKER)) {
      if (part === "") continue;
      if (MARKER.test(part)) {
        const m = document.createElement("span");
        m.className = "marker";
        m.title = "an invisible character, shown";
        m.textContent = part;
        frag.appendChild(m);
      } else {
        frag.appendChild(document.createTextNode(part));
      }
    }
    return frag;
  }

  // el builds an element; children are nodes or strings (as text).
  function el(tag, cls, ...children) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    for (const c of children) {
      if (c === undefined || c === null) continue;
      e.appendChild(typeof c === "object" ? c : text(String(c)));
    }
    return e;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  async function api(method, path, body) {
    const opts = { method, credentials: "same-origin", headers: { "Accept": "application/json" } };
    if (method !== "GET") opts.headers["X-CSRF-Token"] = state.csrf;
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch("/console/api/" + path, opts);
    } catch (e) {
      return { status: 0, body: { error: { message: "the server cannot be reached" } } };
    }
    let data = {};
    try { data = await res.json(); } catch (e) { data = {}; }
    return { status: res.status, body: data };
  }

  function errorText(r) {
    return (r.body && r.body.error && r.body.error.message) || ("HTTP " + r.status);
  }

  // Sign-in.
  async function start() {
    const r = await api("GET", "session");
    if (r.status !== 200) {
      showSignin("The console cannot reach the server: " + errorText(r));
      return;
    }
    state.csrf = r.body.csrf || "";
    if (r.body.signed_in) showApp(r.body);
    else showSignin("");
  }

  function showSignin(msg) {
    stopPolling();
    $("app").hidden = true;
    $("who").hidden = true;
    $("signin").hidden = false;
    $("signin-csrf").value = state.csrf;
    clear($("signin-error"));
    if (msg) $("signin-error").appendChild(text(msg));
  }

  async function signIn(ev) {
    ev.preventDefault();
    const key = $("key").value;
    const r = await api("POST", "session", { key });
    $("key").value = "";
    if (r.status === 200) {
      state.csrf = r.body.csrf;
      showApp(r.body);
      return;
    }
    if (r.status === 403 && r.body.error && r.body.error.code === "csrf_failed") {
      const s = await api("GET", "session");
      state.csrf = s.body.csrf || "";
    }
    showSignin(r.status === 401 ? "That key is not known." : errorText(r));
  }

  async function signOut() {
    await api("POST", "signout");
    state.selected = "";
    const s = await api("GET", "session");
    state.csrf = (s.body && s.body.csrf) || "";
    showSignin("Signed out.");
  }

  function showApp(info) {
    $("signin").hidden = true;
    $("app").hidden = false;
    $("who").hidden = false;
    clear($("principal"));
    $("principal").appendChild(text(info.principal + (info.tenant ? " (" + info.tenant + ")" : "")));
    refresh();
    stopPolling();
    state.timer = setInterval(refresh, POLL_MS);
  }

  function stopPolling() {
    if (state.timer) clearInterval(state.timer);
    state.timer = 0;
  }

  // The pending list, newest first, refreshed every few seconds.
  async function refresh() {
    const r = await api("GET", "approvals?status=pending");
    if (r.status === 401) {
      showSignin("Your session ended; sign in again.");
      return;
    }
    $("live").classList.toggle("stale", r.status !== 200);
    if (r.status !== 200) return;
    state.list = r.body.approvals || [];
    renderList();
  }

  function ago(iso) {
    const t = Date.parse(iso);
    if (isNaN(t)) return "";
    const s = Math.max(0, Math.round((Date.now() - t) / 1000));
    if (s < 60) return s + "s ago";
    if (s < 3600) return Math.round(s / 60) + "m ago";
    return Math.round(s / 3600) + "h ago";
  }

  function renderList() {
    const ul = $("pending");
    clear(ul);
    $("count").textContent = String(state.list.length);
    $("empty").hidden = state.list.length > 0;
    for (const a of state.list) {
      const b = el("button", "",
        el("span", "item-action", a.action),
        el("span", "item-meta", "session " + (a.session_id || "—") + " · by " + a.principal),
        el("span", "item-meta", ruleName(a) + " · " + ago(a.created_at)));
      b.type = "button";
      b.dataset.id = a.id;
      b.setAttribute("aria-current", a.id === state.selected ? "true" : "false");
      b.addEventListener("click", () => select(a.id));
      ul.appendChild(el("li", "", b));
    }
    if (!state.selected && state.list.length > 0 && window.matchMedia("(min-width: 701px)").matches) {
      select(state.list[0].id);
    }
  }

  function ruleName(a) {
    const d = a.decision || {};
    return d.rule ? "rule " + d.rule : (d.step ? "step " + d.step : "asked");
  }

  async function select(id) {
    state.selected = id;
    for (const b of document.querySelectorAll("#pending button")) {
      b.setAttribute("aria-current", b.dataset.id === id ? "true" : "false");
    }
    const r = await api("GET", "approvals/" + encodeURIComponent(id));
    if (r.status !== 200) {
      setMsg(errorText(r), "bad");
      return;
    }
    renderDetail(r.body);
    $("app").classList.add("viewing");
    loadHistory(r.body.session_id);
  }

  function fact(dl, name, value) {
    if (value === undefined || value === null || value === "") return;
    dl.appendChild(el("dt", "", name));
    dl.appendChild(el("dd", "", value));
  }

  function renderDetail(a) {
    $("detail").hidden = false;
    $("detail").dataset.id = a.id;
    $("detail").dataset.status = a.status;
    clear($("d-title"));
    $("d-title").appendChild(text(a.action));
    const dl = $("d-facts");
    clear(dl);
    const d = a.decision || {};
    fact(dl, "Status", a.status);
    fact(dl, "Requested by", a.principal + (a.tenant ? " (tenant " + a.tenant + ")" : ""));
    fact(dl, "Session", a.session_id);
    fact(dl, "Task", a.task_id);
    fact(dl, "Asked by", (d.step || "") + (d.rule ? " · rule " + d.rule : ""));
    fact(dl, "Why", d.reason);
    fact(dl, "Created", a.created_at);
    fact(dl, "Expires", a.expires_at);
    fact(dl, "Action hash", a.action_hash);
    if (a.status !== "pending") {
      fact(dl, "Decided by", a.decided_by);
      fact(dl, "Scope", a.scope);
      fact(dl, "Method", a.method);
      fact(dl, "Decision reason", a.reason);
    }
    const pv = $("d-preview");
    clear(pv);
    renderPreview(pv, a);
    const pending = a.status === "pending";
    for (const id of ["approve-once", "approve-session", "deny"]) $(id).disabled = !pending;
    $("reason").value = "";
    setMsg(pending ? "" : "This approval is " + a.status + ".", pending ? "" : "bad");
  }

  function renderPreview(root, a) {
    const p = a.preview || {};
    if (typeof p.diff === "string") {
      renderFiles(root, p.files);
      renderDiff(root, p.diff);
      return;
    }
    if (Array.isArray(p.argv)) {
      renderCommand(root, p);
      return;
    }
    const input = a.input || (p.input && typeof p.input === "object" ? p.input : null);
    if (a.action === "mcp_call" && input) {
      const kv = el("dl", "kv");
      fact(kv, "MCP server", input.server);
      fact(kv, "Tool", input.tool);
      root.appendChild(kv);
      root.appendChild(el("h4", "", "Arguments"));
      root.appendChild(el("pre", "json", JSON.stringify(input.arguments || {}, null, 2)));
      return;
    }
    root.appendChild(el("pre", "json", JSON.stringify(Object.keys(p).length ? p : (a.input || {}), null, 2)));
  }

  function renderFiles(root, files) {
    if (!Array.isArray(files) || files.length === 0) return;
    const kv = el("dl", "kv");
    for (const f of files) {
      const what = (f.op || "change") + (f.old_path ? " from " + f.old_path : "") +
        " · +" + (f.added || 0) + " −" + (f.removed || 0);
      fact(kv, f.path, what);
    }
    root.appendChild(kv);
  }

  // renderDiff shows a unified diff, one table per file, with the old and
  // new line numbers and added and removed lines coloured.
  function renderDiff(root, diff) {
    const lines = diff.split("\n");
    if (lines.length && lines[lines.length - 1] === "") lines.pop();
    let table = null, oldN = 0, newN = 0, head = null;
    const start = (name) => {
      head = el("div", "file-head", name);
      const box = el("div", "diff");
      table = el("table", "");
      box.appendChild(table);
      root.appendChild(head);
      root.appendChild(box);
    };
    const row = (cls, o, n, sign, code) => {
      if (!table) start("diff");
      const tr = el("tr", cls, el("td", "num", o), el("td", "num", n), el("td", "code", sign + code));
      table.appendChild(tr);
    };
    for (let i = 0; i < lines.length; i++) {
      const l = lines[i];
      if (l.startsWith("--- ") && i + 1 < lines.length && lines[i + 1].startsWith("+++ ")) {
        const from = l.slice(4), to = lines[i + 1].slice(4);
        start(to === "/dev/null" ? from + " (deleted)" : (from === "/dev/null" ? to + " (new)" : to));
        i++;
        continue;
      }
      const h = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)$/.exec(l);
      if (h) {
        oldN = parseInt(h[1], 10);
        newN = parseInt(h[2], 10);
        row("hunk", "", "", "", l);
        continue;
      }
      if (l.startsWith("+")) row("add", "", String(newN++), "+", l.slice(1));
      else if (l.startsWith("-")) row("del", String(oldN++), "", "−", l.slice(1));
      else if (l.startsWith(" ")) row("ctx", String(oldN++), String(newN++), " ", l.slice(1));
      else if (l.startsWith("\\")) row("meta", "", "", "", l);
      else if (l.startsWith("diff ") || l.startsWith("index ")) { table = null; row("meta", "", "", "", l); }
      else row("meta", "", "", "", l);
    }
  }

  function renderCommand(root, p) {
    root.appendChild(el("h4", "", "Command"));
    const ul = el("ul", "argv");
    for (const w of p.argv) ul.appendChild(el("li", "", w));
    root.appendChild(ul);
    const kv = el("dl", "kv");
    fact(kv, "Program", p.program);
    fact(kv, "Directory", p.dir);
    fact(kv, "Timeout", p.timeout_seconds !== undefined ? p.timeout_seconds + " s" : "");
    fact(kv, "Output cap", p.max_output_bytes !== undefined ? p.max_output_bytes + " bytes" : "");
    fact(kv, "Sandbox", p.sandbox);
    fact(kv, "Network", p.no_network ? "none" : "not blocked");
    const list = (v) => Array.isArray(v) ? v.join(", ") : v;
    fact(kv, "Layers", list(p.sandbox_layers));
    fact(kv, "May read", list(p.sandbox_read));
    fact(kv, "May write", list(p.sandbox_write));
    fact(kv, "Read-only", list(p.sandbox_read_only));
    root.appendChild(kv);
    if (p.sandbox_missing && p.sandbox_missing.length) {
      root.appendChild(el("p", "warn", "Missing from the sandbox: " + list(p.sandbox_missing)));
    }
    if (p.sandbox_note) root.appendChild(el("p", "warn", p.sandbox_note));
  }

  // The session's history, oldest first.
  async function loadHistory(sessionID) {
    const ol = $("events");
    clear(ol);
    $("history").hidden = false;
    if (!sessionID) {
      $("history-empty").hidden = false;
      return;
    }
    const r = await api("GET", "sessions/" + encodeURIComponent(sessionID) + "/events?limit=200");
    const events = r.status === 200 ? (r.body.events || []) : [];
    $("history-empty").hidden = events.length > 0;
    for (const e of events) ol.appendChild(renderEvent(e));
  }

  function renderEvent(rec) {
    const e = rec && typeof rec.event === "object" && rec.event !== null ? rec.event : (rec || {});
    const p = e.payload || {};
    const time = e.timestamp || rec.time || e.time || "";
    const kind = e.event_type || e.type || e.event || e.kind || "event";
    const name = [p.tool_name, p.action, e.action, e.name].find((v) => typeof v === "string" && v !== "") || "";
    const obs = p.observation || {};
    const status = obs.status || e.status || "";
    const code = obs.code || e.code || "";
    const who = e.approver || e.decided_by || e.principal || "";
    const li = el("li", "", el("span", "ev-time", time));
    li.appendChild(el("span", "", kind + (name ? " · " + name : "")));
    if (status || code) {
      li.appendChild(el("span", status === "ok" ? "ev-status-ok" : "ev-status-bad",
        " · " + status + (code ? " (" + code + ")" : "")));
    }
    if (who) {
      li.appendChild(el("span", "item-meta", "by " + who + (e.method ? " via " + e.method : "") +
        (e.scope ? " · " + e.scope : "") + (e.reason ? " · " + e.reason : "")));
    }
    return li;
  }

  function setMsg(s, cls) {
    const m = $("decide-msg");
    clear(m);
    m.className = "msg" + (cls ? " " + cls : "");
    if (s) m.appendChild(text(s));
  }

  async function decide(kind) {
    const id = $("detail").dataset.id;
    const reason = $("reason").value.trim();
    if (kind === "deny" && reason === "") {
      setMsg("Say why you deny it.", "bad");
      $("reason").focus();
      return;
    }
    const path = "approvals/" + encodeURIComponent(id) + "/" + (kind === "deny" ? "deny" : "approve");
    const body = kind === "deny" ? { reason } : { scope: kind, reason };
    for (const b of ["approve-once", "approve-session", "deny"]) $(b).disabled = true;
    const r = await api("POST", path, body);
    if (r.status === 200) {
      renderDetail(r.body);
      setMsg(kind === "deny" ? "Denied." : (kind === "session" ? "Approved for the session." : "Approved once."), "good");
      refresh();
      return;
    }
    if (r.status === 401) {
      showSignin("Your session ended; sign in again.");
      return;
    }
    setMsg(errorText(r), "bad");
    const again = await api("GET", "approvals/" + encodeURIComponent(id));
    if (again.status === 200) {
      const pending = again.body.status === "pending";
      for (const b of ["approve-once", "approve-session", "deny"]) $(b).disabled = !pending;
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("signin-form").addEventListener("submit", signIn);
    $("signout").addEventListener("click", signOut);
    $("approve-once").addEventListener("click", () => decide("once"));
    $("approve-session").addEventListener("click", () => decide("session"));
    $("deny").addEventListener("click", () => decide("deny"));
    $("back").addEventListener("click", () => {
      $("app").classList.remove("viewing");
      $("detail").hidden = true;
      $("history").hidden = true;
      state.selected = "";
      renderList();
    });
    start();
  });
})();
