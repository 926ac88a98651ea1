//! Line formats of Jepsen and Porcupine: Jepsen console logs, Jepsen's `history.txt`, and
//! Porcupine's kv lines. See the `import` module doc for each shape.
//!
//! Owns parsing these lines into `History` ops. Does not own format detection or semantics
//! defaults (`import`), nor EDN syntax (`edn`). No parser here panics on any input.

use crate::edn::{self, Edn, EdnOptions};
use crate::history::{History, Op, OpType, Process};

/// The console-log marker before an op's fields.
pub(super) const LOG_MARK: &str = "jepsen.util";

/// Parse a Jepsen console log (see the module doc). `name` labels errors.
pub fn read_jepsen_log(text: &str, name: &str) -> Result<History, String> {
    let mut ops = Vec::new();
    let mut lines = Vec::new();
    let mut stamps: Vec<Option<i64>> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if let Some(op) = log_line(line).map_err(|e| format!("{name}:{}: {e}", i + 1))? {
            ops.push(op);
            lines.push(i + 1);
            stamps.push(log_timestamp_ns(line));
        }
    }
    // Times only when every op line carries a timestamp; relative to the first, never decreasing.
    if let Some(Some(t0)) = stamps.first()
        && stamps.iter().all(Option::is_some)
    {
        let mut last = 0u64;
        for (op, t) in ops.iter_mut().zip(&stamps) {
            // In i128: stamps centuries apart differ by more than an i64 holds.
            let rel = i128::from(t.unwrap_or(*t0)) - i128::from(*t0);
            let rel = u64::try_from(rel).unwrap_or(0);
            last = last.max(rel);
            op.time_ns = last;
        }
    }
    if ops.is_empty() {
        return Err(format!(
            "{name}: no op lines found: expected lines like `INFO jepsen.util - 3 :invoke :read nil`"
        ));
    }
    Ok(History::from_ops_at_lines(ops, lines))
}

/// True for the console-log shape of Porcupine's etcd test data (Jepsen's 2017 etcd test): every
/// non-blank line is `INFO  jepsen.util - P<TAB>:type<TAB>:f<TAB>value` with no timestamp, from a
/// client process, with `read`, `write` or `cas`. Such logs mean etcd semantics.
pub fn is_porcupine_etcd_log(text: &str) -> bool {
    let mut seen = false;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Some(rest) = line.strip_prefix("INFO") else {
            return false;
        };
        if !rest.starts_with(char::is_whitespace) || rest.trim_start().find(LOG_MARK) != Some(0) {
            return false;
        }
        match log_line(line) {
            Ok(Some(op)) if op.is_client() && matches!(op.f.as_str(), "read" | "write" | "cas") => {
                seen = true
            }
            _ => return false,
        }
    }
    seen
}

/// One log line: `Ok(None)` when it is not an op line.
fn log_line(line: &str) -> Result<Option<Op>, String> {
    let Some(pos) = line.find(LOG_MARK) else {
        return Ok(None);
    };
    let mut rest = line[pos + LOG_MARK.len()..].trim_start();
    for sep in ["-", ":"] {
        if let Some(r) = rest.strip_prefix(sep)
            && r.starts_with(char::is_whitespace)
        {
            rest = r.trim_start();
        }
    }
    op_fields(rest)
}

/// The fields of a console line after `jepsen.util -`, which are also a `history.txt` line:
/// process, type, function, EDN value, optional error text. `Ok(None)` when the first token is not
/// a process.
fn op_fields(rest: &str) -> Result<Option<Op>, String> {
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

/// True when a line looks like a `history.txt` op line: a process (integer or `:nemesis`), then
/// an op type keyword.
pub(super) fn is_history_txt_line(line: &str) -> bool {
    let (p, r) = split_token(line);
    let (t, _) = split_token(r);
    (p == ":nemesis" || (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())))
        && matches!(t, ":invoke" | ":ok" | ":fail" | ":info")
}

/// Parse Jepsen's `history.txt`: one op per line, `process<TAB>:type<TAB>:f<TAB>value[<TAB>error]`
/// (`jepsen.util/prn-op`). Blank lines are skipped; any other line must be an op. `name` labels
/// errors.
pub fn read_history_txt(text: &str, name: &str) -> Result<History, String> {
    let mut ops = Vec::new();
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = |m: String| format!("{name}:{}: {m}", i + 1);
        match op_fields(line.trim_start()).map_err(at)? {
            Some(op) => {
                ops.push(op);
                lines.push(i + 1);
            }
            None => {
                return Err(at(
                    "expected an op line `process<TAB>:type<TAB>:f<TAB>value` (process an integer or :nemesis)"
                        .into(),
                ));
            }
        }
    }
    Ok(History::from_ops_at_lines(ops, lines))
}

/// The first `YYYY-MM-DD HH:MM:SS[,fff]` timestamp before `jepsen.util` on a log line, in
/// nanoseconds since the Unix epoch (read as UTC).
fn log_timestamp_ns(line: &str) -> Option<i64> {
    let head = &line[..line.find(LOG_MARK)?];
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
                // The last second chrono can count in nanoseconds has no room for a fraction.
                ns = ns.checked_add(digits.parse::<i64>().ok()? * scale)?;
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

pub(super) fn has_key(kv: &[(Edn, Edn)], name: &str) -> bool {
    kv.iter()
        .any(|(k, _)| matches!(k, Edn::Keyword(s) if s == name))
}

/// Parse Porcupine-style kv lines (see the module doc). `name` labels errors.
pub fn read_porcupine(text: &str, name: &str) -> Result<History, String> {
    let mut ops = Vec::new();
    let mut lines = Vec::new();
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
        lines.push(i + 1);
    }
    if ops.is_empty() {
        return Err(format!("{name}: no ops found"));
    }
    Ok(History::from_ops_at_lines(ops, lines))
}
