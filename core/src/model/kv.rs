//! The key-value model: `get`, `put` and `append` on string values, keys from `Op::key`.
//!
//! Owns `KvModel` and its one semantic switch, what a never-written key holds: absent (a `get`
//! returns `null`), or the empty string as in Porcupine's kv model (a `get` of a never-written key
//! returns `""`, and a `null` get means `""`). Does not own the search or history parsing.
//!
//! States are cheap to copy whatever the values' length (Porcupine's kv histories append to the
//! same few keys thousands of times, and the search caches millions of states): a value is a
//! chain of shared pieces (the `put` that started it, then each `append`) with its length and a
//! polynomial hash that extends under append, so an append allocates one small node and a `get`
//! none; equal hashes and lengths are confirmed by comparing the text, so equality is exact.

use super::{Convert, Model, Outcome, bad, outcome, wrap};
use crate::history::Op;
use serde_json::Value;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// Base of the polynomial string hash (odd, so multiplication mod 2^64 loses nothing).
const BASE: u64 = 0x100_0000_01b3;

/// A piece of text with what appending it does to a hash: `hash` of the text alone and
/// `BASE^len`, computed once when the op is read.
#[derive(Clone)]
pub struct Text {
    text: Arc<str>,
    hash: u64,
    pow: u64,
}

impl Text {
    /// `s` with its hash.
    pub fn new(s: &str) -> Text {
        let (mut hash, mut pow) = (0u64, 1u64);
        for b in s.bytes() {
            hash = hash.wrapping_mul(BASE).wrapping_add(u64::from(b) + 1);
            pow = pow.wrapping_mul(BASE);
        }
        Text {
            text: Arc::from(s),
            hash,
            pow,
        }
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl PartialEq for Text {
    fn eq(&self, o: &Text) -> bool {
        self.hash == o.hash && self.text == o.text
    }
}
impl Eq for Text {}
impl Hash for Text {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.hash.hash(h);
    }
}
impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.text, f)
    }
}
impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text::new(s)
    }
}

/// One link of a value's chain: the text written last and the value before it.
struct Piece {
    prev: Option<Arc<Piece>>,
    text: Text,
}

/// A value in a model state: its length, hash and chain of pieces (newest first).
#[derive(Clone)]
pub struct KvValue {
    len: usize,
    hash: u64,
    last: Option<Arc<Piece>>,
}

impl KvValue {
    fn empty() -> KvValue {
        KvValue {
            len: 0,
            hash: 0,
            last: None,
        }
    }

    fn put(t: &Text) -> KvValue {
        KvValue::empty().append(t)
    }

    fn append(&self, t: &Text) -> KvValue {
        KvValue {
            len: self.len + t.text.len(),
            hash: self.hash.wrapping_mul(t.pow).wrapping_add(t.hash),
            last: Some(Arc::new(Piece {
                prev: self.last.clone(),
                text: t.clone(),
            })),
        }
    }

    /// The pieces, oldest first.
    fn pieces(&self) -> Vec<&str> {
        let mut out = Vec::new();
        let mut at = self.last.as_deref();
        while let Some(p) = at {
            out.push(p.text.as_str());
            at = p.prev.as_deref();
        }
        out.reverse();
        out
    }

    /// Whether this value's text is `t`'s: each piece, newest first, is a suffix of what is
    /// left of `t` (no allocation: a get is the search's most frequent step).
    fn is(&self, t: &Text) -> bool {
        if self.len != t.text.len() || self.hash != t.hash {
            return false;
        }
        let mut rest = t.as_str().as_bytes();
        let mut at = self.last.as_deref();
        while let Some(p) = at {
            let Some(head) = rest.strip_suffix(p.text.as_str().as_bytes()) else {
                return false;
            };
            rest = head;
            at = p.prev.as_deref();
        }
        rest.is_empty()
    }

    /// Whether two chains spell the same text, compared from the end without allocating (a
    /// cache lookup that finds an equal hash lands here). Lengths are equal when called.
    fn same_text(&self, o: &KvValue) -> bool {
        let (mut pa, mut pb) = (self.last.as_deref(), o.last.as_deref());
        let (mut ra, mut rb): (&[u8], &[u8]) = (&[], &[]);
        loop {
            while ra.is_empty() {
                let Some(p) = pa else { break };
                ra = p.text.as_str().as_bytes();
                pa = p.prev.as_deref();
            }
            while rb.is_empty() {
                let Some(p) = pb else { break };
                rb = p.text.as_str().as_bytes();
                pb = p.prev.as_deref();
            }
            if ra.is_empty() || rb.is_empty() {
                return ra.is_empty() && rb.is_empty();
            }
            if let (Some(x), Some(y)) = (pa, pb)
                && std::ptr::eq(x, y)
                && ra == rb
            {
                // The rest of both chains is one shared chain.
                return true;
            }
            let n = ra.len().min(rb.len());
            if ra[ra.len() - n..] != rb[rb.len() - n..] {
                return false;
            }
            ra = &ra[..ra.len() - n];
            rb = &rb[..rb.len() - n];
        }
    }

    fn to_text(&self) -> String {
        self.pieces().concat()
    }
}

impl PartialEq for KvValue {
    fn eq(&self, o: &KvValue) -> bool {
        if self.len != o.len || self.hash != o.hash {
            return false;
        }
        match (&self.last, &o.last) {
            (Some(a), Some(b)) if Arc::ptr_eq(a, b) => true,
            _ => self.same_text(o),
        }
    }
}
impl Eq for KvValue {}
impl Hash for KvValue {
    fn hash<H: Hasher>(&self, h: &mut H) {
        (self.len, self.hash).hash(h);
    }
}
impl fmt::Debug for KvValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_text(), f)
    }
}

/// A key-value model state: the written keys in key order with their values. A history checked
/// per key holds one entry; copying a state copies one pointer.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct KvState(Arc<[(Text, KvValue)]>);

impl KvState {
    fn get(&self, k: &Text) -> Option<&KvValue> {
        self.0.iter().find(|(key, _)| key == k).map(|(_, v)| v)
    }

    /// This state with `k` set to `f(current value)`.
    fn with(&self, k: &Text, f: impl FnOnce(Option<&KvValue>) -> KvValue) -> KvState {
        let mut entries: Vec<(Text, KvValue)> = self.0.to_vec();
        match entries.binary_search_by(|(key, _)| key.as_str().cmp(k.as_str())) {
            Ok(i) => entries[i].1 = f(Some(&entries[i].1)),
            Err(i) => entries.insert(i, (k.clone(), f(None))),
        }
        KvState(entries.into())
    }
}

impl fmt::Debug for KvState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(k, v)| (k, v)))
            .finish()
    }
}

/// A key-value op; keys come from `Op::key` (`""` when absent).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KvOp {
    /// `get` observed this value (`None` = absent).
    Get(Text, Option<Text>),
    /// `put` a value.
    Put(Text, Text),
    /// `append` a string to the value (absent counts as empty).
    Append(Text, Text),
}

impl KvOp {
    /// `get k` observed `v` (`None` = absent).
    pub fn get(k: &str, v: Option<&str>) -> KvOp {
        KvOp::Get(k.into(), v.map(Text::new))
    }
    /// `put k v`.
    pub fn put(k: &str, v: &str) -> KvOp {
        KvOp::Put(k.into(), v.into())
    }
    /// `append k v`.
    pub fn append(k: &str, v: &str) -> KvOp {
        KvOp::Append(k.into(), v.into())
    }
}

/// Key-value map with `get`, `put` and `append`; values are strings (integers are stringified).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KvModel {
    /// Every key starts as `""` (Porcupine) instead of absent.
    pub missing_is_empty: bool,
}

impl KvModel {
    /// Porcupine's kv model: every key starts as the empty string.
    pub fn porcupine() -> KvModel {
        KvModel {
            missing_is_empty: true,
        }
    }
}

fn string_value(invoke: &Op, v: &Value) -> Result<Text, String> {
    match v {
        Value::String(s) => Ok(Text::new(s)),
        Value::Number(n) => Ok(Text::new(&n.to_string())),
        other => Err(bad(invoke, "a string value", other)),
    }
}

impl Model for KvModel {
    type State = KvState;
    type Op = KvOp;

    fn name(&self) -> &'static str {
        "kv"
    }

    fn init(&self) -> Self::State {
        KvState::default()
    }

    fn convert(&self, invoke: &Op, completion: Option<&Op>) -> Result<Convert<KvOp>, String> {
        let key = Text::new(invoke.key.as_deref().unwrap_or_default());
        let o = outcome(completion);
        match invoke.f.as_str() {
            "get" => match o {
                Outcome::Ok(c) => {
                    let v = match &c.value {
                        Value::Null if self.missing_is_empty => Some(Text::new("")),
                        Value::Null => None,
                        v => Some(string_value(invoke, v)?),
                    };
                    Ok(Convert::Completed(KvOp::Get(key, v)))
                }
                _ => Ok(Convert::Skip),
            },
            "put" | "append" => {
                if matches!(o, Outcome::Fail(_)) {
                    return Ok(Convert::Skip);
                }
                let v = string_value(invoke, &invoke.value)?;
                let op = if invoke.f == "put" {
                    KvOp::Put(key, v)
                } else {
                    KvOp::Append(key, v)
                };
                Ok(wrap(o, op))
            }
            f => Err(format!(
                "op {} (process {}): kv model has no operation {f:?}",
                invoke.index, invoke.process
            )),
        }
    }

    fn step(&self, s: &Self::State, op: &KvOp) -> Option<Self::State> {
        match op {
            KvOp::Get(k, v) => {
                let holds = match (s.get(k), v) {
                    (Some(cur), Some(v)) => cur.is(v),
                    (Some(_), None) => false,
                    (None, Some(v)) => self.missing_is_empty && v.as_str().is_empty(),
                    (None, None) => !self.missing_is_empty,
                };
                holds.then(|| s.clone())
            }
            KvOp::Put(k, v) => Some(s.with(k, |_| KvValue::put(v))),
            KvOp::Append(k, v) => Some(s.with(k, |cur| match cur {
                Some(c) => c.append(v),
                None => KvValue::put(v),
            })),
        }
    }

    fn is_read_only(&self, op: &KvOp) -> bool {
        matches!(op, KvOp::Get(..))
    }

    fn state_heap_bytes(&self, s: &Self::State) -> usize {
        // The entry slice and, per entry, the piece the state's own step added (earlier pieces
        // and the texts are shared with the states before it and with the ops).
        let entry = std::mem::size_of::<(Text, KvValue)>();
        16 + s.0.len() * (entry + std::mem::size_of::<Piece>() + 16)
    }

    fn describe_op(&self, op: &KvOp) -> String {
        match op {
            KvOp::Get(k, v) => format!("get {} → {:?}", k.as_str(), v.as_ref().map(Text::as_str)),
            KvOp::Put(k, v) => format!("put {} {:?}", k.as_str(), v.as_str()),
            KvOp::Append(k, v) => format!("append {} {:?}", k.as_str(), v.as_str()),
        }
    }

    fn describe_state(&self, s: &Self::State) -> String {
        format!("{s:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{conv, inv, run};
    use super::*;
    use crate::history::OpType;
    use serde_json::json;

    #[test]
    fn kv_get_put_append() {
        let m = KvModel::default();
        let ops = [
            KvOp::get("k", None),
            KvOp::put("k", "a"),
            KvOp::append("k", "b"),
            KvOp::get("k", Some("ab")),
        ];
        assert!(run(&m, &ops).is_some());
        assert!(run(&m, &[KvOp::append("k", "x"), KvOp::get("k", Some("y"))]).is_none());
        let mut i = inv("put", json!("v"));
        i.key = Some("k9".into());
        assert_eq!(
            m.convert(&i, None).unwrap(),
            Convert::Pending(KvOp::put("k9", "v"))
        );
    }

    #[test]
    fn porcupine_keys_start_empty() {
        let empty_get = [KvOp::get("k", Some(""))];
        assert!(run(&KvModel::default(), &empty_get).is_none());
        let m = KvModel::porcupine();
        assert!(
            run(&m, &empty_get).is_some(),
            "a never-written key reads \"\""
        );
        assert!(run(&m, &[KvOp::get("k", Some("x"))]).is_none());
        assert!(run(&m, &[KvOp::append("k", "x"), KvOp::get("k", Some("x"))]).is_some());
        // A null get means "" here.
        assert_eq!(
            conv(&m, "get", Value::Null, Some(OpType::Ok), Value::Null),
            Convert::Completed(KvOp::get("", Some("")))
        );
    }

    #[test]
    fn values_built_by_different_appends_are_equal_exactly_when_their_text_is() {
        let m = KvModel::default();
        let after = |ops: &[KvOp]| run(&m, ops).expect("consistent");
        // "ab" + "c" and "a" + "bc": different chains, same text — one state.
        let x = after(&[KvOp::put("k", "ab"), KvOp::append("k", "c")]);
        let y = after(&[KvOp::put("k", "a"), KvOp::append("k", "bc")]);
        assert_eq!(x, y);
        let hash = |s: &KvState| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            s.hash(&mut h);
            h.finish()
        };
        assert_eq!(hash(&x), hash(&y));
        // Same length, other text.
        let z = after(&[KvOp::put("k", "a"), KvOp::append("k", "bd")]);
        assert_ne!(x, z);
        // A get compares the whole text, piece by piece.
        for (got, ok) in [
            ("abc", true),
            ("abd", false),
            ("ab", false),
            ("abcd", false),
        ] {
            let ops = [
                KvOp::put("k", "a"),
                KvOp::append("k", "bc"),
                KvOp::get("k", Some(got)),
            ];
            assert_eq!(run(&m, &ops).is_some(), ok, "{got}");
        }
        // Keys stay apart and in order.
        let two = after(&[
            KvOp::append("b", "1"),
            KvOp::append("a", "2"),
            KvOp::append("b", "3"),
        ]);
        assert_eq!(format!("{two:?}"), r#"{"a": "2", "b": "13"}"#);
        assert_eq!(m.describe_state(&two), r#"{"a": "2", "b": "13"}"#);
    }

    #[test]
    fn a_long_append_chain_is_compared_exactly_against_a_get() {
        let m = KvModel::porcupine();
        let mut ops: Vec<KvOp> = (0..2000)
            .map(|i| KvOp::append("k", &format!("x {i} y")))
            .collect();
        let full: String = (0..2000).map(|i| format!("x {i} y")).collect();
        ops.push(KvOp::get("k", Some(&full)));
        assert!(run(&m, &ops).is_some());
        let mut wrong = full.clone();
        wrong.replace_range(5000..5001, "#");
        *ops.last_mut().unwrap() = KvOp::get("k", Some(&wrong));
        assert!(run(&m, &ops).is_none());
    }
}
