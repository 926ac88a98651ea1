//! The transactional verdict against what was asked: the consistency models the history must
//! satisfy and the anomalies it must not show (`check --consistency-models`, `--anomalies`; Elle's
//! `:consistency-models`, default strict-serializable, and `:anomalies`). An anomaly is
//! prohibited when a requested model proscribes it (Elle's `anomalies-prohibited-by`) or it
//! implies a named one (`all-anomalies-implying`); found anomalies that are not prohibited are
//! allowed: reported, never a failure.
//!
//! A green verdict must be earned: a prohibited anomaly the checker does not look for makes the
//! verdict unknown ("G-cursor is not checked") unless what was searched rules it out. The
//! coverage table here says which anomalies are looked for and when the others are ruled out.
//!
//! Owns the coverage table and the prohibited / allowed / not-checked split. Does not own the
//! lattice (`consistency`) or finding anomalies. Pure.

use super::consistency::{Anomaly, Model, implying, prohibited_by};
use serde::Serialize;
use std::collections::BTreeSet;

/// What the history is checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    /// Models that must hold (Elle's default: strict-serializable).
    pub models: Vec<Model>,
    /// Anomalies that must not occur (with every anomaly implying one of them).
    pub anomalies: Vec<Anomaly>,
}

impl Default for Ask {
    fn default() -> Self {
        Ask {
            models: vec![Model::StrictSerializable],
            anomalies: Vec::new(),
        }
    }
}

impl Ask {
    /// One model, no named anomalies.
    pub fn model(model: Model) -> Ask {
        Ask {
            models: vec![model],
            anomalies: Vec::new(),
        }
    }

    /// `--consistency-models` and `--anomalies` values (comma-separated Elle names); an unknown
    /// name is an error naming the flag, the name and every valid one.
    pub fn parse(models: &str, anomalies: Option<&str>) -> Result<Ask, String> {
        let items = |s: &str| -> Vec<String> {
            s.split(',')
                .map(|x| x.trim().trim_start_matches(':').to_string())
                .filter(|x| !x.is_empty())
                .collect()
        };
        let models = items(models)
            .iter()
            .map(|m| {
                Model::parse(m).ok_or_else(|| {
                    format!(
                        "--consistency-models: unknown model {m:?}; models are: {}",
                        Model::all_names().join(", ")
                    )
                })
            })
            .collect::<Result<Vec<Model>, String>>()?;
        // Elle's lattice gives the single-object and session models (linearizable, PRAM, …),
        // view-serializable, session-serializable and 1SR no anomaly: a check against one of them
        // alone would pass anything, so it is refused rather than called valid.
        if let Some(m) = models.iter().find(|m| prohibited_by(&[**m]).is_empty()) {
            return Err(format!(
                "--consistency-models: {} proscribes no anomaly a transactional check can find (Elle's lattice gives it none); ask for a transactional model, e.g. strict-serializable",
                m.name()
            ));
        }
        let anomalies = items(anomalies.unwrap_or(""))
            .iter()
            .map(|a| {
                Anomaly::parse(a).ok_or_else(|| {
                    let names: Vec<&str> = Anomaly::ALL.iter().map(|a| a.name()).collect();
                    format!(
                        "--anomalies: unknown anomaly {a:?}; anomalies are: {}",
                        names.join(", ")
                    )
                })
            })
            .collect::<Result<Vec<Anomaly>, String>>()?;
        if models.is_empty() && anomalies.is_empty() {
            return Err(
                "--consistency-models: no model given (and no --anomalies): nothing to check against"
                    .to_string(),
            );
        }
        Ok(Ask { models, anomalies })
    }

    /// Every anomaly that fails the check.
    pub fn prohibited(&self) -> BTreeSet<Anomaly> {
        let mut p = prohibited_by(&self.models);
        p.extend(implying(self.anomalies.iter().copied()));
        p
    }

    /// Split `found` into prohibited and allowed, and name the prohibited anomalies the search
    /// could not rule out. A prohibited anomaly that needs an order the dependency graph does not
    /// have ([`Orders`]: a history of completions only) cannot occur in the history: it is
    /// `unseen`, not unchecked, as in Elle.
    pub fn judge(&self, found: &BTreeSet<Anomaly>, orders: Orders) -> Judgement {
        let prohibited = self.prohibited();
        let absent = |a: &Anomaly| !found.contains(a);
        Judgement {
            prohibited: found.intersection(&prohibited).copied().collect(),
            allowed: found.difference(&prohibited).copied().collect(),
            not_checked: prohibited
                .iter()
                .copied()
                .filter(|a| absent(a) && orders.sees(*a) && !ruled_out(*a, found))
                .collect(),
            unseen: prohibited
                .iter()
                .copied()
                .filter(|a| absent(a) && !orders.sees(*a))
                .collect(),
        }
    }
}

/// Which order edges the dependency graph has besides the data edges (Elle's additional graphs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Orders {
    /// Real-time edges: a transaction that completed before another was invoked precedes it.
    pub realtime: bool,
    /// Process edges: a process's transactions in the order it ran them.
    pub process: bool,
}

impl Default for Orders {
    fn default() -> Self {
        Orders::BOTH
    }
}

impl Orders {
    /// A history with invokes: both orders.
    pub const BOTH: Orders = Orders {
        realtime: true,
        process: true,
    };

    /// A history of completions only has no real-time order. Process order is drawn as Elle's
    /// `additional-graphs` chooses it: Elle uses the real-time graph alone when `ask` prohibits a
    /// real-time anomaly (with invokes it implies process order; without them it is empty), the
    /// process graph (successive ok completions per process) when `ask` prohibits a process
    /// anomaly and no real-time one, and neither otherwise.
    pub fn completions_only(ask: &Ask) -> Orders {
        let prohibited = ask.prohibited();
        let realtime = prohibited.iter().any(|a| a.needs_realtime());
        Orders {
            realtime: false,
            process: !realtime && prohibited.iter().any(|a| a.needs_process()),
        }
    }

    /// Whether the graph can show `a`.
    pub fn sees(self, a: Anomaly) -> bool {
        (self.realtime || !a.needs_realtime()) && (self.process || !a.needs_process())
    }

    /// `real-time and process order`, `process order`, `no order`.
    pub fn describe(self) -> &'static str {
        match (self.realtime, self.process) {
            (true, true) => "real-time and process order",
            (true, false) => "real-time order",
            (false, true) => "process order but no real-time order",
            (false, false) => "neither real-time nor process order",
        }
    }
}

/// The split of one history's anomalies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Judgement {
    /// Found and prohibited: the verdict is invalid.
    pub prohibited: Vec<Anomaly>,
    /// Found but allowed by what was asked.
    pub allowed: Vec<Anomaly>,
    /// Prohibited, not found, and not ruled out by the search: a valid verdict is not earned.
    pub not_checked: Vec<Anomaly>,
    /// Prohibited, and impossible in this history: they need an order it does not have.
    pub unseen: Vec<Anomaly>,
}

impl Judgement {
    /// `G-nonadjacent is not checked`, `G-cursor, G-nonadjacent are not checked`.
    pub fn not_checked_reason(&self) -> Option<String> {
        let names: Vec<&str> = self.not_checked.iter().map(|a| a.name()).collect();
        match names.len() {
            0 => None,
            1 => Some(format!("{} is not checked", names[0])),
            _ => Some(format!("{} are not checked", names.join(", "))),
        }
    }

    /// `G0-realtime, G1c-realtime and 12 more`: the unseen anomalies, briefly.
    pub fn unseen_text(&self) -> Option<String> {
        let n = self.unseen.len();
        let name = |i: usize| self.unseen[i].name();
        match n {
            0 => None,
            1 => Some(name(0).to_string()),
            2 | 3 => {
                let names: Vec<&str> = (0..n).map(name).collect();
                Some(names.join(", "))
            }
            _ => Some(format!("{}, {} and {} more", name(0), name(1), n - 2)),
        }
    }
}

/// Whether an anomaly absent from `found` is known absent: the checker looks for it, or what it
/// looked for rules it out. Histories here read and write keys, never predicates.
fn ruled_out(a: Anomaly, found: &BTreeSet<Anomaly>) -> bool {
    use Anomaly::*;
    let any = |xs: &[Anomaly]| xs.iter().any(|x| found.contains(x));
    match a {
        // Looked for: the non-cycle passes and the cycle search (every cycle of data, process
        // and real-time edges has one of the searched shapes, so a cycle-exists marker is never
        // present without one of them).
        G0
        | G0Process
        | G0Realtime
        | G1a
        | G1b
        | G1c
        | G1cProcess
        | G1cRealtime
        | GSingleItem
        | GSingleItemProcess
        | GSingleItemRealtime
        | G2Item
        | G2ItemProcess
        | G2ItemRealtime
        | Internal
        | FuzzyRead
        | DuplicateElements
        | IncompatibleOrder
        | LostUpdate
        | GarbageRead
        | CyclicVersions
        | FutureRead
        | Pl1CycleExists
        | Pl2CycleExists
        | Pl299CycleExists
        | Pl3CycleExists
        | PlSsCycleExists
        | StrongSessionPl1CycleExists
        | StrongSessionPl2CycleExists
        | StrongPl1CycleExists
        | StrongPl2CycleExists
        | StrongSessionSerializableCycleExists => true,
        // Unions of what is looked for; write skew is a two-rw cycle, which the G2-item search
        // finds.
        G1 | G1Process | G1Realtime | WriteSkew => true,
        // Predicate forms: without predicate reads they are their item forms.
        GSingle | GSingleProcess | GSingleRealtime | G2 | G2Process | G2Realtime
        | PredicateReadMiss => true,
        // A failed write enters a version order only through a committed read of it: a G1a,
        // which every model proscribing dirty updates proscribes too (list-append also names
        // each dirty update, as Elle: `infer::dirty_updates`).
        DirtyUpdate => true,
        // Searched for (the cycle search tells non-adjacent rw edges from adjacent ones); Elle's
        // G-nonadjacent is its item form here, and PL-SI's cycle is one of G0, G1c, G-single or
        // G-nonadjacent.
        GNonadjacentItem
        | GNonadjacent
        | PlSiCycleExists
        | GNonadjacentItemProcess
        | GNonadjacentProcess
        | StrongSessionSiCycleExists
        | GNonadjacentItemRealtime
        | GNonadjacentRealtime
        | StrongSiCycleExists => true,
        // Adya's phenomena, each ruled out by what was searched:
        // - G-cursor (a cycle on one key with an rw edge): on one key versions are totally
        //   ordered, so such a cycle means some transaction read a version and wrote one that
        //   does not follow it directly; the writer of the version after the one it read then
        //   reaches it through ww edges: a G-single cycle. G-monotonic and G-MSR are cycles with
        //   exactly one anti-dependency: G-single too.
        GCursor | GMonotonic | GMsr => !any(&[GSingleItem]),
        // G-update: a cycle with anti-dependency edges.
        GUpdate => !any(&[GSingleItem, GNonadjacentItem, G2Item]),
        // G-SI (interference, missed effects): without G0, G1 and cycles with no two rw edges
        // adjacent, start and commit points exist that make the history snapshot isolation
        // (Cerone & Gotsman's characterisation), and under them neither phenomenon occurs.
        GSIbAdya | GSi | GSIa | GSIb | GSI => {
            !any(&[G0, G1a, G1b, G1c, GSingleItem, GNonadjacentItem])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Anomaly::*;
    use super::*;

    fn found(v: &[Anomaly]) -> BTreeSet<Anomaly> {
        v.iter().copied().collect()
    }

    #[test]
    fn nothing_found_is_earned_for_every_model() {
        for m in Model::ALL {
            let ask = Ask {
                models: vec![*m],
                anomalies: vec![],
            };
            assert_eq!(
                ask.judge(&found(&[]), Orders::BOTH),
                Judgement::default(),
                "{m:?}"
            );
        }
    }

    #[test]
    fn without_invokes_order_anomalies_are_unseen_as_in_elle() {
        // Strict serializable prohibits real-time anomalies: Elle draws the real-time graph
        // alone, empty without invokes, so neither order is drawn and no order anomaly can be
        // seen; nothing is left unchecked.
        let strict = Ask::default();
        let orders = Orders::completions_only(&strict);
        assert_eq!(
            orders,
            Orders {
                realtime: false,
                process: false
            }
        );
        let j = strict.judge(&found(&[]), orders);
        assert!(j.prohibited.is_empty() && j.not_checked.is_empty(), "{j:?}");
        assert!(j.unseen.contains(&G1cRealtime), "{j:?}");
        assert!(j.unseen.contains(&PlSsCycleExists), "{j:?}");
        assert!(j.unseen.contains(&GSingleItemProcess), "{j:?}");
        assert!(
            j.unseen
                .iter()
                .all(|a| a.needs_realtime() || a.needs_process()),
            "{j:?}"
        );
        assert!(j.not_checked_reason().is_none());
        assert!(j.unseen_text().unwrap().contains(" more"), "{j:?}");
        // A strong-session model prohibits process anomalies and no real-time one: process
        // order is drawn (from the completions) and judged.
        let session = Ask::model(Model::StrongSessionSerializable);
        let orders = Orders::completions_only(&session);
        assert!(orders.process && !orders.realtime);
        let j = session.judge(&found(&[]), orders);
        assert_eq!(j, Judgement::default(), "{j:?}");
        // Serializable and snapshot isolation need no order at all.
        for m in [Model::Serializable, Model::SnapshotIsolation] {
            let ask = Ask::model(m);
            let j = ask.judge(&found(&[]), Orders::completions_only(&ask));
            assert_eq!(j, Judgement::default(), "{m:?}");
        }
        // A found prohibited anomaly still fails the check.
        let j = strict.judge(&found(&[G1c]), Orders::completions_only(&strict));
        assert_eq!(j.prohibited, vec![G1c]);
    }

    #[test]
    fn write_skew_is_snapshot_isolation_and_g_nonadjacent_is_not() {
        let si = Ask {
            models: vec![Model::SnapshotIsolation],
            anomalies: vec![],
        };
        let j = si.judge(&found(&[G2Item]), Orders::BOTH);
        assert!(j.prohibited.is_empty());
        assert_eq!(j.allowed, vec![G2Item]);
        assert!(j.not_checked.is_empty(), "{j:?}");
        let j = si.judge(&found(&[GNonadjacentItem]), Orders::BOTH);
        assert_eq!(j.prohibited, vec![GNonadjacentItem]);
        // Serializable forbids both.
        let ser = Ask::model(Model::Serializable);
        assert_eq!(
            ser.judge(&found(&[G2Item]), Orders::BOTH).prohibited,
            vec![G2Item]
        );
        assert_eq!(
            ser.judge(&found(&[GNonadjacentItem]), Orders::BOTH)
                .prohibited,
            vec![GNonadjacentItem]
        );
        // Cursor stability proscribes G-cursor, which would show as a G-single: write skew
        // leaves it earned, a G-single leaves it open.
        let cs = Ask::model(Model::CursorStability);
        assert_eq!(
            cs.judge(&found(&[G2Item]), Orders::BOTH).not_checked,
            vec![]
        );
        let j = cs.judge(&found(&[GSingleItem]), Orders::BOTH);
        assert!(j.prohibited.is_empty(), "{j:?}");
        assert_eq!(j.not_checked, vec![GCursor], "{j:?}");
        assert!(j.not_checked_reason().unwrap().contains("G-cursor"));
        // Repeatable read allows G-single-item-realtime and needs nothing unchecked.
        let rr = Ask {
            models: vec![Model::RepeatableRead],
            anomalies: vec![],
        };
        let j = rr.judge(&found(&[GSingleItemRealtime]), Orders::BOTH);
        assert_eq!(j.allowed, vec![GSingleItemRealtime]);
        assert!(j.not_checked.is_empty(), "{j:?}");
        assert_eq!(
            rr.judge(&found(&[G2Item]), Orders::BOTH).prohibited,
            vec![G2Item]
        );
    }

    #[test]
    fn flags_parse_elle_names_and_refuse_others() {
        let ask = Ask::parse("snapshot-isolation,PL-2", Some("G2-item")).unwrap();
        assert_eq!(
            ask.models,
            vec![Model::SnapshotIsolation, Model::ReadCommitted]
        );
        assert_eq!(ask.anomalies, vec![G2Item]);
        assert_eq!(
            Ask::parse("strict-serializable", None).unwrap(),
            Ask::default()
        );
        let e = Ask::parse("snapshot", None).unwrap_err();
        assert!(
            e.contains("--consistency-models: unknown model \"snapshot\""),
            "{e}"
        );
        assert!(e.contains("repeatable-read"), "{e}");
        let e = Ask::parse("serializable", Some("G3")).unwrap_err();
        assert!(e.contains("--anomalies: unknown anomaly \"G3\"") && e.contains("G-single-item"));
        assert!(Ask::parse("", None).is_err());
        // Elle names linearizable, but proscribes nothing for it: refused, never a free pass.
        let e = Ask::parse("serializable,linearizable", None).unwrap_err();
        assert!(e.contains("linearizable proscribes no anomaly"), "{e}");
        assert!(Ask::parse("PRAM", None).is_err());
    }

    #[test]
    fn named_anomalies_prohibit_what_implies_them() {
        let ask = Ask {
            models: vec![Model::ReadCommitted],
            anomalies: vec![G2],
        };
        assert_eq!(
            ask.judge(&found(&[LostUpdate]), Orders::BOTH).prohibited,
            vec![LostUpdate]
        );
        assert_eq!(
            ask.judge(&found(&[G2ItemRealtime]), Orders::BOTH).allowed,
            vec![G2ItemRealtime]
        );
        let default = Ask::default();
        assert_eq!(
            default
                .judge(&found(&[G0Realtime]), Orders::BOTH)
                .prohibited,
            vec![G0Realtime]
        );
    }
}
