//! List-append future reads (Elle's `future-read`): a committed transaction read a key and saw
//! an element it appends to that key only later on. One pass over each transaction's micro-ops.
//!
//! Owns that one anomaly for list-append. Does not own the other non-cycle anomalies (`infer`),
//! or rw-register's future reads (`register`, which knows each value's writer). Pure.

use super::Found;
use super::anomaly::{Kind, Other};
use super::infer::{found, tname};
use super::parse::{Mop, Status, Txns};

/// Every future read of a committed transaction.
pub fn future_reads(t: &Txns) -> Vec<Found> {
    let mut out = Vec::new();
    for (i, tx) in t.txns.iter().enumerate() {
        if tx.status != Status::Ok {
            continue;
        }
        for (at, m) in tx.mops.iter().enumerate() {
            let (key, seen): (u32, Vec<u32>) = match m {
                Mop::Read {
                    key,
                    list: Some(list),
                } => (*key, list.clone()),
                _ => continue,
            };
            let later = tx.mops[at + 1..].iter().find_map(|w| match *w {
                Mop::Append { key: k, elem } if k == key && seen.contains(&elem) => Some(elem),
                _ => None,
            });
            if let Some(e) = later {
                let name = tname(t, i as u32);
                out.push(found(
                    Kind::Other(Other::FutureRead),
                    t,
                    &[i as u32],
                    format!(
                        "{name} read key {} and saw {}, which {name} itself writes only later in the transaction",
                        t.keys.show(key),
                        t.elems.show(e)
                    ),
                ));
            }
        }
    }
    out
}
