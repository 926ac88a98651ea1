//! The run page's Configuration section: test.json as a table a person would write, folded
//! away in a closed `<details>`, and the one line of what ran under the page's title.
//!
//! Owns how test.json's values read on the page: the db line (name once, then its version),
//! the workload (only the knobs its kind reads, `generator::kind`) and nemesis as short
//! key/value tables (units from key suffixes, nested values compact, a list of faults one per
//! line) instead of raw JSON. Does not own test.json's contents (`runner::record`) or the rest
//! of the page (`report::page`).

use super::{esc, row, text_of};
use serde_json::Value;
use std::fmt::Write as _;

/// Id of the Configuration section (a `<details>`, closed: the page's header line says what ran).
pub(super) const CONFIG_ID: &str = "configuration";

/// The Configuration section of the run page, folded away (a `<details>` closed until opened).
pub(super) fn config_section(out: &mut String, test: &Value, results: &Value) {
    let _ = write!(
        out,
        "<details id=\"{CONFIG_ID}\"><summary><h2>Configuration</h2></summary>\n<table>\n"
    );
    row(out, "seed", &esc(&text_of(test.get("seed"))));
    row(out, "start time", &esc(&text_of(test.get("start_time"))));
    let nodes = test
        .get("nodes")
        .and_then(Value::as_array)
        .map(|ns| {
            ns.iter()
                .map(|n| match (n.get("name"), n.get("host")) {
                    (Some(_), Some(_)) => {
                        format!("{} ({})", text_of(n.get("name")), text_of(n.get("host")))
                    }
                    _ => text_of(Some(n)),
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    row(out, "nodes", &esc(&nodes));
    let db = test.get("db");
    let db_text = db_line(
        &text_of(db.and_then(|d| d.get("name"))),
        &text_of(db.and_then(|d| d.get("version"))),
    );
    row(out, "db", &esc(&db_text));
    row(out, "concurrency", &esc(&text_of(test.get("concurrency"))));
    row(out, "rate (ops/s)", &esc(&text_of(test.get("rate"))));
    row(
        out,
        "time limit (s)",
        &esc(&text_of(test.get("time_limit_s"))),
    );
    row(out, "read mode", &esc(&text_of(test.get("read_mode"))));
    row(out, "workload", &workload_html(test.get("workload")));
    row(out, "nemesis", &named_spec_html(test.get("nemesis")));
    if let Some(errors) = results.get(crate::store::PROTOCOL_ERRORS_KEY) {
        let line = crate::store::protocol_errors_line(errors);
        row(out, "client protocol errors", &esc(&line));
    }
    row(
        out,
        "shakedown version",
        &esc(&text_of(test.get("shakedown_version"))),
    );
    row(
        out,
        "rerun",
        &format!("<code>{}</code>", esc(&text_of(test.get("rerun")))),
    );
    out.push_str("</table>\n</details>\n");
}

/// One line of what ran, for the page's header while the Configuration section is folded:
/// "etcd 3.4.23 · workload register · nemesis partition,kill · 10 s · seed 42" (parts test.json
/// lacks are left out).
pub(super) fn what_ran_line(test: &Value) -> String {
    let db = test.get("db");
    let mut parts = vec![match db {
        Some(Value::String(name)) => name.clone(),
        _ => db_line(
            &text_of(db.and_then(|d| d.get("name"))),
            &text_of(db.and_then(|d| d.get("version"))),
        ),
    }];
    for (label, key) in [("workload", "workload"), ("nemesis", "nemesis")] {
        let name = test
            .get(key)
            .map_or(String::new(), |v| match v.get("name") {
                Some(n) => text_of(Some(n)),
                None => text_of(Some(v)),
            });
        if !name.is_empty() {
            parts.push(format!("{label} {name}"));
        }
    }
    if let Some(t) = test.get("time_limit_s").filter(|t| !t.is_null()) {
        parts.push(with_unit(&compact(t), "s"));
    }
    if let Some(seed) = test.get("seed").filter(|s| !s.is_null()) {
        parts.push(format!("seed {}", text_of(Some(seed))));
    }
    parts.retain(|p| !p.is_empty());
    parts.join(" · ")
}

/// The db as "etcd 3.4.23": its name, then its version text without a leading repeat of the
/// name or a "Version:" word (etcd reports "etcd Version: 3.4.23", PostgreSQL "postgres
/// (PostgreSQL) 15.20").
pub(super) fn db_line(name: &str, version: &str) -> String {
    let (name, version) = (name.trim(), version.trim());
    let strip = |s: &str, prefix: &str| -> Option<String> {
        let head = s.get(..prefix.len())?;
        (!prefix.is_empty() && head.eq_ignore_ascii_case(prefix))
            .then(|| s[prefix.len()..].trim_start_matches([' ', ':']).to_string())
    };
    let mut rest = strip(version, name).unwrap_or_else(|| version.to_string());
    if let Some(r) = strip(&rest, "version") {
        rest = r;
    }
    match (name.is_empty(), rest.is_empty()) {
        (_, true) => name.to_string(),
        (true, false) => rest,
        (false, false) => format!("{name} {rest}"),
    }
}

/// A `{name, spec}` object (the nemesis) as its name, then its whole spec as a key/value table
/// ([`spec_rows`]); other values as escaped text.
pub(super) fn named_spec_html(v: Option<&Value>) -> String {
    spec_html(v, None)
}

/// The workload's `{name, spec, knobs}` object as its name, then only the spec fields its kind
/// reads, in the vocabulary's order (`generator::kind`): the `knobs` the run recorded, else the
/// knobs of its `kind` as this build knows it (a run directory from before knobs were
/// recorded); a kind this build does not know lists every field.
pub(super) fn workload_html(v: Option<&Value>) -> String {
    let recorded: Option<Vec<String>> = v
        .and_then(|w| w.get("knobs"))
        .and_then(Value::as_array)
        .map(|ks| {
            ks.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .filter(|ks: &Vec<String>| !ks.is_empty());
    let of_kind = || {
        let kind = v?.get("spec")?.get("kind")?.as_str()?;
        let kind = crate::generator::WorkloadKind::parse(kind)?;
        Some(kind.knobs().iter().map(|k| k.field().to_string()).collect())
    };
    spec_html(v, recorded.or_else(of_kind))
}

/// A `{name, spec}` object as its name and a key/value table of its spec: only the fields in
/// `knobs`, in that order, when given; every field otherwise.
fn spec_html(v: Option<&Value>, knobs: Option<Vec<String>>) -> String {
    let Some(Value::Object(m)) = v else {
        return esc(&text_of(v));
    };
    if !m.contains_key("name") {
        return esc(&text_of(v));
    }
    let name = text_of(m.get("name"));
    let mut html = format!("<b>{}</b>", esc(&name));
    match m.get("spec") {
        Some(Value::Object(spec)) => {
            let shown: Vec<(&String, &Value)> = match &knobs {
                Some(ks) => ks
                    .iter()
                    .filter_map(|k| spec.get_key_value(k.as_str()))
                    .collect(),
                None => spec.iter().collect(),
            };
            let rows = spec_rows(shown, &name);
            if !rows.is_empty() {
                html.push_str("<table class=\"kv\">");
                for (k, v) in rows {
                    let _ = write!(html, "<tr><th>{}</th><td>{v}</td></tr>", esc(&k));
                }
                html.push_str("</table>");
            }
        }
        None | Some(Value::Null) => {}
        Some(other) => {
            let _ = write!(html, " {}", esc(&compact(other)));
        }
    }
    html
}

/// (key, value HTML) rows of a spec object, keys in words ("interval", "read weight"), values
/// with their unit ("5 s") and compact; a `kind` equal to the spec's name is left out; a list
/// of objects (faults) gets one line per item.
pub(super) fn spec_rows<'a>(
    spec: impl IntoIterator<Item = (&'a String, &'a Value)>,
    name: &str,
) -> Vec<(String, String)> {
    spec.into_iter()
        .filter(|(k, v)| !(k.as_str() == "kind" && v.as_str() == Some(name)))
        .map(|(k, v)| {
            let (key, unit) = key_words(k);
            let value = match v {
                Value::Array(items) if items.iter().any(Value::is_object) => items
                    .iter()
                    .map(|i| esc(&compact(i)))
                    .collect::<Vec<_>>()
                    .join("<br>"),
                other => esc(&with_unit(&compact(other), unit)),
            };
            (key, value)
        })
        .collect()
}

/// A spec key in words and its unit: `interval_s` → ("interval", "s"), `read_weight` →
/// ("read weight", "").
fn key_words(k: &str) -> (String, &'static str) {
    let (stem, unit) = if let Some(s) = k.strip_suffix("_ms") {
        (s, "ms")
    } else if let Some(s) = k.strip_suffix("_s") {
        (s, "s")
    } else if let Some(s) = k.strip_suffix("_kbit") {
        (s, "kbit/s")
    } else {
        (k, "")
    };
    (stem.replace('_', " "), unit)
}

fn with_unit(value: &str, unit: &str) -> String {
    if unit.is_empty() || value.is_empty() || value == "–" {
        value.to_string()
    } else {
        format!("{value} {unit}")
    }
}

/// A value as a person would write it: strings bare, whole numbers without ".0", null as "–",
/// lists joined by ", ", objects as "key value" pairs (a `kind` first, the rest in brackets:
/// "partition (shape one)").
pub(super) fn compact(v: &Value) -> String {
    match v {
        Value::Null => "–".to_string(),
        Value::String(s) => s.clone(),
        Value::Number(n) => match n.as_f64() {
            Some(x) if n.is_f64() && x.fract() == 0.0 && x.abs() < 1e15 => format!("{x:.0}"),
            _ => n.to_string(),
        },
        Value::Bool(b) => b.to_string(),
        Value::Array(items) => items.iter().map(compact).collect::<Vec<_>>().join(", "),
        Value::Object(m) => {
            let pairs: Vec<String> = m
                .iter()
                .filter(|(k, _)| k.as_str() != "kind")
                .map(|(k, v)| {
                    let (key, unit) = key_words(k);
                    format!("{key} {}", with_unit(&compact(v), unit))
                })
                .collect();
            match (m.get("kind").map(compact), pairs.is_empty()) {
                (Some(kind), true) => kind,
                (Some(kind), false) => format!("{kind} ({})", pairs.join(", ")),
                (None, _) => pairs.join(", "),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_ran_is_one_line_leaving_out_what_test_json_lacks() {
        let test = json!({"db": {"name": "etcd", "version": "etcd Version: 3.4.23"},
            "workload": {"name": "register", "spec": {"kind": "register"}},
            "nemesis": {"name": "partition,kill", "spec": null}, "time_limit_s": 10.0,
            "seed": 6});
        assert_eq!(
            what_ran_line(&test),
            "etcd 3.4.23 · workload register · nemesis partition,kill · 10 s · seed 6"
        );
        let older = json!({"db": "etcd", "workload": "register", "nemesis": null});
        assert_eq!(what_ran_line(&older), "etcd · workload register");
        assert_eq!(what_ran_line(&json!({})), "");
    }

    #[test]
    fn the_db_line_names_the_db_once() {
        assert_eq!(db_line("etcd", "etcd Version: 3.4.23"), "etcd 3.4.23");
        assert_eq!(
            db_line(
                "postgres",
                "postgres (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)"
            ),
            "postgres (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)"
        );
        assert_eq!(db_line("etcd", "3.5.0"), "etcd 3.5.0");
        assert_eq!(db_line("etcd", ""), "etcd");
        assert_eq!(db_line("", "etcd Version: 3.4.23"), "etcd Version: 3.4.23");
        assert_eq!(db_line("etcd", "Version: 3.4"), "etcd 3.4");
        // A multi-byte version is cut at a char boundary or not at all.
        assert_eq!(db_line("etcd", "é"), "etcd é");
    }

    #[test]
    fn specs_read_as_key_value_tables_with_units_and_compact_faults() {
        let workload = json!({"name": "register", "spec": {"kind": "register", "read_weight": 2,
            "max_value": 5}});
        assert_eq!(
            named_spec_html(Some(&workload)),
            "<b>register</b><table class=\"kv\"><tr><th>max value</th><td>5</td></tr>\
             <tr><th>read weight</th><td>2</td></tr></table>"
        );
        let nemesis = json!({"name": "partition,kill", "spec": {
            "faults": [{"kind": "partition", "shape": "one"}, {"kind": "kill", "targets": "one"},
                       {"kind": "clock", "mode": "bump", "max_delta_ms": 2000}],
            "interval_s": 5.0, "order": "random", "clock_offsets_interval_s": 0.5}});
        let Value::Object(spec) = &nemesis["spec"] else {
            unreachable!()
        };
        assert_eq!(
            spec_rows(spec, "partition,kill"),
            [
                ("clock offsets interval".to_string(), "0.5 s".to_string()),
                (
                    "faults".to_string(),
                    "partition (shape one)<br>kill (targets one)<br>clock (max delta 2000 ms, \
                     mode bump)"
                        .to_string()
                ),
                ("interval".to_string(), "5 s".to_string()),
                ("order".to_string(), "random".to_string()),
            ]
        );
        assert!(!named_spec_html(Some(&nemesis)).contains('{'));
        // With the knobs its kind reads recorded, only those are listed.
        let workload = json!({"name": "register", "knobs": ["read_weight"], "spec": {
            "kind": "register", "read_weight": 2, "append_weight": 1, "add_weight": 10}});
        assert_eq!(
            workload_html(Some(&workload)),
            "<b>register</b><table class=\"kv\"><tr><th>read weight</th><td>2</td></tr></table>"
        );
        // The nemesis is not a workload: every field.
        assert!(named_spec_html(Some(&workload)).contains("append weight"));
        // A run from before knobs were recorded: its kind's knobs, in the vocabulary's order
        // (weights first), without the other kinds' fields.
        let old = json!({"name": "my-register", "spec": {"kind": "register", "read_weight": 2,
            "write_weight": 1, "cas_weight": 1, "append_weight": 1, "add_weight": 10,
            "max_mops": 4, "active_keys": 8, "max_value": 5, "threads_per_key": 5,
            "ops_per_key": 200}});
        let html = workload_html(Some(&old));
        let keys: Vec<&str> = html
            .split("<th>")
            .skip(1)
            .filter_map(|r| r.split("</th>").next())
            .collect();
        assert_eq!(
            keys,
            [
                "read weight",
                "write weight",
                "cas weight",
                "max value",
                "threads per key",
                "ops per key"
            ],
            "{html}"
        );
        // A kind this build does not know, or no kind: every field, escaped.
        let unknown = json!({"name": "q", "spec": {"kind": "queue<", "append_weight": 1}});
        let html = workload_html(Some(&unknown));
        assert!(
            html.contains("<th>append weight</th>") && html.contains("queue&lt;"),
            "{html}"
        );
        let html = workload_html(Some(&json!({"name": "q", "spec": {"add_weight": 3}})));
        assert!(html.contains("<th>add weight</th>"), "{html}");
        // Not a {name, spec} object: as text, escaped.
        assert_eq!(named_spec_html(Some(&json!("a<b"))), "a&lt;b");
        assert_eq!(named_spec_html(Some(&json!({"name": "x"}))), "<b>x</b>");
        assert_eq!(
            compact(&json!({"grudge": {"n1": ["n2", "n3"]}})),
            "grudge n1 n2, n3"
        );
        assert_eq!(compact(&json!(null)), "–");
    }
}
