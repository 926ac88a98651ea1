//! Jepsen EDN histories: a small EDN reader, conversion of op maps into `History`, and export.
//!
//! Owns EDN syntax (nil, booleans, integers, floats, strings, characters, keywords, symbols, lists,
//! vectors, maps, sets `#{}`, tagged values `#inst "…"`, `#_` discard, `;` comments, commas as
//! whitespace) and the mapping of Jepsen op maps onto `crate::history::Op`. Does not own JSONL (that
//! is `history`) or checking.
//!
//! Accepted layouts: one top-level vector or list of op maps (Knossos corpus), or one op map per
//! top-level form (one per line, as `history.edn` files). Mapping: `:process` integer → client,
//! `:nemesis` → `Process::Nemesis`; `:type` → `OpType`; `:f` keyword → string without the colon;
//! `:value` → JSON (keywords and symbols become strings, vectors/lists/sets become arrays, maps become
//! objects with stringified keys: a collection key becomes its JSON text, in which a map with a
//! collection key is a list of `[key value]` pairs, so no key's text is escaped twice); an absent
//! or nil `:f` on a transaction value (a vector of micro-ops `[:append :x 1]`, Elle's histories) →
//! `txn`; `:time` → `time_ns` (`-1`, Jepsen's unknown time, or none → 0, unknown); `:error` →
//! string; `:index` is ignored and indices are renumbered densely. With `EdnOptions::independent`,
//! client op values are `jepsen.independent` tuples `[k v]` (for cas `[k [old new]]`): `k` becomes
//! `Op::key`, `v` the value. Malformed input is an error naming the line and column and what was
//! expected; the reader never panics.

use crate::history::{History, Name, Op, OpType, Process};
use serde_json::{Map, Number, Value};
use std::fmt::Write as _;

/// An EDN value.
#[derive(Debug, Clone, PartialEq)]
pub enum Edn {
    /// `nil`.
    Nil,
    /// `true` / `false`.
    Bool(bool),
    /// An integer (with an optional `N` suffix).
    Int(i64),
    /// A floating-point number (with an optional `M` suffix).
    Float(f64),
    /// A string.
    Str(String),
    /// A character literal such as `\a`.
    Char(char),
    /// A keyword, without its leading colon.
    Keyword(String),
    /// A symbol.
    Symbol(String),
    /// `( … )`.
    List(Vec<Edn>),
    /// `[ … ]`.
    Vector(Vec<Edn>),
    /// `{ … }`, in source order.
    Map(Vec<(Edn, Edn)>),
    /// `#{ … }`, in source order.
    Set(Vec<Edn>),
    /// `#tag value`.
    Tagged(String, Box<Edn>),
}

/// An EDN syntax or conversion error, with a 1-based position.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{line}:{column}: {message}")]
pub struct EdnError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub column: usize,
    /// What was found and what was expected.
    pub message: String,
}

/// A parsed form with the position where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Located {
    /// The value.
    pub value: Edn,
    /// 1-based line of its first character.
    pub line: usize,
    /// 1-based column of its first character.
    pub column: usize,
}

struct Parser<'a> {
    src: &'a str,
    pos: usize,
    line: usize,
    col: usize,
    depth: usize,
    /// Start positions of the elements of the top-level collection being parsed.
    children: Vec<(usize, usize)>,
}

const MAX_DEPTH: usize = 512;

fn is_delim(c: char) -> bool {
    c.is_whitespace() || matches!(c, ',' | '(' | ')' | '[' | ']' | '{' | '}' | '"' | ';')
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }

    fn err<T>(&self, message: impl Into<String>) -> Result<T, EdnError> {
        Err(EdnError {
            line: self.line,
            column: self.col,
            message: message.into(),
        })
    }

    fn skip_ws(&mut self) -> Result<(), EdnError> {
        while let Some(c) = self.peek() {
            if c.is_whitespace() || c == ',' {
                self.bump();
            } else if c == ';' {
                while let Some(c) = self.bump() {
                    if c == '\n' {
                        break;
                    }
                }
            } else if self.src[self.pos..].starts_with("#_") {
                // A discard counts as a level: the form it discards may start with another.
                if self.depth >= MAX_DEPTH {
                    return self.err(format!("nesting deeper than {MAX_DEPTH} levels"));
                }
                self.bump();
                self.bump();
                self.depth += 1;
                let discarded = self.parse();
                self.depth -= 1;
                discarded?;
            } else {
                break;
            }
        }
        Ok(())
    }

    fn token(&mut self) -> &'a str {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if is_delim(c) {
                break;
            }
            self.bump();
        }
        &self.src[start..self.pos]
    }

    /// Items up to `close`; called right after the one-character opening delimiter.
    fn seq(&mut self, close: char) -> Result<Vec<Edn>, EdnError> {
        let (line, col) = (self.line, self.col.saturating_sub(1).max(1));
        let mut items = Vec::new();
        loop {
            self.skip_ws()?;
            match self.peek() {
                None => {
                    return Err(EdnError {
                        line,
                        column: col,
                        message: format!(
                            "unterminated collection: expected '{close}' before end of input"
                        ),
                    });
                }
                Some(c) if c == close => {
                    self.bump();
                    return Ok(items);
                }
                Some(c @ (')' | ']' | '}')) => {
                    return self.err(format!("unexpected '{c}', expected '{close}'"));
                }
                Some(_) => {
                    if self.depth == 1 {
                        self.children.push((self.line, self.col));
                    }
                    items.push(self.parse()?)
                }
            }
        }
    }

    fn string(&mut self) -> Result<Edn, EdnError> {
        let (line, col) = (self.line, self.col);
        self.bump();
        let mut s = String::new();
        loop {
            match self.bump() {
                None => {
                    return Err(EdnError {
                        line,
                        column: col,
                        message: "unterminated string: expected '\"'".into(),
                    });
                }
                Some('"') => return Ok(Edn::Str(s)),
                Some('\\') => match self.bump() {
                    Some('n') => s.push('\n'),
                    Some('t') => s.push('\t'),
                    Some('r') => s.push('\r'),
                    Some('"') => s.push('"'),
                    Some('\\') => s.push('\\'),
                    Some('u') => {
                        let mut code = 0u32;
                        for _ in 0..4 {
                            match self.bump().and_then(|c| c.to_digit(16)) {
                                Some(d) => code = code * 16 + d,
                                None => return self.err("expected 4 hex digits after \\u"),
                            }
                        }
                        s.push(char::from_u32(code).unwrap_or('\u{FFFD}'));
                    }
                    Some(c) => return self.err(format!("unknown string escape \\{c}")),
                    None => return self.err("unterminated string escape"),
                },
                Some(c) => s.push(c),
            }
        }
    }

    fn atom(&mut self) -> Result<Edn, EdnError> {
        let (line, col) = (self.line, self.col);
        let tok = self.token();
        let fail = |m: String| {
            Err(EdnError {
                line,
                column: col,
                message: m,
            })
        };
        if tok.is_empty() {
            return fail("expected a value".into());
        }
        match tok {
            "nil" => return Ok(Edn::Nil),
            "true" => return Ok(Edn::Bool(true)),
            "false" => return Ok(Edn::Bool(false)),
            _ => {}
        }
        if let Some(k) = tok.strip_prefix(':') {
            if k.is_empty() {
                return fail("expected a keyword name after ':'".into());
            }
            return Ok(Edn::Keyword(k.to_string()));
        }
        let first = tok.chars().next().unwrap_or(' ');
        let second = tok.chars().nth(1);
        let numeric = first.is_ascii_digit()
            || ((first == '-' || first == '+') && second.is_some_and(|c| c.is_ascii_digit()));
        if numeric {
            let body = tok.strip_suffix('N').unwrap_or(tok);
            if let Ok(i) = body.parse::<i64>() {
                return Ok(Edn::Int(i));
            }
            let body = tok.strip_suffix('M').unwrap_or(tok);
            if let Ok(f) = body.parse::<f64>() {
                return Ok(Edn::Float(f));
            }
            return fail(format!("malformed or out-of-range number {tok:?}"));
        }
        Ok(Edn::Symbol(tok.to_string()))
    }

    fn parse(&mut self) -> Result<Edn, EdnError> {
        self.skip_ws()?;
        if self.depth >= MAX_DEPTH {
            return self.err(format!("nesting deeper than {MAX_DEPTH} levels"));
        }
        self.depth += 1;
        let r = self.parse_inner();
        self.depth -= 1;
        r
    }

    fn parse_inner(&mut self) -> Result<Edn, EdnError> {
        match self.peek() {
            None => self.err("expected a value, found end of input"),
            Some('(') => {
                self.bump();
                Ok(Edn::List(self.seq(')')?))
            }
            Some('[') => {
                self.bump();
                Ok(Edn::Vector(self.seq(']')?))
            }
            Some('{') => {
                let (line, col) = (self.line, self.col);
                self.bump();
                let items = self.seq('}')?;
                if items.len() % 2 != 0 {
                    return Err(EdnError {
                        line,
                        column: col,
                        message: "map literal has an odd number of forms: expected key value pairs"
                            .into(),
                    });
                }
                let mut it = items.into_iter();
                let mut pairs = Vec::new();
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    pairs.push((k, v));
                }
                Ok(Edn::Map(pairs))
            }
            Some('"') => self.string(),
            Some('\\') => {
                self.bump();
                let tok = self.token();
                let c = match tok {
                    "newline" => '\n',
                    "space" => ' ',
                    "tab" => '\t',
                    "return" => '\r',
                    _ => {
                        let mut cs = tok.chars();
                        match (cs.next(), cs.next()) {
                            (Some(c), None) => c,
                            // A delimiter character right after the backslash, e.g. `\(`.
                            (None, _) => match self.bump() {
                                Some(c) => c,
                                None => return self.err("expected a character after '\\'"),
                            },
                            _ => return self.err(format!("unknown character literal \\{tok}")),
                        }
                    }
                };
                Ok(Edn::Char(c))
            }
            Some('#') => {
                self.bump();
                match self.peek() {
                    Some('{') => {
                        self.bump();
                        Ok(Edn::Set(self.seq('}')?))
                    }
                    Some(c) if !is_delim(c) => {
                        let tag = self.token().to_string();
                        let v = self.parse()?;
                        Ok(Edn::Tagged(tag, Box::new(v)))
                    }
                    _ => self.err("expected '{' or a tag name after '#'"),
                }
            }
            Some(c @ (')' | ']' | '}')) => self.err(format!("unexpected '{c}'")),
            Some(_) => self.atom(),
        }
    }
}

/// Parse every top-level form of an EDN text.
pub fn parse_all(src: &str) -> Result<Vec<Located>, EdnError> {
    Ok(parse_forms(src)?.into_iter().map(|(l, _)| l).collect())
}

/// Parse the first form of `src`; returns it and the byte offset just after it (leading whitespace
/// and comments are skipped). Used to read an EDN value that is followed by other text.
pub fn parse_prefix(src: &str) -> Result<(Edn, usize), EdnError> {
    let mut p = Parser {
        src,
        pos: 0,
        line: 1,
        col: 1,
        depth: 0,
        children: Vec::new(),
    };
    let v = p.parse()?;
    Ok((v, p.pos))
}

/// Convert one EDN op map to an `Op` (see the module doc for the mapping); `line` and `column` label
/// errors.
pub fn op_from_edn(
    value: Edn,
    line: usize,
    column: usize,
    opts: EdnOptions,
) -> Result<Op, EdnError> {
    op_from_map(
        &Located {
            value,
            line,
            column,
        },
        opts,
    )
}

/// A top-level form and the (line, column) start positions of its elements.
type FormWithChildren = (Located, Vec<(usize, usize)>);

/// Top-level forms, each with the start positions of its elements when it is a collection.
fn parse_forms(src: &str) -> Result<Vec<FormWithChildren>, EdnError> {
    let mut p = Parser {
        src,
        pos: 0,
        line: 1,
        col: 1,
        depth: 0,
        children: Vec::new(),
    };
    let mut out = Vec::new();
    loop {
        p.skip_ws()?;
        if p.peek().is_none() {
            return Ok(out);
        }
        let (line, column) = (p.line, p.col);
        p.children.clear();
        let value = p.parse()?;
        let children = std::mem::take(&mut p.children);
        out.push((
            Located {
                value,
                line,
                column,
            },
            children,
        ));
    }
}

/// Options for converting EDN op maps.
#[derive(Debug, Clone, Copy, Default)]
pub struct EdnOptions {
    /// Client op values are `jepsen.independent` tuples `[key value]`.
    pub independent: bool,
}

/// The string a map key becomes: a string, keyword or symbol its text, any other value the text
/// of its JSON (as [`key_json`] makes it).
fn map_key_string(k: &Edn) -> String {
    match k {
        Edn::Keyword(s) | Edn::Symbol(s) | Edn::Str(s) => s.clone(),
        other => match key_json(other) {
            Value::String(s) => s,
            v => v.to_string(),
        },
    }
}

/// A collection (after any tags): a key that would be stringified JSON text.
fn is_collection(e: &Edn) -> bool {
    match e {
        Edn::List(_) | Edn::Vector(_) | Edn::Set(_) | Edn::Map(_) => true,
        Edn::Tagged(_, v) => is_collection(v),
        _ => false,
    }
}

/// Convert an EDN value to JSON (see the module doc for the mapping).
pub fn to_json(e: &Edn) -> Value {
    json(e, false)
}

/// [`to_json`] for the value of a map key, whose JSON becomes the key's text: the same, except that
/// a map with a collection key becomes a list of `[key value]` pairs, not an object. Stringifying
/// that key too would escape a key's text inside another key's text, doubling the escapes at each
/// level: a few dozen nested map keys on one line grew to hundreds of MB. This way every part of
/// the input is written once, so the JSON is at most a constant times the input's size.
fn key_json(e: &Edn) -> Value {
    json(e, true)
}

fn json(e: &Edn, in_key: bool) -> Value {
    match e {
        Edn::Nil => Value::Null,
        Edn::Bool(b) => Value::Bool(*b),
        Edn::Int(i) => Value::from(*i),
        Edn::Float(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
        Edn::Str(s) | Edn::Keyword(s) | Edn::Symbol(s) => Value::String(s.clone()),
        Edn::Char(c) => Value::String(c.to_string()),
        Edn::List(v) | Edn::Vector(v) | Edn::Set(v) => {
            Value::Array(v.iter().map(|x| json(x, in_key)).collect())
        }
        Edn::Map(kv) if in_key && kv.iter().any(|(k, _)| is_collection(k)) => Value::Array(
            kv.iter()
                .map(|(k, v)| Value::Array(vec![json(k, true), json(v, true)]))
                .collect(),
        ),
        Edn::Map(kv) => {
            let mut m = Map::new();
            for (k, v) in kv {
                m.insert(map_key_string(k), json(v, in_key));
            }
            Value::Object(m)
        }
        Edn::Tagged(_, v) => json(v, in_key),
    }
}

fn op_from_map(form: &Located, opts: EdnOptions) -> Result<Op, EdnError> {
    let fail = |m: String| EdnError {
        line: form.line,
        column: form.column,
        message: m,
    };
    let Edn::Map(pairs) = &form.value else {
        return Err(fail(format!(
            "expected an op map {{:type … :process … :f …}}, found {}",
            kind(&form.value)
        )));
    };
    let get = |name: &str| {
        pairs
            .iter()
            .find(|(k, _)| matches!(k, Edn::Keyword(s) if s == name))
            .map(|(_, v)| v)
    };
    let op_type = match get("type") {
        Some(Edn::Keyword(t)) => match t.as_str() {
            "invoke" => OpType::Invoke,
            "ok" => OpType::Ok,
            "fail" => OpType::Fail,
            "info" => OpType::Info,
            other => {
                return Err(fail(format!(
                    ":type must be :invoke, :ok, :fail or :info, found :{other}"
                )));
            }
        },
        Some(v) => return Err(fail(format!(":type must be a keyword, found {}", kind(v)))),
        None => return Err(fail("op map has no :type".into())),
    };
    let process = match get("process") {
        Some(Edn::Int(p)) if *p >= 0 => Process::Client(*p as u64),
        Some(Edn::Keyword(k)) if k == "nemesis" => Process::Nemesis,
        Some(v) => {
            return Err(fail(format!(
                ":process must be a non-negative integer or :nemesis, found {}",
                kind(v)
            )));
        }
        None => return Err(fail("op map has no :process".into())),
    };
    let raw_value = get("value").unwrap_or(&Edn::Nil);
    let f = match get("f") {
        Some(Edn::Keyword(s) | Edn::Symbol(s) | Edn::Str(s)) => s.clone(),
        // Elle's histories may leave out :f on transactions: it looks at :value.
        None | Some(Edn::Nil) if is_txn(raw_value) => "txn".to_string(),
        Some(v) => return Err(fail(format!(":f must be a keyword, found {}", kind(v)))),
        None => return Err(fail("op map has no :f".into())),
    };
    let mut key = None;
    let value = if opts.independent && process != Process::Nemesis {
        match raw_value {
            Edn::Vector(t) | Edn::List(t) if t.len() == 2 => {
                key = Some(map_key_string(&t[0]));
                to_json(&t[1])
            }
            other => {
                return Err(fail(format!(
                    "independent op value must be a [key value] tuple, found {}",
                    kind(other)
                )));
            }
        }
    } else {
        to_json(raw_value)
    };
    let mut op = Op::new(op_type, process, f, value);
    if let Some(k) = get("key").filter(|k| **k != Edn::Nil) {
        key = Some(map_key_string(k));
    }
    op.key = key.map(Name::from);
    op.time_ns = match get("time") {
        Some(Edn::Int(t)) if *t >= 0 => *t as u64,
        // Jepsen writes -1 for an op whose time it does not know: unknown, as a missing one.
        Some(Edn::Int(-1) | Edn::Nil) | None => 0,
        Some(v) => {
            return Err(fail(format!(
                ":time must be a non-negative integer (ns) or -1 (unknown), found {}",
                kind(v)
            )));
        }
    };
    op.error = match get("error") {
        None | Some(Edn::Nil) => None,
        Some(e) => Some(match to_json(e) {
            Value::String(s) => s,
            v => v.to_string(),
        }),
    };
    op.node = match get("node") {
        Some(Edn::Str(s) | Edn::Keyword(s)) => Some(Name::new(s)),
        _ => None,
    };
    Ok(op)
}

/// A transaction value: a non-empty vector of micro-ops `[:f k]` / `[:f k v]` with a keyword `f`.
fn is_txn(e: &Edn) -> bool {
    let (Edn::Vector(mops) | Edn::List(mops)) = e else {
        return false;
    };
    !mops.is_empty()
        && mops.iter().all(|m| {
            matches!(m, Edn::Vector(p) | Edn::List(p)
                if (p.len() == 2 || p.len() == 3) && matches!(p[0], Edn::Keyword(_) | Edn::Str(_)))
        })
}

fn kind(e: &Edn) -> String {
    match e {
        Edn::Nil => "nil".into(),
        Edn::Bool(b) => b.to_string(),
        Edn::Int(i) => format!("integer {i}"),
        Edn::Float(f) => format!("float {f}"),
        Edn::Str(s) => format!("string {s:?}"),
        Edn::Char(c) => format!("character {c:?}"),
        Edn::Keyword(k) => format!("keyword :{k}"),
        Edn::Symbol(s) => format!("symbol {s}"),
        Edn::List(_) => "a list".into(),
        Edn::Vector(v) => format!("a vector of {}", v.len()),
        Edn::Map(_) => "a map".into(),
        Edn::Set(_) => "a set".into(),
        Edn::Tagged(t, _) => format!("tagged #{t}"),
    }
}

/// Parse a Jepsen EDN history. `name` labels errors (usually the file path).
pub fn read_history(src: &str, name: &str, opts: EdnOptions) -> Result<History, String> {
    let forms = parse_forms(src).map_err(|e| format!("{name}:{e}"))?;
    let mut ops = Vec::new();
    let mut lines = Vec::new();
    for (form, children) in &forms {
        match &form.value {
            Edn::Vector(items) | Edn::List(items) => {
                for (i, item) in items.iter().enumerate() {
                    let (line, column) =
                        children.get(i).copied().unwrap_or((form.line, form.column));
                    let located = Located {
                        value: item.clone(),
                        line,
                        column,
                    };
                    let op = op_from_map(&located, opts).map_err(|e| format!("{name}:{e}"))?;
                    ops.push(op);
                    lines.push(line);
                }
            }
            _ => {
                ops.push(op_from_map(form, opts).map_err(|e| format!("{name}:{e}"))?);
                lines.push(form.line);
            }
        }
    }
    Ok(History::from_ops_at_lines(ops, lines))
}

/// Read an EDN history file.
pub fn read_file(path: &std::path::Path, opts: EdnOptions) -> Result<History, String> {
    let name = path.display().to_string();
    let src = std::fs::read_to_string(path).map_err(|e| format!("{name}: {e}"))?;
    read_history(&src, &name, opts)
}

pub(crate) fn write_json_as_edn(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("nil"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_str(out, s),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_json_as_edn(out, x);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_str(out, k);
                out.push(' ');
                write_json_as_edn(out, x);
            }
            out.push('}');
        }
    }
}

pub(crate) fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

pub(crate) fn is_plain_keyword(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars().all(|c| {
            c.is_alphanumeric()
                || matches!(c, '-' | '_' | '.' | '*' | '+' | '!' | '?' | '<' | '>' | '=')
        })
}

/// Export a history as Jepsen EDN: a vector with one op map per line. Ops with a key are written
/// with `jepsen.independent` tuple values `[key value]` (integer-looking keys as integers), so
/// reading back needs `EdnOptions { independent: true }`.
pub fn write_edn(history: &History) -> String {
    let mut out = String::from("[");
    for (i, op) in history.ops.iter().enumerate() {
        if i > 0 {
            out.push_str("\n ");
        }
        let _ = write!(out, "{{:index {}, :time {}, :type :", op.index, op.time_ns);
        out.push_str(match op.op_type {
            OpType::Invoke => "invoke",
            OpType::Ok => "ok",
            OpType::Fail => "fail",
            OpType::Info => "info",
        });
        match op.process {
            Process::Client(p) => {
                let _ = write!(out, ", :process {p}");
            }
            Process::Nemesis => out.push_str(", :process :nemesis"),
        }
        out.push_str(", :f ");
        if is_plain_keyword(&op.f) {
            out.push(':');
            out.push_str(&op.f);
        } else {
            write_str(&mut out, &op.f);
        }
        out.push_str(", :value ");
        match &op.key {
            Some(k) => {
                out.push('[');
                match k.parse::<i64>() {
                    Ok(n) if n.to_string() == *k => out.push_str(k),
                    _ => write_str(&mut out, k),
                }
                out.push(' ');
                write_json_as_edn(&mut out, &op.value);
                out.push(']');
            }
            None => write_json_as_edn(&mut out, &op.value),
        }
        if let Some(e) = &op.error {
            out.push_str(", :error ");
            write_str(&mut out, e);
        }
        if let Some(n) = &op.node {
            out.push_str(", :node ");
            write_str(&mut out, n);
        }
        out.push('}');
    }
    out.push_str("]\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn transactions_without_f_read_as_txn_and_other_ops_still_need_f() {
        let h = read_history(
            "{:type :invoke :process 0 :value [[:r :x] [:append :y 1M]]}\n\
             {:type :ok :process 0 :f nil :value [[:r :x [2N]] [:append :y 1]]}\n",
            "t.edn",
            EdnOptions::default(),
        )
        .unwrap();
        assert_eq!(h.ops[0].f, "txn");
        assert_eq!(h.ops[0].value, json!([["r", "x"], ["append", "y", 1.0]]));
        assert_eq!(h.ops[1].f, "txn");
        assert_eq!(h.ops[1].value, json!([["r", "x", [2]], ["append", "y", 1]]));
        assert_eq!(h.lines, vec![1, 2]);
        // In a whole-history vector, each op keeps the line its map starts on.
        let h = read_history(
            "; c\n[{:type :invoke :process 0 :f :read}\n\n {:type :ok\n :process 0 :f :read}]",
            "t.edn",
            EdnOptions::default(),
        )
        .unwrap();
        assert_eq!(h.lines, vec![2, 4]);
        let e = read_history(
            "{:type :invoke :process 0 :value 3}",
            "t.edn",
            EdnOptions::default(),
        )
        .unwrap_err();
        assert!(e.contains("op map has no :f"), "{e}");
    }

    #[test]
    fn parses_scalars_collections_and_comments() {
        let forms = parse_all(
            "; hello\n[nil true -3 4N 2.5 \"a\\\"b\" \\x :kw sym (1 2) #{:a} {:k [1]} #inst \"t\" #_ 99]",
        )
        .unwrap();
        assert_eq!(forms.len(), 1);
        assert_eq!(forms[0].line, 2);
        let Edn::Vector(v) = &forms[0].value else {
            panic!()
        };
        assert_eq!(v[0], Edn::Nil);
        assert_eq!(v[1], Edn::Bool(true));
        assert_eq!(v[2], Edn::Int(-3));
        assert_eq!(v[3], Edn::Int(4));
        assert_eq!(v[4], Edn::Float(2.5));
        assert_eq!(v[5], Edn::Str("a\"b".into()));
        assert_eq!(v[6], Edn::Char('x'));
        assert_eq!(v[7], Edn::Keyword("kw".into()));
        assert_eq!(v[8], Edn::Symbol("sym".into()));
        assert_eq!(v[9], Edn::List(vec![Edn::Int(1), Edn::Int(2)]));
        assert_eq!(v[10], Edn::Set(vec![Edn::Keyword("a".into())]));
        assert_eq!(to_json(&v[11]), json!({"k": [1]}));
        assert_eq!(
            v[12],
            Edn::Tagged("inst".into(), Box::new(Edn::Str("t".into())))
        );
        assert_eq!(v.len(), 13, "#_ discards the next form");
    }

    #[test]
    fn converts_knossos_ops() {
        let src = "[{:process 0, :type :invoke, :f :cas, :value [1 2]}\n {:process :nemesis, :type :info, :f :start, :value nil, :time 5}\n {:process 0, :type :fail, :f :cas, :value [1 2], :error [:timeout nil]}]";
        let h = read_history(src, "h.edn", EdnOptions::default()).unwrap();
        assert_eq!(h.ops.len(), 3);
        assert_eq!(h.ops[0].f, "cas");
        assert_eq!(h.ops[0].value, json!([1, 2]));
        assert_eq!(h.ops[1].process, Process::Nemesis);
        assert_eq!(h.ops[1].time_ns, 5);
        assert_eq!(h.ops[2].op_type, OpType::Fail);
        assert_eq!(h.ops[2].error.as_deref(), Some("[\"timeout\",null]"));
        assert_eq!(h.ops[2].index, 2);
    }

    #[test]
    fn jepsens_unknown_time_reads_as_unknown_and_other_negative_times_are_refused() {
        let src = "{:process 0, :type :invoke, :f :read, :value nil, :time -1}\n{:process 0, :type :ok, :f :read, :value 1}";
        let h = read_history(src, "h.edn", EdnOptions::default()).unwrap();
        assert_eq!((h.ops[0].time_ns, h.ops[1].time_ns), (0, 0));
        let e = read_history(
            "{:process 0, :type :invoke, :f :read, :value nil, :time -2}",
            "h.edn",
            EdnOptions::default(),
        )
        .unwrap_err();
        assert!(e.contains("or -1 (unknown), found integer -2"), "{e}");
    }

    #[test]
    fn independent_tuples_split_key_and_value() {
        let src = "{:process 1, :type :invoke, :f :cas, :value [:k3 [1 2]]}\n{:process 1, :type :ok, :f :read, :value [7 nil]}";
        let h = read_history(src, "h", EdnOptions { independent: true }).unwrap();
        assert_eq!(h.ops[0].key.as_deref(), Some("k3"));
        assert_eq!(h.ops[0].value, json!([1, 2]));
        assert_eq!(h.ops[1].key.as_deref(), Some("7"));
        assert_eq!(h.ops[1].value, Value::Null);
        let err = read_history(
            "{:process 1, :type :invoke, :f :read, :value 3}",
            "h",
            EdnOptions { independent: true },
        )
        .unwrap_err();
        assert!(err.contains("[key value]"), "{err}");
    }

    /// Map keys nested in map keys, `{{{"\\\"" 1} 1} 1}`: each key's JSON text was escaped again
    /// inside the key around it, doubling the backslashes per level (fuzzing, history-txt: a 7 KB
    /// line read in 0.4 s and 140 MB). 25 levels in 140 bytes were ~400 MB of key text.
    fn nested_map_keys(depth: usize) -> String {
        let mut s = String::from(r#""\\\"\n""#);
        for _ in 0..depth {
            s = format!("{{{s} 1}}");
        }
        s
    }

    #[test]
    fn nested_map_keys_give_json_in_proportion_to_the_input() {
        for depth in [1, 2, 3, 25, MAX_DEPTH - 2] {
            let src = nested_map_keys(depth);
            let (edn, _) = parse_prefix(&src).unwrap();
            let text = to_json(&edn).to_string();
            assert!(
                text.len() <= 8 * src.len(),
                "{depth} levels: {} bytes of EDN became {} of JSON",
                src.len(),
                text.len()
            );
        }
        // A collection key is still its JSON text; a map with a collection key, inside a key, is
        // its [key value] pairs (it used to be an object whose key was escaped JSON text).
        let value = |src: &str| to_json(&parse_prefix(src).unwrap().0);
        assert_eq!(value(r#"{[1 "a"] 2}"#), json!({"[1,\"a\"]": 2}));
        assert_eq!(value("{{:a 1} 2}"), json!({"{\"a\":1}": 2}));
        assert_eq!(value("{{1 :a} 2}"), json!({"{\"1\":\"a\"}": 2}));
        assert_eq!(value("{{{:a 1} 2} 3}"), json!({"[[{\"a\":1},2]]": 3}));
        assert_eq!(
            value("{[{[0] :b, :c 1}] 2}"),
            json!({"[[[[0],\"b\"],[\"c\",1]]]": 2})
        );
    }

    #[test]
    fn errors_name_line_column_and_expectation() {
        let e = read_history(
            "[{:process 0 :type :invoke :f :read}\n {:process 0 :type :okay :f :read}]",
            "h.edn",
            EdnOptions::default(),
        )
        .unwrap_err();
        assert!(e.starts_with("h.edn:2:2: :type must be"), "{e}");
        let e = parse_all("[1 2\n {:a 1").unwrap_err();
        assert_eq!((e.line, e.column), (2, 2));
        assert!(e.message.contains("expected '}'"), "{e}");
        let e = parse_all("[1 2)").unwrap_err();
        assert_eq!((e.line, e.column), (1, 5));
        let e = read_history("{:process 0 :type :invoke}", "x", EdnOptions::default()).unwrap_err();
        assert!(e.contains("no :f"), "{e}");
        assert!(
            parse_all(&"[".repeat(10_000)).is_err(),
            "deep nesting is an error, not a stack overflow"
        );
    }

    /// Found reading the parser for issue 43's fuzzing: each `#_` parsed the form it discards
    /// before counting a level, so a long run of `#_` recursed without bound and overflowed the
    /// stack (100,000 of them on a test thread's 2 MiB stack).
    #[test]
    fn a_long_run_of_discards_is_an_error_not_a_stack_overflow() {
        let src = format!("{}1", "#_".repeat(100_000));
        let e = parse_all(&src).unwrap_err();
        assert!(e.message.contains("nesting deeper than"), "{e}");
        let e = read_history(&src, "h.edn", EdnOptions::default()).unwrap_err();
        assert!(e.starts_with("h.edn:1:"), "{e}");
        // Discards nested as deep as collections may be are still read.
        let forms = parse_all(&format!("{}{}", "#_".repeat(100), "1 ".repeat(101))).unwrap();
        assert_eq!(forms.len(), 1);
        assert_eq!(parse_all("#_ #_ 1 2 3").unwrap()[0].value, Edn::Int(3));
    }

    #[test]
    fn write_then_read_round_trips() {
        let mut a = Op::new(OpType::Invoke, Process::Client(3), "cas", json!([1, 4]));
        a.key = Some("k2".into());
        a.time_ns = 17;
        let mut b = Op::new(OpType::Fail, Process::Client(3), "cas", json!([1, 4]));
        b.key = Some("12".into());
        b.error = Some("cas-mismatch".into());
        let c = Op::new(
            OpType::Info,
            Process::Nemesis,
            "start-partition",
            json!({"n1": ["n2"]}),
        );
        let h = History::from_ops(vec![a, b, c]);
        let text = write_edn(&h);
        let back = read_history(&text, "rt", EdnOptions { independent: true }).unwrap();
        assert_eq!(back.ops, h.ops, "{text}");
    }

    proptest! {
        #[test]
        fn random_text_never_panics(s in "\\PC{0,200}") {
            let _ = read_history(&s, "fuzz", EdnOptions::default());
            let _ = read_history(&s, "fuzz", EdnOptions { independent: true });
        }

        #[test]
        fn random_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let s = String::from_utf8_lossy(&b);
            let _ = parse_all(&s);
        }

        #[test]
        fn edn_alphabet_never_panics(s in "[\\[\\]{}()#:;\\\\\" \\nabc0-9,_.+-NM]{0,120}") {
            let _ = read_history(&s, "fuzz", EdnOptions::default());
        }
    }
}
