//! The list-append transaction workload (Elle's list-append, multi-key): each op is a transaction
//! `f = "txn"` whose value is 1..=`max_mops` micro-ops `["append", k, e]` / `["r", k, null]` over
//! a small pool of active keys, so transactions overlap on keys and dependency cycles can form.
//! Elements are unique per key (1, 2, 3, … in issue order); a key that has taken
//! `appends_per_key` appends is retired and replaced by a fresh one, which bounds list length.
//!
//! Owns which transaction is issued, and reading a transaction's micro-ops back ([`parse_mops`],
//! for the clients that execute them). Does not own executing it (clients, e.g.
//! `systems::postgres::txn`) or checking it (`checker::txn`). Pure.

use super::workload::WorkloadConfigError;
use super::{Context, Generator, Next, OpSpec, pick_free_client};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

/// The workload kind (`kind = "txn"` in `workloads/*.toml`, `WorkloadSpec::kind`).
pub const KIND: &str = "txn";

/// The `f` of every op of this workload.
pub const F: &str = "txn";

/// Configuration of [`txn_workload`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnConfig {
    /// Relative weight of read micro-ops.
    pub read_weight: u32,
    /// Relative weight of append micro-ops.
    pub append_weight: u32,
    /// Keys in use at a time.
    pub active_keys: usize,
    /// Micro-ops per transaction: 1..=max_mops.
    pub max_mops: usize,
    /// Appends a key takes before it is retired.
    pub appends_per_key: u64,
}

impl Default for TxnConfig {
    fn default() -> TxnConfig {
        TxnConfig {
            read_weight: 1,
            append_weight: 1,
            active_keys: 8,
            max_mops: 4,
            appends_per_key: 64,
        }
    }
}

impl TxnConfig {
    /// Check the configuration.
    pub fn validate(&self) -> Result<(), WorkloadConfigError> {
        let err = |field, message: &str| WorkloadConfigError {
            what: "txn workload",
            field,
            message: message.to_string(),
        };
        if u64::from(self.read_weight) + u64::from(self.append_weight) == 0 {
            return Err(err("read_weight/append_weight", "must not both be 0"));
        }
        if self.active_keys == 0 {
            return Err(err("active_keys", "must be at least 1, got 0"));
        }
        if self.max_mops == 0 {
            return Err(err("max_mops", "must be at least 1, got 0"));
        }
        if self.appends_per_key == 0 {
            return Err(err("appends_per_key", "must be at least 1, got 0"));
        }
        Ok(())
    }
}

/// The transaction workload; see [`txn_workload`].
pub struct TxnWorkload {
    cfg: TxnConfig,
    /// Active keys: (key, next element, appends so far).
    active: Vec<(u64, i64, u64)>,
    next_key: u64,
}

/// The transaction workload, infinite (bound it with `time_limit`). Each op goes to a uniformly
/// random free client thread. There are no final reads: a transaction history is checked from
/// the transactions' own reads (as Elle's list-append workload).
pub fn txn_workload(cfg: TxnConfig) -> Result<TxnWorkload, WorkloadConfigError> {
    cfg.validate()?;
    let active = (0..cfg.active_keys as u64).map(|k| (k, 1, 0)).collect();
    Ok(TxnWorkload {
        next_key: cfg.active_keys as u64,
        cfg,
        active,
    })
}

impl Generator for TxnWorkload {
    fn next(&mut self, ctx: &Context, rng: &mut ChaCha8Rng) -> Next {
        if ctx.client_threads == 0 {
            return Next::Done;
        }
        let Some(thread) = pick_free_client(ctx, rng) else {
            return Next::Pending;
        };
        let n = rng.random_range(1..=self.cfg.max_mops);
        let total = u64::from(self.cfg.read_weight) + u64::from(self.cfg.append_weight);
        let mut mops = Vec::with_capacity(n);
        for _ in 0..n {
            let slot = rng.random_range(0..self.active.len());
            let (key, _, _) = self.active[slot];
            if rng.random_range(0..total) < u64::from(self.cfg.append_weight) {
                let entry = &mut self.active[slot];
                mops.push(json!(["append", key, entry.1]));
                entry.1 += 1;
                entry.2 += 1;
                if entry.2 >= self.cfg.appends_per_key {
                    *entry = (self.next_key, 1, 0);
                    self.next_key += 1;
                }
            } else {
                mops.push(json!(["r", key, null]));
            }
        }
        Next::Op(OpSpec::new(F, None, Value::Array(mops)).at(thread, ctx.time_ns))
    }
}

/// One micro-op of a transaction's value, as the clients that execute it read it.
#[derive(Debug, Clone, PartialEq)]
pub enum Mop {
    /// `["append", k, e]`: append integer `e` to key `k`'s list.
    Append {
        /// The key, as the op names it.
        key: Value,
        /// The element appended.
        elem: i64,
    },
    /// `["r", k, null]` (or `["r", k]`): read key `k`'s list.
    Read {
        /// The key, as the op names it.
        key: Value,
    },
}

/// The SQL text of a key: a string as is, anything else as its JSON.
pub fn key_text(k: &Value) -> String {
    match k {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The micro-ops of a `txn` op value; words naming the bad one otherwise.
pub fn parse_mops(value: &Value) -> Result<Vec<Mop>, String> {
    let Some(items) = value.as_array().filter(|a| !a.is_empty()) else {
        return Err(format!("txn: expected a list of micro-ops, got {value}"));
    };
    items
        .iter()
        .map(|m| {
            let parts = m.as_array().map(Vec::as_slice).unwrap_or(&[]);
            match parts {
                [f, k, e] if f == "append" => e
                    .as_i64()
                    .map(|elem| Mop::Append {
                        key: k.clone(),
                        elem,
                    })
                    .ok_or_else(|| format!("txn: append needs an integer element, got {m}")),
                [f, k] | [f, k, Value::Null] if f == "r" => Ok(Mop::Read { key: k.clone() }),
                _ => Err(format!(
                    "txn: expected [\"append\", k, integer] or [\"r\", k, null], got {m}"
                )),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micro_ops_parse_and_bad_ones_are_refused() {
        let m = parse_mops(&json!([["append", 3, 7], ["r", 3, null], ["r", "k"]])).unwrap();
        assert_eq!(
            m,
            vec![
                Mop::Append {
                    key: json!(3),
                    elem: 7
                },
                Mop::Read { key: json!(3) },
                Mop::Read { key: json!("k") }
            ]
        );
        assert!(parse_mops(&json!([])).is_err());
        assert!(
            parse_mops(&json!([["append", 3, "x"]]))
                .unwrap_err()
                .contains("integer")
        );
        assert!(parse_mops(&json!([["w", 3, 1]])).is_err());
        assert_eq!(key_text(&json!(3)), "3");
        assert_eq!(key_text(&json!("k")), "k");
    }
    use rand::SeedableRng;

    #[test]
    fn transactions_append_unique_elements_and_retire_full_keys() {
        let mut g = txn_workload(TxnConfig {
            active_keys: 2,
            appends_per_key: 3,
            ..TxnConfig::default()
        })
        .unwrap();
        let ctx = Context::new(4, vec![]);
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut seen = std::collections::BTreeSet::new();
        let mut per_key: std::collections::BTreeMap<u64, u64> = Default::default();
        for _ in 0..200 {
            let Next::Op(inv) = g.next(&ctx, &mut rng) else {
                panic!("an op every time")
            };
            assert_eq!(inv.f, F);
            let mops = inv.value.as_array().unwrap();
            assert!((1..=4).contains(&mops.len()));
            for m in mops {
                let key = m[1].as_u64().unwrap();
                if m[0] == "append" {
                    assert!(seen.insert((key, m[2].as_i64().unwrap())), "unique");
                    *per_key.entry(key).or_default() += 1;
                } else {
                    assert_eq!((m[0].as_str(), &m[2]), (Some("r"), &Value::Null));
                }
            }
        }
        assert!(per_key.values().all(|&n| n <= 3));
        assert!(per_key.len() > 10, "keys were retired: {per_key:?}");
        assert!(
            txn_workload(TxnConfig {
                max_mops: 0,
                ..TxnConfig::default()
            })
            .is_err()
        );
    }
}
