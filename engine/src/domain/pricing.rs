//! Pricing tables (spec §4.3): their shape, validation, totals, and their pages in the
//! rendered PDF.

use crate::base::http::{self, ApiError, ApiResult};
use crate::base::messages::Words;
#[allow(unused_imports)]
use crate::base::prelude::*;
use crate::base::work_orders::{self, Block};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PricingTable {
    pub currency: String,
    pub locale: String,
    pub sections: Vec<Section>,
    pub locked: bool,
    /// Named adjustments such as `discount` or `tax`, in the order given.
    pub summary_values: Vec<(String, SummaryValue)>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Section {
    pub display_name: String,
    pub rows: Vec<Row>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Row {
    pub name: String,
    pub quantity: f64,
    pub price: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SummaryValue {
    pub value: String,
    /// A fixed amount rather than a percentage.
    pub flat_fee: bool,
    pub enabled: bool,
    pub display_name: String,
}

fn bad(path: &str, what: &str) -> ApiError {
    http::ApiError::bad_request("invalid_field", format!("`{path}` must be {what}"))
}

fn obj<'a>(v: &'a Value, path: &str) -> ApiResult<&'a Map<String, Value>> {
    v.as_object().ok_or_else(|| bad(path, "an object"))
}

fn text(m: &Map<String, Value>, key: &str, path: &str) -> ApiResult<String> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => {
            crate::domain::drawable::drawable(&format!("{path}.{key}"), s)?;
            Ok(s.clone())
        }
        Some(Value::Number(n)) => Ok(n.to_string()),
        Some(_) => Err(bad(&format!("{path}.{key}"), "a string")),
    }
}

fn number(m: &Map<String, Value>, key: &str, path: &str) -> ApiResult<f64> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(0.0),
        Some(Value::Number(n)) => n.as_f64().ok_or_else(|| bad(path, "a number")),
        Some(Value::String(s)) => s
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| bad(&format!("{path}.{key}"), "a number")),
        Some(_) => Err(bad(&format!("{path}.{key}"), "a number")),
    }
}

fn boolean(m: &Map<String, Value>, key: &str, path: &str, default: bool) -> ApiResult<bool> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(bad(&format!("{path}.{key}"), "a boolean")),
    }
}

/// Parses the `pricing_tables` array of a request.
pub fn parse_tables(v: &Value) -> ApiResult<Vec<PricingTable>> {
    let items = v
        .as_array()
        .ok_or_else(|| bad("pricing_tables", "an array"))?;
    let mut tables = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let path = format!("pricing_tables[{i}]");
        let t = obj(item, &path)?;
        let (currency, locale) = match t.get("currency_settings") {
            None | Some(Value::Null) => (String::new(), String::new()),
            Some(cs) => {
                let p = format!("{path}.currency_settings");
                let cs = obj(cs, &p)?;
                (text(cs, "currency", &p)?, text(cs, "locale", &p)?)
            }
        };
        tables.push(PricingTable {
            currency,
            locale,
            sections: parse_sections(t, &path)?,
            locked: boolean(t, "locked", &path, false)?,
            summary_values: parse_summary_values(t, &path)?,
        });
    }
    Ok(tables)
}

/// The `sections` of the table at `path`, each with its `rows`.
fn parse_sections(t: &Map<String, Value>, path: &str) -> ApiResult<Vec<Section>> {
    let mut sections = Vec::new();
    let Some(secs) = t.get("sections").filter(|s| !s.is_null()) else {
        return Ok(sections);
    };
    let secs = secs
        .as_array()
        .ok_or_else(|| bad(&format!("{path}.sections"), "an array"))?;
    for (j, sec) in secs.iter().enumerate() {
        let sp = format!("{path}.sections[{j}]");
        let s = obj(sec, &sp)?;
        let mut rows = Vec::new();
        if let Some(rs) = s.get("rows").filter(|r| !r.is_null()) {
            let rs = rs
                .as_array()
                .ok_or_else(|| bad(&format!("{sp}.rows"), "an array"))?;
            for (k, row) in rs.iter().enumerate() {
                let rp = format!("{sp}.rows[{k}]");
                let r = obj(row, &rp)?;
                rows.push(Row {
                    name: text(r, "name", &rp)?,
                    quantity: number(r, "quantity", &rp)?,
                    price: number(r, "price", &rp)?,
                });
            }
        }
        sections.push(Section {
            display_name: text(s, "display_name", &sp)?,
            rows,
        });
    }
    Ok(sections)
}

/// The `summary_values` of the table at `path` (discount, tax, ...), by name.
fn parse_summary_values(
    t: &Map<String, Value>,
    path: &str,
) -> ApiResult<Vec<(String, SummaryValue)>> {
    let mut summary_values = Vec::new();
    let Some(sv) = t.get("summary_values").filter(|s| !s.is_null()) else {
        return Ok(summary_values);
    };
    let p = format!("{path}.summary_values");
    for (name, entry) in obj(sv, &p)? {
        let ep = format!("{p}.{name}");
        let e = obj(entry, &ep)?;
        let value = text(e, "value", &ep)?;
        if !value.trim().is_empty() && value.trim().parse::<f64>().is_err() {
            return Err(bad(&format!("{ep}.value"), "a number written as text"));
        }
        summary_values.push((
            name.clone(),
            SummaryValue {
                value,
                flat_fee: boolean(e, "flat_fee", &ep, false)?,
                enabled: boolean(e, "enabled", &ep, true)?,
                display_name: text(e, "display_name", &ep)?,
            },
        ));
    }
    Ok(summary_values)
}

/// Totals of a table: (subtotal, [(label, amount)], total).
pub fn totals(t: &PricingTable) -> (f64, Vec<(String, f64)>, f64) {
    let subtotal: f64 = t
        .sections
        .iter()
        .flat_map(|s| &s.rows)
        .map(|r| r.quantity * r.price)
        .sum();
    let mut total = subtotal;
    let mut lines = Vec::new();
    for (name, sv) in &t.summary_values {
        if !sv.enabled {
            continue;
        }
        let v: f64 = sv.value.trim().parse().unwrap_or(0.0);
        let amount = if sv.flat_fee { v } else { total * v / 100.0 };
        let signed = if name == "discount" { -amount } else { amount };
        total += signed;
        let label = if sv.display_name.is_empty() {
            name.clone()
        } else {
            sv.display_name.clone()
        };
        lines.push((label, signed));
    }
    (subtotal, lines, total)
}

/// A number with two decimals.
pub fn money(v: f64) -> String {
    // `f64::round` needs std; the cast truncates toward zero after adding a half.
    let cents = (v * 100.0 + if v < 0.0 { -0.5 } else { 0.5 }) as i64;
    let sign = if cents < 0 { "-" } else { "" };
    let cents = cents.abs();
    format!("{sign}{}.{:02}", cents / 100, cents % 100)
}

/// A quantity: whole numbers without decimals.
fn qty(v: f64) -> String {
    if v == (v as i64) as f64 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// The pricing pages of the rendered PDF, their words and decimal marks in `w`'s
/// language (`cert.pricing*`, `num.decimal`); names and amounts as the table gives them.
pub fn blocks(tables: &[PricingTable], w: &Words) -> Vec<Block> {
    let money = |v: f64| w.decimal(&money(v));
    let mut out = Vec::new();
    for (i, t) in tables.iter().enumerate() {
        if i > 0 {
            out.push(work_orders::Block::Rule);
        }
        let cur = if t.currency.is_empty() {
            String::new()
        } else {
            format!(" {}", t.currency)
        };
        out.push(work_orders::Block::Heading(if tables.len() > 1 {
            w.fill("cert.pricing_table_n", &[("n", &(i + 1).to_string())])
        } else {
            w.get("cert.pricing")
        }));
        for s in &t.sections {
            if !s.display_name.is_empty() {
                out.push(work_orders::Block::Text(s.display_name.clone()));
            }
            out.push(work_orders::Block::HeaderRow(vec![
                w.get("cert.pricing_item"),
                w.get("cert.pricing_quantity_price"),
                format!("{}{cur}", w.get("cert.pricing_amount")),
            ]));
            for r in &s.rows {
                out.push(work_orders::Block::Row(vec![
                    r.name.clone(),
                    format!("{} x {}", w.decimal(&qty(r.quantity)), money(r.price)),
                    money(r.quantity * r.price),
                ]));
            }
        }
        let (subtotal, lines, total) = totals(t);
        out.push(work_orders::Block::Rule);
        out.push(work_orders::Block::Row(vec![
            w.get("cert.pricing_subtotal"),
            String::new(),
            money(subtotal),
        ]));
        for (label, amount) in lines {
            // A summary value without a display name is named after its key: the
            // usual ones in the document's language.
            let label = match label.as_str() {
                "discount" | "tax" => w.get(&format!("cert.pricing_{label}")),
                _ => label,
            };
            out.push(work_orders::Block::Row(vec![
                label,
                String::new(),
                money(amount),
            ]));
        }
        out.push(work_orders::Block::HeaderRow(vec![
            format!("{}{cur}", w.get("cert.pricing_total")),
            String::new(),
            money(total),
        ]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The words of the table's own rows, in the text of its blocks.
    fn texts(blocks: &[Block]) -> Vec<String> {
        blocks
            .iter()
            .flat_map(|b| match b {
                Block::Heading(t) | Block::Text(t) => vec![t.clone()],
                Block::Row(cells) | Block::HeaderRow(cells) => cells.clone(),
                _ => Vec::new(),
            })
            .collect()
    }

    #[test]
    fn the_pricing_pages_speak_the_document_s_language() {
        let t = parse_tables(&json!([{
            "currency_settings": {"currency": "SEK"},
            "sections": [{"rows": [{"name": "Widget", "quantity": 1.5, "price": 10}]}],
            "summary_values": {"discount": {"value": "10", "enabled": true},
                               "tax": {"value": "25", "enabled": true}}
        }]))
        .unwrap();
        let sv = texts(&blocks(&t, &Words::new("sv")));
        for word in [
            "Priser",
            "Artikel",
            "Belopp SEK",
            "Delsumma",
            "Rabatt",
            "Moms",
            "Totalt SEK",
        ] {
            assert!(sv.iter().any(|s| s == word), "{word} in {sv:?}");
        }
        assert!(sv.iter().any(|s| s == "1,5 x 10,00"), "{sv:?}");
        assert!(sv.iter().any(|s| s == "15,00"), "{sv:?}");
        let en = texts(&blocks(&t, &Words::new("en")));
        for word in [
            "Pricing",
            "Item",
            "Subtotal",
            "Discount",
            "Tax",
            "Total SEK",
            "1.5 x 10.00",
        ] {
            assert!(en.iter().any(|s| s == word), "{word} in {en:?}");
        }
    }

    #[test]
    fn totals_apply_discount_then_tax() {
        let t = parse_tables(&json!([{
            "currency_settings": {"currency": "SEK", "locale": "sv-SE"},
            "sections": [{"display_name": "Licences", "rows": [
                {"name": "Widget", "quantity": 2, "price": 10},
                {"name": "Gadget", "quantity": 1, "price": 80}]}],
            "summary_values": {
                "discount": {"value": "10", "flat_fee": false, "enabled": true, "display_name": "Discount"},
                "tax": {"value": "25", "flat_fee": false, "enabled": true, "display_name": "VAT"}
            }
        }]))
        .unwrap();
        let (sub, lines, total) = totals(&t[0]);
        assert_eq!(sub, 100.0);
        assert_eq!(lines[0].1, -10.0);
        assert_eq!(total, 112.5);
        assert_eq!(money(total), "112.50");
    }

    #[test]
    fn bad_shapes_name_the_field() {
        let err = parse_tables(&json!([{"sections": [{"rows": [{"name": "x", "price": "ten"}]}]}]))
            .unwrap_err();
        assert!(
            err.description
                .contains("pricing_tables[0].sections[0].rows[0].price")
        );
        assert!(parse_tables(&json!({"a": 1})).is_err());
    }
}
