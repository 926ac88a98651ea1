//! Importing histories written by other tools: format detection, Jepsen console logs, Porcupine-style
//! key-value lines, and `jepsen.independent` tuple splitting.
//!
//! Owns the mapping of foreign text formats onto `crate::history::History`. Does not own JSONL (that
//! is `history`), EDN syntax and Jepsen op maps (`edn`, whose parser every EDN value here goes
//! through), or checking.
//!
//! Formats:
//! - `jsonl`: our own format (`History::read_jsonl`).
//! - `edn`: Jepsen / Knossos EDN (`edn::read_history`).
//! - `jepsen-log`: Jepsen console logs. Op lines contain `jepsen.util`, then (after an optional `-`
//!   or `:`) the process (integer or `:nemesis`), the type (`:invoke`, `:ok`, `:fail`, `:info`), the
//!   function and the value as EDN, separated by tabs or spaces, optionally followed by error text,
//!   e.g. `INFO  jepsen.util - 3<TAB>:invoke<TAB>:read<TAB>nil`. Lines without `jepsen.util`, or where it is not
//!   followed by a process, are ignored; a line with a process but a malformed rest is an error.
//!   When every op line carries a `YYYY-MM-DD HH:MM:SS,fff` timestamp before `jepsen.util`, op times
//!   are taken from it (relative to the first op line, never decreasing); otherwise times are 0.
//! - `porcupine`: one EDN op map per line with a `:key`, as Porcupine's kv test data:
//!   `{:process 0, :type :invoke, :f :put, :key "1", :value "x"}`; `:f` get/put/append suit the `kv`
//!   model.
//!
//! `detect_format` (for `--format auto`): a line containing `jepsen.util` among the first 200 lines →
//! jepsen-log; first meaningful line starting `{"` → jsonl; a first line that is a single EDN map
//! with `:key` → porcupine; anything else → edn.
//!
//! Independent keys (EDN and jepsen-log only): `looks_independent` is true when every client
//! `read`/`write`/`cas` op value is a 2-element array and every `cas` value is `[k [old new]]`, and
//! there is at least one such op; then `split_independent` moves `k` into `Op::key`. The CLI applies
//! this automatically and `--independent` / `--no-independent` force it either way.
//!
//! Errors name the input, the 1-based line and what was expected; no parser here panics on any input.

use crate::edn::{self, Edn, EdnOptions};
use crate::history::{History, Op, OpType, Process};
use serde_json::Value;

/// A history input format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    /// shakedown JSONL.
    Jsonl,
    /// Jepsen / Knossos EDN.
    Edn,
    /// Jepsen console log lines.
    JepsenLog,
    /// Porcupine-style kv lines (one EDN map with `:key` per line).
    Porcupine,
}

impl InputFormat {
    /// Parse a `--format` value; `Ok(None)` means auto-detect.
    pub fn from_arg(s: &str) -> Result<Option<InputFormat>, String> {
        Ok(Some(match s {
            "auto" => return Ok(None),
            "jsonl" | "json" => InputFormat::Jsonl,
            "edn" => InputFormat::Edn,
            "jepsen-log" | "log" => InputFormat::JepsenLog,
            "porcupine" => InputFormat::Porcupine,
            other => {
                return Err(format!(
                    "--format {other:?}: expected auto, jsonl, edn, jepsen-log or porcupine"
                ));
            }
        }))
    }

    /// The format's `--format` name.
    pub fn name(self) -> &'static str {
        match self {
            InputFormat::Jsonl => "jsonl",
            InputFormat::Edn => "edn",
            InputFormat::JepsenLog => "jepsen-log",
            InputFormat::Porcupine => "porcupine",
        }
    }
}

fn meaningful_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with(';'))
}

/// Guess the format of a history text (see the module doc for the rules).
pub fn detect_format(text: &str) -> InputFormat {
    if text.lines().take(200).any(|l| l.contains("jepsen.util")) {
        return InputFormat::JepsenLog;
    }
    let first = meaningful_lines(text).next().unwrap_or("");
    if first.starts_with("{\"") || first.starts_with("{ \"") {
        return InputFormat::Jsonl;
    }
    if first.starts_with('{')
        && let Ok(forms) = edn::parse_all(first)
        && forms.len() == 1
        && matches!(&forms[0].value, Edn::Map(kv) if has_key(kv, "key"))
    {
        return InputFormat::Porcupine;
    }
    InputFormat::Edn
}

fn has_key(kv: &[(Edn, Edn)], name: &str) -> bool {
    kv.iter()
        .any(|(k, _)| matches!(k, Edn::Keyword(s) if s == name))
}

/// Parse a Jepsen console log (see the module doc). `name` labels errors.
pub fn read_jepsen_log(text: &str, name: &str) -> Result<History, String> {
    let mut ops = Vec::new();
    let mut stamps: Vec<Option<i64>> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if let Some(op) = log_line(line).map_err(|e| format!("{name}:{}: {e}", i + 1))? {
            ops.push(op);
            stamps.push(log_timestamp_ns(line));
        }
    }
    // Times only when every op line carries a timestamp; relative to the first, never decreasing.
    if let Some(Some(t0)) = stamps.first()
        && stamps.iter().all(Option::is_some)
    {
        let mut last = 0u64;
        for (op, t) in ops.iter_mut().zip(&stamps) {
            let rel = u64::try_from(t.unwrap_or(*t0) - t0).unwrap_or(0);
            last = last.max(rel);
            op.time_ns = last;
        }
    }
    if ops.is_empty() {
        return Err(format!(
            "{name}: no op lines found: expected lines like `INFO jepsen.util - 3 :invoke :read nil`"
        ));
    }
    Ok(History::from_ops(ops))
}

/// One log line: `Ok(None)` when it is not an op line.
fn log_line(line: &str) -> Result<Option<Op>, String> {
    const MARK: &str = "jepsen.util";
    let Some(pos) = line.find(MARK) else {
        return Ok(None);
    };
    let mut rest = line[pos + MARK.len()..].trim_start();
    for sep in ["-", ":"] {
        if let Some(r) = rest.strip_prefix(sep)
            && r.starts_with(char::is_whitespace)
        {
            rest = r.trim_start();
        }
    }
    let (proc_tok, r) = split_token(rest);
    let process = match proc_tok {
        ":nemesis" | "nemesis" => Process::Nemesis,
        t => match t.parse::<u64>() {
            Ok(p) => Process::Client(p),
            Err(_) => return Ok(None),
        },
    };
    let (type_tok, r) = split_token(r);
    let op_type = match type_tok {
        ":invoke" => OpType::Invoke,
        ":ok" => OpType::Ok,
        ":fail" => OpType::Fail,
        ":info" => OpType::Info,
        "" => return Err("expected an op type (:invoke, :ok, :fail or :info) after the process, found end of line".into()),
        other => {
            return Err(format!(
                "expected an op type (:invoke, :ok, :fail or :info) after the process, found {other:?}"
            ));
        }
    };
    let (f_tok, r) = split_token(r);
    let f = f_tok.strip_prefix(':').unwrap_or(f_tok);
    if f.is_empty() {
        return Err("expected a function (e.g. :read) after the op type".into());
    }
    if r.trim().is_empty() {
        return Err(format!(
            "expected an EDN value after :{f}, found end of line"
        ));
    }
    let (value, used) = edn::parse_prefix(r)
        .map_err(|e| format!("expected an EDN value after :{f}: {}", e.message))?;
    let error = r.get(used..).unwrap_or("").trim();
    let mut op = Op::new(op_type, process, f, edn::to_json(&value));
    if !error.is_empty() {
        op.error = Some(error.to_string());
    }
    Ok(Some(op))
}

/// The first `YYYY-MM-DD HH:MM:SS[,fff]` timestamp before `jepsen.util` on a log line, in
/// nanoseconds since the Unix epoch (read as UTC).
fn log_timestamp_ns(line: &str) -> Option<i64> {
    let head = &line[..line.find("jepsen.util")?];
    let bytes = head.as_bytes();
    for start in 0..bytes.len() {
        if !bytes[start].is_ascii_digit() || (start > 0 && bytes[start - 1].is_ascii_digit()) {
            continue;
        }
        let Some(date) = head.get(start..start + 19) else {
            continue;
        };
        let date = date.replacen('T', " ", 1);
        let Ok(t) = chrono::NaiveDateTime::parse_from_str(&date, "%Y-%m-%d %H:%M:%S") else {
            continue;
        };
        let mut ns = t.and_utc().timestamp_nanos_opt()?;
        let rest = &head[start + 19..];
        if let Some(frac) = rest.strip_prefix([',', '.']) {
            let digits: String = frac
                .chars()
                .take_while(char::is_ascii_digit)
                .take(9)
                .collect();
            if !digits.is_empty() {
                let scale = 10i64.pow(9 - digits.len() as u32);
                ns += digits.parse::<i64>().ok()? * scale;
            }
        }
        return Some(ns);
    }
    None
}

/// The first whitespace-separated token and the rest.
fn split_token(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    match s.find(char::is_whitespace) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    }
}

/// Parse Porcupine-style kv lines (see the module doc). `name` labels errors.
pub fn read_porcupine(text: &str, name: &str) -> Result<History, String> {
    let mut ops = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with(';') {
            continue;
        }
        let at = |col: usize, m: String| format!("{name}:{}:{col}: {m}", i + 1);
        let forms = edn::parse_all(line).map_err(|e| at(e.column, e.message))?;
        let mut forms = forms.into_iter();
        let (Some(form), None) = (forms.next(), forms.next()) else {
            return Err(at(1, "expected exactly one op map on the line".into()));
        };
        match &form.value {
            Edn::Map(kv) if has_key(kv, "key") => {}
            Edn::Map(_) => {
                return Err(at(
                    form.column,
                    "expected a :key in the op map {:process … :type … :f … :key … :value …}"
                        .into(),
                ));
            }
            _ => {
                return Err(at(
                    form.column,
                    "expected an op map {:process … :type … :f … :key … :value …}".into(),
                ));
            }
        }
        let op = edn::op_from_edn(form.value, 1, form.column, EdnOptions::default())
            .map_err(|e| at(e.column, e.message))?;
        ops.push(op);
    }
    if ops.is_empty() {
        return Err(format!("{name}: no ops found"));
    }
    Ok(History::from_ops(ops))
}

fn is_tuple(v: &Value) -> bool {
    matches!(v, Value::Array(a) if a.len() == 2)
}

/// True when the history's client register ops all carry `jepsen.independent` tuple values (see
/// the module doc).
pub fn looks_independent(history: &History) -> bool {
    let mut seen = false;
    for op in history.ops.iter().filter(|o| o.is_client()) {
        if !matches!(op.f.as_str(), "read" | "write" | "cas") || op.key.is_some() {
            continue;
        }
        if !is_tuple(&op.value) {
            return false;
        }
        if op.f == "cas" && !op.value.get(1).is_some_and(is_tuple) {
            return false;
        }
        seen = true;
    }
    seen
}

fn key_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Move the `k` of every client op's `[k v]` value into `Op::key` (ops that already have a key are
/// left alone). Errors name the op and what was found.
pub fn split_independent(history: &mut History) -> Result<(), String> {
    for (i, op) in history.ops.iter_mut().enumerate() {
        if !op.is_client() || op.key.is_some() {
            continue;
        }
        match std::mem::take(&mut op.value) {
            Value::Array(mut a) if a.len() == 2 => {
                let v = a.pop().unwrap_or_default();
                let k = a.pop().unwrap_or_default();
                op.key = Some(key_string(&k));
                op.value = v;
            }
            other => {
                return Err(format!(
                    "history position {i} (process {} {}): independent op value must be a [key value] tuple, found {other}",
                    op.process, op.f
                ));
            }
        }
    }
    Ok(())
}

/// A history read from text, with how it was read.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The history.
    pub history: History,
    /// The format it was read as.
    pub format: InputFormat,
    /// Whether `jepsen.independent` tuples were split into keys.
    pub independent: bool,
}

/// Read a history text. `format: None` auto-detects; `independent: None` auto-detects tuples for
/// EDN and jepsen-log input, `Some(b)` forces. `name` labels errors.
pub fn read_text(
    text: &str,
    name: &str,
    format: Option<InputFormat>,
    independent: Option<bool>,
) -> Result<Imported, String> {
    let format = format.unwrap_or_else(|| detect_format(text));
    let mut history = match format {
        InputFormat::Jsonl => {
            History::read_jsonl(text.as_bytes(), name).map_err(|e| e.to_string())?
        }
        InputFormat::Edn => edn::read_history(text, name, EdnOptions::default())?,
        InputFormat::JepsenLog => read_jepsen_log(text, name)?,
        InputFormat::Porcupine => read_porcupine(text, name)?,
    };
    let tuples_possible = matches!(format, InputFormat::Edn | InputFormat::JepsenLog);
    let independent = match independent {
        Some(b) => b,
        None => tuples_possible && looks_independent(&history),
    };
    if independent {
        split_independent(&mut history).map_err(|e| format!("{name}: {e}"))?;
    }
    Ok(Imported {
        history,
        format,
        independent,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const LOG: &str = "2024-01-01 10:00:00,001{GMT}\tINFO\t[main] jepsen.core - Running test\n\
INFO  jepsen.util - 3\t:invoke\t:read\tnil\n\
INFO  jepsen.util - 3\t:ok\t:read\t4\n\
INFO jepsen.util - 1 :invoke :cas [1 4]\n\
INFO jepsen.util - :nemesis :info :start nil\n\
INFO jepsen.util - 1 :info :cas [1 4] indeterminate: timed out\n\
WARN jepsen.util - Retrying connection\n";

    #[test]
    fn jepsen_log_lines_become_ops_and_other_lines_are_ignored() {
        assert_eq!(detect_format(LOG), InputFormat::JepsenLog);
        let h = read_jepsen_log(LOG, "log").unwrap();
        assert_eq!(h.ops.len(), 5);
        assert_eq!(h.ops[0].process, Process::Client(3));
        assert_eq!(h.ops[0].op_type, OpType::Invoke);
        assert_eq!(h.ops[0].f, "read");
        assert_eq!(h.ops[0].value, Value::Null);
        assert_eq!(h.ops[1].value, json!(4));
        assert_eq!(h.ops[2].value, json!([1, 4]));
        assert_eq!(h.ops[3].process, Process::Nemesis);
        assert_eq!(h.ops[3].f, "start");
        assert_eq!(h.ops[4].op_type, OpType::Info);
        assert_eq!(h.ops[4].error.as_deref(), Some("indeterminate: timed out"));
        assert_eq!(h.ops[4].index, 4);
    }

    #[test]
    fn jepsen_log_timestamps_become_relative_times() {
        let log = "INFO [2020-04-08 11:41:29,564] jepsen worker 3 - jepsen.util 3\t:invoke\t:read\tnil\n\
2020-04-08 11:41:29,600{GMT}\tINFO\t[jepsen worker 3] jepsen.util: 3\t:ok\t:read\t1\n\
INFO [2020-04-08 11:41:30.5] jepsen.util 1 :invoke :write 2\n";
        let h = read_jepsen_log(log, "t.log").unwrap();
        let times: Vec<u64> = h.ops.iter().map(|o| o.time_ns).collect();
        assert_eq!(times, vec![0, 36_000_000, 936_000_000]);
        // One line without a timestamp: no times at all.
        let h = read_jepsen_log(
            &format!("{log}INFO jepsen.util - 1 :ok :write 2\n"),
            "t.log",
        )
        .unwrap();
        assert!(h.ops.iter().all(|o| o.time_ns == 0));
    }

    #[test]
    fn jepsen_log_errors_name_line_and_expectation() {
        let e = read_jepsen_log("x\nINFO jepsen.util - 3 :okay :read 1\n", "a.log").unwrap_err();
        assert!(e.starts_with("a.log:2: expected an op type"), "{e}");
        let e = read_jepsen_log("INFO jepsen.util - 3 :ok :read [1 2\n", "a.log").unwrap_err();
        assert!(e.starts_with("a.log:1: expected an EDN value"), "{e}");
        let e = read_jepsen_log("INFO jepsen.util - 3 :ok :read\n", "a.log").unwrap_err();
        assert!(e.contains("found end of line"), "{e}");
        let e = read_jepsen_log("nothing here\n", "a.log").unwrap_err();
        assert!(e.contains("no op lines"), "{e}");
    }

    #[test]
    fn porcupine_lines_carry_keys() {
        let src = "{:process 0, :type :invoke, :f :put, :key \"1\", :value \"x\"}\n\
{:process 0, :type :ok, :f :put, :key \"1\", :value \"x\"}\n\
\n\
{:process 1, :type :invoke, :f :get, :key \"1\", :value nil}\n\
{:process 1, :type :ok, :f :get, :key \"1\", :value \"x\"}\n";
        assert_eq!(detect_format(src), InputFormat::Porcupine);
        let h = read_porcupine(src, "p.txt").unwrap();
        assert_eq!(h.ops.len(), 4);
        assert_eq!(h.ops[2].key.as_deref(), Some("1"));
        assert_eq!(h.ops[2].f, "get");
        assert_eq!(h.ops[3].value, json!("x"));
        let e = read_porcupine(
            "{:process 0, :type :invoke, :f :put, :key \"1\", :value \"x\"}\n{:process 0, :type :ok, :f :put, :value \"x\"}\n",
            "p.txt",
        )
        .unwrap_err();
        assert!(e.starts_with("p.txt:2:1: expected a :key"), "{e}");
        let e = read_porcupine("{:process 0, :type :nope, :f :put, :key 1}", "p.txt").unwrap_err();
        assert!(e.starts_with("p.txt:1:1: :type must be"), "{e}");
        let e = read_porcupine("{:process 0 :key", "p.txt").unwrap_err();
        assert!(e.starts_with("p.txt:1:"), "{e}");
    }

    #[test]
    fn detects_jsonl_and_edn() {
        assert_eq!(
            detect_format("\n{\"type\":\"invoke\"}\n"),
            InputFormat::Jsonl
        );
        assert_eq!(
            detect_format("[{:process 0 :type :invoke :f :read}]"),
            InputFormat::Edn
        );
        assert_eq!(
            detect_format("{:process 0 :type :invoke :f :read :value nil}\n"),
            InputFormat::Edn
        );
    }

    #[test]
    fn independent_tuples_are_detected_and_split() {
        let src = "{:process 0 :type :invoke :f :write :value [:a 1]}\n\
{:process 0 :type :ok :f :write :value [:a 1]}\n\
{:process 1 :type :invoke :f :cas :value [7 [1 2]]}\n\
{:process 1 :type :fail :f :cas :value [7 [1 2]]}\n\
{:process :nemesis :type :info :f :start :value nil}\n";
        let imp = read_text(src, "h.edn", None, None).unwrap();
        assert!(imp.independent);
        assert_eq!(imp.history.ops[0].key.as_deref(), Some("a"));
        assert_eq!(imp.history.ops[0].value, json!(1));
        assert_eq!(imp.history.ops[2].key.as_deref(), Some("7"));
        assert_eq!(imp.history.ops[2].value, json!([1, 2]));
        assert_eq!(imp.history.ops[4].key, None);
        // Plain cas [old new] values are not tuples of tuples.
        let plain = "[{:process 0 :type :invoke :f :cas :value [1 2]} {:process 0 :type :ok :f :cas :value [1 2]}]";
        let imp = read_text(plain, "p.edn", None, None).unwrap();
        assert!(!imp.independent);
        assert_eq!(imp.history.ops[0].key, None);
        // Forcing on a plain history names the op.
        let e = read_text(
            "[{:process 0 :type :invoke :f :write :value 3}]",
            "p.edn",
            None,
            Some(true),
        )
        .unwrap_err();
        assert!(
            e.contains("history position 0") && e.contains("[key value]"),
            "{e}"
        );
    }

    proptest! {
        #[test]
        fn random_text_never_panics(s in "\\PC{0,200}") {
            let _ = read_jepsen_log(&s, "fuzz");
            let _ = read_porcupine(&s, "fuzz");
            let _ = read_text(&s, "fuzz", None, None);
            let _ = read_text(&s, "fuzz", None, Some(true));
        }

        #[test]
        fn random_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..300)) {
            let s = String::from_utf8_lossy(&b);
            let _ = detect_format(&s);
            let _ = read_jepsen_log(&s, "fuzz");
            let _ = read_porcupine(&s, "fuzz");
        }

        #[test]
        fn log_like_lines_never_panic(
            lines in proptest::collection::vec(
                "(INFO )?jepsen\\.util( -|:)? (:nemesis|[0-9]{1,3}|x) (:invoke|:ok|:fail|:info|:x)? ?(:read|:cas|:f)? ?[\\[\\]{}()#:\"\\\\ nil0-9a-z]{0,20}",
                0..8,
            )
        ) {
            let text = lines.join("\n");
            let _ = read_text(&text, "fuzz", Some(InputFormat::JepsenLog), None);
        }

        #[test]
        fn porcupine_like_lines_never_panic(
            lines in proptest::collection::vec(
                "\\{(:process [0-9] ?|:type :(invoke|ok|x) ?|:f :(get|put) ?|:key [\"0-9]{0,3} ?|:value [\"a-z\\[\\]]{0,4} ?){0,6}\\}?",
                0..8,
            )
        ) {
            let text = lines.join("\n");
            let _ = read_text(&text, "fuzz", Some(InputFormat::Porcupine), None);
        }
    }
}
