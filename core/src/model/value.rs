//! Model values: integers as themselves, every other JSON/EDN scalar (strings, keywords, floats,
//! booleans) interned to a small id, so model states stay small, `Copy` and cheap to
//! hash while values compare by equality as Knossos compares them (`"938"` ≠ `938` ≠ `938.0`).
//!
//! Owns `Scalar` and the `Values` interner shared by a model and its descriptions (a witness shows
//! the original value, e.g. `"938"`). Does not own any model's semantics. Keywords arrive as their
//! name string (the EDN reader maps `:foo` to `"foo"`), so `:foo` and `"foo"` are one value.

use serde_json::Value;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

/// A model value: an integer, or the id of an interned non-integer value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scalar {
    /// An integer that fits in an i64.
    Int(i64),
    /// Any other value, by its id in the model's [`Values`].
    Other(u32),
}

/// An array or object where a model expects a number, string, boolean or null.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotScalar;

#[derive(Debug, Default)]
struct Table {
    ids: HashMap<String, u32>,
    texts: Vec<String>,
}

/// Interns non-integer values to [`Scalar::Other`] ids. Cloning shares the table. Integers never
/// touch the table (no lock on the hot path of integer histories).
#[derive(Debug, Clone, Default)]
pub struct Values {
    table: Arc<Mutex<Table>>,
}

impl Values {
    /// A fresh, empty table.
    pub fn new() -> Values {
        Values::default()
    }

    /// The scalar for a number, string or boolean; `None` for `null`, arrays and objects.
    /// Integral JSON numbers that fit in i64 are `Int`; other scalars are interned by their JSON
    /// text.
    pub fn scalar(&self, v: &Value) -> Option<Scalar> {
        match v {
            Value::Number(n) if n.as_i64().is_some() => n.as_i64().map(Scalar::Int),
            Value::Number(_) | Value::String(_) | Value::Bool(_) => {
                Some(self.intern(v.to_string()))
            }
            Value::Null | Value::Array(_) | Value::Object(_) => None,
        }
    }

    /// An observed value: `Ok(None)` for `null`, `Ok(Some(_))` for a scalar, `Err(NotScalar)`
    /// for an array or object (not a value these models hold).
    pub fn observed(&self, v: &Value) -> Result<Option<Scalar>, NotScalar> {
        match v {
            Value::Null => Ok(None),
            other => self.scalar(other).map(Some).ok_or(NotScalar),
        }
    }

    fn intern(&self, text: String) -> Scalar {
        let mut t = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(&id) = t.ids.get(&text) {
            return Scalar::Other(id);
        }
        let id = u32::try_from(t.texts.len()).unwrap_or(u32::MAX);
        t.texts.push(text.clone());
        t.ids.insert(text, id);
        Scalar::Other(id)
    }

    /// The original value's text: integers as digits, others as JSON (`"938"`, `true`, `1.5`).
    pub fn show(&self, s: Scalar) -> String {
        match s {
            Scalar::Int(i) => i.to_string(),
            Scalar::Other(id) => {
                let t = self.table.lock().unwrap_or_else(PoisonError::into_inner);
                t.texts
                    .get(id as usize)
                    .cloned()
                    .unwrap_or_else(|| format!("<value #{id}>"))
            }
        }
    }

    /// The original value as JSON (`None` for an id this table never gave out).
    pub fn json(&self, s: Scalar) -> Option<Value> {
        match s {
            Scalar::Int(i) => Some(Value::from(i)),
            Scalar::Other(id) => {
                let t = self.table.lock().unwrap_or_else(PoisonError::into_inner);
                serde_json::from_str(t.texts.get(id as usize)?).ok()
            }
        }
    }

    /// [`Values::show`] with `None` as `absent`.
    pub fn show_opt(&self, s: Option<Scalar>) -> String {
        s.map_or_else(|| "absent".to_string(), |s| self.show(s))
    }

    /// A displayable list of scalars, e.g. `{1, "a"}` with the given brackets.
    pub fn show_all<'a>(
        &self,
        items: impl IntoIterator<Item = &'a Scalar>,
        open: &str,
        close: &str,
    ) -> String {
        let parts: Vec<String> = items.into_iter().map(|s| self.show(*s)).collect();
        format!("{open}{}{close}", parts.join(", "))
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Other(id) => write!(f, "#{id}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integers_are_themselves_and_others_compare_by_equality() {
        let v = Values::new();
        assert_eq!(v.scalar(&json!(938)), Some(Scalar::Int(938)));
        assert_eq!(v.scalar(&Value::Null), None);
        let s = v.scalar(&json!("938")).unwrap();
        assert_ne!(s, Scalar::Int(938), "a string is not the integer");
        assert_eq!(v.scalar(&json!("938")), Some(s), "same string, same id");
        assert_ne!(v.scalar(&json!(938.0)), Some(Scalar::Int(938)));
        assert_ne!(v.scalar(&json!("x")), Some(s));
        assert_eq!(v.show(s), "\"938\"");
        assert_eq!(v.show(Scalar::Int(-3)), "-3");
        assert_eq!(v.show_opt(None), "absent");
        assert_eq!(v.scalar(&json!([1])), None);
        assert_eq!(v.observed(&json!({"a": 1})), Err(NotScalar));
        assert_eq!(v.observed(&Value::Null), Ok(None));
        assert_eq!(v.show(v.scalar(&json!(true)).unwrap()), "true");
        let shared = v.clone();
        assert_eq!(shared.show(s), "\"938\"");
    }

    #[test]
    fn a_scalar_gives_back_the_json_it_was_read_from() {
        let v = Values::new();
        for x in [
            json!(938),
            json!("938"),
            json!(1.5),
            json!(true),
            json!("a \"q\""),
        ] {
            let s = v.scalar(&x).unwrap();
            assert_eq!(v.json(s), Some(x.clone()));
            // Read again, it is the same scalar.
            assert_eq!(v.scalar(&v.json(s).unwrap()), Some(s));
        }
        assert_eq!(v.json(Scalar::Other(99)), None);
    }
}
