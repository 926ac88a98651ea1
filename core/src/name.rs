//! `Name`: an interned string for the short words a history repeats on every op — the function
//! (`read`, `write`, `cas`, a nemesis verb), the key and the node.
//!
//! Owns the type and its conversions. Does not own where names come from (the history reader,
//! the generators, the importers). A `Name` is one pointer into a process-wide table of strings
//! ([`ustr`]): equal names are one copy, comparing two is comparing pointers, and an op pays
//! 8 bytes per name instead of a 24-byte `String` and its allocation. The table never frees a
//! string, which suits names (a history has few distinct ones: a 10M-op soak has 3 functions,
//! 5 nodes and 50,000 keys); free text such as error messages stays a `String`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::ops::Deref;
use ustr::Ustr;

/// Slots of [`RECENT_NAMES`].
const RECENT_SLOTS: usize = 1024;
/// Texts longer than this skip [`RECENT_NAMES`].
const RECENT_LEN: usize = 64;

thread_local! {
    /// The names this thread made last, by a hash of their text: a history's reader makes the
    /// same few names on every op (its functions, the keys in play), and the shared table's
    /// lock was the dearest part of making one (8 % of the streamed check).
    static RECENT_NAMES: std::cell::RefCell<[Option<Ustr>; RECENT_SLOTS]> =
        const { std::cell::RefCell::new([None; RECENT_SLOTS]) };
}

/// `s`'s slot in [`RECENT_NAMES`] (rustc-hash's hash of its text).
fn recent_slot(s: &str) -> usize {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(s) as usize % RECENT_SLOTS
}

/// An interned string: reads as a `&str` (it derefs to one), compares and hashes in O(1),
/// orders as its text does.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Name(Ustr);

impl Name {
    /// The name of `s`, interning it on first use.
    pub fn new(s: &str) -> Name {
        if s.len() > RECENT_LEN {
            return Name(Ustr::from(s));
        }
        let slot = recent_slot(s);
        RECENT_NAMES
            .try_with(|recent| {
                let mut recent = recent.borrow_mut();
                match recent[slot] {
                    Some(u) if u.as_str() == s => Name(u),
                    _ => {
                        let u = Ustr::from(s);
                        recent[slot] = Some(u);
                        Name(u)
                    }
                }
            })
            .unwrap_or_else(|_| Name(Ustr::from(s)))
    }

    /// The text, which lives as long as the process.
    pub fn as_str(&self) -> &'static str {
        self.0.as_str()
    }
}

impl Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        self.0.as_str()
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        self.0.as_str()
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.as_str())
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.0.as_str(), f)
    }
}

impl From<&str> for Name {
    fn from(s: &str) -> Name {
        Name::new(s)
    }
}

impl From<String> for Name {
    fn from(s: String) -> Name {
        Name::new(&s)
    }
}

impl From<&String> for Name {
    fn from(s: &String) -> Name {
        Name::new(s)
    }
}

impl From<&Name> for Name {
    fn from(s: &Name) -> Name {
        s.clone()
    }
}

impl From<Name> for String {
    fn from(n: Name) -> String {
        n.0.as_str().to_string()
    }
}

impl From<&Name> for String {
    fn from(n: &Name) -> String {
        n.0.as_str().to_string()
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        self.0.as_str() == other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        self.0.as_str() == *other
    }
}

impl PartialEq<String> for Name {
    fn eq(&self, other: &String) -> bool {
        self.0.as_str() == other.as_str()
    }
}

impl PartialEq<Name> for str {
    fn eq(&self, other: &Name) -> bool {
        self == other.0.as_str()
    }
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        *self == other.0.as_str()
    }
}

impl PartialEq<Name> for String {
    fn eq(&self, other: &Name) -> bool {
        self.as_str() == other.0.as_str()
    }
}

impl Serialize for Name {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0.as_str())
    }
}

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Name, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Name;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Name, E> {
                Ok(Name::new(s))
            }
        }
        d.deserialize_str(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_are_one_name_and_compare_as_text() {
        let a = Name::new("write");
        let b = Name::from(String::from("write"));
        assert_eq!(a, b);
        assert_eq!(a.as_str().as_ptr(), b.as_str().as_ptr());
        assert_eq!(a, "write");
        assert_eq!("write", a);
        assert_eq!(a, *"write");
        assert_eq!(a, String::from("write"));
        assert_ne!(a, Name::new("read"));
        // Orders as text, whatever order the names were interned in.
        let mut v = vec![Name::new("zz-1"), Name::new("aa-1"), Name::new("mm-1")];
        v.sort();
        assert_eq!(v, ["aa-1", "mm-1", "zz-1"].map(Name::new));
        assert_eq!(format!("{a} {a:?}"), "write \"write\"");
        assert_eq!(std::mem::size_of::<Option<Name>>(), 8);
    }

    #[test]
    fn names_from_the_recent_cache_are_the_shared_ones() {
        // Texts that share a slot of the cache, made over and over, and one too long for it:
        // each is always its own text, and the one name every thread makes of it.
        let texts: Vec<String> = (0..5000)
            .map(|i| format!("k{i}"))
            .chain(["x".repeat(100)])
            .collect();
        for round in 0..3 {
            for t in &texts {
                let n = Name::new(t);
                assert_eq!(n.as_str(), t, "round {round}");
                assert_eq!(n.as_str().as_ptr(), Ustr::from(t).as_str().as_ptr());
            }
        }
        let elsewhere = std::thread::spawn(|| Name::new("k17")).join().unwrap();
        assert_eq!(
            elsewhere.as_str().as_ptr(),
            Name::new("k17").as_str().as_ptr()
        );
    }

    #[test]
    fn serializes_as_a_plain_string() {
        let n: Name = serde_json::from_str("\"k\\u00e9 7\"").unwrap();
        assert_eq!(n, "ké 7");
        assert_eq!(serde_json::to_string(&n).unwrap(), "\"ké 7\"");
        assert!(serde_json::from_str::<Name>("7").is_err());
    }
}
