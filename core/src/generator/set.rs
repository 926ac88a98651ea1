//! The set workload (Jepsen's set-full workload): `add` integers unique across the whole run to a
//! few independent keys, with occasional `read`s of a key's whole set; the final reads after the
//! heal come from [`super::final_reads`].
//!
//! Owns which set op is issued on which key and the run-wide element counter. Does not own key
//! rotation (reused from the register workload), executing ops (clients) or checking them
//! (`checker::set`).

use super::workload::{
    KeyLog, RegisterConfig, RegisterWorkload, WorkloadConfigError, register_workload,
};
use super::{Context, Generator, Next};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The workload kind (`kind = "set"` in `workloads/*.toml`, `WorkloadSpec::kind`).
pub const KIND: &str = "set";

/// The `f` of a set add.
pub const ADD: &str = "add";
/// The `f` of a set read (the whole set of a key).
pub const READ: &str = "read";

/// Configuration of [`set_workload`]. Deserializes with defaults for missing fields and rejects
/// unknown ones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SetConfig {
    /// Relative weight of `read` ops.
    pub read_weight: u32,
    /// Relative weight of `add` ops.
    pub add_weight: u32,
    /// Client threads per key group.
    pub threads_per_key: usize,
    /// Ops a group issues on one key before moving to a fresh key (bounds a set's size).
    pub ops_per_key: u64,
    /// Prefix of key names; keys are `{prefix}{n}`, or just `{n}` without a prefix.
    pub key_prefix: Option<String>,
}

impl Default for SetConfig {
    fn default() -> SetConfig {
        SetConfig {
            read_weight: 1,
            add_weight: 10,
            threads_per_key: 5,
            ops_per_key: 1000,
            key_prefix: None,
        }
    }
}

impl SetConfig {
    /// Check the configuration.
    pub fn validate(&self) -> Result<(), WorkloadConfigError> {
        let err = |field, message: &str| WorkloadConfigError {
            what: "set workload",
            field,
            message: message.to_string(),
        };
        if u64::from(self.read_weight) + u64::from(self.add_weight) == 0 {
            return Err(err("read_weight/add_weight", "must not both be 0"));
        }
        if self.add_weight == 0 {
            return Err(err("add_weight", "must be at least 1: a set workload adds"));
        }
        if self.threads_per_key == 0 {
            return Err(err("threads_per_key", "must be at least 1, got 0"));
        }
        if self.ops_per_key == 0 {
            return Err(err("ops_per_key", "must be at least 1, got 0"));
        }
        Ok(())
    }
}

/// The set workload; see [`set_workload`].
pub struct SetWorkload {
    cfg: SetConfig,
    /// The register workload's key rotation, reused: only its thread and key choice are used.
    keys: RegisterWorkload,
    /// The next element to add, unique across the run and every key.
    next_element: i64,
}

/// Independent-key set workload, infinite (bound it with `time_limit` or `limit`). Keys rotate as
/// in [`register_workload`] (groups of `threads_per_key` threads, a fresh key after
/// `ops_per_key` ops). Each op goes to a uniformly random free client thread, on its group's
/// current key: `add` of the next integer (0, 1, 2, … in issue order across the whole run, never
/// reused on any key) or `read` (null; the client returns the key's elements), chosen by weight.
pub fn set_workload(cfg: SetConfig) -> Result<SetWorkload, WorkloadConfigError> {
    cfg.validate()?;
    let keys = register_workload(RegisterConfig {
        read_weight: 1,
        write_weight: 0,
        cas_weight: 0,
        max_value: 0,
        threads_per_key: cfg.threads_per_key,
        ops_per_key: cfg.ops_per_key,
        key_prefix: cfg.key_prefix.clone(),
    })?;
    Ok(SetWorkload {
        cfg,
        keys,
        next_element: 0,
    })
}

impl SetWorkload {
    /// A handle on the set of keys this workload used (for [`super::final_reads`]).
    pub fn keys_used(&self) -> KeyLog {
        self.keys.keys_used()
    }
}

impl Generator for SetWorkload {
    fn next(&mut self, ctx: &Context, rng: &mut ChaCha8Rng) -> Next {
        let mut inv = match self.keys.next(ctx, rng) {
            Next::Op(inv) => inv,
            other => return other,
        };
        let total = u64::from(self.cfg.read_weight) + u64::from(self.cfg.add_weight);
        if rng.random_range(0..total) < u64::from(self.cfg.add_weight) {
            inv.f = ADD.to_string();
            inv.value = Value::from(self.next_element);
            self.next_element += 1;
        } else {
            inv.f = READ.to_string();
            inv.value = Value::Null;
        }
        Next::Op(inv)
    }
}
