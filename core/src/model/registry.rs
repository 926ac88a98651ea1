//! The model registry: every model name `check --model` accepts and the model value each stands
//! for, built from `ModelOptions`.
//!
//! Owns the name → model mapping, reached through a [`ModelVisitor`] so the caller (the checker
//! composition, `checker::compose`) runs its generic search on the concrete model without this
//! module knowing the checker (the names of the models a checker of their own reads, `TXN`,
//! `LOG` and `SET_FULL`, are defined here and named by those checkers). Does not own choosing a model for a history (`import`) or the
//! search (`checker::linear`). Pure: no IO.

use super::{
    CounterModel, ListAppendModel, Model, ModelOptions, MultiRegisterModel, MutexModel, QueueModel,
    RegisterModel, SetModel,
};

/// The transactional model: its histories go to the transactional checker, whose results carry
/// this name (`checker::txn::NAME`).
pub const TXN: &str = "txn";

/// The log model: its histories go to the log checker, whose results carry this name
/// (`checker::log::NAME`).
pub const LOG: &str = "log";

/// Jepsen's set-full model: its histories go to the set-full checker, whose results carry this
/// name (`checker::set_full::NAME`).
pub const SET_FULL: &str = "set-full";

/// The lock model: its histories go to the lock checker (`checker::lock::MODEL`).
pub const LOCK: &str = "lock";

/// Every model name, in `--model` help order.
pub const NAMES: [&str; 12] = [
    "register",
    "cas-register",
    "multi-register",
    "kv",
    "list-append",
    "set",
    SET_FULL,
    "queue",
    "mutex",
    "counter",
    TXN,
    LOG,
];

/// Something done with a model of any type (e.g. the linearizability search).
pub trait ModelVisitor {
    /// What visiting gives.
    type Output;
    /// Do it with `model`.
    fn visit<M: Model>(self, model: M) -> Self::Output;
}

/// Hand the model named `name`, configured by `opts`, to `visitor`. An unknown name is an error
/// listing the known ones.
pub fn visit<V: ModelVisitor>(
    name: &str,
    opts: &ModelOptions,
    visitor: V,
) -> Result<V::Output, String> {
    let reg = opts.register.clone();
    Ok(match name {
        "register" => visitor.visit(RegisterModel::register(reg)),
        "cas-register" => visitor.visit(RegisterModel::cas_register(reg)),
        "multi-register" => visitor.visit(MultiRegisterModel::new(0)),
        "kv" => visitor.visit(opts.kv),
        "list-append" => visitor.visit(ListAppendModel),
        "set" => visitor.visit(SetModel::default()),
        "queue" => visitor.visit(QueueModel::default()),
        "mutex" => visitor.visit(MutexModel),
        "counter" => visitor.visit(CounterModel),
        TXN => {
            return Err(format!(
                "model {name} is checked by the transactional checker (dependency cycles), not a linearizability search"
            ));
        }
        LOG => {
            return Err(format!(
                "model {name} is checked by the log checker (lost, inconsistent offsets), not a linearizability search"
            ));
        }
        SET_FULL => {
            return Err(format!(
                "model {name} is checked by the set-full checker (Jepsen's per-element outcomes), not a linearizability search"
            ));
        }
        other => return Err(unknown(other)),
    })
}

/// The error for an unknown `--model`.
pub fn unknown(name: &str) -> String {
    format!(
        "--model {name:?}: expected auto, {} or {}",
        NAMES[..NAMES.len() - 1].join(", "),
        NAMES[NAMES.len() - 1]
    )
}

/// Whether `name` is a known model.
pub fn is_known(name: &str) -> bool {
    NAMES.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Name;
    impl ModelVisitor for Name {
        type Output = &'static str;
        fn visit<M: Model>(self, _: M) -> &'static str {
            std::any::type_name::<M>()
        }
    }

    #[test]
    fn every_name_visits_a_model_and_unknown_names_list_them_all() {
        let opts = ModelOptions::preset(super::super::SemanticsPreset::Etcd);
        for n in NAMES {
            let own = n == TXN || n == LOG || n == SET_FULL;
            assert_eq!(visit(n, &opts, Name).is_ok(), !own, "{n}");
            assert!(is_known(n));
        }
        assert!(visit("kv", &opts, Name).unwrap().ends_with("KvModel"));
        let e = visit("graph", &opts, Name).unwrap_err();
        assert_eq!(
            e,
            "--model \"graph\": expected auto, register, cas-register, multi-register, kv, list-append, set, set-full, queue, mutex, counter, txn or log"
        );
        assert!(!is_known("auto"));
    }
}
