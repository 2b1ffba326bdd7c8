//! The words people read, one catalogue per language (`assets/messages-{lang}.json`):
//! the sender's app (`sender.js`), the signing page (`app.js` and its header, written
//! by `handlers::recipients::page`), and the mail and SMS texts to recipients
//! (`domain::notify`), and the words of the PDFs the engine orders: the summary page
//! and the appendix (`cert.*`, `domain::rendering`) and the audit certificate
//! (`domain::evidence`), with their times written by [`Words::time`] (`time.*`). The
//! scripts fetch a catalogue; the engine reads one through [`Words`]. Every language
//! has every key, with the same `{placeholders}` (the tests below), so a text is never
//! missing in one of them.

use crate::base::calendar;
#[allow(unused_imports)]
use crate::base::prelude::*;
use serde_json::{Map, Value};

/// The languages, by ISO 639-1 code: English and nine more.
pub const LANGUAGES: &[&str] = &["en", "sv", "nb", "da", "fi", "de", "fr", "es", "nl", "pl"];

const CATALOGUES: &[(&str, &[u8])] = &[
    ("en", include_bytes!("../../assets/messages-en.json")),
    ("sv", include_bytes!("../../assets/messages-sv.json")),
    ("nb", include_bytes!("../../assets/messages-nb.json")),
    ("da", include_bytes!("../../assets/messages-da.json")),
    ("fi", include_bytes!("../../assets/messages-fi.json")),
    ("de", include_bytes!("../../assets/messages-de.json")),
    ("fr", include_bytes!("../../assets/messages-fr.json")),
    ("es", include_bytes!("../../assets/messages-es.json")),
    ("nl", include_bytes!("../../assets/messages-nl.json")),
    ("pl", include_bytes!("../../assets/messages-pl.json")),
];

/// A language's catalogue as served (`GET /app/_/messages-{lang}.json`, and the same
/// file under `/s/_/`).
pub fn catalogue(lang: &str) -> Option<&'static [u8]> {
    CATALOGUES.iter().find(|(l, _)| *l == lang).map(|(_, m)| *m)
}

/// `messages-{lang}.json`, an asset of the app and of the signing page.
pub fn asset(name: &str) -> Option<&'static [u8]> {
    catalogue(name.strip_prefix("messages-")?.strip_suffix(".json")?)
}

/// The language a code names, if it is one of [`LANGUAGES`]: `sv`, `sv-SE` and `SV`
/// are Swedish; `no` and `nn` are read as Norwegian Bokmål.
pub fn language(code: &str) -> Option<&'static str> {
    let base = code.trim().split(['-', '_']).next()?.to_ascii_lowercase();
    let base = if base == "no" || base == "nn" {
        "nb"
    } else {
        base.as_str()
    };
    LANGUAGES.iter().copied().find(|l| *l == base)
}

/// The first language of an `Accept-Language` header that is one of [`LANGUAGES`]
/// (in the order given; weights are not weighed), else English.
pub fn from_accept_language(header: Option<&str>) -> &'static str {
    header
        .unwrap_or("")
        .split(',')
        .filter_map(|part| language(part.split(';').next().unwrap_or("")))
        .next()
        .unwrap_or("en")
}

/// One language's words, read once for the texts of one answer.
pub struct Words {
    lang: &'static str,
    words: Map<String, Value>,
}

impl Words {
    /// The words of `lang` (a code of [`LANGUAGES`]; anything else reads as English).
    pub fn new(lang: &str) -> Words {
        let lang = language(lang).unwrap_or("en");
        let words = catalogue(lang)
            .and_then(|bytes| serde_json::from_slice::<Map<String, Value>>(bytes).ok())
            .unwrap_or_default();
        Words { lang, words }
    }

    pub fn lang(&self) -> &'static str {
        self.lang
    }

    /// The text of `key`; the key itself if the catalogue lacks it (the tests keep
    /// every catalogue whole).
    pub fn get(&self, key: &str) -> String {
        self.words
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or(key)
            .to_string()
    }

    /// The text of `key` with each `{name}` of `vars` put in. A value is put in as it
    /// is: braces in it are not read again. A placeholder without a value stays.
    pub fn fill(&self, key: &str, vars: &[(&str, &str)]) -> String {
        fill(&self.get(key), vars)
    }

    /// A time as this language writes it, to the minute and in UTC, saying so
    /// (`time.at` with the month's name `time.month_{1..12}`): `28 Nov 2026, 10:53
    /// UTC`, `28 nov. 2026 kl. 10:53 UTC`, `28. Nov. 2026, 10:53 UTC`.
    pub fn time(&self, ms: u64) -> String {
        let (year, month, day, hour, minute) = calendar::civil_minute(ms);
        self.fill(
            "time.at",
            &[
                ("day", &day.to_string()),
                ("month", &self.get(&format!("time.month_{month}"))),
                ("year", &year.to_string()),
                ("hour", &format!("{hour:02}")),
                ("minute", &format!("{minute:02}")),
            ],
        )
    }

    /// A number written with `.` as this language writes it (`num.decimal`: `,` in
    /// most of the ten).
    pub fn decimal(&self, number: &str) -> String {
        number.replace('.', &self.get("num.decimal"))
    }

    /// The words whose keys start with `prefix`, as a JSON object (the signing page
    /// embeds its own so it is drawn in the document's language at once).
    pub fn with_prefix(&self, prefix: &str) -> Value {
        Value::Object(
            self.words
                .iter()
                .filter(|(k, _)| k.starts_with(prefix))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        )
    }
}

fn fill(text: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let value = after.find('}').and_then(|close| {
            let name = &after[..close];
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v, close))
        });
        match value {
            Some((v, close)) => {
                out.push_str(v);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(lang: &str) -> Map<String, Value> {
        match serde_json::from_slice(catalogue(lang).unwrap()) {
            Ok(serde_json::Value::Object(m)) => m,
            other => panic!("messages-{lang}.json is not an object: {other:?}"),
        }
    }

    /// `{name}`-style placeholders of a message, sorted.
    fn placeholders(text: &str) -> Vec<&str> {
        let mut out: Vec<&str> = text
            .split('{')
            .skip(1)
            .filter_map(|rest| rest.split_once('}').map(|(name, _)| name))
            .collect();
        out.sort_unstable();
        out
    }

    /// Every language has every key of English, no other, with the same placeholders,
    /// and no empty text.
    #[test]
    fn every_language_has_every_message() {
        let english = parsed("en");
        assert!(LANGUAGES.len() >= 10, "English and at least nine more");
        for lang in LANGUAGES {
            let words = parsed(lang);
            for (key, text) in &english {
                let Some(theirs) = words.get(key).and_then(|v| v.as_str()) else {
                    panic!("messages-{lang}.json lacks {key:?}");
                };
                assert!(!theirs.trim().is_empty(), "{lang}: {key:?} is empty");
                assert_eq!(
                    placeholders(theirs),
                    placeholders(text.as_str().unwrap()),
                    "{lang}: {key:?} names other placeholders than English"
                );
            }
            for key in words.keys() {
                assert!(
                    english.contains_key(key),
                    "{lang}: {key:?} is not a key of English"
                );
            }
        }
    }

    /// Every key a script names as a literal (`t("nav.documents")`) is in English
    /// (so, by the test above, in every language); keys built from a prefix
    /// (`t("filter." + f)`, `t("sign.code_hint_" + by)`) have at least one entry with
    /// that prefix.
    #[test]
    fn the_scripts_ask_only_for_keys_the_catalogue_has() {
        let english = parsed("en");
        for (name, js, least) in [
            ("sender.js", include_str!("../../assets/sender.js"), 100),
            ("app.js", include_str!("../../assets/app.js"), 60),
        ] {
            let mut asked = 0;
            for (at, _) in js.match_indices("t(\"") {
                // `t(`, not the end of another name (`get(`, `post(`).
                let before = js[..at].chars().next_back().unwrap_or(' ');
                if before.is_alphanumeric() || before == '_' || before == '.' {
                    continue;
                }
                let call = &js[at + 3..];
                let key = &call[..call.find('"').unwrap()];
                if !key
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '.' || c == '_')
                {
                    continue;
                }
                asked += 1;
                if key.ends_with('.') || key.ends_with('_') {
                    assert!(
                        english.keys().any(|k| k.starts_with(key)),
                        "{name} builds keys from {key:?}, which no message starts with"
                    );
                } else {
                    assert!(
                        english.contains_key(key),
                        "{name} asks for {key:?}, not in messages-en.json"
                    );
                }
            }
            assert!(
                asked > least,
                "{name}'s words come from the catalogue ({asked} keys)"
            );
        }
    }

    #[test]
    fn languages_are_read_from_codes_and_headers() {
        assert_eq!(language("sv-SE"), Some("sv"));
        assert_eq!(language("NO"), Some("nb"));
        assert_eq!(language("xx"), None);
        assert_eq!(
            from_accept_language(Some("xx, de-CH;q=0.9, en;q=0.5")),
            "de"
        );
        assert_eq!(from_accept_language(None), "en");
    }

    #[test]
    fn placeholders_are_filled_once() {
        assert_eq!(
            fill("{a} and {b} {c", &[("a", "{b}"), ("b", "x")]),
            "{b} and x {c"
        );
        let sv = Words::new("sv-SE");
        assert_eq!(sv.lang(), "sv");
        assert!(
            sv.fill("mail.hello", &[("name", "Ann")]).contains("Ann"),
            "{}",
            sv.get("mail.hello")
        );
        assert_eq!(Words::new("zz").lang(), "en");
    }

    /// Times are written per language, in UTC and saying so; a day and an hour below
    /// ten too.
    #[test]
    fn times_are_written_the_way_each_language_writes_them() {
        let nov_28 = 1_795_863_180_000; // 2026-11-28T10:53:00Z
        let jan_5 = 1_767_596_640_000; // 2026-01-05T07:04:00Z
        for (lang, late, early) in [
            ("en", "28 Nov 2026, 10:53 UTC", "5 Jan 2026, 07:04 UTC"),
            (
                "sv",
                "28 nov. 2026 kl. 10:53 UTC",
                "5 jan. 2026 kl. 07:04 UTC",
            ),
            ("de", "28. Nov. 2026, 10:53 UTC", "5. Jan. 2026, 07:04 UTC"),
            (
                "da",
                "28. nov. 2026 kl. 10.53 UTC",
                "5. jan. 2026 kl. 07.04 UTC",
            ),
            (
                "fi",
                "28. marraskuuta 2026 klo 10.53 UTC",
                "5. tammikuuta 2026 klo 07.04 UTC",
            ),
            (
                "pl",
                "28 listopada 2026, 10:53 UTC",
                "5 stycznia 2026, 07:04 UTC",
            ),
        ] {
            let w = Words::new(lang);
            assert_eq!((w.time(nov_28), w.time(jan_5)), (late.into(), early.into()));
        }
        for lang in LANGUAGES {
            let w = Words::new(lang);
            for month in 0..12u64 {
                let t = w.time(1_767_225_600_000 + month * 31 * 86_400_000);
                assert!(!t.contains("time.") && !t.contains('{'), "{lang}: {t}");
            }
        }
    }
}
