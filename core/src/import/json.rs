//! JSON array histories: one JSON document holding an array of op objects, as elle-cli reads them
//! (`[{"process":0,"type":"invoke","f":"read","value":null}, …]`).
//!
//! Owns the mapping of such objects onto `Op`: `type` (`"invoke"` or `":invoke"`), `process` (an
//! integer, or `"nemesis"` / `":nemesis"`), `f` (leading `:` dropped; when absent and the value is
//! a list of micro-ops `[f k v]`, the op is `txn`, as Elle's histories omit it), `value`, optional
//! `key`, `time` (ns; `-1` or none → 0, unknown), `error`, `node`; other fields (`index`, `op-index`, …) are ignored and
//! indices renumbered. Errors name the line where the offending element starts and its position
//! in the array. Does not own format detection (`import`) or JSONL (`history`).

use crate::history::{History, Name, Op, OpType, Process};
use serde_json::Value;

/// The 1-based line on which each top-level element of a JSON array starts (empty when the text
/// is not an array). A light scan of strings and brackets; the real parse is serde_json's.
fn element_lines(text: &str) -> Vec<usize> {
    let mut lines = Vec::new();
    let (mut depth, mut line) = (0usize, 1usize);
    let (mut in_str, mut escaped, mut expect_elem) = (false, false, false);
    for c in text.chars() {
        if c == '\n' {
            line += 1;
        }
        if in_str {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_str = false,
                _ => {}
            }
            continue;
        }
        if depth == 1 && expect_elem && !c.is_whitespace() && c != ']' {
            lines.push(line);
            expect_elem = false;
        }
        match c {
            '"' => in_str = true,
            '[' | '{' => {
                depth += 1;
                if depth == 1 {
                    expect_elem = true;
                }
            }
            ']' | '}' => depth = depth.saturating_sub(1),
            ',' if depth == 1 => expect_elem = true,
            _ => {}
        }
    }
    lines
}

fn strip_colon(s: &str) -> &str {
    s.strip_prefix(':').unwrap_or(s)
}

fn is_micro_op_list(v: &Value) -> bool {
    v.as_array().is_some_and(|a| {
        !a.is_empty()
            && a.iter().all(|m| {
                m.as_array()
                    .is_some_and(|m| (m.len() == 2 || m.len() == 3) && m[0].is_string())
            })
    })
}

/// Convert one array element to an op.
fn json_op(v: &Value) -> Result<Op, String> {
    let Value::Object(m) = v else {
        return Err(format!(
            "expected an op object {{\"type\": …, \"process\": …, \"f\": …}}, found {v}"
        ));
    };
    let op_type = match m.get("type").map(|t| t.as_str().map(strip_colon)) {
        Some(Some("invoke")) => OpType::Invoke,
        Some(Some("ok")) => OpType::Ok,
        Some(Some("fail")) => OpType::Fail,
        Some(Some("info")) => OpType::Info,
        Some(_) => {
            return Err(format!(
                "\"type\" must be \"invoke\", \"ok\", \"fail\" or \"info\", found {}",
                m["type"]
            ));
        }
        None => return Err("op object has no \"type\"".into()),
    };
    let process = match m.get("process") {
        Some(Value::Number(n)) => n.as_u64().map(Process::Client).ok_or_else(|| {
            format!("\"process\" must be a non-negative integer or \"nemesis\", found {n}")
        })?,
        Some(Value::String(s)) if strip_colon(s) == "nemesis" => Process::Nemesis,
        Some(Value::String(s)) => s.parse().map(Process::Client).map_err(|_| {
            format!("\"process\" must be a non-negative integer or \"nemesis\", found {s:?}")
        })?,
        Some(other) => {
            return Err(format!(
                "\"process\" must be a non-negative integer or \"nemesis\", found {other}"
            ));
        }
        None => return Err("op object has no \"process\"".into()),
    };
    let value = m.get("value").cloned().unwrap_or(Value::Null);
    let f = match m.get("f") {
        Some(Value::String(s)) if !strip_colon(s).is_empty() => strip_colon(s).to_string(),
        None | Some(Value::Null) if is_micro_op_list(&value) => "txn".to_string(),
        Some(other) => return Err(format!("\"f\" must be a function name, found {other}")),
        None => return Err("op object has no \"f\"".into()),
    };
    let mut op = Op::new(op_type, process, f, value);
    op.key = match m.get("key") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(Name::new(s)),
        Some(Value::Number(n)) => Some(Name::from(n.to_string())),
        Some(other) => {
            return Err(format!(
                "\"key\" must be a string or an integer, found {other}"
            ));
        }
    };
    op.time_ns = match m.get("time") {
        None | Some(Value::Null) => 0,
        // Jepsen writes -1 for an op whose time it does not know: unknown, as a missing one.
        Some(t) if t.as_i64() == Some(-1) => 0,
        Some(t) => t.as_u64().ok_or_else(|| {
            format!("\"time\" must be a non-negative integer (ns) or -1 (unknown), found {t}")
        })?,
    };
    op.error = match m.get("error") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    };
    op.node = m.get("node").and_then(Value::as_str).map(Name::new);
    Ok(op)
}

/// Parse a JSON array of op objects. `name` labels errors.
pub fn read_json_array(text: &str, name: &str) -> Result<History, String> {
    if text.trim_start().starts_with('{') {
        return Err(format!(
            "{name}:1: expected a JSON array of op objects, found an object: one op object per line is --format jsonl"
        ));
    }
    let doc: Value = serde_json::from_str(text).map_err(|e| {
        let msg = e.to_string();
        let msg = msg
            .rsplit_once(" at line ")
            .map_or(msg.as_str(), |(m, _)| m)
            .to_string();
        format!(
            "{name}:{}:{}: expected a JSON array of op objects: {msg}",
            e.line(),
            e.column()
        )
    })?;
    let Value::Array(items) = doc else {
        return Err(format!(
            "{name}:1: expected a JSON array of op objects, found {}",
            match doc {
                Value::Object(_) => "an object (one op per line is --format jsonl)",
                _ => "another JSON value",
            }
        ));
    };
    let lines = element_lines(text);
    let mut ops = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let op = json_op(item).map_err(|e| {
            let line = lines.get(i).copied().unwrap_or(1);
            format!("{name}:{line}: array element {i}: {e}")
        })?;
        ops.push(op);
    }
    Ok(History::from_ops_at_lines(ops, lines))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn elle_cli_json_is_read() {
        let text = "[{\"index\":0,\"process\":0,\"type\":\"invoke\",\"value\":[[\"append\",1,1],[\"r\",2,null]]},\n \
{\"index\":1,\"process\":0,\"type\":\"ok\",\"value\":[[\"append\",1,1],[\"r\",2,[3]]]},\n \
{\"process\":\"nemesis\",\"type\":\"info\",\"f\":\"start\",\"value\":null,\"op-index\":7},\n \
{\"process\":3,\"type\":\":invoke\",\"f\":\":cas\",\"value\":[1,2],\"time\":5,\"error\":[\"x\",1]}]";
        let h = read_json_array(text, "e.json").unwrap();
        assert_eq!(h.ops.len(), 4);
        assert_eq!(h.ops[0].f, "txn");
        assert_eq!(h.ops[1].op_type, OpType::Ok);
        assert_eq!(h.ops[2].process, Process::Nemesis);
        assert_eq!(h.ops[3].f, "cas");
        assert_eq!(h.ops[3].op_type, OpType::Invoke);
        assert_eq!(h.ops[3].time_ns, 5);
        assert_eq!(h.ops[3].value, json!([1, 2]));
        assert_eq!(h.ops[3].error.as_deref(), Some("[\"x\",1]"));
        assert_eq!(h.ops[3].index, 3);
    }

    #[test]
    fn jepsens_unknown_time_reads_as_unknown() {
        let text = "[{\"process\":0,\"type\":\"invoke\",\"f\":\"read\",\"time\":-1},\n {\"process\":0,\"type\":\"ok\",\"f\":\"read\",\"value\":1,\"time\":7}]";
        let h = read_json_array(text, "e.json").unwrap();
        assert_eq!((h.ops[0].time_ns, h.ops[1].time_ns), (0, 7));
        let e = read_json_array(&text.replace("-1", "-2"), "e.json").unwrap_err();
        assert!(e.contains("or -1 (unknown), found -2"), "{e}");
    }

    #[test]
    fn errors_name_line_and_element() {
        let text = "[\n{\"process\":0,\"type\":\"invoke\",\"f\":\"read\"},\n{\"process\":0,\"type\":\"okay\",\"f\":\"read\"}\n]";
        let e = read_json_array(text, "a.json").unwrap_err();
        assert!(
            e.starts_with("a.json:3: array element 1: \"type\" must be"),
            "{e}"
        );
        let e = read_json_array("[{\"process\":0,", "a.json").unwrap_err();
        assert!(e.starts_with("a.json:1:"), "{e}");
        assert!(e.contains("expected a JSON array of op objects"), "{e}");
        assert!(!e.contains(" at line "), "{e}");
        let e = read_json_array("{\"process\":0}", "a.json").unwrap_err();
        assert!(e.contains("--format jsonl"), "{e}");
        let e = read_json_array("{\"process\":0}\n{\"process\":1}\n", "a.json").unwrap_err();
        assert!(
            e.starts_with("a.json:1:") && e.contains("--format jsonl"),
            "{e}"
        );
        let e = read_json_array("[{\"process\":0,\"type\":\"ok\"}]", "a.json").unwrap_err();
        assert!(e.contains("no \"f\""), "{e}");
        let e = read_json_array("[1]", "a.json").unwrap_err();
        assert!(e.contains("expected an op object"), "{e}");
    }

    #[test]
    fn element_lines_skip_strings_and_nesting() {
        let t = "[{\"a\":\"],{\"},\n {\"b\":[1,\n2]},\n\n 3]";
        assert_eq!(element_lines(t), vec![1, 2, 5]);
        assert_eq!(element_lines("[]"), Vec::<usize>::new());
    }
}
