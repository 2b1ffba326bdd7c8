//! The sender's web app (`/app`) in a real browser (Debian's Chromium, headless,
//! through chromedriver): a sender signs in, creates a document from a PDF, places
//! fields with the keyboard alone (and, on a phone, by touch), sends it, follows it and
//! downloads the sealed result; a template made in the app starts a second document.
//! What the app did is checked through the REST API; axe-core checks every screen for
//! violations of any impact.
//!
//! Skipped (with a message) where Chromium is not installed, unless
//! `ESIGN_REQUIRE_BROWSER=1` (CI). One browser at a time: the tests share a lock.

#[path = "common/browser.rs"]
mod browser;
mod common;

use browser::{ALT, Browser, DOWN, ENTER, NULL, RIGHT, SHIFT};
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

static ONE_BROWSER: Mutex<()> = Mutex::new(());

fn one_browser() -> std::sync::MutexGuard<'static, ()> {
    ONE_BROWSER.lock().unwrap_or_else(|e| e.into_inner())
}

/// A name with markup in it: the app must show it as text, never as elements.
const MARKUP_NAME: &str = "Offer <img src=x id=injected> & <b>terms</b>";

/// Where screenshots go: the target dir, and `docs/` when `ESIGN_UPDATE_SCREENSHOTS=1`
/// (docs/app.md and docs/api.md show those).
fn screenshot(b: &Browser, name: &str) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    b.screenshot(&dir.join(name));
    if std::env::var("ESIGN_UPDATE_SCREENSHOTS").is_ok_and(|v| v == "1") {
        let docs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs");
        std::fs::create_dir_all(&docs).unwrap();
        std::fs::copy(dir.join(name), docs.join(name)).unwrap();
    }
}

/// A two-page PDF in a fresh directory.
fn sample_pdf(dir: &Path) -> PathBuf {
    let path = dir.join("offer.pdf");
    std::fs::write(&path, esign_host::pdf::sample_pdf(2)).unwrap();
    path
}

/// Signs in through the app's form (the browser is on a sign-in screen).
fn sign_in(b: &Browser) {
    b.wait_for_text("Sign in");
    b.fill("Email", ADMIN_EMAIL);
    b.fill("Password", ADMIN_PASSWORD);
    b.click("Sign in");
    b.wait_js(
        20,
        "signed in",
        "return [...document.querySelectorAll('button')].some(x => x.innerText === 'Sign out')",
    );
}

/// The id of the document whose page or builder the app shows.
fn document_in_url(b: &Browser) -> String {
    let v = b.wait_js(
        20,
        "a document's URL",
        "const m = location.pathname.match(/^\\/app\\/documents\\/([^/]+)\\/fields$/); return m ? m[1] : '';",
    );
    v.as_str().unwrap().to_string()
}

/// Whether an element made from the markup in [`MARKUP_NAME`] is anywhere in the page.
fn markup_became_elements(b: &Browser) -> bool {
    b.js(
        "return !!document.getElementById('injected') || [...document.querySelectorAll('b')].some(x => x.innerText === 'terms')",
        vec![],
    ) == true
}

fn fields_of(s: &Server, t: &str, id: &str) -> Vec<Value> {
    let (status, f) = s.get_as(t, &format!("/v1/documents/{id}/fields"));
    assert_eq!(status, 200, "{f}");
    f["fields"].as_array().unwrap().clone()
}

fn secret_of(d: &Value, i: usize) -> String {
    d["recipients"][i]["document_url"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string()
}

/// A recipient signs on the signing page with a typed name, in a tab of its own.
fn sign_on_the_signing_page(b: &Browser, s: &Server, secret: &str, name: &str) {
    b.goto(&s.url(&format!("/s/{secret}")));
    sign_here(b, name);
}

/// Signs as `name` with a typed signature on the signing page the browser shows.
fn sign_here(b: &Browser, name: &str) {
    b.wait_for_text("sign at the bottom");
    b.fill("Full name", name);
    b.click("Sign");
    b.wait_js(
        30,
        "the signature taken",
        "return document.body.innerText.includes('You signed the document') || document.body.innerText.includes('You have signed')",
    );
}

#[test]
fn a_sender_signs_in_creates_places_fields_by_keyboard_sends_follows_and_downloads() {
    let _one = one_browser();
    let Some(b) = Browser::start() else { return };
    // Tokens of one user at least 4 s apart, so the app's answer to a 429 shows; a
    // webhook target on loopback allowed.
    let s = Server::start_with(
        &[
            "--token-min-interval-ms",
            "4000",
            "--outbound-allow-private",
        ],
        &[],
    );
    let dir = fresh_dir("app");
    let pdf = sample_pdf(&dir);

    // A view's URL survives signing in: the app asks for the password, then shows it.
    b.goto(&s.url("/app/documents?filter=draft"));
    b.wait_for_text("Sign in");
    b.assert_no_violations("sign-in");
    // A wrong password is refused in the page.
    b.fill("Email", ADMIN_EMAIL);
    b.fill("Password", "not-the-password");
    b.click("Sign in");
    b.wait_js(
        20,
        "the refusal",
        "const a = document.querySelector('[role=alert]'); return a && !a.hidden && a.innerText.length > 0",
    );
    b.assert_no_violations("sign-in with an error");
    // A token issued to the same user just now: the app says when to try again.
    let t = s.admin_token();
    b.fill("Password", ADMIN_PASSWORD);
    b.click("Sign in");
    b.wait_for_text("Too many attempts: try again in");
    std::thread::sleep(Duration::from_millis(4200));
    sign_in(&b);
    b.wait_js(
        20,
        "the drafts list",
        "return location.pathname + location.search === '/app/documents?filter=draft' && document.querySelector('h1').innerText === 'Documents'",
    );
    b.assert_no_violations("documents (empty)");

    // A new document from a PDF, two signers in order.
    b.click("New document");
    b.wait_for_text("Recipients");
    b.fill("Document name", MARKUP_NAME);
    b.choose_file("File", &pdf);
    b.js(
        "const l = [...document.querySelectorAll('label')].find(x => x.innerText === 'Sign in order'); document.getElementById(l.htmlFor).click();",
        vec![],
    );
    b.click("Add recipient");
    b.fill_last("First name", "Ann");
    b.fill_last("Last name", "Tester");
    b.fill_last("Email", "ann@example.com");
    b.click("Add recipient");
    b.fill_last("First name", "Bob");
    b.fill_last("Last name", "Tester");
    b.fill_last("Email", "bob@example.com");
    b.assert_no_violations("new document");
    b.click("Create and place fields");
    let id = document_in_url(&b);
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    assert_eq!(d["name"], MARKUP_NAME, "{d}");
    assert_eq!(d["is_signing_order"], true, "{d}");
    let ann = d["recipients"][0]["id"].as_str().unwrap().to_string();
    let bob = d["recipients"][1]["id"].as_str().unwrap().to_string();
    assert_eq!(d["recipients"][0]["email"], "ann@example.com");
    assert_eq!(
        d["recipients"][1]["order_num"]
            .to_string()
            .trim_matches('"'),
        "2"
    );

    // The field builder: the pages' images, then a signature field for each signer
    // placed and sized with the keyboard alone.
    b.wait_js(
        60,
        "the page images",
        "const i = [...document.querySelectorAll('.page img')]; return i.length === 2 && i.every(x => x.complete && x.naturalWidth > 0)",
    );
    b.js(
        "document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)",
        vec![],
    );
    b.tab_to("Field type", 40);
    b.tab_to("Add field", 5);
    b.press(ENTER);
    b.wait_js(
        10,
        "the new field focused",
        "return document.activeElement.classList.contains('box')",
    );
    // Shift+Down moves 10 points: 5 presses, 50 points down; Alt+Right widens by 1.
    for _ in 0..5 {
        b.press(&format!("{SHIFT}{DOWN}{NULL}"));
    }
    b.press(&format!("{ALT}{RIGHT}{NULL}"));
    b.wait_for_text("Resized: Signature for Ann Tester");
    // Back to the toolbar: Bob's field.
    b.tab_back_to("For", 10);
    b.press("Bob");
    b.tab_to("Add field", 5);
    b.press(ENTER);
    b.wait_for_text("Added Signature for Bob Tester");
    for _ in 0..3 {
        b.press(&format!("{SHIFT}{RIGHT}{NULL}"));
    }
    b.wait_for_text("All changes saved");
    screenshot(&b, "app-field-builder.png");
    b.assert_no_violations("field builder");
    let fields = wait_until(20, "both fields saved", || {
        let f = fields_of(&s, &t, &id);
        (f.len() == 2 && f[1]["field_left"].as_f64() == Some(102.0)).then_some(f)
    });
    assert_eq!(fields[0]["field_type"], "signature");
    assert_eq!(fields[0]["recipient_id"], ann.as_str());
    assert_eq!(fields[0]["field_top"].as_f64(), Some(122.0), "{fields:?}");
    assert_eq!(fields[0]["field_width"].as_f64(), Some(201.0), "{fields:?}");
    assert_eq!(fields[1]["recipient_id"], bob.as_str());
    assert!(
        !markup_became_elements(&b),
        "the name became elements in the builder"
    );

    // Send, from the keyboard too.
    b.tab_to("Send", 80);
    b.press(ENTER);
    s.wait_status(&t, &id, "sent");
    b.wait_for_text("Timeline");
    b.wait_for_text("Hash chain checked");
    assert!(b.text("main h1").contains("<img src=x id=injected>"));
    assert!(
        !markup_became_elements(&b),
        "the name became elements on its page"
    );
    b.assert_no_violations("document");

    // The first signer signs on the signing page (in another tab); the sender's page
    // follows.
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    let app_tab = b.new_tab();
    sign_on_the_signing_page(&b, &s, &secret_of(&d, 0), "Ann Tester");
    b.switch_to(&app_tab);
    b.wait_js(
        30,
        "Ann's signature in the timeline",
        "return [...document.querySelectorAll('.timeline li')].some(li => li.innerText.includes('Ann Tester') && li.innerText.includes('partially_signed'))",
    );
    b.new_tab();
    sign_on_the_signing_page(&b, &s, &secret_of(&d, 1), "Bob Tester");
    b.switch_to(&app_tab);
    s.wait_status(&t, &id, "signed");
    b.wait_js(
        60,
        "the sealed PDF offered",
        "return [...document.querySelectorAll('button')].some(x => x.innerText === 'Download the sealed PDF')",
    );
    screenshot(&b, "app-document-timeline.png");
    b.assert_no_violations("signed document");

    // The download is the sealed PDF the API serves.
    let downloads = fresh_dir("app-downloads");
    b.downloads_to(&downloads);
    b.click("Download the sealed PDF");
    let got = wait_until(30, "the downloaded PDF", || {
        let f = std::fs::read_dir(&downloads)
            .ok()?
            .filter_map(|e| e.ok())
            .find(|e| e.path().extension().is_some_and(|x| x == "pdf"))?;
        std::fs::read(f.path())
            .ok()
            .filter(|b| b.ends_with(b"%%EOF\n") || b.ends_with(b"%%EOF"))
    });
    let api = s
        .get(&format!("/v1/documents/{id}/download?direct=true"))
        .bearer_auth(&t)
        .send()
        .unwrap()
        .bytes()
        .unwrap();
    assert_eq!(
        got,
        api.to_vec(),
        "the app's download is the API's sealed PDF"
    );
    assert!(
        esign_host::pdf::extract_text(&got)
            .unwrap()
            .contains("Audit certificate")
    );

    // The list: the document, its name as text.
    b.click("Documents");
    b.wait_js(
        20,
        "the list",
        "return document.querySelectorAll('table.list tbody tr').length === 1",
    );
    assert!(b.text("table.list").contains("<b>terms</b>"));
    screenshot(&b, "app-documents.png");
    b.assert_no_violations("documents");
    assert!(
        !markup_became_elements(&b),
        "the name became elements in the list"
    );
    // Back returns to the document's page.
    b.js("history.back()", vec![]);
    b.wait_for_text("Hash chain checked");

    // A webhook subscription made in Settings: its secret shown once, then listed.
    b.click("Settings");
    b.fill("Target URL", "https://127.0.0.1:9/hook");
    b.click("Subscribe");
    b.wait_for_text("Its signing secret, shown only now:");
    b.wait_for_text("Unsubscribe https://127.0.0.1:9/hook");
    let (_, subs) = s.get_as(&t, "/v1/subscriptions");
    assert_eq!(subs[0]["target_url"], "https://127.0.0.1:9/hook", "{subs}");
    assert_eq!(subs[0]["event"], "document.signed", "{subs}");
    b.assert_no_violations("settings");

    // Signing out revokes the token and forgets it: the app asks again.
    b.click("Sign out");
    b.wait_for_text("Sign in");
    assert_eq!(b.js("return location.pathname", vec![]), "/app/sign-in");
}

#[test]
fn on_a_phone_a_template_s_field_is_placed_by_touch_and_the_template_starts_a_document() {
    let _one = one_browser();
    let Some(b) = Browser::start() else { return };
    let s = Server::start(&[]);
    let dir = fresh_dir("app-phone");
    let pdf = sample_pdf(&dir);
    b.phone(375, 800);
    b.goto(&s.url("/app"));
    sign_in(&b);
    std::thread::sleep(Duration::from_millis(1100));
    let t = s.admin_token();
    let too_wide = || b.js("return document.documentElement.scrollWidth > 375", vec![]) == true;
    assert!(!too_wide(), "the list is wider than the phone");

    // A template made in the app, with one role.
    b.click("Templates");
    b.fill("Template name", "Standard offer");
    b.choose_file("File", &pdf);
    b.fill("Roles (comma-separated)", "Client");
    b.click("Create template");
    b.wait_for_text("Standard offer");
    b.assert_no_violations("templates");
    let (_, list) = s.get_as(&t, "/v1/templates");
    let tpl = list["templates"][0]["id"].as_str().unwrap().to_string();
    wait_until(60, "the template ready", || {
        let (_, v) = s.get_as(&t, &format!("/v1/templates/{tpl}"));
        (v["status"] == "ready").then_some(())
    });
    // Its fields, placed in the app by a tap: a signature for the Client role.
    b.click("Templates");
    b.click("Edit fields of Standard offer");
    b.wait_js(
        60,
        "the template's page images",
        "const i = [...document.querySelectorAll('.page img')]; return i.length === 2 && i.every(x => x.complete && x.naturalWidth > 0)",
    );
    b.click("Add field");
    b.wait_for_text("All changes saved");
    let placed = wait_until(20, "the template's field saved", || {
        let (_, v) = s.get_as(&t, &format!("/v1/templates/{tpl}"));
        v["page_fields"]
            .as_array()
            .filter(|f| f.len() == 1)
            .cloned()
    });
    assert_eq!(placed[0]["role_name"], "Client", "{placed:?}");
    assert_eq!(placed[0]["field_type"], "signature", "{placed:?}");
    assert!(
        !too_wide(),
        "the template's builder is wider than the phone"
    );
    b.assert_no_violations("a template's field builder on a phone");
    b.click("Back to the templates");
    b.click("Use Standard offer");
    b.wait_for_text("Recipients");
    b.click("Add recipient");
    b.fill_last("First name", "Cleo");
    b.fill_last("Last name", "Client");
    b.fill_last("Email", "cleo@example.com");
    b.fill_last("Template role", "Client");
    assert!(!too_wide(), "the form is wider than the phone");
    b.click("Create and place fields");
    let id = document_in_url(&b);
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    assert_eq!(d["name"], "Standard offer", "{d}");
    assert_eq!(d["recipients"][0]["role_name"], "Client", "{d}");

    // The template's field is Cleo's; dragged with a finger.
    b.wait_js(
        60,
        "the page images",
        "const i = [...document.querySelectorAll('.page img')]; return i.length > 0 && i.every(x => x.complete && x.naturalWidth > 0)",
    );
    let before = wait_until(20, "the template's field", || fields_of(&s, &t, &id).pop());
    assert_eq!(before["recipient_id"], d["recipients"][0]["id"], "{before}");
    b.touch_drag(".box", 60.0, 90.0);
    let after = wait_until(20, "the moved field saved", || {
        fields_of(&s, &t, &id)
            .pop()
            .filter(|f| f["field_top"] != before["field_top"])
    });
    let moved = |k: &str| after[k].as_f64().unwrap() - before[k].as_f64().unwrap();
    assert!(
        moved("field_left") > 20.0 && moved("field_top") > 30.0,
        "{before} -> {after}"
    );
    assert!(!too_wide(), "the builder is wider than the phone");
    b.assert_no_violations("field builder on a phone");
    b.click("Send");
    s.wait_status(&t, &id, "sent");
    b.wait_for_text("Timeline");
    assert!(!too_wide(), "the document page is wider than the phone");
    screenshot(&b, "app-phone-document.png");
}

#[test]
fn the_app_s_pages_carry_its_policy_and_unknown_views_answer_404() {
    let s = Server::start(&[]);
    for path in [
        "/app",
        "/app/documents",
        "/app/documents/abc/fields",
        "/app/settings",
    ] {
        let r = s.get(path).send().unwrap();
        assert_eq!(r.status(), 200, "{path}");
        let csp = r.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .to_string();
        assert!(
            csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"),
            "{csp}"
        );
        assert_eq!(r.headers()["cache-control"], "no-store");
        let html = r.text().unwrap();
        let js = html
            .split("src=\"")
            .nth(1)
            .and_then(|x| x.split('"').next())
            .unwrap()
            .to_string();
        assert!(js.starts_with("/app/_/sender.js?v="), "{html}");
        let asset = s.get(&js).send().unwrap();
        assert_eq!(asset.status(), 200);
        assert!(
            asset.headers()["cache-control"]
                .to_str()
                .unwrap()
                .contains("immutable")
        );
    }
    for path in ["/app/nothing", "/app/documents/abc/other"] {
        let r = s.get(path).send().unwrap();
        assert_eq!(r.status(), 404, "{path}");
        assert!(r.text().unwrap().contains("/app/_/sender.js"));
    }
    assert_eq!(s.get("/app/_/nothing.js").send().unwrap().status(), 404);
    assert_eq!(s.post("/app/documents").send().unwrap().status(), 405);
}

/// Every screen of the app in Swedish, chosen with the switcher: no word missing from
/// the catalogue, the page's language said, axe-core content, and the choice kept
/// across a reload.
#[test]
fn every_screen_in_swedish_with_no_missing_word() {
    let _one = one_browser();
    let Some(b) = Browser::start() else { return };
    let s = Server::start(&[]);
    let t = s.admin_token();
    let id = pdf_draft(
        &s,
        &t,
        "Avtal",
        serde_json::json!([person("Ann", "Tester", "ann@example.com")]),
        serde_json::json!({}),
    );
    b.goto(&s.url("/app/documents"));
    sign_in(&b);
    // The switcher in the header.
    b.select("Language", "sv");
    b.wait_js(20, "Swedish", "return document.documentElement.lang === 'sv' && document.querySelector('h1').innerText === 'Dokument'");
    let check = |screen: &str| {
        let missing = b.js("return window.esignMissingWords", vec![]);
        assert_eq!(
            missing,
            serde_json::json!([]),
            "words missing on the {screen} screen"
        );
        assert_eq!(b.js("return document.documentElement.lang", vec![]), "sv");
        b.assert_no_violations(screen);
    };
    check("documents");
    b.click("Mallar");
    b.wait_for_text("Ny mall");
    check("templates");
    b.click("Inställningar");
    b.wait_for_text("Signeringscertifikat");
    check("settings");
    b.click("Nytt dokument");
    b.wait_for_text("Lägg till mottagare");
    b.click("Lägg till mottagare");
    check("new document");
    b.goto(&s.url("/app/nothing"));
    // A reload asks for the password again, in the language chosen before.
    b.wait_for_text("Logga in");
    check("sign-in");
    b.fill("E-post", ADMIN_EMAIL);
    b.fill("Lösenord", ADMIN_PASSWORD);
    b.click("Logga in");
    b.wait_for_text("Sidan finns inte");
    check("page not found");
    b.js(&format!("history.pushState(null, '', '/app/documents/{id}'); dispatchEvent(new PopStateEvent('popstate'))"), vec![]);
    b.wait_for_text("Händelser");
    b.wait_for_text("Hashkedjan kontrollerad");
    check("document");
    b.click("Redigera fält");
    b.wait_for_text("Lägg till fält");
    b.click("Lägg till fält");
    b.wait_for_text("Alla ändringar sparade");
    check("field builder");
}

/// The acts after sending, in the app: a recipient's address corrected, a revision
/// published, the document marked signed; a file signed elsewhere archived; a PDF
/// verified. Each checked through the API.
#[test]
fn a_sender_corrects_revises_marks_signed_archives_and_verifies() {
    let _one = one_browser();
    let Some(b) = Browser::start() else { return };
    let s = Server::start(&[]);
    let dir = fresh_dir("app-acts");
    let pdf = sample_pdf(&dir);
    let t = s.admin_token();
    // In order: Bo is not reached until Ann has signed, so his address can be corrected.
    let mut ann = person("Ann", "Tester", "ann@example.com");
    ann["order_num"] = 1.into();
    let mut bo = person("Bo", "Tester", "bo@wrong.example");
    bo["order_num"] = 2.into();
    let id = pdf_draft(
        &s,
        &t,
        "Lease",
        serde_json::json!([ann, bo]),
        serde_json::json!({"is_signing_order": true}),
    );
    let (status, b0) = s.post_json(
        &t,
        &format!("/v1/documents/{id}/send"),
        &serde_json::json!({}),
    );
    assert_eq!(status, 200, "{b0}");
    s.wait_status(&t, &id, "sent");
    b.goto(&s.url(&format!("/app/documents/{id}")));
    sign_in(&b);
    b.wait_for_text("Hash chain checked");

    // The address corrected.
    b.js(
        "[...document.querySelectorAll('summary')].find(x => x.innerText === 'Correct Bo Tester').click()",
        vec![],
    );
    b.fill_last("Email", "bo@right.example");
    b.click("Save the correction");
    wait_until(20, "the corrected address", || {
        let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
        (d["recipients"][1]["email"] == "bo@right.example").then_some(())
    });
    b.assert_no_violations("document with a correction");

    // A revision (not sent).
    b.wait_for_text("Publish a revision");
    b.js(
        "[...document.querySelectorAll('summary')].find(x => x.innerText === 'Publish a revision').click()",
        vec![],
    );
    b.fill("Message to the recipients", "Page 2 changed");
    b.click("Publish");
    wait_until(30, "the revision", || {
        let (_, r) = s.get_as(&t, &format!("/v1/documents/{id}/revisions"));
        let n = r
            .as_array()
            .map(Vec::len)
            .or_else(|| r["revisions"].as_array().map(Vec::len));
        (n.unwrap_or(0) >= 1).then_some(())
    });

    // Marked signed (the confirmation answered yes).
    b.js("window.confirm = () => true", vec![]);
    b.wait_for_text("Mark signed");
    b.click("Mark signed");
    wait_until(30, "marked signed", || {
        let (_, st) = s.get_as(&t, &format!("/v1/documents/{id}/status"));
        st["status"]
            .as_str()
            .filter(|x| x.starts_with("signed"))
            .map(|_| ())
    });

    // A file signed elsewhere, archived.
    b.click("New document");
    b.wait_for_text("Start from");
    b.select("Start from", "archive");
    b.fill("Document name", "Old contract");
    b.choose_file("File", &pdf);
    // No recipients for an archived file: their part of the form is hidden.
    assert_eq!(
        b.js("const x = [...document.querySelectorAll('button')].find(x => x.innerText === 'Add recipient'); return !!x && x.closest('[hidden]') !== null", vec![]),
        true
    );
    b.click("Archive the file");
    b.wait_for_text("Old contract");
    let (_, list) = s.get_as(&t, "/v1/documents?filter=archive");
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .any(|d| d["name"] == "Old contract"),
        "{list}"
    );

    // A PDF verified: this one carries no signature.
    b.click("Documents");
    b.wait_for_text("Verify a PDF");
    b.choose_file("PDF to verify", &pdf);
    b.click("Verify");
    b.wait_for_text("This PDF carries no signature.");
    b.assert_no_violations("documents with a verification");
}

/// Settings for an admin: a user invited (the password mailed to them works), a
/// custom data property added and deleted, the default mail texts saved, and a test
/// event sent to a subscription, which receives it; a user in a team; the entity's colour
/// and logo, shown on a signing page. A document's recipients' language chosen at
/// creation and changed on its page, and its pricing table made there. Each checked
/// through the API.
#[test]
fn settings_users_properties_mail_texts_a_test_event_and_a_document_s_language_and_pricing() {
    let _one = one_browser();
    let Some(b) = Browser::start() else { return };
    // The hook fails its first two attempts (the delivery's only two: a dead letter),
    // then takes what comes.
    let attempts = std::sync::atomic::AtomicUsize::new(0);
    let rx = HttpsServer::start(move |_| {
        match attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
            0 | 1 => Canned::status(500),
            _ => Canned::ok(Vec::new()),
        }
    });
    let s = server_for(&rx, "1s");
    let t = s.admin_token();
    let dir = fresh_dir("app-settings");
    let pdf = sample_pdf(&dir);
    let id = pdf_draft(
        &s,
        &t,
        "Hook target",
        serde_json::json!([person("Ann", "Tester", "ann@example.com")]),
        serde_json::json!({}),
    );
    subscribe(
        &s,
        &t,
        "document.signed",
        &rx.url("/hook"),
        serde_json::json!({}),
    );
    b.goto(&s.url("/app/settings"));
    sign_in(&b);
    b.wait_for_text("Add user");
    // The token is refreshed at 80 % of its life (60 days), not at once: a timer past
    // 2^31 - 1 ms fires immediately, which once refreshed the token without pause.
    std::thread::sleep(Duration::from_secs(2));
    let refreshes = b.js(
        "return performance.getEntriesByType('resource').filter(r => new URL(r.name).pathname === '/v1/refresh').length",
        vec![],
    );
    assert_eq!(refreshes, 0, "no refresh soon after signing in");

    // A user: invited (`POST /v1/users` answers no password, issue 58); the password
    // made for them is in their invitation mail, and signing in with it accepts.
    b.fill("Email", "newbie@example.com");
    b.fill("First name", "New");
    b.fill("Last name", "Bie");
    b.select("Role", "manager");
    b.fill("Team", "Sales");
    b.click("Add user");
    b.wait_for_text("newbie@example.com is invited: they join once they accept");
    let mail = s.wait_mails(1, |m| m.contains("To: newbie@example.com"));
    let password = mail[0]
        .lines()
        .map(str::trim)
        .find(|l| l.len() == 24 && !l.contains(' '))
        .unwrap_or_else(|| panic!("a password in {}", mail[0]))
        .to_string();
    let login = s.login("newbie@example.com", &password, None);
    assert_eq!(login.status().as_u16(), 200, "{password:?} signs in");
    let (_, users) = s.get_as(&t, "/v1/users");
    let list = users
        .as_array()
        .cloned()
        .or_else(|| users["users"].as_array().cloned())
        .unwrap();
    let newbie = list
        .iter()
        .find(|u| u["email"] == "newbie@example.com")
        .expect("listed");
    assert_eq!(newbie["role"], "manager");
    assert_eq!(newbie["team_id"], "Sales");
    b.wait_for_text("Sales (users: 1)");
    let (_, teams) = s.get_as(&t, "/v1/teams");
    assert_eq!(teams["teams"][0]["team_id"], "Sales", "{teams}");
    b.assert_no_violations("settings with a new user's password");

    // Copies of completed documents, per kind of party: CC recipients get none.
    b.select("CC recipients", "none");
    b.js(
        "document.querySelector('[aria-labelledby=h-copies]').requestSubmit()",
        vec![],
    );
    wait_until(10, "the copies saved", || {
        let (_, e) = s.get_as(&t, "/v1/entity");
        (e["entity"]["completion_copies_by_party"]["cc"] == "none").then_some(())
    });
    let (_, e) = s.get_as(&t, "/v1/entity");
    assert_eq!(
        e["entity"]["completion_copies_by_party"]["signers"], "attachment",
        "{e}"
    );

    // Reminders: the first after 2 days, then weekly, at most 3.
    b.fill("First reminder after (days)", "2");
    b.fill("Then every (days)", "7");
    b.fill("At most this many reminders (0: none)", "3");
    b.js(
        "document.querySelector('[aria-labelledby=h-rem]').requestSubmit()",
        vec![],
    );
    wait_until(10, "the reminder schedule saved", || {
        let (_, e) = s.get_as(&t, "/v1/entity");
        (e["entity"]["reminder_schedule"]
            == serde_json::json!({"first_after_days": 2, "every_days": 7, "max": 3}))
        .then_some(())
    });

    // Embedded signing: the sites that may frame the signing pages.
    b.fill(
        "Allowed origins",
        "https://shop.example\nhttps://crm.example:8443",
    );
    b.js(
        "document.querySelector('[aria-labelledby=h-embed]').requestSubmit()",
        vec![],
    );
    wait_until(10, "the origins saved", || {
        let (_, e) = s.get_as(&t, "/v1/entity");
        (e["entity"]["embed_origins"]
            == serde_json::json!(["https://shop.example", "https://crm.example:8443"]))
        .then_some(())
    });
    // A bad one is refused in the page.
    b.fill("Allowed origins", "http://insecure.example");
    b.js(
        "document.querySelector('[aria-labelledby=h-embed]').requestSubmit()",
        vec![],
    );
    b.wait_js(
        10,
        "the refusal",
        "const a = document.querySelector('[role=alert]'); return a && !a.hidden && a.innerText.length > 0",
    );

    // The user moves to another team and gets another role, from the list.
    b.fill("Team of New Bie", "Support");
    b.select("Role of New Bie", "user");
    b.click("Save New Bie");
    b.wait_for_text("Support (users: 1)");
    let (_, moved) = s.get_as(
        &t,
        &format!("/v1/users/{}", newbie["user_id"].as_str().unwrap()),
    );
    assert_eq!(
        (&moved["team_id"], &moved["role"]),
        (&serde_json::json!("Support"), &serde_json::json!("user")),
        "{moved}"
    );

    // A custom data property, then deleted.
    b.fill("Key", "crm_deal");
    b.fill("Label", "CRM deal");
    b.select("Value type", "number");
    b.click("Add property");
    b.wait_for_text("Delete crm_deal");
    let (_, props) = s.get_as(&t, "/v1/custom-data/entity");
    assert_eq!(props["allowed_properties"][0]["key"], "crm_deal", "{props}");
    assert_eq!(
        props["allowed_properties"][0]["value_type"], "number",
        "{props}"
    );
    b.js("window.confirm = () => true", vec![]);
    b.click("Delete crm_deal");
    b.wait_for_text("No properties yet.");
    let (_, props) = s.get_as(&t, "/v1/custom-data/entity");
    assert_eq!(
        props["allowed_properties"],
        serde_json::json!([]),
        "{props}"
    );

    // The entity's default invitation texts.
    b.fill("Invitation subject", "Please sign {{document_name}}");
    b.fill("Invitation message", "Thank you!");
    b.js("[...document.querySelectorAll('form')].find(f => f.innerText.includes('Default mail texts')).requestSubmit()", vec![]);
    wait_until(20, "the saved texts", || {
        let (_, e) = s.get_as(&t, "/v1/entity");
        (e["entity"]["email_send_message"] == "Thank you!").then_some(())
    });
    let (_, e) = s.get_as(&t, "/v1/entity");
    assert_eq!(
        e["entity"]["email_send_subject"],
        "Please sign {{document_name}}"
    );

    // Branding: a colour and a logo (a PNG), then on the signing page of a document.
    let mut logo_png = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut logo_png, 120, 40);
        enc.set_color(png::ColorType::Rgb);
        let mut w = enc.write_header().unwrap();
        w.write_image_data(&[30u8, 86, 49].repeat(120 * 40))
            .unwrap();
    }
    let logo_file = dir.join("logo.png");
    std::fs::write(&logo_file, &logo_png).unwrap();
    b.select("Colour", "#1e5631");
    b.choose_file("Logo (PNG)", &logo_file);
    b.js(
        "document.getElementById('h-brand').closest('form').requestSubmit()",
        vec![],
    );
    let entity = wait_until(20, "the branding", || {
        let (_, e) = s.get_as(&t, "/v1/entity");
        (e["entity"]["logo_url"] != "").then_some(e)
    });
    assert_eq!(entity["entity"]["brand_color"], "#1e5631", "{entity}");
    let logo_url = entity["entity"]["logo_url"].as_str().unwrap().to_string();
    let served = client()
        .get(s.url(&logo_url))
        .send()
        .unwrap()
        .bytes()
        .unwrap();
    assert_eq!(
        served.as_ref(),
        logo_png.as_slice(),
        "the logo is served as given"
    );
    b.wait_for_text("Remove the logo");
    b.assert_no_violations("settings with branding");

    // A test event about the document, to the subscription of its event.
    b.select("Document for the test", &id);
    b.click("Send test");
    b.wait_for_text("sent to 1 subscriptions");
    let got = rx.wait_for("/hook", 1, 30);
    assert_eq!(got[0].json()["event"], "document.signed");
    b.assert_no_violations("settings after a test event");
    // It failed twice, so it is listed as failed, and sent again from there.
    wait_until(20, "the dead letter", || {
        let (_, e) = s.get_as(&t, "/v1/subscriptions/errors");
        (e.as_array().unwrap().len() == 1).then_some(())
    });
    b.js(
        "history.pushState(null, '', '/app/settings'); dispatchEvent(new PopStateEvent('popstate'))",
        vec![],
    );
    let again = format!("Send document.signed to {} again", rx.url("/hook"));
    b.wait_for_text(&again);
    // Nothing waits for the hook any more: the deliveries view says so.
    let summary = format!("Deliveries of {}", rx.url("/hook"));
    b.js(
        "[...document.querySelectorAll('summary')].find(s => s.textContent === arguments[0]).click()",
        vec![Value::String(summary)],
    );
    b.wait_for_text("None waiting: every event so far was delivered");
    b.assert_no_violations("settings with a failed delivery");
    b.click(&again);
    b.wait_for_text("No delivery has failed.");
    let got = rx.wait_for("/hook", 3, 30);
    assert_eq!(got[2].headers["webhook-id"], got[0].headers["webhook-id"]);
    assert_eq!(got[2].body, got[0].body);

    // The signing page shows the logo and takes the colour as its accent.
    s.act_ok(&t, &id, "send");
    s.wait_status(&t, &id, "sent");
    // So does the invitation's HTML part: the logo at its full address, the colour.
    let mail = &s.wait_mails(1, |m| m.contains("To: ann@example.com"))[0];
    let html = &mail[mail.find("Content-Type: text/html").expect("an HTML part")..];
    assert!(
        html.contains(&format!("<img src=\"{}\"", s.url(&logo_url))),
        "{html}"
    );
    assert!(html.contains("border-top:6px solid #1e5631"), "{html}");
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    let secret = secret_of(&d, 0);
    b.goto(&s.url(&format!("/s/{secret}")));
    b.wait_for_text("Hook target");
    assert_eq!(
        b.js("const i = document.querySelector('header img.logo'); return i ? i.getAttribute('src') : ''", vec![]),
        Value::String(logo_url.clone())
    );
    b.wait_js(
        20,
        "the accent",
        "return getComputedStyle(document.documentElement).getPropertyValue('--accent').trim() === '#1e5631'",
    );
    b.assert_no_violations("the signing page with the sender's branding");
    b.goto(&s.url("/app/documents"));
    sign_in(&b);

    // A document for Swedish recipients, then German ones.
    b.click("New document");
    b.wait_for_text("Start from");
    b.fill("Document name", "Avtal");
    b.choose_file("File", &pdf);
    b.select("Recipients' language", "sv");
    b.click("Create and place fields");
    let new_id = document_in_url(&b);
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{new_id}"));
    assert_eq!(d["language"], "sv", "{d}");
    s.wait_status(&t, &new_id, "draft");
    b.js(&format!("history.pushState(null, '', '/app/documents/{new_id}'); dispatchEvent(new PopStateEvent('popstate'))"), vec![]);
    b.wait_for_text("Recipients' language");
    // Its pricing table: a section with a row, the total shown, saved.
    b.click("Add section");
    b.fill("Section name", "Licences");
    b.fill("Item 1", "Seat");
    b.fill("Quantity 1", "3");
    b.fill("Price 1", "100");
    b.fill("Currency", "SEK");
    b.wait_for_text("Total: 300 SEK");
    b.click("Save the pricing table");
    let tables = wait_until(20, "the pricing table", || {
        let (_, p) = s.get_as(&t, &format!("/v1/documents/{new_id}/pricing-tables"));
        (p["pricing_tables"][0]["total"] == 300.0).then_some(p)
    });
    let table = &tables["pricing_tables"][0];
    assert_eq!(table["currency_settings"]["currency"], "SEK", "{tables}");
    assert_eq!(table["sections"][0]["display_name"], "Licences", "{tables}");
    assert_eq!(table["sections"][0]["rows"][0]["name"], "Seat", "{tables}");
    b.assert_no_violations("a document's pricing table");
    b.select("Recipients' language", "de");
    // The trail grows meanwhile (the pricing table saved again through the API): the
    // page, which follows the trail every 3 s, must not be drawn again over the choice
    // not saved yet.
    let (status, body) = s.put_json(
        &t,
        &format!("/v1/documents/{new_id}/pricing-tables"),
        &tables,
    );
    assert_eq!(status, 204, "{body}");
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(
        b.js("const l = [...document.querySelectorAll('label')].find(x => x.innerText === \"Recipients' language\"); return document.getElementById(l.htmlFor).value", vec![]),
        Value::String("de".into()),
        "the page was drawn again over a choice not saved"
    );
    b.js("[...document.querySelectorAll('form')].find(f => f.innerText.includes(\"Recipients' language\")).requestSubmit()", vec![]);
    wait_until(20, "the new language", || {
        let (_, d) = s.get_as(&t, &format!("/v1/documents/{new_id}"));
        (d["language"] == "de").then_some(())
    });
    b.assert_no_violations("a document's page");
}

/// Issue 57 item 3 (its test "A password-protected upload"): a document whose file could
/// not be imported says why at the top of its page, and Send is disabled with the
/// reason; axe-clean, at 375 px too.
#[test]
fn a_password_protected_file_shows_its_reason_and_send_is_disabled_with_why() {
    let _one = one_browser();
    let Some(b) = Browser::start() else { return };
    let s = Server::start(&[]);
    let t = s.admin_token();
    let encrypted = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/encrypted.pdf"
    ))
    .unwrap();
    let doc = s.create_doc(
        &t,
        &serde_json::json!({"name": "Locked", "file_content": b64(&encrypted),
                            "file_name": "locked.pdf",
                            "recipients": [person("Ann", "Tester", "ann@example.com")]}),
    );
    let id = doc["id"].as_str().unwrap().to_string();
    s.wait_status(&t, &id, "draft");
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    let reason = d["import_error"]
        .as_str()
        .expect("the import failed")
        .to_string();
    b.phone(375, 800);
    b.goto(&s.url(&format!("/app/documents/{id}")));
    sign_in(&b);
    b.wait_for_text("The file could not be imported:");
    let banner = b.js(
        "return document.querySelector('main .problem[role=alert]').innerText",
        vec![],
    );
    assert!(
        banner.as_str().unwrap().contains(&reason),
        "{banner} names {reason}"
    );
    let send = b.js(
        "const s = [...document.querySelectorAll('main button')].find(x => x.innerText === 'Send');\
         return [s.disabled, document.getElementById(s.getAttribute('aria-describedby')).innerText];",
        vec![],
    );
    assert_eq!(send[0], true, "Send is disabled: {send}");
    assert!(send[1].as_str().unwrap().contains("no pages"), "{send}");
    b.assert_no_violations("a document whose import failed (375 px)");
}

#[test]
fn a_sender_hands_their_device_to_a_signer_who_signs_in_person() {
    let _one = one_browser();
    let Some(b) = Browser::start() else { return };
    let s = Server::start(&[]);
    let t = s.admin_token();
    let id = pdf_draft(
        &s,
        &t,
        "Visit",
        serde_json::json!([person("Ann", "Tester", "ann@example.com")]),
        serde_json::json!({}),
    );
    s.act_ok(&t, &id, "send");
    s.wait_status(&t, &id, "sent");
    b.goto(&s.url(&format!("/app/documents/{id}")));
    sign_in(&b);
    b.wait_for_text("Sign in person: Ann Tester");
    b.assert_no_violations("a sent document with in-person signing");
    b.click("Sign in person: Ann Tester");
    // The same tab is now Ann's signing page.
    sign_here(&b, "Ann Tester");
    let (_, log) = s.get_as(&t, &format!("/v1/documents/{id}/log"));
    let actions: Vec<&str> = log
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["action"].as_str())
        .collect();
    let handed = actions.iter().position(|a| *a == "in_person_signing");
    let signed = actions.iter().position(|a| *a == "signed");
    assert!(
        handed.is_some() && signed.is_some() && handed < signed,
        "{actions:?}"
    );
}

#[test]
fn a_sender_adds_themselves_and_signs_their_own_document_in_the_app() {
    let _one = one_browser();
    let Some(b) = Browser::start() else { return };
    let s = Server::start(&[]);
    let t = s.admin_token();
    let dir = fresh_dir("app-self-sign");
    let pdf = sample_pdf(&dir);
    b.goto(&s.url("/app/documents/new"));
    sign_in(&b);
    b.wait_for_text("Recipients");
    b.fill("Document name", "My own");
    b.choose_file("File", &pdf);
    b.click("Add me");
    b.assert_no_violations("new document with the sender as a recipient");
    b.click("Create and place fields");
    let id = document_in_url(&b);
    let (_, d) = s.get_as(&t, &format!("/v1/documents/{id}"));
    assert_eq!(d["recipients"][0]["email"], ADMIN_EMAIL, "{d}");
    assert_eq!(d["recipients"][0]["role"], "signer", "{d}");
    s.wait_status(&t, &id, "draft");
    s.act_ok(&t, &id, "send");
    s.wait_status(&t, &id, "sent");
    // A reload signs the app out (issue 57 keeps the session).
    b.goto(&s.url(&format!("/app/documents/{id}")));
    sign_in(&b);
    b.wait_for_text("Sign now");
    b.assert_no_violations("a sent document the sender signs");
    b.click("Sign now");
    sign_here(&b, "Ada Admin");
    let (_, log) = s.get_as(&t, &format!("/v1/documents/{id}/log"));
    let actions: Vec<&str> = log
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["action"].as_str())
        .collect();
    let opened = actions.iter().position(|a| *a == "self_signing");
    let signed = actions.iter().position(|a| *a == "signed");
    assert!(
        opened.is_some() && signed.is_some() && opened < signed,
        "{actions:?}"
    );
}

#[test]
fn a_sender_publishes_a_template_and_a_visitor_signs_from_its_public_link() {
    let _one = one_browser();
    let Some(b) = Browser::start() else { return };
    let s = Server::start(&[]);
    let t = s.admin_token();
    signer_template(&s, &t, "Pool waiver", "Guest");
    // The sender publishes it with a limit of two documents.
    b.goto(&s.url("/app/templates"));
    sign_in(&b);
    b.wait_for_text("Publish a template as a public link");
    b.fill("At most this many documents (empty: no limit)", "2");
    b.click("Publish");
    b.wait_for_text("0 of 2 used");
    b.wait_js(
        20,
        "the QR code",
        "const i = document.querySelector('img.qr'); return i && i.complete && i.naturalWidth > 100",
    );
    b.assert_no_violations("templates with a public link");
    let (_, links) = s.get_as(&t, "/v1/public-links");
    let slug = links["public_links"][0]["url"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    // A visitor on a phone opens the link, gives name and email, and signs.
    b.phone(375, 800);
    b.goto(&s.url(&format!("/p/{slug}")));
    b.wait_for_text("Pool waiver");
    b.assert_no_violations("a public link's page (375 px)");
    b.fill("First name", "Vera");
    b.fill("Last name", "Visitor");
    b.fill("Email", "vera@example.com");
    b.click("Continue to sign");
    sign_here(&b, "Vera Visitor");
    let (_, docs) = s.get_as(&t, "/v1/documents");
    let docs = docs.as_array().unwrap().clone();
    assert_eq!(docs.len(), 1, "{docs:?}");
    assert_eq!(
        docs[0]["recipients"][0]["email"], "vera@example.com",
        "{docs:?}"
    );
    // The sender sees the use and unpublishes; the page is gone at once.
    b.goto(&s.url("/app/templates"));
    sign_in(&b);
    b.wait_for_text("1 of 2 used");
    b.js("window.confirm = () => true", vec![]);
    b.click("Unpublish: Pool waiver");
    b.wait_for_text("No public links yet.");
    let page = client().get(s.url(&format!("/p/{slug}"))).send().unwrap();
    assert_eq!(page.status(), 404);
}

#[test]
fn a_sender_previews_a_csv_and_watches_a_bulk_send_finish() {
    let _one = one_browser();
    let Some(b) = Browser::start() else { return };
    let s = Server::start(&[]);
    let t = s.admin_token();
    signer_template(&s, &t, "Season pass", "Member");
    let dir = fresh_dir("app-bulk");
    let csv = dir.join("members.csv");
    std::fs::write(
        &csv,
        "first_name,last_name,email\nAnn,One,ann@example.com\nBo,Two,not-an-email\nCy,Three,cy@example.com\nDi,Four,di@example.com\nEd,Five,ed@example.com\n",
    )
    .unwrap();
    b.goto(&s.url("/app/templates"));
    sign_in(&b);
    b.wait_for_text("Bulk send");
    b.choose_file("CSV file", &csv);
    b.click("Preview");
    b.wait_for_text("5 rows.");
    b.wait_for_text("not-an-email");
    b.assert_no_violations("a bulk send's preview");
    b.click("Send to 5 rows");
    b.wait_for_text("Done: 4 sent, 1 failed.");
    b.wait_for_text("Row 2:");
    b.assert_no_violations("a bulk send done");
    let (_, docs) = s.get_as(&t, "/v1/documents");
    assert_eq!(docs.as_array().map(Vec::len), Some(4), "{docs}");
}
