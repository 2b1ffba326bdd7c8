// esign embedded signing: frames a signing page in an element of your page and
// re-emits its events as DOM events on that element. No build step, no dependencies.
//
//   <script src="https://esign.example/embed.js"></script>
//   esign.mount(element, documentUrl, { hideHeader: true });
//   element.addEventListener("esign:signed", (e) => console.log(e.detail));
//
// or, without code: <div data-esign-url="{document_url}" data-esign-hide-header></div>
// (mounted when the script runs and when the page has loaded).
//
// Your page's origin must be one of the entity's `embed_origins` (PUT /v1/entity):
// the signing page can be framed only by those, and posts its events to them only.
// Events: esign:loaded, esign:viewed, esign:field, esign:signed, esign:approved,
// esign:rejected, esign:completed, esign:error; `event.detail` is the message the page
// posted: { type, document_id, recipient_id, ... } (see docs/embedding.md).
"use strict";

(function () {
  const EVENTS = ["esign:loaded", "esign:viewed", "esign:field", "esign:signed",
    "esign:approved", "esign:rejected", "esign:completed", "esign:error"];

  function mount(element, url, options) {
    if (typeof element === "string") element = document.querySelector(element);
    if (!element) throw new Error("esign.mount: no element");
    const opts = options || {};
    const src = new URL(url, window.location.href);
    src.searchParams.set("embed", "1");
    if (opts.hideHeader) src.searchParams.set("hide_header", "1");
    const frame = document.createElement("iframe");
    frame.src = src.href;
    frame.title = opts.title || "esign";
    frame.setAttribute("allow", "fullscreen");
    frame.style.border = "0";
    frame.style.width = opts.width || "100%";
    frame.style.height = opts.height || "800px";
    const origin = src.origin;
    function onMessage(e) {
      // Only the frame we made, from the signing page's origin, and only its events.
      if (e.source !== frame.contentWindow || e.origin !== origin) return;
      const d = e.data;
      if (!d || typeof d !== "object" || !EVENTS.includes(d.type)) return;
      element.dispatchEvent(new CustomEvent(d.type, { detail: d, bubbles: true }));
    }
    window.addEventListener("message", onMessage);
    element.replaceChildren(frame);
    return {
      frame,
      unmount() { window.removeEventListener("message", onMessage); frame.remove(); },
    };
  }

  function mountAll() {
    for (const el of document.querySelectorAll("[data-esign-url]")) {
      if (el.esignMounted) continue;
      el.esignMounted = mount(el, el.getAttribute("data-esign-url"), {
        hideHeader: el.hasAttribute("data-esign-hide-header"),
        height: el.getAttribute("data-esign-height") || undefined,
      });
    }
  }

  window.esign = Object.assign(window.esign || {}, { mount, events: EVENTS.slice() });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mountAll);
  else mountAll();
})();
