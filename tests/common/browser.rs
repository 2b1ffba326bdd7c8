//! Browser harness: Debian's Chromium, headless, driven through its chromedriver on a
//! free loopback port with fantoccini (WebDriver). Every call is bounded by a timeout;
//! the browser and the driver are ended on drop, also when a test panics.
//!
//! Without `chromium` and `chromedriver` installed, [`Browser::start`] returns `None`
//! (the test skips, saying so) unless `ESIGN_REQUIRE_BROWSER=1`, which CI sets.

#![allow(dead_code)] // each suite uses part of the harness

use fantoccini::actions::{
    InputSource, MOUSE_BUTTON_LEFT, PenActions, PointerAction, TouchActions,
};
use fantoccini::wd::{Capabilities, WebDriverCompatibleCommand};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use std::future::Future;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// WebDriver's key codes: Tab, Enter, two arrows, Shift and Alt (held until NULL).
pub const TAB: &str = "\u{E004}";
pub const ENTER: &str = "\u{E007}";
pub const RIGHT: &str = "\u{E014}";
pub const DOWN: &str = "\u{E015}";
pub const SHIFT: &str = "\u{E008}";
pub const ALT: &str = "\u{E00A}";
pub const NULL: &str = "\u{E000}";

/// Longest single WebDriver call.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

pub struct Browser {
    rt: tokio::runtime::Runtime,
    client: Option<Client>,
    driver: Child,
    /// Removed once the driver is gone (fields drop after `drop`).
    profile: crate::common::TempDir,
}

fn installed(cmd: &str) -> bool {
    crate::common::succeeds(Command::new(cmd).arg("--version"))
}

/// chromedriver answers `/status` with `"ready":true` (HTTP/1.1 only; it keeps the
/// connection open, so read with a timeout).
fn driver_ready(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    if s.write_all(b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let (mut got, mut buf) = (Vec::new(), [0u8; 1024]);
    while let Ok(n @ 1..) = s.read(&mut buf) {
        got.extend_from_slice(&buf[..n]);
        if String::from_utf8_lossy(&got).contains("\"ready\":true") {
            return true;
        }
    }
    false
}

/// chromedriver's `POST /session/{id}/goog/cdp/execute` (a DevTools command).
#[derive(Debug)]
struct Cdp(&'static str, Value);

impl WebDriverCompatibleCommand for Cdp {
    fn endpoint(
        &self,
        base: &url::Url,
        session: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base.join(&format!(
            "session/{}/goog/cdp/execute",
            session.unwrap_or("")
        ))
    }

    fn method_and_body(&self, _: &url::Url) -> (hyper::http::Method, Option<String>) {
        (
            hyper::http::Method::POST,
            Some(json!({"cmd": self.0, "params": self.1}).to_string()),
        )
    }
}

/// The kind of pointer that draws.
#[derive(Clone, Copy, Debug)]
pub enum Pointer {
    Touch,
    Pen,
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session; `None` (skip) when they are
    /// not installed and the browser is not required.
    pub fn start() -> Option<Browser> {
        let required = std::env::var("ESIGN_REQUIRE_BROWSER").is_ok_and(|v| v == "1");
        if !installed("chromedriver") || !Path::new("/usr/bin/chromium").exists() {
            assert!(
                !required,
                "ESIGN_REQUIRE_BROWSER=1 but chromium/chromedriver are not installed \
                 (apt-get install chromium chromium-driver)"
            );
            eprintln!("skipped: chromium and chromedriver are not installed");
            return None;
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let profile = crate::common::fresh_dir("chromium-profile");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut b = Browser {
            rt,
            client: None,
            driver,
            profile,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !driver_ready(port) {
            assert!(
                Instant::now() < deadline,
                "chromedriver did not start in 30 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let mut caps = Capabilities::new();
        // The loopback HTTPS servers of the tests (an embedding site) have self-signed
        // certificates: the session accepts them (W3C WebDriver `acceptInsecureCerts`).
        caps.insert("acceptInsecureCerts".into(), json!(true));
        caps.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": "/usr/bin/chromium",
                // The flags this closed network needs (no background connections), and
                // --no-sandbox for root.
                "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                         "--no-first-run", "--disable-background-networking",
                         "--disable-component-update", "--disable-sync",
                         "--disable-dev-shm-usage", "--hide-scrollbars",
                         // English pages whatever the machine's locale (the app
                         // picks its language from the browser's).
                         "--lang=en-US",
                         format!("--user-data-dir={}", b.profile.display()),
                         "--window-size=1280,900"],
            }),
        );
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = b.block(async {
            ClientBuilder::new(connector)
                .capabilities(caps)
                .connect(&format!("http://127.0.0.1:{port}"))
                .await
        });
        b.client = Some(client.expect("a Chromium session"));
        Some(b)
    }

    /// Runs `f` to completion, failing the test after [`CALL_TIMEOUT`].
    fn block<T>(&self, f: impl Future<Output = T>) -> T {
        self.rt
            .block_on(async { tokio::time::timeout(CALL_TIMEOUT, f).await })
            .expect("a browser call took longer than 30 s")
    }

    fn c(&self) -> Client {
        self.client.clone().expect("session")
    }

    pub fn goto(&self, url: &str) {
        let c = self.c();
        self.block(async move { c.goto(url).await }).unwrap();
    }

    /// Emulates a phone screen `width` CSS pixels wide (2x pixels, touch).
    pub fn phone(&self, width: u32, height: u32) {
        let c = self.c();
        self.block(async move {
            c.issue_cmd(Cdp(
                "Emulation.setDeviceMetricsOverride",
                json!({"width": width, "height": height, "deviceScaleFactor": 2, "mobile": true}),
            ))
            .await
        })
        .unwrap();
    }

    /// Runs `script` in the page (it may `return` a value).
    pub fn js(&self, script: &str, args: Vec<Value>) -> Value {
        let c = self.c();
        self.block(async move { c.execute(script, args).await })
            .unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
    }

    /// Waits (at most `secs`) until `script` returns a truthy value; returns it.
    pub fn wait_js(&self, secs: u64, what: &str, script: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let v = self.js(script, vec![]);
            if !(v.is_null() || v == json!(false) || v == json!("")) {
                return v;
            }
            assert!(
                Instant::now() < deadline,
                "waited {secs} s for {what}; the page says: {}",
                self.text("body")
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The visible text of the first element matching `css` (empty if none).
    pub fn text(&self, css: &str) -> String {
        self.js(
            "const e = document.querySelector(arguments[0]); return e ? e.innerText : '';",
            vec![json!(css)],
        )
        .as_str()
        .unwrap_or("")
        .to_string()
    }

    /// Waits until the page's text contains `needle`.
    pub fn wait_for_text(&self, needle: &str) {
        let script = format!(
            "return document.body && document.body.innerText.includes({})",
            json!(needle)
        );
        self.wait_js(20, &format!("the text {needle:?}"), &script);
    }

    /// The control (button, link, summary) whose text is exactly `name`.
    fn control(&self, name: &str) -> fantoccini::elements::Element {
        let c = self.c();
        let xpath = format!(
            "//button[normalize-space()='{name}'] | //a[normalize-space()='{name}'] | //summary[normalize-space()='{name}']"
        );
        self.block(async move { c.wait().for_element(Locator::XPath(&xpath)).await })
            .unwrap_or_else(|e| panic!("no control named {name:?}: {e}"))
    }

    /// Clicks the button or link named `name` (scrolled into view first). When the page
    /// re-renders between finding the control and clicking it (the element went stale:
    /// a slow or busy machine makes that window wide), it finds it again, ten times at
    /// most.
    pub fn click(&self, name: &str) {
        for attempt in 1..=10 {
            let el = self.control(name);
            let c = self.c();
            let clicked = self.block(async move {
                c.execute(
                    "arguments[0].scrollIntoView({block: 'center'});",
                    vec![serde_json::to_value(&el).unwrap()],
                )
                .await?;
                el.click().await
            });
            match clicked {
                Ok(()) => return,
                Err(e) if attempt < 10 && e.to_string().contains("stale element") => {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                Err(e) => panic!("clicking {name:?} failed: {e}"),
            }
        }
    }

    /// Presses Tab (at most `max` times) until the focused control's name is `name`,
    /// then Enter: the control works from the keyboard and is in the tab order.
    pub fn keyboard_activate(&self, name: &str, max: usize) {
        self.tab_to(name, max);
        self.press(ENTER);
    }

    /// The accessible name of the focused element, roughly: its `aria-label`, the text
    /// of its label, or its own text.
    pub fn focused_name(&self) -> String {
        self.js(
            "const e = document.activeElement; if (!e) return '';\
             const l = e.labels && e.labels.length ? e.labels[0].innerText : '';\
             return (e.getAttribute('aria-label') || l || e.innerText || '').trim();",
            vec![],
        )
        .as_str()
        .unwrap_or("")
        .to_string()
    }

    /// Presses Tab (Shift+Tab when `name` is behind) at most `max` times until the
    /// focused control's name is `name` (or starts with it, for names that go on to say
    /// how to use the control).
    pub fn tab_to(&self, name: &str, max: usize) {
        self.tab_until(name, max, TAB);
    }

    /// [`Browser::tab_to`] backwards (Shift+Tab).
    pub fn tab_back_to(&self, name: &str, max: usize) {
        self.tab_until(name, max, &format!("{SHIFT}{TAB}{NULL}"));
    }

    fn tab_until(&self, name: &str, max: usize, key: &str) {
        let mut seen = Vec::new();
        for _ in 0..max {
            let now = self.focused_name();
            if now == name || now.starts_with(&format!("{name}.")) {
                return;
            }
            seen.push(now);
            self.press(key);
        }
        panic!("{name:?} not reached with Tab in {max} presses; focus went through {seen:?}");
    }

    /// Sends `keys` (WebDriver key codes allowed, see [`ENTER`]) to the focused element.
    pub fn press(&self, keys: &str) {
        let c = self.c();
        let keys = keys.to_string();
        self.block(async move { c.active_element().await?.send_keys(&keys).await })
            .unwrap();
    }

    /// Whether a control named `name` is on the page now.
    pub fn has_control(&self, name: &str) -> bool {
        let c = self.c();
        let xpath =
            format!("//button[normalize-space()='{name}'] | //a[normalize-space()='{name}']");
        self.block(async move { c.find_all(Locator::XPath(&xpath)).await })
            .map(|v| !v.is_empty())
            .unwrap_or(false)
    }

    /// Chooses `value` in the last select (or other control) labelled `label`, as a
    /// person would: its value set, then its `input` and `change` events, which bubble
    /// as a browser's do.
    pub fn select(&self, label: &str, value: &str) {
        let script = format!(
            "const l = [...document.querySelectorAll('label')].filter(x => x.innerText === {}).pop();\
             const s = document.getElementById(l.htmlFor); s.value = {};\
             s.dispatchEvent(new Event('input', {{bubbles: true}})); s.dispatchEvent(new Event('change', {{bubbles: true}}));",
            serde_json::to_string(label).unwrap(),
            serde_json::to_string(value).unwrap()
        );
        self.js(&script, vec![]);
    }

    /// Types `text` into the input or text area labelled `label` (replacing its value).
    pub fn fill(&self, label: &str, text: &str) {
        let xpath = format!(
            "//*[(self::input or self::textarea) and (@id=//label[normalize-space()='{label}']/@for or @aria-label='{label}')]"
        );
        self.fill_at(&xpath, label, text);
    }

    /// [`Browser::fill`] for the last input labelled `label` (the newest of a repeated
    /// group, such as a second recipient's "First name").
    pub fn fill_last(&self, label: &str, text: &str) {
        let xpath = format!(
            "(//*[(self::input or self::textarea) and @id=//label[normalize-space()='{label}']/@for])[last()]"
        );
        self.fill_at(&xpath, label, text);
    }

    /// Types `text` into the element at `xpath` (replacing its value), found again when
    /// the page re-rendered under it (as `click`), ten times at most.
    fn fill_at(&self, xpath: &str, label: &str, text: &str) {
        let c = self.c();
        for attempt in 1..=10 {
            let (c, xpath, text) = (c.clone(), xpath.to_string(), text.to_string());
            let filled = self.block(async move {
                let el = c.wait().for_element(Locator::XPath(&xpath)).await?;
                el.clear().await?;
                el.send_keys(&text).await
            });
            match filled {
                Ok(()) => return,
                Err(e) if attempt < 10 && e.to_string().contains("stale element") => {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                Err(e) => panic!("filling {label:?} failed: {e}"),
            }
        }
    }

    /// Chooses `file` in the file input labelled `label`.
    pub fn choose_file(&self, label: &str, file: &Path) {
        let xpath =
            format!("//input[@type='file' and @id=//label[normalize-space()='{label}']/@for]");
        let c = self.c();
        let path = file.display().to_string();
        self.block(async move {
            let el = c.wait().for_element(Locator::XPath(&xpath)).await?;
            el.send_keys(&path).await
        })
        .unwrap_or_else(|e| panic!("choosing a file for {label:?} failed: {e}"));
    }

    /// Downloads go to `dir` (Chromium's DevTools `Browser.setDownloadBehavior`).
    pub fn downloads_to(&self, dir: &Path) {
        let c = self.c();
        let path = dir.display().to_string();
        self.block(async move {
            c.issue_cmd(Cdp(
                "Browser.setDownloadBehavior",
                json!({"behavior": "allow", "downloadPath": path}),
            ))
            .await
        })
        .unwrap();
    }

    /// Opens a new tab and switches to it; returns the handle of the tab it left.
    pub fn new_tab(&self) -> fantoccini::wd::WindowHandle {
        let c = self.c();
        self.block(async move {
            let old = c.window().await?;
            let new = c.new_window(true).await?;
            c.switch_to_window(new.handle).await?;
            Ok::<_, fantoccini::error::CmdError>(old)
        })
        .unwrap()
    }

    /// Switches to the tab `handle`.
    pub fn switch_to(&self, handle: &fantoccini::wd::WindowHandle) {
        let c = self.c();
        let h = handle.clone();
        self.block(async move { c.switch_to_window(h).await })
            .unwrap();
    }

    /// Drags the element matching `css` by (`dx`, `dy`) CSS pixels with a finger.
    pub fn touch_drag(&self, css: &str, dx: f64, dy: f64) {
        let c = self.c();
        let selector = css.to_string();
        self.block(async move {
            let el = c.find(Locator::Css(&selector)).await?;
            c.execute(
                "arguments[0].scrollIntoView({block: 'center'});",
                vec![serde_json::to_value(&el).unwrap()],
            )
            .await?;
            let mut seq = TouchActions::new("finger".into())
                .then(PointerAction::MoveToElement {
                    element: el,
                    duration: None,
                    x: 0.0,
                    y: 0.0,
                })
                .then(PointerAction::Down {
                    button: MOUSE_BUTTON_LEFT,
                });
            for _ in 0..5 {
                seq = seq.then(PointerAction::MoveBy {
                    duration: Some(Duration::from_millis(40)),
                    x: dx / 5.0,
                    y: dy / 5.0,
                });
            }
            let seq = seq.then(PointerAction::Up {
                button: MOUSE_BUTTON_LEFT,
            });
            c.perform_actions(seq).await?;
            c.release_actions().await
        })
        .unwrap_or_else(|e| panic!("dragging {css:?} failed: {e}"));
    }

    /// Draws a zig-zag across the element matching `css` with a finger or a pen.
    pub fn draw(&self, css: &str, pointer: Pointer) {
        let c = self.c();
        let selector = css.to_string();
        self.block(async move {
            let el = c.find(Locator::Css(&selector)).await?;
            c.execute(
                "arguments[0].scrollIntoView({block: 'center'});",
                vec![serde_json::to_value(&el).unwrap()],
            )
            .await?;
            let mut steps = vec![
                PointerAction::MoveToElement {
                    element: el,
                    duration: None,
                    x: -80.0,
                    y: 10.0,
                },
                PointerAction::Down {
                    button: MOUSE_BUTTON_LEFT,
                },
            ];
            for i in 0..8 {
                steps.push(PointerAction::MoveBy {
                    duration: Some(Duration::from_millis(30)),
                    x: 20.0,
                    y: if i % 2 == 0 { -25.0 } else { 25.0 },
                });
            }
            steps.push(PointerAction::Up {
                button: MOUSE_BUTTON_LEFT,
            });
            match pointer {
                Pointer::Touch => {
                    let seq = steps
                        .into_iter()
                        .fold(TouchActions::new("finger".into()), |s, a| s.then(a));
                    c.perform_actions(seq).await?;
                }
                Pointer::Pen => {
                    let seq = steps
                        .into_iter()
                        .fold(PenActions::new("pen".into()), |s, a| s.then(a));
                    c.perform_actions(seq).await?;
                }
            }
            c.release_actions().await
        })
        .unwrap_or_else(|e| panic!("drawing on {css:?} failed: {e}"));
    }

    /// A PNG of the viewport.
    pub fn screenshot(&self, path: &Path) {
        let c = self.c();
        let png = self.block(async move { c.screenshot().await }).unwrap();
        std::fs::write(path, png).unwrap();
    }

    /// axe-core's serious and critical violations on the current screen, as
    /// `id: description (targets)` lines. `None` when axe-core is not installed
    /// (`npm ci --prefix tests/browser`) and the browser is not required.
    pub fn accessibility_problems(&self) -> Option<Vec<String>> {
        self.violations(&["serious", "critical"])
    }

    /// axe-core's violations of the given impacts (all of them for `&[]`), as
    /// `id: description (targets)` lines; `None` as [`Browser::accessibility_problems`].
    pub fn violations(&self, impacts: &[&str]) -> Option<Vec<String>> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/browser/node_modules/axe-core/axe.min.js");
        let Ok(axe) = std::fs::read_to_string(&path) else {
            let required = std::env::var("ESIGN_REQUIRE_BROWSER").is_ok_and(|v| v == "1");
            assert!(
                !required,
                "axe-core is not installed: npm ci --prefix tests/browser"
            );
            eprintln!("axe-core not installed: accessibility check skipped");
            return None;
        };
        self.js(&format!("{axe}\n;return true;"), vec![]);
        let c = self.c();
        let result = self
            .block(async move {
                c.execute_async(
                    "const done = arguments[arguments.length - 1];\
                     axe.run(document, {resultTypes: ['violations']})\
                        .then(r => done(r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,\
                            targets: v.nodes.map(n => n.target.join(' '))}))))\
                        .catch(e => done([{id: 'axe-error', impact: 'critical', help: String(e), targets: []}]));",
                    vec![],
                )
                .await
            })
            .expect("axe ran");
        Some(
            result
                .as_array()
                .unwrap()
                .iter()
                .filter(|v| {
                    impacts.is_empty() || impacts.contains(&v["impact"].as_str().unwrap_or(""))
                })
                .map(|v| format!("{}: {} ({})", v["id"], v["help"], v["targets"]))
                .collect(),
        )
    }

    /// Fails with the violations if axe-core finds any at all, of any impact.
    pub fn assert_no_violations(&self, screen: &str) {
        if let Some(problems) = self.violations(&[]) {
            assert!(
                problems.is_empty(),
                "axe-core's violations on the {screen} screen:\n{}",
                problems.join("\n")
            );
        }
    }

    /// Fails with the violations if axe-core finds any serious or critical one.
    pub fn assert_accessible(&self, screen: &str) {
        if let Some(problems) = self.accessibility_problems() {
            assert!(
                problems.is_empty(),
                "accessibility problems on the {screen} screen:\n{}",
                problems.join("\n")
            );
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(c) = self.client.take() {
            let _ = self
                .rt
                .block_on(async { tokio::time::timeout(Duration::from_secs(10), c.close()).await });
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
