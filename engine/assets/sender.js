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
//
// Words: every text the app shows comes from engine/assets/messages-{lang}.json by
// key (t("nav.documents")); engine/src/handlers/app.rs tests that every language has
// every key the script uses.
"use strict";

(function () {
  const root = document.getElementById("app");
  const live = document.getElementById("live");
  let token = null;
  let refreshTimer = null;
  let me = null;
  let afterSignIn = null;

  // ---------- words: the message catalogue ----------
  // The language: the one chosen with the switcher (kept in localStorage: a preference,
  // not a secret), else the first of the browser's languages (what it sends as
  // Accept-Language) that the app has, else English.
  const LANGS = { en: "English", sv: "Svenska", nb: "Norsk bokmål", da: "Dansk", fi: "Suomi", de: "Deutsch", fr: "Français", es: "Español", nl: "Nederlands", pl: "Polski" };
  const version = document.documentElement.dataset.assets || "";
  let lang = "en", words = {}, english = {};
  // Keys asked for and not in the language's catalogue (the tests read it).
  const missing = window.esignMissingWords = [];
  function t(key, vars) {
    let s = words[key];
    if (s === undefined) { missing.push(lang + ":" + key); s = english[key] !== undefined ? english[key] : key; }
    return vars ? s.replace(/\{(\w+)\}/g, (m, k) => vars[k] !== undefined ? String(vars[k]) : m) : s;
  }
  // A value the API names (a status): its words when the catalogue has them.
  const tValue = (prefix, v) => words[prefix + v] !== undefined ? words[prefix + v] : v;
  function preferred() {
    let saved = null;
    try { saved = localStorage.getItem("esign-lang"); } catch (_) { /* storage off */ }
    if (LANGS[saved]) return saved;
    for (const l of navigator.languages || [navigator.language || "en"]) {
      const base = l.toLowerCase().split("-")[0];
      const code = base === "no" || base === "nn" ? "nb" : base;
      if (LANGS[code]) return code;
    }
    return "en";
  }
  async function loadWords(code) {
    const one = c => fetch("/app/_/messages-" + c + ".json?v=" + version).then(r => {
      if (!r.ok) throw new Error("no words for " + c);
      return r.json();
    });
    const [w, e] = await Promise.all([one(code), code === "en" ? null : one("en")]);
    words = w; english = e || w; lang = code;
    document.documentElement.lang = code;
  }
  function languageSwitch() {
    const f = field(t("nav.language"), { tag: "select", value: lang, options: Object.entries(LANGS) });
    for (const o of f.control.options) o.lang = o.value;
    f.control.addEventListener("change", async () => {
      const code = f.control.value;
      try { localStorage.setItem("esign-lang", code); } catch (_) { /* storage off */ }
      await loadWords(code);
      render();
      say(LANGS[code]);
    });
    f.wrap.classList.add("inline");
    return f.wrap;
  }

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
  const when = s => s ? new Date(s).toLocaleString(lang) : "";

  // ---------- the API ----------
  class ApiError extends Error {
    constructor(status, body, retryAfter) {
      super((body && body.description) || t("err.status", { status }));
      this.status = status; this.body = body; this.retryAfter = retryAfter;
    }
  }
  async function api(method, path, body, opts) {
    const headers = { accept: "application/json" };
    if (token) headers.authorization = "Bearer " + token;
    let payload;
    if (body instanceof FormData) payload = body;
    else if (body !== undefined) { headers["content-type"] = "application/json"; payload = JSON.stringify(body); }
    if (opts && opts.headers) Object.assign(headers, opts.headers);
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

  // At 80 % of the token's life, and at least hourly: a timer longer than 2^31 - 1 ms
  // (under 25 days; tokens live 60) fires at once, which refreshed without pause.
  function keepFresh(expiresIn) {
    clearTimeout(refreshTimer);
    const ms = Math.min(3600, Math.max(5, Math.floor(Number(expiresIn) * 0.8) || 5)) * 1000;
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

  // Where the browser is: a view that awaited the API draws only if it is still there.
  const here = () => location.pathname + location.search;
  function frame(title, ...content) {
    document.title = title + " · esign";
    const path = location.pathname;
    const nav = el("nav", { "aria-label": t("nav.main") },
      link("/app/documents", t("nav.documents"), { "aria-current": path.startsWith("/app/documents") && path !== "/app/documents/new" ? "page" : false }),
      link("/app/templates", t("nav.templates"), { "aria-current": path.startsWith("/app/templates") ? "page" : false }),
      link("/app/settings", t("nav.settings"), { "aria-current": path.startsWith("/app/settings") ? "page" : false }),
      link("/app/documents/new", t("nav.new"), { class: "primary", "aria-current": path === "/app/documents/new" ? "page" : false }));
    const who = me ? el("div", { class: "who" }, entitySwitch(), languageSwitch(), el("button", { type: "button", class: "quiet", onclick: signOut }, t("nav.signout"))) : null;
    const main = el("main", { id: "main", tabindex: "-1" }, el("h1", {}, title), ...content);
    root.replaceChildren(el("a", { class: "skip", href: "#main" }, t("nav.skip")),
      el("header", { class: "top" }, el("div", { class: "brand" }, "esign"), nav, who), main);
    return main;
  }
  function entitySwitch() {
    if (!me || !me.entities || me.entities.length < 2) return el("span", { class: "muted" }, me.user.email);
    const f = field(t("nav.entity"), { tag: "select", value: me.user.entity_id, options: me.entities.map(e => [e.id, e.name]) });
    f.control.addEventListener("change", async () => {
      try {
        const r = await get("/v1/refresh/" + encodeURIComponent(f.control.value));
        token = r.access_token; keepFresh(r.expires_in);
        me = await get("/v1/users/me");
        say(t("say.switched", { name: f.control.selectedOptions[0].textContent }));
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
    say(t("say.signedout"));
  }
  function errorText(e) {
    if (e instanceof ApiError && e.status === 429 && e.retryAfter) return t("err.retry", { seconds: e.retryAfter });
    if (e instanceof TypeError) return t("err.offline");
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
      if (parts[0] === "documents" && parts[2] === "fields") return await fieldBuilder("document", parts[1]);
      if (parts[0] === "templates" && parts[2] === "fields") return await fieldBuilder("template", parts[1]);
      if (parts[0] === "templates" && parts.length === 1) return await templatesPage();
      if (parts[0] === "settings") return await settingsPage();
      frame(t("page.notfound"), el("p", {}, t("page.notfoundtext")), link("/app/documents", t("page.back")));
    } catch (e) {
      if (!token) return;
      frame(t("page.error"), el("p", { class: "alert", role: "alert" }, errorText(e)), link("/app/documents", t("page.back")));
    }
  }

  // ---------- sign-in ----------
  function signIn() {
    document.title = t("signin.title") + " · esign";
    const email = field(t("signin.email"), { type: "email", autocomplete: "username", required: true });
    const password = field(t("signin.password"), { type: "password", autocomplete: "current-password", required: true });
    const box = alertBox();
    const form = el("form", { class: "card narrow", novalidate: true }, box, email.wrap, password.wrap,
      el("button", { type: "submit", class: "primary" }, t("signin.submit")));
    form.addEventListener("submit", async e => {
      e.preventDefault();
      box.hidden = true;
      if (!email.control.value || !password.control.value) { showError(new Error(t("signin.missing")), box); return; }
      try {
        const r = await api("POST", "/v1/auth", { email: email.control.value, password: password.control.value });
        token = r.access_token; keepFresh(r.expires_in);
        me = await get("/v1/users/me");
        const next = afterSignIn && afterSignIn.startsWith("/app/") && !afterSignIn.startsWith("/app/sign-in") ? afterSignIn : "/app/documents";
        afterSignIn = null;
        go(next, true);
        say(t("say.signedin", { email: me.user.email }));
      } catch (err) { showError(err, box); password.control.value = ""; }
    });
    root.replaceChildren(el("main", { id: "main", class: "signin" }, el("div", { class: "brand" }, "esign"),
      el("h1", {}, t("signin.title")), form, languageSwitch()));
    if (location.pathname !== "/app/sign-in" && !afterSignIn) history.replaceState(null, "", "/app/sign-in");
    email.control.focus();
  }

  // ---------- documents ----------
  const FILTERS = () => [["", t("filter.all")], ...["active", "draft", "signed", "expiring", "expired", "recalled", "lost", "archive", "won", "hot", "vod"].map(f => [f, t("filter." + f)])];
  const SORTS = () => [["", t("sort.newest")], ...["created", "name", "value", "status", "owner"].map(s => [s, t("sort." + s)])];
  const PAGE = 25;

  async function documentsList() {
    const shown = here();
    const q = new URLSearchParams(location.search);
    const params = new URLSearchParams();
    const filter = q.get("filter") || "", sort = q.get("sort_by") || "", order = q.get("sort_order") || "asc";
    const search = q.get("q") || "", scope = q.get("scope") || "mine", offset = Math.max(0, parseInt(q.get("offset") || "0", 10) || 0);
    const folder = q.get("folder") || "";
    const per = [25, 50, 100].includes(Number(q.get("per"))) ? Number(q.get("per")) : PAGE;
    if (filter) params.set("filter", filter);
    if (sort) { params.set("sort_by", sort); params.set("sort_order", order); }
    if (search) params.set("external_id", search);
    if (scope === "team") params.set("showteam", "true");
    if (scope === "all") params.set("showall", "true");
    if (folder) params.set("folder_id", folder);
    params.set("offset", String(offset)); params.set("limit", String(per + 1));
    const [docs, folders] = await Promise.all([get("/v1/documents?" + params), get("/v1/folders").catch(() => [])]);
    const more = docs.length > per;
    const rows = docs.slice(0, per);

    const f1 = field(t("list.show"), { tag: "select", value: filter, options: FILTERS() });
    const f2 = field(t("list.sortby"), { tag: "select", value: sort, options: SORTS() });
    const f3 = field(t("list.order"), { tag: "select", value: order, options: [["asc", t("list.asc")], ["desc", t("list.desc")]] });
    const f4 = field(t("list.search"), { type: "search", value: search });
    const f5 = field(t("list.whose"), { tag: "select", value: scope, options: [["mine", t("list.mine")], ["team", t("list.team")], ["all", t("list.everyone")]] });
    const folderList = (Array.isArray(folders) ? folders : (folders.folders || [])).filter(x => x.type !== "template");
    const f6 = field(t("list.folder"), { tag: "select", value: folder, options: [["", t("list.anyfolder")]].concat(folderList.map(x => [x.id, x.name])) });
    const f7 = field(t("list.perpage"), { tag: "select", value: String(per), options: [25, 50, 100].map(n => [String(n), String(n)]) });
    const apply = e => {
      if (e) e.preventDefault();
      const n = new URLSearchParams();
      if (f1.control.value) n.set("filter", f1.control.value);
      if (f2.control.value) { n.set("sort_by", f2.control.value); n.set("sort_order", f3.control.value); }
      if (f4.control.value.trim()) n.set("q", f4.control.value.trim());
      if (f5.control.value !== "mine") n.set("scope", f5.control.value);
      if (f6.control.value) n.set("folder", f6.control.value);
      if (f7.control.value !== String(PAGE)) n.set("per", f7.control.value);
      go("/app/documents" + (n.toString() ? "?" + n : ""));
    };
    const form = el("form", { class: "filters", role: "search" }, f1.wrap, f2.wrap, f3.wrap, f5.wrap, f6.wrap, f7.wrap, f4.wrap,
      el("button", { type: "submit" }, t("list.apply")));
    form.addEventListener("submit", apply);
    for (const f of [f1, f2, f3, f5, f6, f7]) f.control.addEventListener("change", apply);
    f3.wrap.hidden = !sort;

    const table = rows.length === 0
      ? el("p", { class: "empty" }, t("list.empty"), " ", link("/app/documents/new", t("list.create")))
      : el("table", { class: "list" },
        el("caption", { class: "visually-hidden" }, t("nav.documents")),
        el("thead", {}, el("tr", {}, ["col.name", "col.status", "col.recipients", "col.value", "col.created"].map(th))),
        el("tbody", {}, rows.map(d => el("tr", {},
          el("td", {}, link("/app/documents/" + encodeURIComponent(d.id), d.name || t("doc.noname"))),
          el("td", {}, statusBadge(d.status)),
          el("td", {}, Array.isArray(d.recipients) ? d.recipients.map(r => r.fullname || r.email).join(", ") : ""),
          el("td", { class: "num" }, d.value ? String(d.value) : ""),
          el("td", {}, when(d.created_at))))));
    const pageLink = (o, text) => {
      const n = new URLSearchParams(location.search); n.set("offset", String(o));
      return link("/app/documents?" + n, text);
    };
    const pager = el("nav", { class: "pager", "aria-label": t("list.pages") },
      offset > 0 ? pageLink(Math.max(0, offset - per), t("list.prev")) : null,
      el("span", { class: "muted" }, rows.length ? `${offset + 1}–${offset + rows.length}` : ""),
      more ? pageLink(offset + per, t("list.next")) : null);
    if (here() !== shown) return; // another view was asked for meanwhile
    frame(t("nav.documents"), form, table, pager, verifyCard());
  }

  // Checking a PDF's signature (POST /v1/verify): the answer in a sentence.
  function verifyCard() {
    const box = alertBox();
    const file = field(t("verify.file"), { type: "file", accept: ".pdf,application/pdf" });
    const result = el("p", { role: "status" });
    const form = el("form", { class: "card" }, el("h2", {}, t("verify.title")), box, file.wrap, el("button", { type: "submit" }, t("verify.submit")), result);
    form.addEventListener("submit", async e => {
      e.preventDefault();
      box.hidden = true; result.textContent = "";
      if (!file.control.files.length) return showError(new Error(t("verify.need")), box);
      const fd = new FormData();
      fd.append("file", file.control.files[0], file.control.files[0].name);
      try {
        const v = await api("POST", "/v1/verify", fd);
        result.className = v.valid ? "ok" : "alert";
        result.textContent = v.valid ? t(v.signed_by_this_service ? "verify.valid" : "verify.validother", { signer: v.signer || "", when: when(v.signed_at) })
          : v.signed ? t("verify.invalid", { problems: (v.problems || []).join("; ") }) : t("verify.unsigned");
      } catch (err) { showError(err, box); }
    });
    return form;
  }

  // A column heading; the acts' column is named for screen readers only.
  function th(key) { return el("th", { scope: "col" }, key ? t(key) : el("span", { class: "visually-hidden" }, t("col.actions"))); }
  function statusBadge(s) { return el("span", { class: "badge s-" + s }, tValue("status.", s)); }

  async function documentPage(id) {
    const shown = here();
    const path = "/v1/documents/" + encodeURIComponent(id);
    const data = await documentData(path);
    if (here() !== shown) return; // another view was asked for meanwhile
    drawDocument(path, data, shown);
  }
  // Everything the document's page shows, the trail's check included, so that drawing
  // it awaits nothing.
  async function documentData(path) {
    const [d, log, comments, pricing] = await Promise.all([get(path), get(path + "/log").catch(() => []), get(path + "/comments").catch(() => []),
      get(path + "/pricing-tables").catch(() => ({ pricing_tables: [] }))]);
    return { d, log, comments, pricing, chain: await chainNote(log) };
  }
  // Edits not saved yet: a form marked dirty, or a field the sender is in.
  const busy = () => (document.activeElement && /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName))
    || document.querySelector("form[data-dirty]") !== null;
  // A form whose fields changed is dirty until `saved` is called.
  function keepUnsaved(form) {
    const dirty = () => { form.dataset.dirty = "1"; };
    form.addEventListener("input", dirty);
    form.addEventListener("change", dirty);
    return { dirty, saved: () => { delete form.dataset.dirty; } };
  }
  function drawDocument(path, { d, log, comments, pricing, chain }, shown) {
    const box = alertBox();
    const facts = el("dl", { class: "facts" },
      el("div", {}, el("dt", {}, t("col.status")), el("dd", {}, statusBadge(d.status))),
      el("div", {}, el("dt", {}, t("col.created")), el("dd", {}, when(d.created_at))),
      d.send_date ? el("div", {}, el("dt", {}, t("doc.sent")), el("dd", {}, when(d.send_date))) : null,
      d.expiration_date ? el("div", {}, el("dt", {}, t("doc.expires")), el("dd", {}, when(d.expiration_date))) : null,
      d.value ? el("div", {}, el("dt", {}, t("col.value")), el("dd", {}, String(d.value))) : null,
      d.external_id ? el("div", {}, el("dt", {}, t("doc.external")), el("dd", {}, d.external_id)) : null);
    const language = field(t("doc.language"), { tag: "select", value: d.language || "en", options: Object.entries(LANGS) });
    const languageForm = el("form", { class: "inline" }, language.wrap, el("button", { type: "submit" }, t("set.save")));
    const languageEdit = keepUnsaved(languageForm);
    languageForm.addEventListener("submit", async e => {
      e.preventDefault();
      try { await api("PUT", path, { language: language.control.value }); languageEdit.saved(); say(t("say.saved")); } catch (err) { showError(err, box); }
    });
    const recips = el("section", { "aria-labelledby": "h-rec" }, el("h2", { id: "h-rec" }, t("doc.recipients")),
      el("table", { class: "list" },
        el("thead", {}, el("tr", {}, ["col.name", "col.email", "col.role", "col.order", "col.status", ""].map(th))),
        el("tbody", {}, d.recipients.map(r => el("tr", {},
          el("td", {}, r.fullname), el("td", {}, r.email || r.mobile), el("td", {}, tValue("role.", r.role)), el("td", {}, r.order_num || ""),
          el("td", {}, statusBadge(r.status)),
          el("td", {}, recipientActs(d, r, box)))))));
    const acts = el("div", { class: "acts" }, ...documentActs(d, box));
    const timeline = el("section", { "aria-labelledby": "h-log" }, el("h2", { id: "h-log" }, t("doc.timeline")), chain,
      el("ol", { class: "timeline" }, log.map(e => el("li", {}, el("time", { datetime: e.at }, when(e.at)), " ", el("strong", {}, e.action), " ",
        (e.actor && e.actor.name) || "", e.detail ? el("span", { class: "muted" }, " · " + e.detail) : null))));
    const commentList = Array.isArray(comments) ? comments : (comments.comments || []);
    const newComment = field(t("doc.newcomment"), { tag: "textarea", rows: 2, maxlength: 4000 });
    const commentForm = el("form", {}, newComment.wrap, el("button", { type: "submit" }, t("doc.addcomment")));
    keepUnsaved(commentForm);
    commentForm.addEventListener("submit", async e => {
      e.preventDefault();
      try { await post(path + "/comments", { text: newComment.control.value }); say(t("say.commented")); render(); } catch (err) { showError(err, box); }
    });
    const commentSection = el("section", { "aria-labelledby": "h-com" }, el("h2", { id: "h-com" }, t("doc.comments")),
      el("ul", { class: "comments" }, commentList.map(c => el("li", {}, el("strong", {}, (c.author && c.author.name) || c.full_name || ""), " ", el("time", { datetime: c.created_at }, when(c.created_at)), el("p", {}, c.text)))), commentForm);
    // A file that could not be imported: what happened and what to do, first.
    const failed = d.import_error ? el("div", { class: "problem", role: "alert" },
      el("strong", {}, t("doc.importfailed")), " ", d.import_error, el("br"), t("doc.importfailedhint")) : null;
    frame(d.name || t("doc.noname"), box, failed, facts, acts, recips, pricingSection(path, d, pricing, box), languageForm, timeline, commentSection);
    // The page follows the document: when its trail grows (a recipient opened or signed
    // it), the page is drawn again, unless the sender has edits in it. That is decided
    // after the last await, so no edit can begin between the check and the drawing.
    clearInterval(viewTimer);
    viewTimer = setInterval(async () => {
      if (document.hidden || here() !== shown) return;
      try {
        const [nd, nl] = await Promise.all([get(path), get(path + "/log")]);
        if (stateOf(nd, nl) === stateOf(d, log)) return;
        const next = await documentData(path);
        if (here() !== shown || busy()) return;
        say(t("say.changed"));
        drawDocument(path, next, shown);
      } catch (_) { /* shown again on the next act */ }
    }, 3000);
  }

  // The document's pricing table (GET/PUT /v1/documents/{id}/pricing-tables): sections
  // of rows (item, quantity, price), their totals, the currency. Until the document is
  // signed, recalled, lost or rejected it can change; what the editor does not show
  // (discounts and taxes, `locked`) is sent back as it came.
  function pricingSection(path, d, got, box) {
    const tables = got.pricing_tables || [];
    const table = tables[0] || { currency_settings: { currency: "", locale: "" }, sections: [], summary_values: {}, locked: false };
    const editable = !["signed", "signedwithoutverification", "recalled", "lost", "rejected", "archived"].includes(d.status);
    const sections = table.sections.map(sec => ({ display_name: sec.display_name, rows: sec.rows.map(r => ({ name: r.name, quantity: r.quantity, price: r.price })) }));
    const currency = field(t("pricing.currency"), { maxlength: 8, value: (table.currency_settings && table.currency_settings.currency) || "", disabled: !editable });
    const body = el("div", {});
    const total = el("p", { class: "total" });
    const sum = () => sections.reduce((a, sec) => a + sec.rows.reduce((b, r) => b + (Number(r.quantity) || 0) * (Number(r.price) || 0), 0), 0);
    const showTotal = () => { total.textContent = t("pricing.total") + ": " + sum().toLocaleString(lang) + " " + currency.control.value; };
    const draw = () => {
      body.replaceChildren(...sections.map((sec, si) => {
        const name = field(t("pricing.section"), { maxlength: 200, value: sec.display_name, disabled: !editable });
        name.control.addEventListener("input", () => { sec.display_name = name.control.value; });
        const cell = (r, key, label, n, attrs) => {
          const input = el("input", Object.assign({ "aria-label": label + " " + n, value: String(r[key]), disabled: !editable }, attrs));
          input.addEventListener("input", () => { r[key] = attrs.type === "number" ? Number(input.value) : input.value; showTotal(); });
          return el("td", {}, input);
        };
        const rows = sec.rows.map((r, ri) => {
          const n = ri + 1;
          return el("tr", {}, cell(r, "name", t("pricing.item"), n, { maxlength: 200 }),
            cell(r, "quantity", t("pricing.quantity"), n, { type: "number", step: "any", inputmode: "decimal" }),
            cell(r, "price", t("pricing.price"), n, { type: "number", step: "any", inputmode: "decimal" }),
            el("td", {}, editable ? el("button", { type: "button", class: "quiet", onclick: () => { sec.rows.splice(ri, 1); draw(); } }, t("pricing.removerow", { n: ri + 1 })) : null));
        });
        return el("div", { class: "pricing-section" }, name.wrap,
          el("table", { class: "list" }, el("thead", {}, el("tr", {}, ["pricing.item", "pricing.quantity", "pricing.price", ""].map(th))), el("tbody", {}, rows)),
          editable ? el("button", { type: "button", onclick: () => { sec.rows.push({ name: "", quantity: 1, price: 0 }); draw(); focusLast(si); } }, t("pricing.addrow")) : null);
      }));
      showTotal();
    };
    const focusLast = si => requestAnimationFrame(() => {
      const inputs = body.querySelectorAll(".pricing-section")[si].querySelectorAll("tbody tr:last-child input");
      if (inputs[0]) inputs[0].focus();
    });
    currency.control.addEventListener("input", showTotal);
    draw();
    // Unsaved edits keep the page from being drawn again under them.
    const form = el("form", { class: "card pricing", "aria-labelledby": "h-price" }, el("h2", { id: "h-price" }, t("pricing.title")),
      sections.length || editable ? null : el("p", { class: "muted" }, t("pricing.none")),
      currency.wrap, body, total,
      editable ? el("div", { class: "acts" },
        el("button", { type: "button", onclick: () => { sections.push({ display_name: "", rows: [{ name: "", quantity: 1, price: 0 }] }); draw(); focusLast(sections.length - 1); } }, t("pricing.addsection")),
        el("button", { type: "submit", class: "primary" }, t("pricing.save"))) : null);
    const edit = keepUnsaved(form);
    form.addEventListener("click", e => { if (e.target.type === "button") edit.dirty(); });
    form.addEventListener("submit", async e => {
      e.preventDefault();
      const out = sections.length === 0 ? [] : [Object.assign({}, table, {
        currency_settings: { currency: currency.control.value.trim(), locale: (table.currency_settings && table.currency_settings.locale) || "" },
        sections: sections.map(sec => ({ display_name: sec.display_name, rows: sec.rows.map(r => ({ name: r.name, quantity: Number(r.quantity) || 0, price: Number(r.price) || 0 })) })),
      })].concat(tables.slice(1));
      for (const x of out) { delete x.subtotal; delete x.total; }
      try { await api("PUT", path + "/pricing-tables", { pricing_tables: out }); edit.saved(); say(t("say.saved")); } catch (err) { showError(err, box); }
    });
    return form;
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
      if (e.prev_hash !== prev || hex !== e.hash) return el("p", { class: "alert", role: "alert" }, t("chain.broken", { when: when(e.at) }));
      prev = e.hash;
    }
    return el("p", { class: "ok" }, t("chain.ok", { count: log.length }));
  }

  function actButton(text, fn, box, confirmText) {
    return el("button", { type: "button", onclick: async () => {
      if (confirmText && !confirm(confirmText)) return;
      try { await fn(); say(t("say.done", { act: text })); render(); } catch (e) { showError(e, box); }
    } }, text);
  }

  function documentActs(d, box) {
    const p = "/v1/documents/" + encodeURIComponent(d.id);
    const s = d.status, out = [];
    const sent = ["sent", "viewed", "reviewed", "sealed", "hardbounced"].includes(s);
    if (s === "draft") {
      out.push(link("/app/documents/" + encodeURIComponent(d.id) + "/fields", t("act.editfields"), { class: "button" }));
      // Sending a document whose file was not imported cannot work: disabled, with why.
      if (d.import_error) {
        out.push(el("button", { type: "button", disabled: true, "aria-describedby": "send-why" }, t("act.send")),
          el("span", { id: "send-why", class: "muted" }, t("act.sendblocked")));
      } else out.push(actButton(t("act.send"), () => post(p + "/send"), box));
      out.push(actButton(t("act.delete"), () => api("DELETE", p), box, t("confirm.deletedraft")));
    }
    if (sent) {
      out.push(actButton(t("act.remind"), () => post(p + "/reminders"), box));
      out.push(actButton(t("act.recall"), () => api("DELETE", p), box, t("confirm.recall")));
      out.push(actButton(t("act.lost"), () => post(p + "/lost", undefined), box));
      const exp = field(t("act.expirydate"), { type: "date" });
      const f = el("form", { class: "inline" }, exp.wrap, el("button", { type: "submit" }, t("act.expiry")));
      f.addEventListener("submit", async e => {
        e.preventDefault();
        try { await post(p + "/expiration", { expiration_date: exp.control.value + "T23:59:59Z" }); say(t("say.expiry")); render(); } catch (err) { showError(err, box); }
      });
      out.push(f);
      const fwd = field(t("act.forwardemail"), { type: "email" });
      const ff = el("form", { class: "inline" }, fwd.wrap, el("button", { type: "submit" }, t("act.forward")));
      ff.addEventListener("submit", async e => {
        e.preventDefault();
        try { await post(p + "/forward", { email: fwd.control.value }); say(t("say.forwarded")); render(); } catch (err) { showError(err, box); }
      });
      out.push(ff);
    }
    if (!["draft", "signed", "signedwithoutverification", "recalled"].includes(s)) {
      out.push(actButton(t("act.marksigned"), () => post(p + "/manually-sign"), box, t("confirm.marksigned")));
    }
    if (["sealed", "sent", "viewed", "reviewed"].includes(s)) {
      const message = field(t("act.revisionmessage"), { tag: "textarea", rows: 2, maxlength: 2000 });
      const send = field(t("act.revisionsend"), { type: "checkbox" });
      const rf = el("form", {}, message.wrap, send.wrap, el("button", { type: "submit" }, t("act.publish")));
      rf.addEventListener("submit", async e => {
        e.preventDefault();
        try { await post(p + "/revisions", { message: message.control.value, send_document: send.control.checked }); say(t("say.done", { act: t("act.revision") })); render(); } catch (err) { showError(err, box); }
      });
      out.push(el("details", {}, el("summary", {}, t("act.revision")), rf));
    }
    if (s === "recalled") out.push(actButton(t("act.deleteforgood"), () => api("DELETE", p), box, t("confirm.deleteforgood")));
    if (sealed(d) && d.download_url) out.push(el("button", { type: "button", onclick: () => download(d, box) }, t("act.downloadsealed")));
    else if (["signed", "signedwithoutverification"].includes(s)) out.push(el("p", { class: "note" }, t("note.sealing")));
    else if (d.download_url) out.push(el("button", { type: "button", onclick: () => download(d, box) }, t("act.download")));
    return out;
  }

  function recipientActs(d, r, box) {
    if (!["draft", "sent", "viewed", "reviewed", "sealed", "hardbounced"].includes(d.status)) return null;
    if (!["added", "sent", "viewed", "hardbounced"].includes(r.status)) return null;
    const p = "/v1/documents/" + encodeURIComponent(d.id) + "/recipients/" + encodeURIComponent(r.id);
    // Correcting a recipient not reached yet (not mailed, or bounced): the fields in a
    // disclosure, saved with PUT .../recipients/{id}.
    const first = field(t("r.first"), { value: r.first_name || "" }), last = field(t("r.last"), { value: r.last_name || "" });
    const mail = field(t("r.email"), { type: "email", value: r.email || "" }), mobile = field(t("r.mobile"), { type: "tel", value: r.mobile || "" });
    const form = el("form", {}, first.wrap, last.wrap, mail.wrap, mobile.wrap, el("button", { type: "submit" }, t("act.savecorrection")));
    form.addEventListener("submit", async e => {
      e.preventDefault();
      try {
        await api("PUT", p, { first_name: first.control.value.trim(), last_name: last.control.value.trim(), email: mail.control.value.trim(), mobile: mobile.control.value.trim() });
        say(t("say.corrected")); render();
      } catch (err) { showError(err, box); }
    });
    // Signing in person: this device is handed to the recipient, who signs on their link.
    const outNow = ["sent", "viewed", "reviewed", "hardbounced"].includes(d.status) && ["sent", "viewed"].includes(r.status) && r.role !== "cc";
    // Self-signing: the sender is this recipient and signs here, with no mail round trip.
    const mine = !!(me && r.email && r.email.toLowerCase() === me.user.email.toLowerCase());
    const inPerson = outNow ? el("button", { type: "button", class: mine ? "primary" : "", onclick: async () => {
      try {
        const a = await post(mine ? "/v1/documents/" + encodeURIComponent(d.id) + "/self-sign" : p + "/in-person");
        location.assign(a.signing_url);
      } catch (err) { showError(err, box); }
    } }, mine ? t("act.selfsign") : t("act.inperson", { name: r.fullname || r.email || r.mobile })) : null;
    return [["added", "hardbounced"].includes(r.status) ? el("details", {}, el("summary", {}, t("act.correct", { name: r.fullname || r.email })), form) : null,
      inPerson,
      actButton(t("act.removerecipient", { name: r.fullname || r.email }), () => api("DELETE", p), box, t("confirm.removerecipient"))];
  }

  async function download(d, box) {
    try {
      const resp = await api("GET", "/v1/documents/" + encodeURIComponent(d.id) + "/download?direct=true", undefined, { raw: true });
      const blob = await resp.blob();
      const url = URL.createObjectURL(blob);
      const a = el("a", { href: url, download: (d.name || "document") + ".pdf", hidden: true });
      document.body.append(a); a.click(); a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60000);
      say(t("say.downloaded"));
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
    const shown = here();
    const q = new URLSearchParams(location.search);
    const templates = (await get("/v1/templates")).templates || [];
    const box = alertBox();
    const name = field(t("new.name"), { required: true, maxlength: 200, value: "" });
    const source = field(t("new.source"), { tag: "select", value: q.get("template") ? "template" : "file", options: [["file", t("new.sourcefile")], ["template", t("new.sourcetemplate")], ["archive", t("new.sourcearchive")]] });
    const file = field(t("new.file"), { type: "file", accept: ".pdf,.docx,application/pdf,application/vnd.openxmlformats-officedocument.wordprocessingml.document" });
    const tpl = field(t("new.template"), { tag: "select", value: q.get("template") || "", options: [["", t("new.choosetemplate")]].concat(templates.filter(x => x.status === "ready").map(x => [x.id, x.name])) });
    const customBox = el("div", { class: "custom" });
    const signDate = field(t("new.signdate"), { type: "date" });
    const order = field(t("new.order"), { type: "checkbox" });
    const language = field(t("new.language"), { tag: "select", value: lang, options: Object.entries(LANGS) });
    const list = el("ol", { class: "recipients" });
    const addRecipient = (who = {}) => {
      const first = field(t("r.first"), { autocomplete: "off", value: who.first_name || "" }), last = field(t("r.last"), { autocomplete: "off", value: who.last_name || "" });
      const mail = field(t("r.email"), { type: "email", autocomplete: "off", value: who.email || "" }), mobile = field(t("r.mobile"), { type: "tel", autocomplete: "off" });
      const role = field(t("r.role"), { tag: "select", value: "signer", options: ["signer", "approver", "cc"].map(x => [x, t("role." + x)]) });
      const roleName = field(t("r.rolename"), { autocomplete: "off" });
      const check = field(t("r.check"), { tag: "select", value: "", options: [["", t("check.none")], ["sms", t("check.sms")], ["qna", t("check.qna")], ["eid", t("check.eid")]] });
      const question = field(t("r.question"), { maxlength: 500 }), answer = field(t("r.answer"), { maxlength: 200, autocomplete: "off" });
      const showQna = () => { question.wrap.hidden = answer.wrap.hidden = check.control.value !== "qna"; };
      check.control.addEventListener("change", showQna);
      showQna();
      const li = el("li", { class: "card" }, first.wrap, last.wrap, mail.wrap, mobile.wrap, role.wrap, roleName.wrap, check.wrap, question.wrap, answer.wrap,
        el("button", { type: "button", class: "quiet", onclick: () => { li.remove(); say(t("say.recipientremoved")); } }, t("r.remove")));
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
      say(t("say.recipientadded", { n: list.children.length }));
    };
    // An archived file (signed elsewhere) has no recipients and no fields.
    const recipientsPart = el("div", {});
    const submit = el("button", { type: "submit", class: "primary" }, t("new.submit"));
    const showSource = () => {
      const v = source.control.value;
      file.wrap.hidden = v === "template"; tpl.wrap.hidden = customBox.hidden = v !== "template";
      signDate.wrap.hidden = v !== "archive"; recipientsPart.hidden = v === "archive";
      submit.textContent = t(v === "archive" ? "new.archive" : "new.submit");
    };
    source.control.addEventListener("change", showSource);
    tpl.control.addEventListener("change", async () => {
      customBox.replaceChildren();
      const chosen = templates.find(x => x.id === tpl.control.value);
      if (!chosen) return;
      if (!name.control.value) name.control.value = chosen.name;
      for (const f of chosen.fields || []) {
        const c = field(f.name, { required: f.required, value: f.default_value || "" });
        c.control.dataset.customField = f.name;
        customBox.append(c.wrap);
      }
    });
    recipientsPart.append(el("h2", {}, t("new.recipients")), language.wrap, order.wrap, list,
      el("button", { type: "button", onclick: () => addRecipient() }, t("new.addrecipient")),
      el("button", { type: "button", onclick: () => addRecipient(me.user) }, t("new.addme")));
    const form = el("form", { class: "create", novalidate: true }, box, name.wrap, source.wrap, file.wrap, tpl.wrap, customBox, signDate.wrap,
      recipientsPart,
      el("div", { class: "acts" }, submit));
    form.addEventListener("submit", async e => {
      e.preventDefault();
      box.hidden = true;
      const recipients = Array.from(list.children).map((li, i) => Object.assign(li.read(), order.control.checked ? { order_num: i + 1 } : {}));
      if (!name.control.value.trim()) return showError(new Error(t("new.needname")), box);
      const body = { name: name.control.value.trim(), is_signing_order: order.control.checked, recipients, language: language.control.value };
      if (source.control.value === "template") {
        if (!tpl.control.value) return showError(new Error(t("new.needtemplate")), box);
        body.template_id = tpl.control.value;
        body.custom_fields = Array.from(customBox.querySelectorAll("[data-custom-field]")).map(i => ({ name: i.dataset.customField, value: i.value }));
      } else if (!file.control.files.length) {
        return showError(new Error(t("new.needfile")), box);
      }
      try {
        say(t("say.creating"));
        if (source.control.value !== "template") body.file_ids = await upload(file.control.files[0]);
        if (source.control.value === "archive") {
          const a = { name: body.name, file_ids: body.file_ids };
          if (signDate.control.value) a.sign_date = signDate.control.value + "T12:00:00Z";
          const d = await post("/v1/upload/archive", a);
          return go("/app/documents/" + encodeURIComponent(d.id));
        }
        const d = await post("/v1/documents", body);
        go("/app/documents/" + encodeURIComponent(d.id) + "/fields");
      } catch (err) { showError(err, box); }
    });
    if (here() !== shown) return; // another view was asked for meanwhile
    frame(t("new.title"), form);
    showSource();
    if (q.get("template")) tpl.control.dispatchEvent(new Event("change"));
  }

  // ---------- the field builder ----------
  const TYPES = () => ["signature", "initials", "text", "date", "check", "name", "email", "company", "title"].map(x => [x, t("type." + x)]);
  const SIZES = { signature: [200, 50], initials: [80, 40], check: [20, 20], date: [120, 24] };

  async function waitForPages(path, box) {
    for (let i = 0; i < 120; i++) {
      const d = await get(path);
      if (d.status !== "importing") {
        const pages = await get(path + "/pages");
        const list = Array.isArray(pages) ? pages : (pages.pages || []);
        if (list.length && list.every(p => p.thumb_url) || i > 60) return { d, pages: list };
      }
      if (box) { box.hidden = false; box.className = "note"; box.textContent = t("fb.reading"); }
      await new Promise(r => setTimeout(r, 500));
    }
    throw new Error(t("fb.nopages"));
  }

  const sleep = ms => new Promise(r => setTimeout(r, ms));
  const fieldOf = (f, who) => ({ field_type: f.field_type || f.type, page_num: f.page_num, field_left: f.field_left, field_top: f.field_top,
    field_width: f.field_width, field_height: f.field_height, who, is_required: f.is_required !== false, field_label: f.field_label || "" });

  // Where the builder's pages, people and fields come from and go to: a draft (its
  // signers; PUT /v1/documents/{id}/fields) or a template (its signer roles;
  // PUT /v1/templates/{id} with page_fields).
  async function documentSource(id, wait) {
    const path = "/v1/documents/" + encodeURIComponent(id);
    const { d, pages } = await waitForPages(path, wait);
    const got = await get(path + "/fields");
    return {
      name: d.name || "", pages, types: TYPES(), path, send: true,
      people: d.recipients.filter(r => r.role === "signer" || r.role === "approver").map(r => [r.id, r.fullname || r.email]),
      fields: (Array.isArray(got) ? got : (got.fields || [])).map(f => fieldOf(f, f.recipient_id)),
      save: fields => api("PUT", path + "/fields", { fields: fields.map(({ who, ...f }) => Object.assign(f, { recipient_id: who })) }),
      back: ["/app/documents/" + encodeURIComponent(id), t("fb.back")],
    };
  }
  async function templateSource(id, wait) {
    const path = "/v1/templates/" + encodeURIComponent(id);
    let tpl;
    for (let i = 0; i < 120; i++) {
      tpl = await get(path);
      const pages = tpl.pages || [];
      if (tpl.status !== "importing" && (pages.every(p => p.thumb_url) || i > 60)) break;
      wait.textContent = t("fb.reading");
      await sleep(500);
    }
    if (tpl.status !== "ready") throw new Error(t("fb.nopages"));
    return {
      name: tpl.name, pages: tpl.pages, types: TYPES(), path, send: false, roles: tpl.roles,
      people: tpl.roles.filter(r => r.role === "signer").map(r => [r.role_name, r.role_name]),
      fields: (tpl.page_fields || []).map(f => fieldOf(f, f.role_name)),
      save: fields => api("PUT", path, { page_fields: fields.map(({ who, ...f }) => Object.assign(f, { role_name: who })) }),
      back: ["/app/templates", t("tpl.back")],
    };
  }

  async function fieldBuilder(kind, id) {
    const asked = here();
    const wait = el("p", { class: "note", role: "status" }, t("fb.loading"));
    frame(t("fb.title"), wait);
    const src = kind === "template" ? await templateSource(id, wait) : await documentSource(id, wait);
    const { pages, path } = src;
    let fields = src.fields;
    const box = alertBox();
    const saveState = el("p", { class: "muted", role: "status" }, t("fb.saved"));
    let selected = -1, pending = null, saving = false, dirty = false;
    const personOf = f => (src.people.find(p => p[0] === f.who) || [null, t("fb.nobody")])[1];
    const describe = f => t("fb.describe", { type: labelOf(f.field_type), name: personOf(f), page: f.page_num,
      left: Math.round(f.field_left), top: Math.round(f.field_top), width: Math.round(f.field_width), height: Math.round(f.field_height) });
    const labelOf = k => tValue("type.", k);
    const HOW = t("fb.how");
    // A box's name begins with the text it shows (what a person sees is what they say).
    const shown = f => labelOf(f.field_type) + " · " + personOf(f);
    const boxName = f => shown(f) + ", " + describe(f) + HOW;

    // Saved through the source's PUT; a failed save (a dropped connection) is retried until
    // it goes through, and the page says so; nothing typed is lost meanwhile.
    async function save() {
      if (saving) { dirty = true; return; }
      saving = true; dirty = false;
      saveState.textContent = t("fb.saving");
      try {
        await src.save(fields);
        saveState.textContent = t("fb.saved");
        box.hidden = true;
      } catch (e) {
        if (e instanceof ApiError && e.status < 500 && e.status !== 408 && e.status !== 429) { showError(e, box); saveState.textContent = t("fb.notsaved"); }
        else { saveState.textContent = t("fb.retrying"); dirty = true; await new Promise(r => setTimeout(r, 2000)); }
      } finally { saving = false; }
      if (dirty) save();
    }
    // `full`: fields were added or removed (or changed type or person): the sheet and
    // the list are drawn again; otherwise only the moved field's box and numbers are
    // updated, so the focused box keeps the focus.
    function changed(text, i, full) {
      say(text);
      clearTimeout(pending);
      saveState.textContent = t("fb.unsaved");
      pending = setTimeout(save, 400);
      if (full) draw(); else update(i);
    }
    const typeSel = field(t("fb.type"), { tag: "select", value: "signature", options: src.types });
    const whoSel = field(t("fb.for"), { tag: "select", value: src.people[0] ? src.people[0][0] : "", options: src.people });
    const pageSel = field(t("fb.page"), { tag: "select", value: "1", options: pages.map((p, i) => [String(i + 1), String(i + 1)]) });
    const add = () => {
      const kind = typeSel.control.value, [w, h] = SIZES[kind] || [160, 24];
      const n = parseInt(pageSel.control.value, 10) || 1;
      const p = pages[n - 1];
      // Below the page's lowest field, so a new field never hides another.
      const below = Math.max(62, ...fields.filter(x => x.page_num === n).map(x => x.field_top + x.field_height)) + 10;
      const f = { field_type: kind, page_num: n, field_left: 72, field_top: Math.min(p.page_height - h, below), field_width: w, field_height: h, who: whoSel.control.value, is_required: true, field_label: "" };
      fields.push(f);
      selected = fields.length - 1;
      changed(t("fb.added", { field: describe(f) }), selected, true);
      focusField(selected);
    };
    const toolbar = el("div", { class: "toolbar" }, typeSel.wrap, whoSel.wrap, pageSel.wrap,
      el("button", { type: "button", class: "primary", onclick: add }, t("fb.add")));
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
        changed(t(e.altKey ? "fb.resized" : "fb.moved", { field: describe(f) }), i);
      } else if (e.key === "Delete" || e.key === "Backspace") {
        e.preventDefault();
        fields.splice(i, 1); selected = -1;
        changed(t("fb.deleted"), i, true);
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
        changed(t(mode === "resize" ? "fb.resized" : "fb.moved", { field: describe(f) }), i);
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
          el("img", { src: p.thumb_url, alt: t("fb.pageimage", { n: n + 1 }), draggable: "false" }));
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
        c.control.addEventListener("change", () => { const v = parseFloat(c.control.value); if (!isNaN(v)) { f[k] = v; clamp(f); changed(t("fb.changed", { field: describe(f) }), fields.indexOf(f)); } });
        return c.wrap;
      };
      table.replaceChildren(el("h2", {}, t("fb.fields")), fields.length === 0 ? el("p", { class: "muted" }, t("fb.none")) :
        el("ol", {}, fields.map((f, i) => {
          const who = field(t("fb.for"), { tag: "select", value: f.who, options: src.people });
          who.control.addEventListener("change", () => { f.who = who.control.value; changed(t("fb.changed", { field: describe(f) }), i, true); });
          const kind = field(t("fb.kind"), { tag: "select", value: f.field_type, options: src.types });
          kind.control.addEventListener("change", () => { f.field_type = kind.control.value; changed(t("fb.changed", { field: describe(f) }), i, true); });
          return el("li", { class: "card", "data-item": i }, el("p", {}, describe(f)), kind.wrap, who.wrap, num(f, "field_left", t("fb.left")), num(f, "field_top", t("fb.top")), num(f, "field_width", t("fb.width")), num(f, "field_height", t("fb.height")),
            el("button", { type: "button", class: "quiet", onclick: () => { fields.splice(i, 1); changed(t("fb.deleted"), i, true); } }, t("fb.deletefield", { n: i + 1 })));
        })));
    }
    const ending = [link(src.back[0], src.back[1])];
    if (src.send) {
      const sendBtn = el("button", { type: "button", class: "primary", onclick: async () => {
        try {
          clearTimeout(pending);
          await src.save(fields);
          await post(path + "/send");
          say(t("say.sent"));
          go("/app/documents/" + encodeURIComponent(id));
        } catch (e) { showError(e, box); }
      } }, t("act.send"));
      const at = field(t("fb.sendat"), { type: "datetime-local" });
      const schedule = el("button", { type: "button", onclick: async () => {
        if (!at.control.value) return showError(new Error(t("fb.needwhen")), box);
        try {
          await src.save(fields);
          await post(path + "/send", { scheduled_sending_time: new Date(at.control.value).toISOString() });
          go("/app/documents/" + encodeURIComponent(id));
        } catch (e) { showError(e, box); }
      } }, t("fb.sendatthattime"));
      ending.push(at.wrap, schedule, sendBtn);
    }
    // A template's roles: renamed, added or removed here (a role its fields use stays).
    let rolesForm = null;
    if (src.roles) {
      const roles = field(t("tpl.roles"), { value: src.roles.map(r => r.role_name).join(", ") });
      rolesForm = el("form", { class: "inline card" }, roles.wrap, el("button", { type: "submit" }, t("tpl.saveroles")));
      rolesForm.addEventListener("submit", async e => {
        e.preventDefault();
        const names = roles.control.value.split(",").map(x => x.trim()).filter(Boolean);
        const kept = names.map(n => src.roles.find(r => r.role_name === n) || { role_name: n, role: "signer" });
        try {
          await api("PUT", path, { roles: kept.map(r => ({ role_name: r.role_name, role: r.role })) });
          say(t("say.rolessaved"));
          render();
        } catch (err) { showError(err, box); }
      });
    }
    if (here() !== asked) return; // another view was asked for meanwhile
    frame(t("fb.titlenamed", { name: src.name }), box, rolesForm, toolbar, saveState,
      el("div", { class: "builder" }, sheet, table),
      el("div", { class: "acts" }, ...ending));
    draw();
    window.addEventListener("resize", draw, { once: true });
  }

  // ---------- templates ----------
  async function templatesPage() {
    const shown = here();
    const list = (await get("/v1/templates")).templates || [];
    const box = alertBox();
    const name = field(t("tpl.name"), { required: true, maxlength: 200 });
    const file = field(t("tpl.file"), { type: "file", accept: ".pdf,.docx" });
    const roles = field(t("tpl.roles"), { value: t("tpl.defaultrole") });
    const form = el("form", { class: "card" }, el("h2", {}, t("tpl.new")), name.wrap, file.wrap, roles.wrap, el("button", { type: "submit", class: "primary" }, t("tpl.create")));
    form.addEventListener("submit", async e => {
      e.preventDefault();
      if (!name.control.value.trim() || !file.control.files.length) return showError(new Error(t("tpl.need")), box);
      const r = roles.control.value.split(",").map(s => s.trim()).filter(Boolean).map(role_name => ({ role_name, role: "signer" }));
      try {
        const file_id = await upload(file.control.files[0]);
        await post("/v1/templates", { name: name.control.value.trim(), file_id, roles: r });
        say(t("say.templatecreated")); render();
      } catch (err) { showError(err, box); }
    });
    const links = await publicLinksSection(list, box);
    const bulk = bulkSection(list, box);
    if (here() !== shown) return; // another view was asked for meanwhile
    frame(t("tpl.title"), box,
      list.length === 0 ? el("p", { class: "empty" }, t("tpl.empty")) :
        el("table", { class: "list" }, el("thead", {}, el("tr", {}, ["col.name", "col.status", "col.roles", "col.fields", ""].map(th))),
          el("tbody", {}, list.map(x => el("tr", {}, el("td", {}, x.name), el("td", {}, statusBadge(x.status)), el("td", { class: "num" }, String(x.role_count)), el("td", { class: "num" }, String(x.field_count)),
            el("td", {}, x.status === "ready" ? link("/app/documents/new?template=" + encodeURIComponent(x.id), t("tpl.use", { name: x.name })) : null, " ",
              x.status === "ready" ? link("/app/templates/" + encodeURIComponent(x.id) + "/fields", t("tpl.editfields", { name: x.name })) : null, " ",
              actButton(t("tpl.delete", { name: x.name }), () => api("DELETE", "/v1/templates/" + encodeURIComponent(x.id)), box, t("confirm.deletetemplate"))))))),
      form, links, bulk);
  }

  // Bulk send (POST /v1/templates/{id}/bulk-sends): a CSV file against a ready
  // template, previewed first (?preview=true: the first rows as they will be sent, and
  // what is wrong with them), then sent with a progress bar until the batch is done.
  function bulkSection(templates, box) {
    const ready = templates.filter(x => x.status === "ready");
    if (!ready.length) return null;
    const tpl = field(t("pl.template"), { tag: "select", value: ready[0].id, options: ready.map(x => [x.id, x.name]) });
    const file = field(t("bulk.file"), { type: "file", accept: ".csv,text/csv" });
    const shown = el("div", { class: "bulk-preview" });
    const bar = el("progress", { max: 1, value: 0, hidden: true, "aria-label": t("bulk.progress") });
    const status = el("p", { role: "status" });
    const send = el("button", { type: "button", class: "primary", hidden: true }, t("bulk.send", { n: 0 }));
    const path = () => "/v1/templates/" + encodeURIComponent(tpl.control.value) + "/bulk-sends";
    const body = () => { const fd = new FormData(); fd.append("file", file.control.files[0], file.control.files[0].name); return fd; };
    const who = r => (r.recipients || []).map(x => [x.first_name, x.last_name].filter(Boolean).join(" ") + " <" + (x.email || x.mobile || "") + ">").join(", ");
    const preview = el("button", { type: "button", onclick: async () => {
      box.hidden = true; send.hidden = true;
      if (!file.control.files.length) return showError(new Error(t("bulk.needfile")), box);
      try {
        const p = await api("POST", path() + "?preview=true", body());
        shown.replaceChildren(el("p", {}, t("bulk.rows", { n: p.rows_total })),
          el("table", { class: "list" }, el("thead", {}, el("tr", {}, ["bulk.row", "bulk.who", "bulk.problem"].map(th))),
            el("tbody", {}, p.rows.map(r => el("tr", {}, el("td", { class: "num" }, String(r.row)), el("td", {}, who(r)), el("td", { class: r.error ? "alert" : "" }, r.error || ""))))));
        send.textContent = t("bulk.send", { n: p.rows_total }); send.hidden = false;
      } catch (err) { showError(err, box); }
    } }, t("bulk.preview"));
    send.addEventListener("click", async () => {
      send.disabled = true;
      try {
        const key = "app-" + Date.now() + "-" + Math.random().toString(36).slice(2);
        const b = await api("POST", path(), body(), { headers: { "idempotency-key": key } });
        bar.hidden = false;
        for (let i = 0; i < 3600; i++) {
          const g = await get("/v1/bulk-sends/" + encodeURIComponent(b.id));
          bar.max = g.rows_total; bar.value = g.rows_done + g.rows_failed;
          status.textContent = t("bulk.status", { done: g.rows_done, failed: g.rows_failed, total: g.rows_total });
          if (g.status === "done") {
            shown.replaceChildren(el("p", {}, t("bulk.finished", { done: g.rows_done, failed: g.rows_failed })),
              g.errors.length ? el("ul", {}, g.errors.map(e => el("li", {}, t("bulk.error", { row: e.row, reason: e.reason })))) : null,
              link("/app/documents", t("bulk.documents")));
            send.hidden = true;
            break;
          }
          await new Promise(r => setTimeout(r, 1000));
        }
      } catch (err) { showError(err, box); } finally { send.disabled = false; }
    });
    return el("section", { "aria-labelledby": "bulk-send" }, el("h2", { id: "bulk-send" }, t("bulk.title")),
      el("div", { class: "card" }, el("p", { class: "note" }, t("bulk.help")), tpl.wrap, file.wrap, preview, shown, send, bar, status));
  }

  // Public signing links (POST /v1/templates/{id}/public-links): publish a ready
  // template with its terms; each link with its address, QR code, uses and Unpublish.
  async function publicLinksSection(templates, box) {
    const links = (await get("/v1/public-links").catch(() => ({ public_links: [] }))).public_links || [];
    const ready = templates.filter(x => x.status === "ready");
    const nameOf = id => (templates.find(x => x.id === id) || { name: id }).name;
    const tpl = field(t("pl.template"), { tag: "select", value: ready.length ? ready[0].id : "", options: ready.map(x => [x.id, x.name]) });
    const max = field(t("pl.maxuses"), { type: "number", min: 1, max: 1000000, step: 1 });
    const until = field(t("pl.expires"), { type: "date" });
    const once = field(t("pl.oneper"), { type: "checkbox" });
    const code = field(t("pl.code"), { type: "checkbox" });
    const form = el("form", { class: "card" }, el("h3", {}, t("pl.new")), tpl.wrap, max.wrap, until.wrap, once.wrap, code.wrap,
      el("button", { type: "submit" }, t("pl.publish")));
    form.addEventListener("submit", async e => {
      e.preventDefault();
      const body = { one_per_email: once.control.checked, require_email_code: code.control.checked };
      if (max.control.value) body.max_uses = Number(max.control.value);
      if (until.control.value) body.expires_at = until.control.value + "T23:59:59Z";
      try {
        const l = await post("/v1/templates/" + encodeURIComponent(tpl.control.value) + "/public-links", body);
        say(t("say.published", { url: l.url })); render();
      } catch (err) { showError(err, box); }
    });
    const row = l => {
      const path = new URL(l.url).pathname;
      return el("li", { class: "card public-link" },
        el("img", { src: path + "/qr.png", alt: t("pl.qr", { name: nameOf(l.template_id) }), width: 120, height: 120, class: "qr" }),
        el("div", {}, el("strong", {}, nameOf(l.template_id)), el("br"), el("a", { href: l.url, rel: "noopener" }, l.url), el("br"),
          el("span", { class: "muted" }, l.max_uses ? t("pl.uses", { uses: l.uses, max: l.max_uses }) : t("pl.usesfree", { uses: l.uses })), " ",
          actButton(t("pl.unpublish", { name: nameOf(l.template_id) }), () => api("DELETE", "/v1/public-links/" + encodeURIComponent(l.id)), box, t("confirm.unpublish"))));
    };
    return el("section", { "aria-labelledby": "public-links" }, el("h2", { id: "public-links" }, t("pl.title")),
      links.length ? el("ul", { class: "public-links" }, links.map(row)) : el("p", { class: "empty" }, t("pl.empty")),
      ready.length ? form : null);
  }

  // ---------- settings ----------
  // Webhook subscriptions: the caller's (all of the entity's for an admin), a new one
  // (its signing secret shown once), a new secret, unsubscribing, and the deliveries
  // that failed for good, each of which can be sent again.
  async function webhooksSection(box) {
    const [subs, events, failed] = await Promise.all([get("/v1/subscriptions").catch(() => []), get("/v1/subscriptions/events").catch(() => []), get("/v1/subscriptions/errors").catch(() => [])]);
    const secret = el("p", { class: "note", role: "status", hidden: true });
    const show = text => { secret.hidden = false; secret.textContent = text; };
    const event = field(t("set.event"), { tag: "select", value: "document.signed", options: events.map(e => [e.value, e.value]) });
    const url = field(t("set.targeturl"), { type: "url", placeholder: "https://", maxlength: 2000 });
    const form = el("form", { class: "inline" }, event.wrap, url.wrap, el("button", { type: "submit" }, t("set.subscribe")));
    form.addEventListener("submit", async e => {
      e.preventDefault();
      try {
        const made = await post("/v1/subscriptions", { event: event.control.value, target_url: url.control.value.trim() });
        await settingsPage();
        document.querySelector("[data-secret]").hidden = false;
        document.querySelector("[data-secret]").textContent = t("say.subscribed", { secret: made.secret });
      } catch (err) { showError(err, box); }
    });
    secret.dataset.secret = "";
    const list = subs.length === 0 ? el("p", { class: "muted" }, t("set.nowebhooks")) :
      el("ul", {}, subs.map(x => el("li", {}, el("strong", {}, x.event), " → ", x.target_url, " · ",
        x.state === "active" ? t("set.active") : t("set.disabled", { reason: x.disabled_reason || "" }), " ",
        el("button", { type: "button", onclick: async () => {
          try { const r = await post("/v1/subscriptions/" + encodeURIComponent(x.id) + "/secret"); show(t("say.rotated", { secret: r.secret })); } catch (err) { showError(err, box); }
        } }, t("set.rotate", { url: x.target_url })), " ",
        actButton(t("set.unsubscribe", { url: x.target_url }), () => api("DELETE", "/v1/subscriptions/" + encodeURIComponent(x.id)), box, t("confirm.unsubscribe")),
        pendingDeliveries(x, box))));
    const errors = failed.length === 0 ? el("p", { class: "muted" }, t("set.nofailed")) :
      el("ul", {}, failed.map(f => el("li", {}, t("set.failedline", { event: f.event, url: f.target_url, attempts: f.attempts, error: f.last_error, when: when(f.failed_at) }), " ",
        f.id ? actButton(t("set.retry", { event: f.event, url: f.target_url }), () => post("/v1/subscriptions/errors/" + encodeURIComponent(f.id) + "/retry"), box) : null)));
    return el("section", { class: "card" }, el("h2", {}, t("set.webhooks")), secret, list, form, await testForm(events, box), el("h3", {}, t("set.failed")), errors);
  }

  // A subscription's deliveries still waiting (GET /v1/subscriptions/{id}/deliveries):
  // not tried yet, or failed and to be tried again with the last error; read when
  // opened, and again each time.
  function pendingDeliveries(sub, box) {
    const list = el("div", { "aria-live": "polite" });
    const d = el("details", {}, el("summary", {}, t("set.deliveries", { url: sub.target_url })), list);
    d.addEventListener("toggle", async () => {
      if (!d.open) return;
      try {
        const r = await get("/v1/subscriptions/" + encodeURIComponent(sub.id) + "/deliveries");
        list.replaceChildren(r.deliveries.length === 0 ? el("p", { class: "muted" }, t("set.nodeliveries")) :
          el("ul", {}, r.deliveries.map(x => el("li", {},
            t("set.deliveryline", { event: x.event, status: tValue("delivery.", x.status), attempts: x.attempts, when: when(x.next_attempt_at) }),
            x.last_error ? " · " + t("set.lasterror", { error: x.last_error }) : ""))));
      } catch (err) { showError(err, box); }
    });
    return d;
  }

  // A test event to the subscriptions of an event (POST /v1/subscriptions/test), about
  // one of the latest documents.
  async function testForm(events, box) {
    const listed = await get("/v1/documents?limit=20").catch(() => []);
    const docs = Array.isArray(listed) ? listed : [];
    const event = field(t("set.event"), { tag: "select", value: "document.signed", options: events.map(e => [e.value, e.value]) });
    const doc = field(t("set.testdocument"), { tag: "select", value: "", options: docs.map(d => [d.id, d.name || d.id]) });
    const f = el("form", { class: "inline" }, el("h3", {}, t("set.testevent")), event.wrap, doc.wrap, el("button", { type: "submit" }, t("set.testsend")));
    f.addEventListener("submit", async e => {
      e.preventDefault();
      try {
        const r = await post("/v1/subscriptions/test", { event: event.control.value, document_id: doc.control.value });
        say(t("set.testsent", { id: r.event_id, count: r.subscriptions.length }));
        const note = document.querySelector("[data-secret]");
        note.hidden = false;
        note.textContent = t("set.testsent", { id: r.event_id, count: r.subscriptions.length });
      } catch (err) { showError(err, box); }
    });
    return f;
  }

  // The entity's default invitation texts (PUT /v1/entity), used when a document has
  // none of its own; empty, the built-in ones in the document's language.
  function mailTextsSection(ent, box) {
    const subject = field(t("set.mailsubject"), { value: ent.email_send_subject || "", maxlength: 1000 });
    const message = field(t("set.mailmessage"), { tag: "textarea", rows: 4, maxlength: 10000 });
    message.control.value = ent.email_send_message || "";
    const f = el("form", { class: "card" }, el("h2", {}, t("set.mailtexts")), el("p", { class: "muted" }, t("set.mailhint")),
      subject.wrap, message.wrap, el("button", { type: "submit" }, t("set.save")));
    f.addEventListener("submit", async e => {
      e.preventDefault();
      try { await api("PUT", "/v1/entity", { email_send_subject: subject.control.value, email_send_message: message.control.value }); say(t("say.saved")); } catch (err) { showError(err, box); }
    });
    return f;
  }

  // The entity's colour and logo on its documents' signing pages (PUT /v1/entity with
  // `brand_color` and `logo`, a PNG as a data URL).
  function brandingSection(ent, box) {
    const color = field(t("set.brandcolor"), { type: "color", value: ent.brand_color || "#1a4fd6" });
    const logo = field(t("set.logo"), { type: "file", accept: "image/png" });
    const put = async body => {
      try { await api("PUT", "/v1/entity", body); say(t("say.saved")); await settingsPage(); } catch (err) { showError(err, box); }
    };
    const f = el("form", { class: "card", "aria-labelledby": "h-brand" }, el("h2", { id: "h-brand" }, t("set.branding")), el("p", { class: "muted" }, t("set.brandhint")),
      ent.logo_url ? el("img", { class: "logo", src: ent.logo_url, alt: t("set.currentlogo") }) : null,
      color.wrap, logo.wrap,
      el("div", { class: "acts" }, el("button", { type: "submit" }, t("set.save")),
        ent.brand_color ? el("button", { type: "button", onclick: () => put({ brand_color: "" }) }, t("set.nocolor")) : null,
        ent.logo_url ? el("button", { type: "button", onclick: () => put({ logo: "" }) }, t("set.removelogo")) : null));
    f.addEventListener("submit", async e => {
      e.preventDefault();
      const body = { brand_color: color.control.value };
      const file = logo.control.files[0];
      if (file) {
        body.logo = await new Promise((ok, no) => { const r = new FileReader(); r.onload = () => ok(r.result); r.onerror = no; r.readAsDataURL(file); });
      }
      await put(body);
    });
    return f;
  }

  // What each kind of party gets by mail when a document is completed (PUT /v1/entity
  // with `completion_copies_by_party`): the signed PDF attached, a download link, or nothing.
  function copiesSection(ent, box) {
    const chosen = ent.completion_copies_by_party || {};
    const kinds = ["signers", "approvers", "cc", "owner", "copy_emails"];
    const choices = kinds.map(k => [k, field(t("set.copies.kind." + k), { tag: "select", value: chosen[k] || ent.completion_copies || "attachment",
      options: ["attachment", "link", "none"].map(c => [c, t("set.copies." + c)]) })]);
    const f = el("form", { class: "card", "aria-labelledby": "h-copies" }, el("h2", { id: "h-copies" }, t("set.copies")),
      el("p", { class: "muted" }, t("set.copieshint")), ...choices.map(([, c]) => c.wrap), el("button", { type: "submit" }, t("set.save")));
    f.addEventListener("submit", async e => {
      e.preventDefault();
      const byParty = Object.fromEntries(choices.map(([k, c]) => [k, c.control.value]));
      try { await api("PUT", "/v1/entity", { completion_copies_by_party: byParty }); say(t("say.saved")); } catch (err) { showError(err, box); }
    });
    return f;
  }

  // When automatic reminders go (PUT /v1/entity with `reminder_schedule`): the first
  // after N days, then every M days, at most K rounds; none after the expiry.
  function remindersSection(ent, box) {
    const now = ent.reminder_schedule || { first_after_days: 3, every_days: 3, max: 5 };
    const num = (key, value, min, max) => field(t(key), { type: "number", value: String(value), min, max, step: 1, required: true });
    const first = num("set.rem.first", now.first_after_days, 1, 365), every = num("set.rem.every", now.every_days, 1, 365), max = num("set.rem.max", now.max, 0, 50);
    const f = el("form", { class: "card", "aria-labelledby": "h-rem" }, el("h2", { id: "h-rem" }, t("set.rem")),
      el("p", { class: "muted" }, t("set.remhint")), first.wrap, every.wrap, max.wrap, el("button", { type: "submit" }, t("set.save")));
    f.addEventListener("submit", async e => {
      e.preventDefault();
      const reminder_schedule = { first_after_days: Number(first.control.value), every_days: Number(every.control.value), max: Number(max.control.value) };
      try { await api("PUT", "/v1/entity", { reminder_schedule }); say(t("say.saved")); } catch (err) { showError(err, box); }
    });
    return f;
  }

  // The sites that may frame the entity's signing pages (PUT /v1/entity with
  // `embed_origins`): exact https:// origins, one a line, at most 20.
  function embedSection(ent, box) {
    const list = field(t("set.embed.origins"), { tag: "textarea", rows: 3, maxlength: 4000, spellcheck: "false" });
    list.control.value = (ent.embed_origins || []).join("\n");
    const f = el("form", { class: "card", "aria-labelledby": "h-embed" }, el("h2", { id: "h-embed" }, t("set.embed")),
      el("p", { class: "muted" }, t("set.embedhint")), list.wrap, el("button", { type: "submit" }, t("set.save")));
    f.addEventListener("submit", async e => {
      e.preventDefault();
      const embed_origins = list.control.value.split(/\s+/).map(x => x.trim()).filter(Boolean);
      try { await api("PUT", "/v1/entity", { embed_origins }); say(t("say.saved")); } catch (err) { showError(err, box); }
    });
    return f;
  }

  // A member's role, to choose.
  function roleField(label, value) {
    return field(label, { tag: "select", value, options: ["user", "manager", "admin"].map(r => [r, t("set.role." + r)]) });
  }

  // A new member of the entity (POST /v1/users): invited by mail, a member once they accept.
  function addUserForm(box, teams) {
    const email = field(t("signin.email"), { type: "email", autocomplete: "off", maxlength: 254 });
    const first = field(t("r.first"), { autocomplete: "off", maxlength: 100 }), last = field(t("r.last"), { autocomplete: "off", maxlength: 100 });
    const role = roleField(t("set.userrole"), "user");
    // A team is the name its members carry: an existing one or a new one.
    const team = field(t("set.team"), { maxlength: 64, autocomplete: "off", list: "teams-known" });
    const f = el("form", { class: "inline" }, email.wrap, first.wrap, last.wrap, role.wrap, team.wrap, el("button", { type: "submit" }, t("set.adduser")));
    f.addEventListener("submit", async e => {
      e.preventDefault();
      try {
        const u = await post("/v1/users", { email: email.control.value.trim(), first_name: first.control.value.trim(), last_name: last.control.value.trim(), role: role.control.value, team_id: team.control.value.trim() });
        await settingsPage();
        const note = document.querySelector("[data-secret]");
        note.hidden = false;
        note.textContent = t("set.useradded", { email: u.email });
        say(t("set.useradded", { email: u.email }));
      } catch (err) { showError(err, box); }
    });
    return f;
  }

  // A member in the users list. Managers and admins move others to another team, and
  // admins give them another role (PUT /v1/users/{id}); nobody changes their own role.
  function userRow(u, box) {
    const name = u.name || u.email || "";
    const text = name + " · " + (u.email || "") + " · " + t("set.role." + (u.role || "user")) + (u.team_id ? " · " + u.team_id : "");
    const mine = me && me.user.role;
    if (!(mine === "admin" || (mine === "manager" && u.role === "user")) || u.user_id === me.user.id) return el("li", {}, text);
    const team = field(t("set.teamof", { name }), { value: u.team_id || "", maxlength: 64, autocomplete: "off", list: "teams-known" });
    const role = mine === "admin" ? roleField(t("set.roleof", { name }), u.role || "user") : null;
    const f = el("form", { class: "inline" }, team.wrap, role && role.wrap, el("button", { type: "submit" }, t("set.saveuser", { name })));
    f.addEventListener("submit", async e => {
      e.preventDefault();
      const body = { team_id: team.control.value.trim() };
      if (role) body.role = role.control.value;
      try {
        await api("PUT", "/v1/users/" + encodeURIComponent(u.user_id), body);
        await settingsPage();
        say(t("say.saved"));
      } catch (err) { showError(err, box); }
    });
    return el("li", {}, text, f);
  }

  // The custom data properties documents of the entity may carry (/v1/custom-data/entity).
  async function propertiesSection(box) {
    const got = await get("/v1/custom-data/entity").catch(() => ({ allowed_properties: [] }));
    const props = got.allowed_properties || [];
    const key = field(t("set.propkey"), { maxlength: 64, autocomplete: "off" });
    const label = field(t("set.proplabel"), { maxlength: 200, autocomplete: "off" });
    const type = field(t("set.proptype"), { tag: "select", value: "string", options: ["string", "number", "boolean"].map(v => [v, t("set.proptype." + v)]) });
    const f = el("form", { class: "inline" }, key.wrap, label.wrap, type.wrap, el("button", { type: "submit" }, t("set.addprop")));
    f.addEventListener("submit", async e => {
      e.preventDefault();
      try {
        await post("/v1/custom-data/entity", { key: key.control.value.trim(), label: label.control.value.trim(), value_type: type.control.value });
        say(t("say.saved"));
        await settingsPage();
      } catch (err) { showError(err, box); }
    });
    const list = props.length === 0 ? el("p", { class: "muted" }, t("set.noprops")) :
      el("ul", {}, props.map(p => el("li", {}, el("strong", {}, p.key), " · ", p.label, " · ", t("set.proptype." + p.value_type), " ",
        actButton(t("set.deleteprop", { key: p.key }), () => api("DELETE", "/v1/custom-data/entity/" + encodeURIComponent(p.key)), box))));
    return el("section", { class: "card" }, el("h2", {}, t("set.props")), list, f);
  }

  async function settingsPage() {
    const shown = here();
    const admin = me && me.user.role === "admin";
    const box = alertBox();
    const [entity, users, agents, teamList] = await Promise.all([get("/v1/entity").catch(() => null), get("/v1/users").catch(() => []), get("/v1/users/me/connections").catch(() => []), get("/v1/teams").catch(() => ({}))]);
    const teams = teamList.teams || [];
    const parts = [box];
    const ent = entity && (entity.entity || entity);
    if (ent && admin) {
      const name = field(t("set.entityname"), { value: ent.name || "", maxlength: 200 });
      const f = el("form", { class: "card" }, el("h2", {}, t("set.entity")), name.wrap, el("button", { type: "submit" }, t("set.save")));
      f.addEventListener("submit", async e => { e.preventDefault(); try { await api("PUT", "/v1/entity", { name: name.control.value }); say(t("say.saved")); } catch (err) { showError(err, box); } });
      parts.push(f);
      parts.push(mailTextsSection(ent, box));
      parts.push(brandingSection(ent, box));
      parts.push(copiesSection(ent, box));
      parts.push(remindersSection(ent, box));
      parts.push(embedSection(ent, box));
    }
    const userList = Array.isArray(users) ? users : (users.users || []);
    parts.push(el("section", { class: "card" }, el("h2", {}, t("set.users")),
      el("ul", {}, userList.map(u => userRow(u, box))),
      el("datalist", { id: "teams-known" }, teams.map(x => el("option", { value: x.team_id }))),
      el("h3", {}, t("set.teams")),
      teams.length === 0 ? el("p", { class: "muted" }, t("set.noteams")) :
        el("ul", {}, teams.map(x => el("li", {}, t("set.teamline", { name: x.name, count: x.team_user_count })))),
      admin ? addUserForm(box, teams) : null));
    if (admin) parts.push(await propertiesSection(box));
    const agentList = Array.isArray(agents) ? agents : (agents.connections || []);
    parts.push(el("section", { class: "card" }, el("h2", {}, t("set.agents")),
      agentList.length === 0 ? el("p", { class: "muted" }, t("set.noagents")) :
        el("ul", {}, agentList.map(a => el("li", {}, (a.client_name || a.client_id) + " ",
          actButton(t("set.disconnect", { name: a.client_name || a.client_id }), () => api("DELETE", "/v1/users/me/connections/" + encodeURIComponent(a.client_id)), box))))));
    parts.push(await webhooksSection(box));
    parts.push(el("section", { class: "card" }, el("h2", {}, t("set.cert")),
      el("p", {}, t("set.certtext"), " ", el("a", { href: "/v1/signing-certificate" }, t("set.certlink")))));
    if (here() !== shown) return; // another view was asked for meanwhile
    frame(t("set.title"), ...parts);
  }

  loadWords(preferred()).catch(() => loadWords("en")).then(render, render);
})();
