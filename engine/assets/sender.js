// The esign sender's app (/app): documents, templates and settings, drawn in the
// browser and acting only through the documented /v1 API. No framework, no build step,
// nothing fetched from another host.
//
// The credential: the access token of POST /v1/auth lives in this closure's memory
// only. It is never written to a cookie, localStorage or sessionStorage, so a script
// that got into the page some other way finds nothing to read there, and no other
// origin's page can make the browser send it (the API takes only the Authorization
// header, which a browser never adds by itself). A reload asks for the password again
// and then returns to the view the URL names.
"use strict";

(function () {
  const root = document.getElementById("app");
  const live = document.getElementById("live");
  let token = null;
  let refreshTimer = null;
  let me = null;
  let afterSignIn = null;

  // ---------- small helpers ----------
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === false || v === null || v === undefined) continue;
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      e.append(c.nodeType ? c : document.createTextNode(String(c)));
    }
    return e;
  }
  let uid = 0;
  // A labelled input: the label's `for` names the control, so "Email" finds it.
  function field(label, attrs) {
    const id = "f" + (++uid);
    const { tag = "input", options = [], value, ...rest } = attrs || {};
    const control = el(tag, Object.assign(rest, { id }),
      ...(tag === "select" ? options.map(o => el("option", { value: o[0], selected: o[0] === value }, o[1])) : []));
    if (value !== undefined && tag !== "select") control.value = value;
    return { wrap: el("div", { class: "field" }, el("label", { for: id }, label), control), control };
  }
  function say(text) { live.textContent = ""; setTimeout(() => { live.textContent = text; }, 30); }
  const when = s => s ? new Date(s).toLocaleString() : "";

  // ---------- the API ----------
  class ApiError extends Error {
    constructor(status, body, retryAfter) {
      super((body && body.description) || ("the server answered " + status));
      this.status = status; this.body = body; this.retryAfter = retryAfter;
    }
  }
  async function api(method, path, body, opts) {
    const headers = { accept: "application/json" };
    if (token) headers.authorization = "Bearer " + token;
    let payload;
    if (body instanceof FormData) payload = body;
    else if (body !== undefined) { headers["content-type"] = "application/json"; payload = JSON.stringify(body); }
    const resp = await fetch(path, { method, headers, body: payload, credentials: "omit", cache: "no-store" });
    if (opts && opts.raw && resp.ok) return resp;
    let json = null;
    const text = await resp.text();
    if (text) { try { json = JSON.parse(text); } catch (_) { json = null; } }
    if (!resp.ok) {
      const err = new ApiError(resp.status, json, resp.headers.get("retry-after"));
      if (resp.status === 401 && token && path !== "/v1/auth") { signedOut(); }
      throw err;
    }
    return json;
  }
  const get = p => api("GET", p);
  const post = (p, b) => api("POST", p, b === undefined ? {} : b);

  function keepFresh(expiresIn) {
    clearTimeout(refreshTimer);
    const ms = Math.max(5, Math.floor(expiresIn * 0.8)) * 1000;
    refreshTimer = setTimeout(async () => {
      try { const r = await get("/v1/refresh"); token = r.access_token; keepFresh(r.expires_in); } catch (_) { /* the next call asks to sign in */ }
    }, ms);
  }
  function signedOut() {
    token = null; me = null; clearTimeout(refreshTimer);
    afterSignIn = location.pathname + location.search;
    render();
  }

  // ---------- routing: every view has its own URL ----------
  function go(path, replace) {
    if (replace) history.replaceState(null, "", path); else history.pushState(null, "", path);
    render();
  }
  function link(href, text, attrs) {
    return el("a", Object.assign({ href, onclick: e => {
      if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
      e.preventDefault(); go(href);
    } }, attrs || {}), text);
  }
  window.addEventListener("popstate", () => render());

  function frame(title, ...content) {
    document.title = title + " · esign";
    const path = location.pathname;
    const nav = el("nav", { "aria-label": "Main" },
      link("/app/documents", "Documents", { "aria-current": path.startsWith("/app/documents") && path !== "/app/documents/new" ? "page" : false }),
      link("/app/templates", "Templates", { "aria-current": path.startsWith("/app/templates") ? "page" : false }),
      link("/app/settings", "Settings", { "aria-current": path.startsWith("/app/settings") ? "page" : false }),
      link("/app/documents/new", "New document", { class: "primary", "aria-current": path === "/app/documents/new" ? "page" : false }));
    const who = me ? el("div", { class: "who" }, entitySwitch(), el("button", { type: "button", class: "quiet", onclick: signOut }, "Sign out")) : null;
    const main = el("main", { id: "main", tabindex: "-1" }, el("h1", {}, title), ...content);
    root.replaceChildren(el("a", { class: "skip", href: "#main" }, "Skip to content"),
      el("header", { class: "top" }, el("div", { class: "brand" }, "esign"), nav, who), main);
    return main;
  }
  function entitySwitch() {
    if (!me || !me.entities || me.entities.length < 2) return el("span", { class: "muted" }, me.user.email);
    const f = field("Entity", { tag: "select", value: me.user.entity_id, options: me.entities.map(e => [e.id, e.name]) });
    f.control.addEventListener("change", async () => {
      try {
        const r = await get("/v1/refresh/" + encodeURIComponent(f.control.value));
        token = r.access_token; keepFresh(r.expires_in);
        me = await get("/v1/users/me");
        say("Switched to " + f.control.selectedOptions[0].textContent);
        go("/app/documents");
      } catch (e) { showError(e); }
    });
    f.wrap.classList.add("inline");
    return f.wrap;
  }
  async function signOut() {
    try { await get("/v1/revoke"); } catch (_) { /* gone anyway */ }
    token = null; me = null; afterSignIn = null; clearTimeout(refreshTimer);
    go("/app/sign-in");
    say("Signed out");
  }
  function errorText(e) {
    if (e instanceof ApiError && e.status === 429 && e.retryAfter) return "Too many attempts: try again in " + e.retryAfter + " s.";
    if (e instanceof TypeError) return "The server cannot be reached. Check the connection and try again.";
    return e.message || String(e);
  }
  function alertBox() { return el("p", { class: "alert", role: "alert", hidden: true }); }
  function showError(e, box) {
    const b = box || document.querySelector("main .alert");
    if (b) { b.hidden = false; b.textContent = errorText(e); } else say(errorText(e));
  }

  // A view that follows changes (a document's page) polls while it is shown.
  let viewTimer = null;
  async function render() {
    clearInterval(viewTimer);
    const path = location.pathname.replace(/\/+$/, "") || "/app";
    if (!token) { if (path !== "/app/sign-in") afterSignIn = location.pathname + location.search; return signIn(); }
    if (path === "/app" || path === "/app/sign-in") return go("/app/documents", true);
    const parts = path.split("/").slice(2);
    try {
      if (parts[0] === "documents" && parts.length === 1) return await documentsList();
      if (parts[0] === "documents" && parts[1] === "new") return await newDocument();
      if (parts[0] === "documents" && parts.length === 2) return await documentPage(parts[1]);
      if (parts[0] === "documents" && parts[2] === "fields") return await fieldBuilder(parts[1]);
      if (parts[0] === "templates" && parts.length === 1) return await templatesPage();
      if (parts[0] === "settings") return await settingsPage();
      frame("Page not found", el("p", {}, "There is no such page in the app."), link("/app/documents", "Back to the documents"));
    } catch (e) {
      if (!token) return;
      frame("Something went wrong", el("p", { class: "alert", role: "alert" }, errorText(e)), link("/app/documents", "Back to the documents"));
    }
  }

  // ---------- sign-in ----------
  function signIn() {
    document.title = "Sign in · esign";
    const email = field("Email", { type: "email", autocomplete: "username", required: true });
    const password = field("Password", { type: "password", autocomplete: "current-password", required: true });
    const box = alertBox();
    const form = el("form", { class: "card narrow", novalidate: true }, box, email.wrap, password.wrap,
      el("button", { type: "submit", class: "primary" }, "Sign in"));
    form.addEventListener("submit", async e => {
      e.preventDefault();
      box.hidden = true;
      if (!email.control.value || !password.control.value) { showError(new Error("Enter your email and password."), box); return; }
      try {
        const r = await api("POST", "/v1/auth", { email: email.control.value, password: password.control.value });
        token = r.access_token; keepFresh(r.expires_in);
        me = await get("/v1/users/me");
        const next = afterSignIn && afterSignIn.startsWith("/app/") && !afterSignIn.startsWith("/app/sign-in") ? afterSignIn : "/app/documents";
        afterSignIn = null;
        go(next, true);
        say("Signed in as " + me.user.email);
      } catch (err) { showError(err, box); password.control.value = ""; }
    });
    root.replaceChildren(el("main", { id: "main", class: "signin" }, el("div", { class: "brand" }, "esign"),
      el("h1", {}, "Sign in"), form));
    if (location.pathname !== "/app/sign-in" && !afterSignIn) history.replaceState(null, "", "/app/sign-in");
    email.control.focus();
  }

  // ---------- documents ----------
  const FILTERS = [["", "All"], ["active", "Active"], ["draft", "Drafts"], ["signed", "Signed"], ["expiring", "Expiring"], ["expired", "Expired"], ["recalled", "Recalled"], ["lost", "Lost"], ["archive", "Archive"], ["won", "Won"], ["hot", "Hot"], ["vod", "Video"]];
  const SORTS = [["", "Newest first"], ["created", "Created"], ["name", "Name"], ["value", "Value"], ["status", "Status"], ["owner", "Owner"]];
  const PAGE = 25;

  async function documentsList() {
    const q = new URLSearchParams(location.search);
    const params = new URLSearchParams();
    const filter = q.get("filter") || "", sort = q.get("sort_by") || "", order = q.get("sort_order") || "asc";
    const search = q.get("q") || "", scope = q.get("scope") || "mine", offset = Math.max(0, parseInt(q.get("offset") || "0", 10) || 0);
    const folder = q.get("folder") || "";
    if (filter) params.set("filter", filter);
    if (sort) { params.set("sort_by", sort); params.set("sort_order", order); }
    if (search) params.set("external_id", search);
    if (scope === "team") params.set("showteam", "true");
    if (scope === "all") params.set("showall", "true");
    if (folder) params.set("folder_id", folder);
    params.set("offset", String(offset)); params.set("limit", String(PAGE + 1));
    const [docs, folders] = await Promise.all([get("/v1/documents?" + params), get("/v1/folders").catch(() => [])]);
    const more = docs.length > PAGE;
    const rows = docs.slice(0, PAGE);

    const f1 = field("Show", { tag: "select", value: filter, options: FILTERS });
    const f2 = field("Sort by", { tag: "select", value: sort, options: SORTS });
    const f3 = field("Order", { tag: "select", value: order, options: [["asc", "Ascending"], ["desc", "Descending"]] });
    const f4 = field("Search by external id or recipient email", { type: "search", value: search });
    const f5 = field("Whose", { tag: "select", value: scope, options: [["mine", "Mine"], ["team", "My team's"], ["all", "Everyone's"]] });
    const folderList = (Array.isArray(folders) ? folders : (folders.folders || [])).filter(x => x.type !== "template");
    const f6 = field("Folder", { tag: "select", value: folder, options: [["", "Any folder"]].concat(folderList.map(x => [x.id, x.name])) });
    const apply = e => {
      if (e) e.preventDefault();
      const n = new URLSearchParams();
      if (f1.control.value) n.set("filter", f1.control.value);
      if (f2.control.value) { n.set("sort_by", f2.control.value); n.set("sort_order", f3.control.value); }
      if (f4.control.value.trim()) n.set("q", f4.control.value.trim());
      if (f5.control.value !== "mine") n.set("scope", f5.control.value);
      if (f6.control.value) n.set("folder", f6.control.value);
      go("/app/documents" + (n.toString() ? "?" + n : ""));
    };
    const form = el("form", { class: "filters", role: "search" }, f1.wrap, f2.wrap, f3.wrap, f5.wrap, f6.wrap, f4.wrap,
      el("button", { type: "submit" }, "Apply"));
    form.addEventListener("submit", apply);
    for (const f of [f1, f2, f3, f5, f6]) f.control.addEventListener("change", apply);
    f3.wrap.hidden = !sort;

    const table = rows.length === 0
      ? el("p", { class: "empty" }, "No documents match. ", link("/app/documents/new", "Create one"))
      : el("table", { class: "list" },
        el("caption", { class: "visually-hidden" }, "Documents"),
        el("thead", {}, el("tr", {}, ["Name", "Status", "Recipients", "Value", "Created"].map(th))),
        el("tbody", {}, rows.map(d => el("tr", {},
          el("td", {}, link("/app/documents/" + encodeURIComponent(d.id), d.name || "(no name)")),
          el("td", {}, statusBadge(d.status)),
          el("td", {}, Array.isArray(d.recipients) ? d.recipients.map(r => r.fullname || r.email).join(", ") : ""),
          el("td", { class: "num" }, d.value ? String(d.value) : ""),
          el("td", {}, when(d.created_at))))));
    const pageLink = (o, text) => {
      const n = new URLSearchParams(location.search); n.set("offset", String(o));
      return link("/app/documents?" + n, text);
    };
    const pager = el("nav", { class: "pager", "aria-label": "Pages" },
      offset > 0 ? pageLink(Math.max(0, offset - PAGE), "Previous page") : null,
      el("span", { class: "muted" }, rows.length ? `${offset + 1}–${offset + rows.length}` : ""),
      more ? pageLink(offset + PAGE, "Next page") : null);
    frame("Documents", form, table, pager);
  }

  // A column heading; the acts' column is named for screen readers only.
  function th(h) { return el("th", { scope: "col" }, h || el("span", { class: "visually-hidden" }, "Actions")); }
  function statusBadge(s) { return el("span", { class: "badge s-" + s }, s); }

  async function documentPage(id) {
    const path = "/v1/documents/" + encodeURIComponent(id);
    const [d, log, comments] = await Promise.all([get(path), get(path + "/log").catch(() => []), get(path + "/comments").catch(() => [])]);
    const box = alertBox();
    const facts = el("dl", { class: "facts" },
      el("div", {}, el("dt", {}, "Status"), el("dd", {}, statusBadge(d.status))),
      el("div", {}, el("dt", {}, "Created"), el("dd", {}, when(d.created_at))),
      d.send_date ? el("div", {}, el("dt", {}, "Sent"), el("dd", {}, when(d.send_date))) : null,
      d.expiration_date ? el("div", {}, el("dt", {}, "Expires"), el("dd", {}, when(d.expiration_date))) : null,
      d.value ? el("div", {}, el("dt", {}, "Value"), el("dd", {}, String(d.value))) : null,
      d.external_id ? el("div", {}, el("dt", {}, "External id"), el("dd", {}, d.external_id)) : null);
    const recips = el("section", { "aria-labelledby": "h-rec" }, el("h2", { id: "h-rec" }, "Recipients"),
      el("table", { class: "list" },
        el("thead", {}, el("tr", {}, ["Name", "Email", "Role", "Order", "Status", ""].map(th))),
        el("tbody", {}, d.recipients.map(r => el("tr", {},
          el("td", {}, r.fullname), el("td", {}, r.email || r.mobile), el("td", {}, r.role), el("td", {}, r.order_num || ""),
          el("td", {}, statusBadge(r.status)),
          el("td", {}, recipientActs(d, r, box)))))));
    const acts = el("div", { class: "acts" }, ...documentActs(d, box));
    const timeline = el("section", { "aria-labelledby": "h-log" }, el("h2", { id: "h-log" }, "Timeline"), await chainNote(log),
      el("ol", { class: "timeline" }, log.map(e => el("li", {}, el("time", { datetime: e.at }, when(e.at)), " ", el("strong", {}, e.action), " ",
        (e.actor && e.actor.name) || "", e.detail ? el("span", { class: "muted" }, " · " + e.detail) : null))));
    const commentList = Array.isArray(comments) ? comments : (comments.comments || []);
    const newComment = field("New comment", { tag: "textarea", rows: 2, maxlength: 4000 });
    const commentForm = el("form", {}, newComment.wrap, el("button", { type: "submit" }, "Add comment"));
    commentForm.addEventListener("submit", async e => {
      e.preventDefault();
      try { await post(path + "/comments", { text: newComment.control.value }); say("Comment added"); render(); } catch (err) { showError(err, box); }
    });
    const commentSection = el("section", { "aria-labelledby": "h-com" }, el("h2", { id: "h-com" }, "Comments"),
      el("ul", { class: "comments" }, commentList.map(c => el("li", {}, el("strong", {}, (c.author && c.author.name) || c.full_name || ""), " ", el("time", { datetime: c.created_at }, when(c.created_at)), el("p", {}, c.text)))), commentForm);
    frame(d.name || "(no name)", box, facts, acts, recips, timeline, commentSection);
    // The page follows the document: when its trail grows (a recipient opened or signed
    // it), the page is drawn again, unless the sender is typing in it.
    const shown = location.pathname;
    viewTimer = setInterval(async () => {
      if (document.hidden || location.pathname !== shown) return;
      const typing = document.activeElement && /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName);
      try {
        const [nd, nl] = await Promise.all([get(path), get(path + "/log")]);
        if (stateOf(nd, nl) !== stateOf(d, log) && !typing && location.pathname === shown) { say("The document changed"); render(); }
      } catch (_) { /* shown again on the next act */ }
    }, 3000);
  }

  const stateOf = (d, log) => [d.status, d.download_url, d.content_sha256, log.length].join("|");
  const sealed = d => ["signed", "signedwithoutverification"].includes(d.status) && !!d.content_sha256;

  // The chain of GET /log checked here: each entry's hash is SHA-256 over its prev_hash,
  // a newline and the entry without `hash` in RFC 8785 canonical JSON (sorted keys;
  // JSON.stringify writes numbers and strings as RFC 8785 does).
  function canonical(v) {
    if (Array.isArray(v)) return "[" + v.map(canonical).join(",") + "]";
    if (v && typeof v === "object") return "{" + Object.keys(v).sort().map(k => JSON.stringify(k) + ":" + canonical(v[k])).join(",") + "}";
    return JSON.stringify(v);
  }
  async function chainNote(log) {
    if (!crypto.subtle || !log.length || !log.every(e => typeof e.hash === "string" && e.hash)) return el("p", { class: "muted" }, "");
    let prev = "";
    for (const e of log) {
      const copy = Object.assign({}, e); delete copy.hash;
      const bytes = new TextEncoder().encode(e.prev_hash + "\n" + canonical(copy));
      const hex = Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)), b => b.toString(16).padStart(2, "0")).join("");
      if (e.prev_hash !== prev || hex !== e.hash) return el("p", { class: "alert", role: "alert" }, "The timeline's hash chain is broken at the entry of " + when(e.at) + ": the record was changed.");
      prev = e.hash;
    }
    return el("p", { class: "ok" }, "Hash chain checked: " + log.length + " entries, unchanged.");
  }

  function actButton(text, fn, box, confirmText) {
    return el("button", { type: "button", onclick: async () => {
      if (confirmText && !confirm(confirmText)) return;
      try { await fn(); say(text + ": done"); render(); } catch (e) { showError(e, box); }
    } }, text);
  }

  function documentActs(d, box) {
    const p = "/v1/documents/" + encodeURIComponent(d.id);
    const s = d.status, out = [];
    const sent = ["sent", "viewed", "reviewed", "sealed", "hardbounced"].includes(s);
    if (s === "draft") {
      out.push(link("/app/documents/" + encodeURIComponent(d.id) + "/fields", "Edit fields", { class: "button" }));
      out.push(actButton("Send", () => post(p + "/send"), box));
      out.push(actButton("Delete", () => api("DELETE", p), box, "Delete this draft?"));
    }
    if (sent) {
      out.push(actButton("Remind", () => post(p + "/reminders"), box));
      out.push(actButton("Recall", () => api("DELETE", p), box, "Recall this document? Recipients can no longer sign it."));
      out.push(actButton("Mark lost", () => post(p + "/lost", undefined), box));
      const exp = field("New expiry date", { type: "date" });
      const f = el("form", { class: "inline" }, exp.wrap, el("button", { type: "submit" }, "Change expiry"));
      f.addEventListener("submit", async e => {
        e.preventDefault();
        try { await post(p + "/expiration", { expiration_date: exp.control.value + "T23:59:59Z" }); say("Expiry changed"); render(); } catch (err) { showError(err, box); }
      });
      out.push(f);
      const fwd = field("Forward to email", { type: "email" });
      const ff = el("form", { class: "inline" }, fwd.wrap, el("button", { type: "submit" }, "Forward"));
      ff.addEventListener("submit", async e => {
        e.preventDefault();
        try { await post(p + "/forward", { email: fwd.control.value }); say("Forwarded"); render(); } catch (err) { showError(err, box); }
      });
      out.push(ff);
    }
    if (s === "recalled") out.push(actButton("Delete for good", () => api("DELETE", p), box, "Delete this document and its data for good?"));
    if (sealed(d) && d.download_url) out.push(el("button", { type: "button", onclick: () => download(d, box) }, "Download the sealed PDF"));
    else if (["signed", "signedwithoutverification"].includes(s)) out.push(el("p", { class: "note" }, "Everyone has signed. The sealed PDF is being made; it can be downloaded here in a moment."));
    else if (d.download_url) out.push(el("button", { type: "button", onclick: () => download(d, box) }, "Download the PDF"));
    return out;
  }

  function recipientActs(d, r, box) {
    if (!["draft", "sent", "viewed", "reviewed", "sealed", "hardbounced"].includes(d.status)) return null;
    if (!["added", "sent", "viewed", "hardbounced"].includes(r.status)) return null;
    const p = "/v1/documents/" + encodeURIComponent(d.id) + "/recipients/" + encodeURIComponent(r.id);
    return actButton("Remove " + (r.fullname || r.email), () => api("DELETE", p), box, "Remove this recipient?");
  }

  async function download(d, box) {
    try {
      const resp = await api("GET", "/v1/documents/" + encodeURIComponent(d.id) + "/download?direct=true", undefined, { raw: true });
      const blob = await resp.blob();
      const url = URL.createObjectURL(blob);
      const a = el("a", { href: url, download: (d.name || "document") + ".pdf", hidden: true });
      document.body.append(a); a.click(); a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60000);
      say("Downloaded");
    } catch (e) { showError(e, box); }
  }

  // ---------- create ----------
  // A file goes up on its own (POST /v1/upload, multipart); the document or template
  // then names it by id in a JSON body.
  async function upload(file) {
    const fd = new FormData();
    fd.append("file", file, file.name);
    const u = await api("POST", "/v1/upload", fd);
    return u.file_id;
  }

  async function newDocument() {
    const q = new URLSearchParams(location.search);
    const templates = (await get("/v1/templates")).templates || [];
    const box = alertBox();
    const name = field("Document name", { required: true, maxlength: 200, value: "" });
    const source = field("Start from", { tag: "select", value: q.get("template") ? "template" : "file", options: [["file", "A PDF or Word file"], ["template", "A template"]] });
    const file = field("File", { type: "file", accept: ".pdf,.docx,application/pdf,application/vnd.openxmlformats-officedocument.wordprocessingml.document" });
    const tpl = field("Template", { tag: "select", value: q.get("template") || "", options: [["", "Choose a template"]].concat(templates.filter(t => t.status === "ready").map(t => [t.id, t.name])) });
    const customBox = el("div", { class: "custom" });
    const order = field("Sign in order", { type: "checkbox" });
    const list = el("ol", { class: "recipients" });
    const addRecipient = () => {
      const first = field("First name", { autocomplete: "off" }), last = field("Last name", { autocomplete: "off" });
      const mail = field("Email", { type: "email", autocomplete: "off" }), mobile = field("Mobile", { type: "tel", autocomplete: "off" });
      const role = field("Role", { tag: "select", value: "signer", options: [["signer", "Signer"], ["approver", "Approver"], ["cc", "Copy (cc)"]] });
      const roleName = field("Template role", { autocomplete: "off" });
      const check = field("Identity check", { tag: "select", value: "", options: [["", "None"], ["sms", "Code by SMS"], ["qna", "Question and answer"], ["eid", "eID"]] });
      const question = field("Question", { maxlength: 500 }), answer = field("Answer", { maxlength: 200, autocomplete: "off" });
      const showQna = () => { question.wrap.hidden = answer.wrap.hidden = check.control.value !== "qna"; };
      check.control.addEventListener("change", showQna);
      showQna();
      const li = el("li", { class: "card" }, first.wrap, last.wrap, mail.wrap, mobile.wrap, role.wrap, roleName.wrap, check.wrap, question.wrap, answer.wrap,
        el("button", { type: "button", class: "quiet", onclick: () => { li.remove(); say("Recipient removed"); } }, "Remove recipient"));
      li.read = () => {
        const r = { first_name: first.control.value.trim(), last_name: last.control.value.trim(), email: mail.control.value.trim(), mobile: mobile.control.value.trim(), role: role.control.value };
        if (roleName.control.value.trim()) r.role_name = roleName.control.value.trim();
        if (check.control.value === "sms") r.verify_sms = true;
        if (check.control.value === "eid") r.verify_eid = true;
        if (check.control.value === "qna") Object.assign(r, { verify_qna: true, verify_qna_question: question.control.value, verify_qna_answer: answer.control.value });
        return r;
      };
      list.append(li);
      first.control.focus();
      say("Recipient " + list.children.length + " added");
    };
    const showSource = () => {
      const t = source.control.value === "template";
      file.wrap.hidden = t; tpl.wrap.hidden = !t; customBox.hidden = !t;
    };
    source.control.addEventListener("change", showSource);
    tpl.control.addEventListener("change", async () => {
      customBox.replaceChildren();
      const t = templates.find(x => x.id === tpl.control.value);
      if (!t) return;
      if (!name.control.value) name.control.value = t.name;
      for (const f of t.fields || []) {
        const c = field(f.name, { required: f.required, value: f.default_value || "" });
        c.control.dataset.customField = f.name;
        customBox.append(c.wrap);
      }
    });
    const form = el("form", { class: "create", novalidate: true }, box, name.wrap, source.wrap, file.wrap, tpl.wrap, customBox,
      el("h2", {}, "Recipients"), order.wrap, list,
      el("button", { type: "button", onclick: addRecipient }, "Add recipient"),
      el("div", { class: "acts" }, el("button", { type: "submit", class: "primary" }, "Create and place fields")));
    form.addEventListener("submit", async e => {
      e.preventDefault();
      box.hidden = true;
      const recipients = Array.from(list.children).map((li, i) => Object.assign(li.read(), order.control.checked ? { order_num: i + 1 } : {}));
      if (!name.control.value.trim()) return showError(new Error("Give the document a name."), box);
      const body = { name: name.control.value.trim(), is_signing_order: order.control.checked, recipients };
      if (source.control.value === "template") {
        if (!tpl.control.value) return showError(new Error("Choose a template."), box);
        body.template_id = tpl.control.value;
        body.custom_fields = Array.from(customBox.querySelectorAll("[data-custom-field]")).map(i => ({ name: i.dataset.customField, value: i.value }));
      } else if (!file.control.files.length) {
        return showError(new Error("Choose a PDF or Word file."), box);
      }
      try {
        say("Creating the document");
        if (source.control.value !== "template") body.file_ids = await upload(file.control.files[0]);
        const d = await post("/v1/documents", body);
        go("/app/documents/" + encodeURIComponent(d.id) + "/fields");
      } catch (err) { showError(err, box); }
    });
    frame("New document", form);
    showSource();
    if (q.get("template")) tpl.control.dispatchEvent(new Event("change"));
  }

  // ---------- the field builder ----------
  const TYPES = [["signature", "Signature"], ["initials", "Initials"], ["text", "Text"], ["date", "Date"], ["check", "Check box"], ["name", "Name"], ["email", "Email"], ["company", "Company"], ["title", "Title"]];
  const SIZES = { signature: [200, 50], initials: [80, 40], check: [20, 20], date: [120, 24] };

  async function waitForPages(path, box) {
    for (let i = 0; i < 120; i++) {
      const d = await get(path);
      if (d.status !== "importing") {
        const pages = await get(path + "/pages");
        const list = Array.isArray(pages) ? pages : (pages.pages || []);
        if (list.length && list.every(p => p.thumb_url) || i > 60) return { d, pages: list };
      }
      if (box) { box.hidden = false; box.className = "note"; box.textContent = "The file is being read; the pages appear in a moment."; }
      await new Promise(r => setTimeout(r, 500));
    }
    throw new Error("the file's pages did not appear; reload to try again");
  }

  async function fieldBuilder(id) {
    const path = "/v1/documents/" + encodeURIComponent(id);
    const wait = el("p", { class: "note", role: "status" }, "Loading the pages");
    frame("Place fields", wait);
    const { d, pages } = await waitForPages(path, wait);
    const got = await get(path + "/fields");
    let fields = (Array.isArray(got) ? got : (got.fields || [])).map(f => ({
      field_type: f.field_type || f.type, page_num: f.page_num, field_left: f.field_left, field_top: f.field_top,
      field_width: f.field_width, field_height: f.field_height, recipient_id: f.recipient_id, is_required: f.is_required !== false,
      field_label: f.field_label || "" }));
    const signers = d.recipients.filter(r => r.role === "signer" || r.role === "approver");
    const box = alertBox();
    const saveState = el("p", { class: "muted", role: "status" }, "All changes saved");
    let selected = -1, pending = null, saving = false, dirty = false;
    const nameOf = r => (r && (r.fullname || r.email)) || "nobody";
    const recipientOf = f => d.recipients.find(r => r.id === f.recipient_id);
    const describe = f => `${labelOf(f.field_type)} for ${nameOf(recipientOf(f))} on page ${f.page_num} at ${Math.round(f.field_left)}, ${Math.round(f.field_top)} points, ${Math.round(f.field_width)} by ${Math.round(f.field_height)}`;
    const labelOf = t => (TYPES.find(x => x[0] === t) || [t, t])[1];
    const HOW = ". Arrows move, Alt and arrows resize, Delete removes.";
    // A box's name begins with the text it shows (what a person sees is what they say).
    const shown = f => labelOf(f.field_type) + " · " + nameOf(recipientOf(f));
    const boxName = f => shown(f) + ", " + describe(f) + HOW;

    // Saved through PUT /fields; a failed save (a dropped connection) is retried until
    // it goes through, and the page says so; nothing typed is lost meanwhile.
    async function save() {
      if (saving) { dirty = true; return; }
      saving = true; dirty = false;
      saveState.textContent = "Saving";
      try {
        await api("PUT", path + "/fields", { fields });
        saveState.textContent = "All changes saved";
        box.hidden = true;
      } catch (e) {
        if (e instanceof ApiError && e.status < 500 && e.status !== 408 && e.status !== 429) { showError(e, box); saveState.textContent = "Not saved"; }
        else { saveState.textContent = "Not saved yet: the connection dropped; trying again"; dirty = true; await new Promise(r => setTimeout(r, 2000)); }
      } finally { saving = false; }
      if (dirty) save();
    }
    // `full`: fields were added or removed (or changed type or person): the sheet and
    // the list are drawn again; otherwise only the moved field's box and numbers are
    // updated, so the focused box keeps the focus.
    function changed(text, i, full) {
      say(text);
      clearTimeout(pending);
      saveState.textContent = "Unsaved changes";
      pending = setTimeout(save, 400);
      if (full) draw(); else update(i);
    }
    const typeSel = field("Field type", { tag: "select", value: "signature", options: TYPES });
    const whoSel = field("For", { tag: "select", value: signers[0] ? signers[0].id : "", options: signers.map(r => [r.id, nameOf(r)]) });
    const pageSel = field("On page", { tag: "select", value: "1", options: pages.map((p, i) => [String(i + 1), String(i + 1)]) });
    const add = () => {
      const t = typeSel.control.value, [w, h] = SIZES[t] || [160, 24];
      const n = parseInt(pageSel.control.value, 10) || 1;
      const p = pages[n - 1];
      // Below the page's lowest field, so a new field never hides another.
      const below = Math.max(62, ...fields.filter(x => x.page_num === n).map(x => x.field_top + x.field_height)) + 10;
      const f = { field_type: t, page_num: n, field_left: 72, field_top: Math.min(p.page_height - h, below), field_width: w, field_height: h, recipient_id: whoSel.control.value, is_required: true, field_label: "" };
      fields.push(f);
      selected = fields.length - 1;
      changed("Added " + describe(f), selected, true);
      focusField(selected);
    };
    const toolbar = el("div", { class: "toolbar" }, typeSel.wrap, whoSel.wrap, pageSel.wrap,
      el("button", { type: "button", class: "primary", onclick: add }, "Add field"));
    const sheet = el("div", { class: "pages" });
    const table = el("div", { class: "fieldlist" });

    function clamp(f) {
      const p = pages[f.page_num - 1];
      f.field_width = Math.max(8, Math.min(f.field_width, p.page_width));
      f.field_height = Math.max(8, Math.min(f.field_height, p.page_height));
      f.field_left = Math.max(0, Math.min(f.field_left, p.page_width - f.field_width));
      f.field_top = Math.max(0, Math.min(f.field_top, p.page_height - f.field_height));
    }
    function focusField(i) { requestAnimationFrame(() => { const b = sheet.querySelector(`[data-i="${i}"]`); if (b) b.focus(); }); }
    function onKey(e, i) {
      const f = fields[i], step = e.shiftKey ? 10 : 1;
      const dirs = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };
      if (dirs[e.key]) {
        e.preventDefault();
        const [dx, dy] = dirs[e.key];
        if (e.altKey) { f.field_width += dx * step; f.field_height += dy * step; } else { f.field_left += dx * step; f.field_top += dy * step; }
        clamp(f);
        changed((e.altKey ? "Resized: " : "Moved: ") + describe(f), i);
      } else if (e.key === "Delete" || e.key === "Backspace") {
        e.preventDefault();
        fields.splice(i, 1); selected = -1;
        changed("Deleted the field", i, true);
      }
    }
    function drag(e, i, mode) {
      if (e.button > 0) return;
      e.preventDefault(); e.stopPropagation();
      const f = fields[i], img = e.currentTarget.closest(".page");
      const scale = img.clientWidth / pages[f.page_num - 1].page_width;
      const start = { x: e.clientX, y: e.clientY, l: f.field_left, t: f.field_top, w: f.field_width, h: f.field_height };
      const target = e.currentTarget;
      target.setPointerCapture(e.pointerId);
      selected = i;
      const move = ev => {
        const dx = (ev.clientX - start.x) / scale, dy = (ev.clientY - start.y) / scale;
        if (mode === "resize") { f.field_width = start.w + dx; f.field_height = start.h + dy; } else { f.field_left = start.l + dx; f.field_top = start.t + dy; }
        clamp(f);
        position(target.closest(".box") || target, f, scale);
      };
      const up = () => {
        target.removeEventListener("pointermove", move); target.removeEventListener("pointerup", up); target.removeEventListener("pointercancel", up);
        changed((mode === "resize" ? "Resized: " : "Moved: ") + describe(f), i);
        focusField(i);
      };
      target.addEventListener("pointermove", move); target.addEventListener("pointerup", up); target.addEventListener("pointercancel", up);
    }
    function position(b, f, scale) {
      b.style.left = (f.field_left * scale) + "px"; b.style.top = (f.field_top * scale) + "px";
      b.style.width = (f.field_width * scale) + "px"; b.style.height = (f.field_height * scale) + "px";
    }
    function update(i) {
      const f = fields[i], b = sheet.querySelector(`[data-i="${i}"]`);
      if (b) {
        const page = b.closest(".page");
        position(b, f, page.clientWidth / pages[f.page_num - 1].page_width);
        b.setAttribute("aria-label", boxName(f));
      }
      const item = table.querySelector(`[data-item="${i}"]`);
      if (item) {
        item.querySelector("p").textContent = describe(f);
        for (const input of item.querySelectorAll("input[data-k]")) {
          if (input !== document.activeElement) input.value = String(Math.round(f[input.dataset.k]));
        }
      }
    }
    function draw() {
      sheet.replaceChildren(...pages.map((p, n) => {
        const page = el("div", { class: "page", style: null },
          el("img", { src: p.thumb_url, alt: "Page " + (n + 1), draggable: "false" }));
        page.dataset.num = n + 1;
        requestAnimationFrame(() => {
          const scale = page.clientWidth / p.page_width;
          page.style.height = (p.page_height * scale) + "px";
          fields.forEach((f, i) => {
            if (f.page_num !== n + 1) return;
            const box = el("div", { class: "box t-" + f.field_type + (i === selected ? " selected" : ""), role: "button", tabindex: "0", "data-i": i,
              "aria-label": boxName(f),
              onkeydown: e => onKey(e, i), onfocus: () => { selected = i; },
              onpointerdown: e => drag(e, i, "move") },
            el("span", { "aria-hidden": "true" }, shown(f)),
            el("span", { class: "grip", "aria-hidden": "true", onpointerdown: e => drag(e, i, "resize") }));
            position(box, f, scale);
            page.append(box);
          });
        });
        return page;
      }));
      // The same fields as a list with numbers in points: a full alternative.
      const num = (f, k, label) => {
        const c = field(label, { type: "number", value: String(Math.round(f[k])), min: 0, step: 1, inputmode: "decimal" });
        c.control.dataset.k = k;
        c.control.addEventListener("change", () => { const v = parseFloat(c.control.value); if (!isNaN(v)) { f[k] = v; clamp(f); changed("Changed: " + describe(f), fields.indexOf(f)); } });
        return c.wrap;
      };
      table.replaceChildren(el("h2", {}, "Fields"), fields.length === 0 ? el("p", { class: "muted" }, "No fields yet.") :
        el("ol", {}, fields.map((f, i) => {
          const who = field("For", { tag: "select", value: f.recipient_id, options: signers.map(r => [r.id, nameOf(r)]) });
          who.control.addEventListener("change", () => { f.recipient_id = who.control.value; changed("Changed: " + describe(f), i, true); });
          const kind = field("Type", { tag: "select", value: f.field_type, options: TYPES });
          kind.control.addEventListener("change", () => { f.field_type = kind.control.value; changed("Changed: " + describe(f), i, true); });
          return el("li", { class: "card", "data-item": i }, el("p", {}, describe(f)), kind.wrap, who.wrap, num(f, "field_left", "Left (pt)"), num(f, "field_top", "Top (pt)"), num(f, "field_width", "Width (pt)"), num(f, "field_height", "Height (pt)"),
            el("button", { type: "button", class: "quiet", onclick: () => { fields.splice(i, 1); changed("Deleted the field", i, true); } }, "Delete field " + (i + 1)));
        })));
    }
    const sendBtn = el("button", { type: "button", class: "primary", onclick: async () => {
      try {
        clearTimeout(pending);
        await api("PUT", path + "/fields", { fields });
        await post(path + "/send");
        say("Sent");
        go("/app/documents/" + encodeURIComponent(id));
      } catch (e) { showError(e, box); }
    } }, "Send");
    const when = field("Send at (optional)", { type: "datetime-local" });
    const schedule = el("button", { type: "button", onclick: async () => {
      if (!when.control.value) return showError(new Error("Choose when to send."), box);
      try {
        await api("PUT", path + "/fields", { fields });
        await post(path + "/send", { scheduled_sending_time: new Date(when.control.value).toISOString() });
        go("/app/documents/" + encodeURIComponent(id));
      } catch (e) { showError(e, box); }
    } }, "Send at that time");
    frame("Place fields: " + (d.name || ""), box, toolbar, saveState,
      el("div", { class: "builder" }, sheet, table),
      el("div", { class: "acts" }, link("/app/documents/" + encodeURIComponent(id), "Back to the document"), when.wrap, schedule, sendBtn));
    draw();
    window.addEventListener("resize", draw, { once: true });
  }

  // ---------- templates ----------
  async function templatesPage() {
    const list = (await get("/v1/templates")).templates || [];
    const box = alertBox();
    const name = field("Template name", { required: true, maxlength: 200 });
    const file = field("File", { type: "file", accept: ".pdf,.docx" });
    const roles = field("Roles (comma-separated)", { value: "Signer" });
    const form = el("form", { class: "card" }, el("h2", {}, "New template"), name.wrap, file.wrap, roles.wrap, el("button", { type: "submit", class: "primary" }, "Create template"));
    form.addEventListener("submit", async e => {
      e.preventDefault();
      if (!name.control.value.trim() || !file.control.files.length) return showError(new Error("Give the template a name and a file."), box);
      const r = roles.control.value.split(",").map(s => s.trim()).filter(Boolean).map(role_name => ({ role_name, role: "signer" }));
      try {
        const file_id = await upload(file.control.files[0]);
        await post("/v1/templates", { name: name.control.value.trim(), file_id, roles: r });
        say("Template created"); render();
      } catch (err) { showError(err, box); }
    });
    frame("Templates", box,
      list.length === 0 ? el("p", { class: "empty" }, "No templates yet.") :
        el("table", { class: "list" }, el("thead", {}, el("tr", {}, ["Name", "Status", "Roles", "Fields", ""].map(th))),
          el("tbody", {}, list.map(t => el("tr", {}, el("td", {}, t.name), el("td", {}, statusBadge(t.status)), el("td", { class: "num" }, String(t.role_count)), el("td", { class: "num" }, String(t.field_count)),
            el("td", {}, t.status === "ready" ? link("/app/documents/new?template=" + encodeURIComponent(t.id), "Use " + t.name) : null,
              actButton("Delete " + t.name, () => api("DELETE", "/v1/templates/" + encodeURIComponent(t.id)), box, "Delete this template?")))))),
      form);
  }

  // ---------- settings ----------
  async function settingsPage() {
    const admin = me && me.user.role === "admin";
    const box = alertBox();
    const [entity, users, agents] = await Promise.all([get("/v1/entity").catch(() => null), get("/v1/users").catch(() => []), get("/v1/users/me/connections").catch(() => [])]);
    const parts = [box];
    if (entity && admin) {
      const name = field("Entity name", { value: entity.name || entity.entity_name || "", maxlength: 200 });
      const f = el("form", { class: "card" }, el("h2", {}, "Entity"), name.wrap, el("button", { type: "submit" }, "Save"));
      f.addEventListener("submit", async e => { e.preventDefault(); try { await api("PUT", "/v1/entity", { name: name.control.value }); say("Saved"); } catch (err) { showError(err, box); } });
      parts.push(f);
    }
    const userList = Array.isArray(users) ? users : (users.users || []);
    parts.push(el("section", { class: "card" }, el("h2", {}, "Users"),
      el("ul", {}, userList.map(u => el("li", {}, (u.first_name || "") + " " + (u.last_name || "") + " · " + (u.email || "") + " · " + (u.role || ""))))));
    const agentList = Array.isArray(agents) ? agents : (agents.connections || []);
    parts.push(el("section", { class: "card" }, el("h2", {}, "Connected agents"),
      agentList.length === 0 ? el("p", { class: "muted" }, "No agent is connected.") :
        el("ul", {}, agentList.map(a => el("li", {}, (a.client_name || a.client_id) + " ",
          actButton("Disconnect " + (a.client_name || a.client_id), () => api("DELETE", "/v1/users/me/connections/" + encodeURIComponent(a.client_id)), box))))));
    parts.push(el("section", { class: "card" }, el("h2", {}, "Signing certificate"),
      el("p", {}, "Final PDFs are sealed with this certificate. ", el("a", { href: "/v1/signing-certificate" }, "Download the certificate (PEM)"))));
    frame("Settings", ...parts);
  }

  render();
})();
