// The esign signing page. Draws the document from the view the server embedded
// (#esign-data) and acts through the recipient API (/v1/recipient/{secret}/...).
// No framework, no build step, nothing fetched from another host.
"use strict";

(function () {
  const data = JSON.parse(document.getElementById("esign-data").textContent);
  const api = data.links.api;
  const app = document.getElementById("app");
  let view = data;

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
    const resp = await fetch(api + path, init);
    let json = null;
    try { json = await resp.json(); } catch (_) { /* empty body */ }
    if (!resp.ok) {
      const err = new Error((json && json.description) || ("the server answered " + resp.status));
      err.status = resp.status;
      throw err;
    }
    return json;
  }

  const me = () => view.recipient;
  const doc = () => view.document;
  const finished = () => ["signed", "signedwithoutverification", "approved", "rejected", "notrequired"].includes(me().status);
  const open = () => ["sent", "viewed", "reviewed", "sealed", "hardbounced"].includes(doc().status);

  // ---------- status line ----------
  const next = el("p", { class: "next", id: "next", role: "status" });
  const alertBox = el("p", { class: "alert", role: "alert", hidden: true });
  function say(text) { next.textContent = text; }
  function fail(e) { alertBox.hidden = false; alertBox.textContent = e.message || String(e); }
  function clearFail() { alertBox.hidden = true; alertBox.textContent = ""; }

  function whatNext() {
    const r = me();
    if (doc().status === "rejected") return "The document was rejected. Nothing more to do.";
    if (r.status === "signed" || r.status === "signedwithoutverification") {
      return doc().final_ready
        ? "Everyone has signed. Download your copy of the signed document below."
        : doc().status === "signed"
          ? "Everyone has signed. The signed PDF is being prepared; it appears here in a moment."
          : "You have signed. The others are still to sign; you will get an email when the document is complete.";
    }
    if (r.status === "approved") return "You approved the document. The sender has been told.";
    if (r.status === "rejected") return "You rejected the document. The sender has been told.";
    if (!open()) return "This document can no longer be signed.";
    if (view.waiting_for && view.waiting_for.length) {
      return "It is not your turn yet: waiting for " + view.waiting_for.join(", ") + " to finish first. You will get an email when it is your turn.";
    }
    if (r.role === "signer") return "Read the document, fill in your fields, then sign at the bottom of the page.";
    if (r.role === "approver") return "Read the document, then approve or reject it at the bottom of the page.";
    return "You received a copy of this document to read. No action is needed.";
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
    const wrap = el("section", { class: "pages", "aria-label": "Document pages" });
    const pages = view.pages || [];
    if (!pages.length) {
      wrap.append(el("p", { class: "muted", text: "The pages are being prepared. Reload the page in a moment." }));
    }
    pages.forEach((p, i) => {
      const img = el("img", {
        src: p.image, width: p.width, height: p.height,
        alt: "Page " + p.num + " of " + pages.length,
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
    const label = f.label || (f.type === "date" ? "Date" : f.type === "check" ? "Check box" : f.type === "text" ? "Text" : f.type);
    const editable = f.mine && open() && !finished() && f.type !== "signature" && f.type !== "initials";
    if (editable) {
      let input;
      if (f.type === "check") {
        input = el("input", { type: "checkbox", "aria-label": label + (f.required ? " (required)" : ""), checked: f.value === "1" });
      } else {
        input = el("input", {
          type: f.type === "date" ? "date" : "text", value: f.value || (f.type === "date" ? today() : ""),
          "aria-label": label + (f.required ? " (required)" : ""), required: f.required, maxlength: 1000,
          placeholder: f.type === "text" ? label : null,
        });
      }
      inputs.set(f.id, input);
      box.append(input);
    } else if (f.type === "signature" || f.type === "initials") {
      box.append(el("span", { class: "placeholder", text: f.mine ? (f.type === "signature" ? "Your signature" : "Your initials") : "" }));
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
    const canvas = el("canvas", { class: "pad", width: 600, height: 200, "aria-label": "Draw your signature here with a mouse, finger or pen", role: "img" });
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
    const box = el("section", { class: "actions", "aria-label": "Your actions" });
    if (!open() || finished() || (view.waiting_for && view.waiting_for.length) || r.role === "cc") return box;
    if ((r.role === "signer" || r.role === "approver") && ver().sign.length) {
      box.append(gate("sign"));
      box.append(rejectForm());
      return box;
    }
    if (r.role === "signer") box.append(signForm());
    if (r.role === "approver") {
      box.append(el("button", { type: "button", class: "primary", onclick: () => act("/approve", {}, "Approving…") }, "Approve"));
    }
    box.append(rejectForm());
    return box;
  }

  function signForm() {
    const r = me();
    const form = el("div", { class: "sign" });
    form.append(el("h2", { text: "Sign" }));
    let mode = "typed";
    const name = el("input", { id: "sig-name", type: "text", value: r.fullname || "", autocomplete: "name", maxlength: 100 });
    const preview = el("div", { class: "preview", "aria-hidden": "true", text: name.value });
    name.addEventListener("input", () => { preview.textContent = name.value; });
    const typed = el("div", { class: "typed" },
      el("label", { for: "sig-name", text: "Full name" }), name, preview);
    const pad = signaturePad();
    const drawn = el("div", { class: "drawn", hidden: true },
      el("p", { class: "muted", text: "Draw your signature in the box." }), pad.canvas,
      el("button", { type: "button", class: "link", onclick: () => pad.clear() }, "Clear drawing"));
    const tabs = el("div", { class: "tabs", role: "group", "aria-label": "How to sign" });
    const tType = el("button", { type: "button", "aria-pressed": "true" }, "Type my name");
    const tDraw = el("button", { type: "button", "aria-pressed": "false" }, "Draw my signature");
    tType.addEventListener("click", () => { mode = "typed"; typed.hidden = false; drawn.hidden = true; tType.setAttribute("aria-pressed", "true"); tDraw.setAttribute("aria-pressed", "false"); });
    tDraw.addEventListener("click", () => { mode = "drawn"; typed.hidden = true; drawn.hidden = false; tDraw.setAttribute("aria-pressed", "true"); tType.setAttribute("aria-pressed", "false"); });
    tabs.append(tType, tDraw);
    form.append(tabs, typed, drawn);
    const needInitials = doc().is_signing_initials || (view.fields || []).some((f) => f.mine && f.type === "initials");
    let initials = null;
    if (needInitials) {
      const guess = (r.fullname || "").split(/\s+/).filter(Boolean).map((w) => w[0].toUpperCase()).join("");
      initials = el("input", { id: "sig-initials", type: "text", value: guess, maxlength: 10, autocomplete: "off" });
      form.append(el("div", { class: "initials" }, el("label", { for: "sig-initials", text: "Initials" }), initials));
    }
    form.append(el("p", { class: "muted", text: "By signing you agree to the document above. Your signature, the time and your IP address are recorded." }));
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
        if (missing.length) { fail("Fill in every required field first: " + missing.join(", ")); return; }
        const body = { fields };
        if (mode === "typed") {
          const n = name.value.trim();
          if (!n) { fail("Type your full name to sign."); name.focus(); return; }
          body.signature = { type: "typed", name: n, image: await typedImage(n, 600, 150) };
        } else {
          if (pad.empty()) { fail("Draw your signature in the box first."); return; }
          body.signature = { type: "drawn", name: name.value.trim(), image: pad.png() };
        }
        if (initials) {
          const t = initials.value.trim();
          if (!t) { fail("Type your initials to sign."); initials.focus(); return; }
          body.initials = { type: "typed", text: t, image: await typedImage(t, 300, 150) };
        }
        await act("/sign", body, "Signing…");
      },
    }, "Sign"));
    return form;
  }

  function rejectForm() {
    const reason = el("textarea", { id: "reject-reason", rows: 3, maxlength: 2000 });
    return el("details", { class: "reject" },
      el("summary", { text: "I do not agree" }),
      el("label", { for: "reject-reason", text: "Reason" }), reason,
      el("button", { type: "button", class: "danger", onclick: () => act("/reject", { reason: reason.value }, "Rejecting…") }, "Reject"));
  }

  async function act(path, body, busy) {
    clearFail();
    say(busy);
    for (const b of app.querySelectorAll("button")) b.disabled = true;
    try {
      await call(path, body);
      await refresh();
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
      el("h2", { id: "comments-h", text: "Comments" }), list,
      el("label", { for: "comment-text", text: "Comment" }), text,
      el("button", {
        type: "button",
        onclick: async () => {
          clearFail();
          if (!text.value.trim()) { fail("Write a comment first."); return; }
          try { await call("/comment", { text: text.value }); text.value = ""; await loadComments(list); } catch (e) { fail(e); }
        },
      }, "Send comment"));
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
      if (!res.comments.length) list.replaceChildren(el("li", { class: "muted", text: "No comments yet." }));
    } catch (_) { /* the thread is optional */ }
  }

  // ---------- download / print ----------
  function tools() {
    return el("nav", { class: "tools", "aria-label": "Document tools" },
      el("a", { class: "button", href: data.links.download, download: (doc().name || "document") + ".pdf" }, "Download"),
      el("button", {
        type: "button",
        onclick: async () => { try { await call("/print", {}); } catch (_) { /* printing still works */ } window.print(); },
      }, "Print"));
  }

  // ---------- identity checks ----------
  const ver = () => view.verification || { open: [], sign: [], locked: false };

  // The box that verifies the first pending check of `stage` (open or sign).
  function gate(stage) {
    const pending = ver()[stage];
    const box = el("section", { class: "gate", "aria-labelledby": "gate-h" });
    box.append(el("h2", { id: "gate-h", text: stage === "open" ? "Verify your identity to open the document" : "Verify your identity to sign" }));
    if (ver().locked) {
      box.append(el("p", { text: "This link is locked after too many wrong attempts. The sender has been told; contact them for help." }));
      return box;
    }
    const c = pending[0];
    const done = async () => { clearFail(); await refresh(); };
    if (c.method === "sms" || c.method === "email") {
      const where = c.method === "sms" ? "by text message to " + c.to : "by email to " + c.to;
      const code = el("input", { id: "ver-code", type: "text", inputmode: "numeric", autocomplete: "one-time-code", maxlength: 6 });
      const entry = el("div", { hidden: true },
        el("label", { for: "ver-code", text: "Verification code" }), code,
        el("button", {
          type: "button", class: "primary",
          onclick: async () => {
            clearFail();
            try { await call("/verify", { method: c.method, code: code.value, stage }); await done(); } catch (e) { fail(e); if (e.status === 403) await refresh(); }
          },
        }, "Verify"));
      box.append(el("p", { text: "We send a 6-digit code " + where + ". It is valid for 10 minutes." }),
        el("button", {
          type: "button",
          onclick: async (ev) => {
            clearFail();
            try {
              await call("/verify/start", { method: c.method, stage });
              entry.hidden = false; ev.target.textContent = "Send a new code"; code.focus();
              say("The code is on its way " + where + ".");
            } catch (e) { fail(e); }
          },
        }, "Send code"), entry);
    } else if (c.method === "qna") {
      const answer = el("input", { id: "ver-answer", type: "text", autocomplete: "off", maxlength: 200 });
      box.append(el("p", { class: "question", text: c.question || "" }),
        el("label", { for: "ver-answer", text: "Answer" }), answer,
        el("button", {
          type: "button", class: "primary",
          onclick: async () => {
            clearFail();
            try { await call("/verify", { method: "qna", answer: answer.value, stage }); await done(); } catch (e) { fail(e); if (e.status === 403) await refresh(); }
          },
        }, "Verify"));
    } else {
      box.append(el("p", { text: "You will be sent to your eID provider" + (c.type ? " (" + c.type + ")" : "") + " and back here." }),
        el("button", {
          type: "button", class: "primary",
          onclick: async () => {
            clearFail();
            try { const r = await call("/verify/start", { method: "eid", stage }); window.location.assign(r.redirect_url); } catch (e) { fail(e); }
          },
        }, "Verify with eID"));
    }
    return box;
  }

  // ---------- the whole screen ----------
  let polling = null;
  function render() {
    inputs.clear();
    if (ver().locked || ver().open.length) {
      say(ver().locked ? "This link is locked." : "The sender asks you to verify who you are before you open the document.");
      app.replaceChildren(next, alertBox, gate("open"));
      return;
    }
    say(whatNext());
    const done = finished() || doc().status === "signed";
    const parts = [next, alertBox];
    if (done) parts.push(doneView());
    parts.push(videoView(), pageView(), actions(), commentsView(), tools());
    app.replaceChildren(...parts);
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
      el("h2", { id: "video-h", text: "A video from " + (doc().sender_name || "the sender") }),
      el("video", { controls: true, preload: "metadata", src: v.url, poster: v.poster, "aria-label": v.title || "Video" }));
  }

  function doneView() {
    const box = el("section", { class: "done", "aria-labelledby": "done-h" });
    const r = me();
    const title = r.status === "rejected" ? "You rejected the document"
      : r.status === "approved" ? "You approved the document"
        : r.status.startsWith("signed") ? "You signed the document" : "The document is complete";
    box.append(el("h2", { id: "done-h", text: title }));
    if (doc().final_ready) {
      box.append(el("p", { text: "The signed PDF is ready." }),
        el("a", { class: "button primary", href: data.links.download, download: (doc().name || "document") + ".pdf" }, "Download the signed PDF"));
    } else if (doc().status === "signed") {
      box.append(el("p", { class: "muted", text: "Preparing the signed PDF…" }));
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

  render();
  if (open()) call("/view", {}).then(() => refresh()).catch(() => { /* viewing still works */ });
})();
