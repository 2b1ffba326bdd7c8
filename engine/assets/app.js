// The esign signing page. Draws the document from the view the server embedded
// (#esign-data) and acts through the recipient API (/v1/recipient/{secret}/...).
// No framework, no build step, nothing fetched from another host.
"use strict";

(function () {
  const data = JSON.parse(document.getElementById("esign-data").textContent);
  const api = data.links.api;
  const app = document.getElementById("app");
  let view = data;

  // ---------- embedded signing ----------
  // Opened with ?embed=1 by a site among the entity's embed_origins, the server embeds
  // those origins (#esign-embed); the page then posts its events to its parent, to an
  // allowed origin only (never "*"): the parent's own when the browser tells it
  // (ancestorOrigins, the referrer), else each allowed one, which the browser delivers
  // only to a parent of that origin. See docs/embedding.md.
  const embedTag = document.getElementById("esign-embed");
  const embedOrigins = embedTag ? (JSON.parse(embedTag.textContent).origins || []) : [];
  const embedTargets = (() => {
    if (window.parent === window || !embedOrigins.length) return [];
    const ancestors = window.location.ancestorOrigins;
    let parent = ancestors && ancestors.length ? ancestors[0] : "";
    if (!parent && document.referrer) {
      try { parent = new URL(document.referrer).origin; } catch (_) { parent = ""; }
    }
    return parent ? embedOrigins.filter((o) => o === parent) : embedOrigins;
  })();
  function emit(type, extra) {
    if (!embedTargets.length) return;
    const msg = Object.assign({ type, document_id: view.document.id, recipient_id: view.recipient.id }, extra || {});
    for (const o of embedTargets) {
      try { window.parent.postMessage(msg, o); } catch (_) { /* not that origin */ }
    }
  }

  // ---------- words ----------
  // The page's words come from engine/assets/messages-{lang}.json (the catalogue the
  // sender's app and the mails share): the server embeds those of the document's
  // language (#esign-words); the switcher fetches another language's, and the choice is
  // kept (localStorage: a preference, not a secret) for the recipient's other links.
  const LANGS = { en: "English", sv: "Svenska", nb: "Norsk bokmål", da: "Dansk", fi: "Suomi", de: "Deutsch", fr: "Français", es: "Español", nl: "Nederlands", pl: "Polski" };
  const version = ((document.currentScript && document.currentScript.src) || "").split("?v=")[1] || "";
  let words = JSON.parse(document.getElementById("esign-words").textContent);
  let lang = (view.document && view.document.language) || "en";
  // Keys asked for and not in the catalogue (the tests read it).
  const missing = window.esignMissingWords = [];
  function t(key, vars) {
    let s = words[key];
    if (s === undefined) { missing.push(lang + ":" + key); s = key; }
    return vars ? s.replace(/\{(\w+)\}/g, (m, k) => vars[k] !== undefined ? String(vars[k]) : m) : s;
  }
  async function useLanguage(code) {
    const r = await fetch("/s/_/messages-" + code + ".json?v=" + version);
    if (!r.ok) throw new Error(t("sign.err_server"));
    const all = await r.json();
    words = Object.fromEntries(Object.entries(all).filter(([k]) => k.startsWith("sign.")));
    lang = code;
    document.documentElement.lang = code;
  }
  function languageSwitch() {
    const select = el("select", { id: "sign-lang" },
      Object.entries(LANGS).map(([code, name]) => el("option", { value: code, lang: code, selected: code === lang }, name)));
    select.addEventListener("change", async () => {
      try {
        await useLanguage(select.value);
        try { localStorage.setItem("esign-sign-lang", select.value); } catch (_) { /* storage off */ }
        render();
        const again = document.getElementById("sign-lang");
        if (again) again.focus();
      } catch (e) { fail(e); }
    });
    return el("div", { class: "lang" }, el("label", { for: "sign-lang", text: t("sign.language") }), select);
  }

  // ---------- the sender's colour ----------
  // Their brand colour is the page's accent where white text on it (and it as text on
  // white) keeps a contrast of at least 4.5:1; a lighter one marks the header only.
  (function brand() {
    const c = (view.brand && view.brand.color) || "";
    if (!/^#[0-9a-f]{6}$/i.test(c)) return;
    const lin = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    const [r, g, b] = [1, 3, 5].map(i => lin(parseInt(c.slice(i, i + 2), 16)));
    const contrast = 1.05 / (0.2126 * r + 0.7152 * g + 0.0722 * b + 0.05);
    const root = document.documentElement.style;
    root.setProperty("--brand", c);
    if (contrast >= 4.5) root.setProperty("--accent", c);
  })();

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

  async function call(path, body) {
    const init = body === undefined
      ? { headers: { accept: "application/json" } }
      : { method: "POST", headers: { "content-type": "application/json", accept: "application/json" }, body: JSON.stringify(body) };
    let resp;
    try { resp = await fetch(api + path, init); } catch (_) { throw new Error(t("sign.err_offline")); }
    let json = null;
    try { json = await resp.json(); } catch (_) { /* empty body */ }
    if (!resp.ok) {
      const err = new Error(problem(resp, json));
      err.status = resp.status;
      err.code = json && json.error;
      throw err;
    }
    return json;
  }

  // What went wrong, in the page's language where the answer is one it knows; else the
  // server's own description.
  function problem(resp, json) {
    if (resp.status === 429) {
      const wait = Number(resp.headers.get("retry-after"));
      if (wait > 0) return t("sign.err_wait", { seconds: wait });
    }
    if (resp.status >= 500) return t("sign.err_server");
    if (resp.status === 410) return t("sign.err_gone");
    return (json && json.description) || t("sign.err_server");
  }

  const me = () => view.recipient;
  const doc = () => view.document;
  const finished = () => ["signed", "signedwithoutverification", "approved", "rejected", "notrequired"].includes(me().status);
  const open = () => ["sent", "viewed", "reviewed", "sealed", "hardbounced"].includes(doc().status);

  // ---------- status line ----------
  const next = el("p", { class: "next", id: "next", role: "status" });
  const alertBox = el("p", { class: "alert", role: "alert", hidden: true });
  function say(text) { next.textContent = text; }
  function fail(e) {
    alertBox.hidden = false;
    alertBox.textContent = e.message || String(e);
    emit("esign:error", { error: (e && e.code) || "", status: (e && e.status) || 0, message: alertBox.textContent });
  }
  function clearFail() { alertBox.hidden = true; alertBox.textContent = ""; }

  function whatNext() {
    const r = me();
    if (doc().status === "rejected") return t("sign.rejected_done");
    if (r.status === "signed" || r.status === "signedwithoutverification") {
      return doc().final_ready
        ? t("sign.all_signed_ready")
        : doc().status === "signed"
          ? t("sign.all_signed_preparing")
          : t("sign.you_signed_others");
    }
    if (r.status === "approved") return t("sign.you_approved");
    if (r.status === "notrequired") return t("sign.handed_over");
    if (r.status === "rejected") return t("sign.you_rejected");
    if (!open()) return t("sign.closed");
    if (view.waiting_for && view.waiting_for.length) {
      return t("sign.not_your_turn", { names: view.waiting_for.join(", ") });
    }
    if (r.role === "signer") return t("sign.todo_signer");
    if (r.role === "approver") return t("sign.todo_approver");
    return t("sign.todo_cc");
  }

  // ---------- time on each page ----------
  // How long each content page was on screen (at least half of it, or half the screen
  // for a page taller than that, with the tab in front), reported when the page is hidden or left (POST /page-views, at most one
  // report every 10 s but for the last), so the sender sees each page's page_time.
  const pageTime = (() => {
    const inView = new Set(); // pages at least half on screen
    const since = new Map(); // page -> when its timing began
    const spent = new Map(); // page -> milliseconds not yet reported
    let observer = null;
    let lastReport = 0;
    const now = () => performance.now();
    function start(n) {
      if (document.visibilityState === "visible" && !since.has(n)) since.set(n, now());
    }
    function stop(n) {
      if (!since.has(n)) return;
      spent.set(n, (spent.get(n) || 0) + now() - since.get(n));
      since.delete(n);
    }
    function stopAll() { for (const n of [...since.keys()]) stop(n); }
    function report(last) {
      stopAll();
      if (!last && now() - lastReport < 10000) return;
      const pages = [...spent]
        .filter(([, ms]) => ms >= 100)
        .map(([n, ms]) => ({ page_num: n, seconds: Math.min(3600, Math.round(ms) / 1000) }));
      if (!pages.length) return;
      spent.clear();
      lastReport = now();
      fetch(api + "/page-views", {
        method: "POST", keepalive: true,
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify({ pages }),
      }).catch(() => { /* a lost report only loses its seconds */ });
    }
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "hidden") report(false);
      else for (const n of inView) start(n);
    });
    window.addEventListener("pagehide", () => report(true));
    return {
      watch(box, n) {
        if (n > (doc().page_count || 0) || !("IntersectionObserver" in window)) return;
        observer = observer || new IntersectionObserver((entries) => {
          for (const e of entries) {
            const p = Number(e.target.dataset.page);
            const screen = e.rootBounds ? e.rootBounds.height : window.innerHeight;
            const seen = e.isIntersecting
              && (e.intersectionRatio >= 0.5 || e.intersectionRect.height >= screen / 2);
            if (seen) { inView.add(p); start(p); } else { inView.delete(p); stop(p); }
          }
        }, { threshold: [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1] });
        box.dataset.page = String(n);
        observer.observe(box);
      },
      // The pages are about to be drawn again: their boxes are replaced.
      forget() {
        stopAll();
        inView.clear();
        if (observer) { observer.disconnect(); observer = null; }
      },
    };
  })();

  // ---------- pages and fields ----------
  const inputs = new Map(); // field id -> input element
  function pageView() {
    pageTime.forget();
    const wrap = el("section", { class: "pages", "aria-label": t("sign.pages") });
    const pages = view.pages || [];
    if (!pages.length) {
      wrap.append(el("p", { class: "muted", text: t("sign.pages_preparing") }));
    }
    pages.forEach((p, i) => {
      const img = el("img", {
        src: p.image, width: p.width, height: p.height,
        alt: t("sign.page_alt", { num: p.num, count: pages.length }),
        loading: i < 2 ? "eager" : "lazy", decoding: "async",
      });
      const box = el("div", { class: "page", id: "page-" + p.num }, img);
      // Once everyone has signed, the pages show the filled fields themselves.
      if (p.points && doc().status !== "signed") {
        for (const f of (view.fields || []).filter((f) => f.page_num === p.num)) box.append(fieldBox(f, p.points));
      }
      wrap.append(box);
      pageTime.watch(box, p.num);
      if (i === pages.length - 1) watchLastPage(box);
    });
    return wrap;
  }

  function pct(v, of) { return (100 * v / of).toFixed(3) + "%"; }

  function fieldBox(f, [pw, ph]) {
    const style = "left:" + pct(f.left, pw) + ";top:" + pct(f.top, ph) + ";width:" + pct(f.width, pw) + ";height:" + pct(f.height, ph);
    const box = el("div", { class: "field field-" + f.type + (f.mine ? " mine" : "") });
    box.setAttribute("data-style", style);
    applyStyle(box, style);
    const label = f.label || (f.type === "date" ? t("sign.field_date") : f.type === "check" ? t("sign.field_check") : f.type === "text" ? t("sign.field_text") : f.type);
    const named = f.required ? t("sign.required", { label }) : label;
    // Text, dates and check boxes are typed or ticked; signatures and initials come from
    // signing; name, email, company and title from the signer's data (shown as is).
    const editable = f.mine && open() && !finished() && ["text", "date", "check"].includes(f.type);
    if (editable) {
      let input;
      if (f.type === "check") {
        input = el("input", { type: "checkbox", "aria-label": named, checked: f.value === "1" });
      } else {
        input = el("input", {
          type: f.type === "date" ? "date" : "text", value: f.value || (f.type === "date" ? today() : ""),
          "aria-label": named, required: f.required, maxlength: 1000,
          placeholder: f.type === "text" ? label : null,
        });
      }
      inputs.set(f.id, input);
      input.addEventListener("change", () => emit("esign:field", { field_id: f.id, field_type: f.type }));
      box.append(input);
    } else if (f.type === "signature" || f.type === "initials") {
      box.append(el("span", { class: "placeholder", text: f.mine ? (f.type === "signature" ? t("sign.your_signature") : t("sign.your_initials")) : "" }));
    } else {
      box.append(el("span", { class: "value", text: f.type === "check" ? (f.value === "1" ? "✓" : "") : f.value }));
    }
    return box;
  }

  // The CSP forbids inline style attributes set from markup, but not CSSOM changes.
  function applyStyle(node, style) {
    for (const part of style.split(";")) {
      const [k, v] = part.split(":");
      if (k && v) node.style.setProperty(k, v);
    }
  }

  function today() { return new Date().toISOString().slice(0, 10); }

  let reviewed = false;
  function watchLastPage(box) {
    if (reviewed || !open() || ["reviewed", "signed", "approved", "rejected"].includes(me().status)) return;
    const obs = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting) && !reviewed) {
        reviewed = true;
        obs.disconnect();
        call("/review", {}).catch(() => { reviewed = false; });
      }
    }, { threshold: 0.3 });
    obs.observe(box);
  }

  // ---------- signature pad ----------
  function signaturePad() {
    const canvas = el("canvas", { class: "pad", width: 600, height: 200, "aria-label": t("sign.pad"), role: "img" });
    const ctx = canvas.getContext("2d");
    ctx.lineWidth = 3; ctx.lineCap = "round"; ctx.lineJoin = "round"; ctx.strokeStyle = "#1a237e";
    let drawing = false, strokes = 0, last = null;
    function at(e) {
      const r = canvas.getBoundingClientRect();
      return [(e.clientX - r.left) * canvas.width / r.width, (e.clientY - r.top) * canvas.height / r.height];
    }
    canvas.addEventListener("pointerdown", (e) => {
      drawing = true; last = at(e); canvas.setPointerCapture(e.pointerId);
      ctx.beginPath(); ctx.arc(last[0], last[1], 1.5, 0, 2 * Math.PI); ctx.fill(); e.preventDefault();
    });
    canvas.addEventListener("pointermove", (e) => {
      if (!drawing) return;
      const p = at(e);
      ctx.beginPath(); ctx.moveTo(last[0], last[1]); ctx.lineTo(p[0], p[1]); ctx.stroke();
      last = p; strokes++; e.preventDefault();
    });
    const end = () => { drawing = false; };
    canvas.addEventListener("pointerup", end);
    canvas.addEventListener("pointercancel", end);
    return {
      canvas,
      empty: () => strokes === 0,
      clear: () => { ctx.clearRect(0, 0, canvas.width, canvas.height); strokes = 0; },
      png: () => canvas.toDataURL("image/png"),
    };
  }

  // ---------- a picture of a signature ----------
  // A PNG or JPEG the signer chooses, sent as it is (a data URL) within the server's
  // limits (256 KiB, 4 000 000 pixels: inputs::picture_of), shown before signing.
  const PICTURE_BYTES = 256 * 1024, PICTURE_PIXELS = 4000000;
  function signaturePicture() {
    const input = el("input", { id: "sig-picture", type: "file", accept: "image/png,image/jpeg", "aria-describedby": "sig-picture-hint" });
    const hint = el("p", { id: "sig-picture-hint", class: "muted", text: t("sign.picture_hint") });
    const error = el("p", { class: "field-error", role: "alert", hidden: true });
    const preview = el("img", { class: "picture", alt: t("sign.picture_preview"), hidden: true });
    const box = el("div", { class: "uploaded", hidden: true },
      el("label", { for: "sig-picture", text: t("sign.picture_label") }), input, hint, error, preview);
    let image = null;
    function refuse(key) {
      image = null; preview.hidden = true; preview.removeAttribute("src");
      error.textContent = t(key); error.hidden = false;
      input.setAttribute("aria-invalid", "true");
    }
    input.addEventListener("change", () => {
      image = null; error.hidden = true; input.removeAttribute("aria-invalid");
      const file = input.files && input.files[0];
      if (!file) { preview.hidden = true; return; }
      if (file.type !== "image/png" && file.type !== "image/jpeg") return refuse("sign.picture_type");
      if (file.size > PICTURE_BYTES) return refuse("sign.picture_too_large");
      const reader = new FileReader();
      reader.onerror = () => refuse("sign.picture_unreadable");
      reader.onload = () => {
        const url = String(reader.result);
        const probe = new Image();
        probe.onerror = () => refuse("sign.picture_unreadable");
        probe.onload = () => {
          if (probe.naturalWidth * probe.naturalHeight > PICTURE_PIXELS) return refuse("sign.picture_too_large");
          image = url; preview.src = url; preview.hidden = false;
        };
        probe.src = url;
      };
      reader.readAsDataURL(file);
    });
    return { box, input, image: () => image };
  }

  // A typed name drawn in the handwriting font, as a PNG.
  async function typedImage(text, w, h) {
    try { await document.fonts.load("64px 'Dancing Script'"); } catch (_) { /* fall back to cursive */ }
    const c = document.createElement("canvas");
    c.width = w; c.height = h;
    const ctx = c.getContext("2d");
    let size = Math.floor(h * 0.6);
    ctx.fillStyle = "#1a237e"; ctx.textBaseline = "middle";
    do {
      ctx.font = size + "px 'Dancing Script', cursive";
      size -= 2;
    } while (ctx.measureText(text).width > w - 20 && size > 10);
    ctx.fillText(text, 10, h / 2);
    return c.toDataURL("image/png");
  }

  // ---------- the acts ----------
  function actions() {
    const r = me();
    const box = el("section", { class: "actions", "aria-label": t("sign.actions") });
    if (!open() || finished() || (view.waiting_for && view.waiting_for.length) || r.role === "cc") return box;
    if ((r.role === "signer" || r.role === "approver") && ver().sign.length) {
      box.append(gate("sign"));
      box.append(rejectForm());
      return box;
    }
    if (r.role === "signer") box.append(signForm());
    if (r.role === "approver") {
      box.append(el("button", { type: "button", class: "primary", onclick: () => act("/approve", {}, t("sign.approving")) }, t("sign.approve")));
    }
    if (doc().is_signing_forward) box.append(handOverForm());
    box.append(rejectForm());
    return box;
  }

  // Handing one's part to someone else, when the sender allows it (POST .../transfer).
  function handOverForm() {
    const input = (id, key, attrs) => [el("label", { for: id, text: t(key) }), el("input", Object.assign({ id, type: "text" }, attrs))];
    const parts = [
      input("ho-first", "sign.ho_first", { autocomplete: "off", maxlength: 100 }),
      input("ho-last", "sign.ho_last", { autocomplete: "off", maxlength: 100 }),
      input("ho-email", "sign.ho_email", { type: "email", autocomplete: "off", maxlength: 254 }),
      input("ho-mobile", "sign.ho_mobile", { type: "tel", autocomplete: "off", maxlength: 32 }),
    ];
    const value = id => app.querySelector("#" + id).value.trim();
    return el("details", { class: "hand-over" },
      el("summary", { text: t("sign.ho_summary") }),
      el("p", { class: "muted", text: t("sign.ho_help") }),
      ...parts.flat(),
      el("button", { type: "button", onclick: () => act("/transfer",
        { first_name: value("ho-first"), last_name: value("ho-last"), email: value("ho-email"), mobile: value("ho-mobile") },
        t("sign.ho_busy")) }, t("sign.ho_send")));
  }

  function signForm() {
    const r = me();
    const form = el("div", { class: "sign" });
    form.append(el("h2", { text: t("sign.sign_heading") }));
    let mode = "typed";
    const name = el("input", { id: "sig-name", type: "text", value: r.fullname || "", autocomplete: "name", maxlength: 100 });
    const preview = el("div", { class: "preview", "aria-hidden": "true", text: name.value });
    name.addEventListener("input", () => { preview.textContent = name.value; });
    const typed = el("div", { class: "typed" },
      el("label", { for: "sig-name", text: t("sign.full_name") }), name, preview);
    const pad = signaturePad();
    const drawn = el("div", { class: "drawn", hidden: true },
      el("p", { class: "muted", text: t("sign.draw_hint") }), pad.canvas,
      el("button", { type: "button", class: "link", onclick: () => pad.clear() }, t("sign.clear")));
    const picture = signaturePicture();
    const tabs = el("div", { class: "tabs", role: "group", "aria-label": t("sign.how") });
    const modes = [["typed", t("sign.type_name"), typed], ["drawn", t("sign.draw"), drawn], ["uploaded", t("sign.upload"), picture.box]];
    for (const [m, label, panel] of modes) {
      const b = el("button", { type: "button", "aria-pressed": String(m === mode) }, label);
      b.addEventListener("click", () => {
        mode = m;
        for (const [other, , p] of modes) p.hidden = other !== m;
        for (const x of tabs.children) x.setAttribute("aria-pressed", String(x === b));
      });
      tabs.append(b);
    }
    form.append(tabs, typed, drawn, picture.box);
    const needInitials = doc().is_signing_initials || (view.fields || []).some((f) => f.mine && f.type === "initials");
    let initials = null;
    if (needInitials) {
      const guess = (r.fullname || "").split(/\s+/).filter(Boolean).map((w) => w[0].toUpperCase()).join("");
      initials = el("input", { id: "sig-initials", type: "text", value: guess, maxlength: 10, autocomplete: "off" });
      form.append(el("div", { class: "initials" }, el("label", { for: "sig-initials", text: t("sign.initials") }), initials));
    }
    form.append(el("p", { class: "muted", text: t("sign.consent") }));
    form.append(el("button", {
      type: "button", class: "primary",
      onclick: async () => {
        clearFail();
        const fields = {};
        const missing = [];
        for (const f of (view.fields || []).filter((f) => f.mine)) {
          const input = inputs.get(f.id);
          if (!input) continue;
          const v = input.type === "checkbox" ? (input.checked ? "1" : "") : input.value.trim();
          fields[f.id] = v;
          if (f.required && !v) missing.push(f.label || f.type);
        }
        if (missing.length) { fail(t("sign.missing_fields", { fields: missing.join(", ") })); return; }
        const body = { fields };
        if (mode === "typed") {
          const n = name.value.trim();
          if (!n) { fail(t("sign.need_name")); name.focus(); return; }
          body.signature = { type: "typed", name: n, image: await typedImage(n, 600, 150) };
        } else if (mode === "drawn") {
          if (pad.empty()) { fail(t("sign.need_drawing")); return; }
          body.signature = { type: "drawn", name: name.value.trim(), image: pad.png() };
        } else {
          const image = picture.image();
          if (!image) { fail(t("sign.need_picture")); picture.input.focus(); return; }
          body.signature = { type: "uploaded", name: name.value.trim(), image };
        }
        if (initials) {
          const typed = initials.value.trim();
          if (!typed) { fail(t("sign.need_initials")); initials.focus(); return; }
          body.initials = { type: "typed", text: typed, image: await typedImage(typed, 300, 150) };
        }
        await act("/sign", body, t("sign.signing"));
      },
    }, t("sign.sign")));
    return form;
  }

  function rejectForm() {
    const reason = el("textarea", { id: "reject-reason", rows: 3, maxlength: 2000 });
    return el("details", { class: "reject" },
      el("summary", { text: t("sign.disagree") }),
      el("label", { for: "reject-reason", text: t("sign.reason") }), reason,
      el("button", { type: "button", class: "danger", onclick: () => act("/reject", { reason: reason.value }, t("sign.rejecting")) }, t("sign.reject")));
  }

  async function act(path, body, busy) {
    clearFail();
    say(busy);
    for (const b of app.querySelectorAll("button")) b.disabled = true;
    try {
      await call(path, body);
      const done = { "/sign": "esign:signed", "/approve": "esign:approved", "/reject": "esign:rejected" }[path];
      if (done) emit(done);
      await refresh();
      if (done && path !== "/reject" && doc().status === "signed") emit("esign:completed", { status: "signed" });
    } catch (e) {
      fail(e);
      say(whatNext());
      for (const b of app.querySelectorAll("button")) b.disabled = false;
    }
  }

  // ---------- comments ----------
  function commentsView() {
    const list = el("ol", { class: "comments" });
    const text = el("textarea", { id: "comment-text", rows: 2, maxlength: 4000 });
    const section = el("section", { class: "thread", "aria-labelledby": "comments-h" },
      el("h2", { id: "comments-h", text: t("sign.comments") }), list,
      el("label", { for: "comment-text", text: t("sign.comment") }), text,
      el("button", {
        type: "button",
        onclick: async () => {
          clearFail();
          if (!text.value.trim()) { fail(t("sign.comment_empty")); return; }
          try { await call("/comment", { text: text.value }); text.value = ""; await loadComments(list); } catch (e) { fail(e); }
        },
      }, t("sign.comment_send")));
    loadComments(list);
    return section;
  }

  async function loadComments(list) {
    try {
      const res = await call("/comments");
      list.replaceChildren(...res.comments.map((c) => el("li", {},
        el("strong", { text: c.author_name }), " ",
        el("time", { datetime: c.created_at, class: "muted", text: (c.created_at || "").slice(0, 16).replace("T", " ") }),
        el("p", { text: c.text }))));
      if (!res.comments.length) list.replaceChildren(el("li", { class: "muted", text: t("sign.no_comments") }));
    } catch (_) { /* the thread is optional */ }
  }

  // ---------- download / print ----------
  function tools() {
    return el("nav", { class: "tools", "aria-label": t("sign.tools") },
      el("a", { class: "button", href: data.links.download, download: (doc().name || "document") + ".pdf" }, t("sign.download")),
      el("button", {
        type: "button",
        onclick: async () => { try { await call("/print", {}); } catch (_) { /* printing still works */ } window.print(); },
      }, t("sign.print")));
  }

  // ---------- identity checks ----------
  const ver = () => view.verification || { open: [], sign: [], locked: false };

  // The box that verifies the first pending check of `stage` (open or sign).
  function gate(stage) {
    const pending = ver()[stage];
    const box = el("section", { class: "gate", "aria-labelledby": "gate-h" });
    box.append(el("h2", { id: "gate-h", text: stage === "open" ? t("sign.verify_open") : t("sign.verify_sign") }));
    if (ver().locked) {
      box.append(el("p", { text: t("sign.locked_text") }));
      return box;
    }
    const c = pending[0];
    const done = async () => { clearFail(); await refresh(); };
    // A wrong code or answer: the tries left come with the view, read again without
    // drawing the check anew (the code entered stays); a lock (403) is drawn.
    const failed = async (e) => {
      if (e.code === "verification_failed") {
        try { view = await call(""); } catch (_) { /* the count is the view's */ }
        fail(new Error(t("sign.err_wrong_left", { left: ver().tries_left })));
      } else {
        fail(e);
        if (e.status === 403) await refresh();
      }
    };
    if (c.method === "sms" || c.method === "email") {
      const by = c.method === "sms" ? "sms" : "email";
      const code = el("input", { id: "ver-code", type: "text", inputmode: "numeric", autocomplete: "one-time-code", maxlength: 6 });
      const entry = el("div", { hidden: true },
        el("label", { for: "ver-code", text: t("sign.code") }), code,
        el("button", {
          type: "button", class: "primary",
          onclick: async () => {
            clearFail();
            try { await call("/verify", { method: c.method, code: code.value, stage }); await done(); } catch (e) { await failed(e); }
          },
        }, t("sign.verify")));
      box.append(el("p", { text: t("sign.code_hint_" + by, { to: c.to }) }),
        el("button", {
          type: "button",
          onclick: async (ev) => {
            clearFail();
            try {
              await call("/verify/start", { method: c.method, stage });
              entry.hidden = false; ev.target.textContent = t("sign.new_code"); code.focus();
              say(t("sign.code_sent_" + by, { to: c.to }));
            } catch (e) { fail(e); }
          },
        }, t("sign.send_code")), entry);
    } else if (c.method === "qna") {
      const answer = el("input", { id: "ver-answer", type: "text", autocomplete: "off", maxlength: 200 });
      box.append(el("p", { class: "question", text: c.question || "" }),
        el("label", { for: "ver-answer", text: t("sign.answer") }), answer,
        el("button", {
          type: "button", class: "primary",
          onclick: async () => {
            clearFail();
            try { await call("/verify", { method: "qna", answer: answer.value, stage }); await done(); } catch (e) { await failed(e); }
          },
        }, t("sign.verify")));
    } else {
      box.append(el("p", { text: c.type ? t("sign.eid_hint_type", { type: c.type }) : t("sign.eid_hint") }),
        el("button", {
          type: "button", class: "primary",
          onclick: async () => {
            clearFail();
            try { const r = await call("/verify/start", { method: "eid", stage }); window.location.assign(r.redirect_url); } catch (e) { fail(e); }
          },
        }, t("sign.eid_verify")));
    }
    return box;
  }

  // ---------- the whole screen ----------
  let polling = null;
  function render() {
    inputs.clear();
    if (ver().locked || ver().open.length) {
      say(ver().locked ? t("sign.locked") : t("sign.verify_first"));
      app.replaceChildren(languageSwitch(), next, alertBox, gate("open"));
      return;
    }
    say(whatNext());
    const done = finished() || doc().status === "signed";
    const parts = [languageSwitch(), next, alertBox];
    if (done) parts.push(doneView());
    parts.push(videoView(), pageView(), actions(), commentsView(), tools());
    app.replaceChildren(...parts.filter(Boolean)); // no video: null, not the text "null"
    if (doc().status === "signed" && !doc().final_ready && !polling) {
      let tries = 0;
      polling = setInterval(async () => {
        tries++;
        try {
          const v = await call("");
          if (v.document.final_ready || tries > 120) { clearInterval(polling); polling = null; view = v; render(); }
        } catch (_) { /* keep trying */ }
      }, 1000);
    }
  }

  // The sender's video (the document's video_id), played in the page.
  function videoView() {
    const v = doc().video;
    if (!v) return null;
    return el("section", { class: "video", "aria-labelledby": "video-h" },
      el("h2", { id: "video-h", text: t("sign.video_from", { name: doc().sender_name || t("sign.the_sender") }) }),
      el("video", { controls: true, preload: "metadata", src: v.url, poster: v.poster, "aria-label": v.title || t("sign.video") }));
  }

  function doneView() {
    const box = el("section", { class: "done", "aria-labelledby": "done-h" });
    const r = me();
    const title = r.status === "rejected" ? t("sign.done_rejected")
      : r.status === "approved" ? t("sign.done_approved")
        : r.status.startsWith("signed") ? t("sign.done_signed") : t("sign.done_complete");
    box.append(el("h2", { id: "done-h", text: title }));
    if (doc().final_ready) {
      box.append(el("p", { text: t("sign.pdf_ready") }),
        el("a", { class: "button primary", href: data.links.download, download: (doc().name || "document") + ".pdf" }, t("sign.download_signed")));
    } else if (doc().status === "signed") {
      box.append(el("p", { class: "muted", text: t("sign.pdf_preparing") }));
    }
    return box;
  }

  async function refresh() {
    const wasDone = finished();
    view = await call("");
    render();
    // Just finished: show the outcome at the top.
    if (!wasDone && finished()) {
      window.scrollTo(0, 0);
      const h = document.getElementById("done-h");
      if (h) { h.tabIndex = -1; h.focus(); }
    }
  }

  async function start() {
    let chosen = null;
    try { chosen = localStorage.getItem("esign-sign-lang"); } catch (_) { /* storage off */ }
    if (chosen && LANGS[chosen] && chosen !== lang) {
      try { await useLanguage(chosen); } catch (_) { /* the document's language then */ }
    }
    render();
    emit("esign:loaded", { status: me().status });
  }
  const started = start();
  if (open()) {
    call("/view", {}).then(() => { started.then(() => emit("esign:viewed")); return refresh(); })
      .catch(() => { /* viewing still works */ });
  }
})();
