// The page of a public signing link (/p/{slug}): the visitor's name and email (and the
// code mailed to them first, when the link asks for one), then their new document's
// signing page once it is ready. No build step; the words come with the page.
(function () {
  "use strict";
  const form = document.getElementById("visit");
  if (!form) return;
  const slug = form.dataset.slug;
  const alertBox = form.querySelector("[role=alert]");
  const status = form.querySelector("[role=status]");
  const codeBox = document.getElementById("codebox");
  const button = form.querySelector("button[type=submit]");
  const value = name => (form.elements[name] ? form.elements[name].value.trim() : "");

  function fail(text) { alertBox.textContent = text; alertBox.hidden = false; alertBox.focus && alertBox.focus(); }
  function say(text) { status.textContent = text; }

  async function post(path, body) {
    const resp = await fetch(path, { method: "POST", headers: { "content-type": "application/json", accept: "application/json" }, body: JSON.stringify(body) });
    let json = null;
    try { json = await resp.json(); } catch (_) { /* not JSON */ }
    if (!resp.ok) throw new Error((json && json.description) || form.dataset.failed);
    return json;
  }

  // The link works once the document's seal is done (a few seconds): wait for it.
  async function whenReady(url) {
    const secret = url.split("/").pop();
    for (let i = 0; i < 120; i++) {
      const resp = await fetch("/v1/recipient/" + encodeURIComponent(secret), { headers: { accept: "application/json" } });
      if (resp.status !== 410) return;
      await new Promise(r => setTimeout(r, 500));
    }
  }

  form.addEventListener("submit", async e => {
    e.preventDefault();
    alertBox.hidden = true;
    for (const name of ["first_name", "last_name", "email"]) {
      const input = form.elements[name];
      if (!input.checkValidity()) { input.focus(); return fail(input.validationMessage); }
    }
    button.disabled = true;
    try {
      if (form.dataset.code === "1" && codeBox.hidden) {
        await post("/p/" + encodeURIComponent(slug) + "/code", { email: value("email") });
        codeBox.hidden = false;
        button.textContent = form.dataset.continue || button.textContent;
        say(form.dataset.codesent.replace("{email}", value("email")));
        form.elements.code.focus();
        return;
      }
      const body = { first_name: value("first_name"), last_name: value("last_name"), email: value("email") };
      if (form.dataset.code === "1") body.code = value("code");
      const made = await post("/p/" + encodeURIComponent(slug), body);
      say(form.dataset.preparing);
      await whenReady(made.signing_url);
      location.assign(made.signing_url + (form.dataset.embed || ""));
    } catch (err) {
      fail(err.message);
    } finally {
      button.disabled = false;
    }
  });
})();
