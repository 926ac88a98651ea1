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
    /// could not rule out. With `realtime_unknown` (a history of completions only) no anomaly
    /// that needs real-time order ([`Anomaly::needs_realtime`]) is ruled out: none can be seen.
    pub fn judge(&self, found: &BTreeSet<Anomaly>, realtime_unknown: bool) -> Judgement {
        let prohibited = self.prohibited();
        let blind = |a: Anomaly| realtime_unknown && a.needs_realtime();
        Judgement {
            prohibited: found.intersection(&prohibited).copied().collect(),
            allowed: found.difference(&prohibited).copied().collect(),
            not_checked: prohibited
                .iter()
                .copied()
                .filter(|a| !found.contains(a) && (blind(*a) || !ruled_out(*a, found)))
                .collect(),
            realtime_unknown: realtime_unknown
                && prohibited.iter().any(|a| !found.contains(a) && blind(*a)),
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
    /// Some of `not_checked` need real-time order, which the history does not give.
    pub realtime_unknown: bool,
}

impl Judgement {
    /// `G-nonadjacent is not checked`, `G-cursor, G-nonadjacent are not checked`; the anomalies
    /// that need real-time order are named apart, with why they cannot be seen.
    pub fn not_checked_reason(&self) -> Option<String> {
        let (realtime, other): (Vec<Anomaly>, Vec<Anomaly>) = self
            .not_checked
            .iter()
            .partition(|a| self.realtime_unknown && a.needs_realtime());
        let list = |xs: &[Anomaly]| {
            let names: Vec<&str> = xs.iter().map(|a| a.name()).collect();
            match names.len() {
                0 => None,
                1 => Some(format!("{} is not checked", names[0])),
                _ => Some(format!("{} are not checked", names.join(", "))),
            }
        };
        let realtime = (!realtime.is_empty()).then(|| {
            let r = match realtime.len() {
                n if n > 3 => format!(
                    "{}, {} and {} more real-time anomalies are not checked",
                    realtime[0].name(),
                    realtime[1].name(),
                    n - 2
                ),
                _ => list(&realtime).unwrap_or_default(),
            };
            format!(
                "{r}: the history has completions only, no invokes, so real-time order is unknown (ask for a model without real time, e.g. --consistency-models serializable)"
            )
        });
        match (list(&other), realtime) {
            (None, None) => None,
            (Some(o), None) => Some(o),
            (None, Some(r)) => Some(r),
            (Some(o), Some(r)) => Some(format!("{o}; {r}")),
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
        // which every model proscribing dirty updates proscribes too.
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
            assert_eq!(ask.judge(&found(&[]), false), Judgement::default(), "{m:?}");
        }
    }

    #[test]
    fn without_real_time_order_strict_models_are_not_earned_and_others_are() {
        let strict = Ask::default();
        let j = strict.judge(&found(&[]), true);
        assert!(j.prohibited.is_empty() && j.realtime_unknown, "{j:?}");
        assert!(j.not_checked.contains(&G1cRealtime), "{j:?}");
        assert!(j.not_checked.contains(&PlSsCycleExists), "{j:?}");
        assert!(j.not_checked.iter().all(|a| a.needs_realtime()), "{j:?}");
        let why = j.not_checked_reason().unwrap();
        assert!(why.contains("G1c-realtime"), "{why}");
        assert!(why.contains("real-time order is unknown"), "{why}");
        // Serializable and snapshot isolation need no real time: earned as with invokes.
        for m in [Model::Serializable, Model::SnapshotIsolation] {
            let j = Ask::model(m).judge(&found(&[]), true);
            assert_eq!(j, Judgement::default(), "{m:?}");
        }
        // A found prohibited anomaly still fails the check.
        let j = strict.judge(&found(&[G1c]), true);
        assert_eq!(j.prohibited, vec![G1c]);
    }

    #[test]
    fn write_skew_is_snapshot_isolation_and_g_nonadjacent_is_not() {
        let si = Ask {
            models: vec![Model::SnapshotIsolation],
            anomalies: vec![],
        };
        let j = si.judge(&found(&[G2Item]), false);
        assert!(j.prohibited.is_empty());
        assert_eq!(j.allowed, vec![G2Item]);
        assert!(j.not_checked.is_empty(), "{j:?}");
        let j = si.judge(&found(&[GNonadjacentItem]), false);
        assert_eq!(j.prohibited, vec![GNonadjacentItem]);
        // Serializable forbids both.
        let ser = Ask::model(Model::Serializable);
        assert_eq!(ser.judge(&found(&[G2Item]), false).prohibited, vec![G2Item]);
        assert_eq!(
            ser.judge(&found(&[GNonadjacentItem]), false).prohibited,
            vec![GNonadjacentItem]
        );
        // Cursor stability proscribes G-cursor, which would show as a G-single: write skew
        // leaves it earned, a G-single leaves it open.
        let cs = Ask::model(Model::CursorStability);
        assert_eq!(cs.judge(&found(&[G2Item]), false).not_checked, vec![]);
        let j = cs.judge(&found(&[GSingleItem]), false);
        assert!(j.prohibited.is_empty(), "{j:?}");
        assert_eq!(j.not_checked, vec![GCursor], "{j:?}");
        assert!(j.not_checked_reason().unwrap().contains("G-cursor"));
        // Repeatable read allows G-single-item-realtime and needs nothing unchecked.
        let rr = Ask {
            models: vec![Model::RepeatableRead],
            anomalies: vec![],
        };
        let j = rr.judge(&found(&[GSingleItemRealtime]), false);
        assert_eq!(j.allowed, vec![GSingleItemRealtime]);
        assert!(j.not_checked.is_empty(), "{j:?}");
        assert_eq!(rr.judge(&found(&[G2Item]), false).prohibited, vec![G2Item]);
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
            ask.judge(&found(&[LostUpdate]), false).prohibited,
            vec![LostUpdate]
        );
        assert_eq!(
            ask.judge(&found(&[G2ItemRealtime]), false).allowed,
            vec![G2ItemRealtime]
        );
        let default = Ask::default();
        assert_eq!(
            default.judge(&found(&[G0Realtime]), false).prohibited,
            vec![G0Realtime]
        );
    }
}
