//! What a compare cell can claim ("linearizable", "read-your-writes", "no-lost-writes", …) and
//! how one run's `results.json` bears on a claim: held, refuted (with what refuted it) or unknown
//! (with why). One definition of each claim's name; the checkers' result shapes are read here
//! and nowhere else in compare.
//!
//! A claim is only held by a run that completed and whose checker looked at it: an interrupted
//! or empty run, or a run whose checker did not run or could not decide, leaves it unknown.
//! Pure: JSON in, judgement out.

use crate::checker::session::Guarantee;
use crate::checker::txn::consistency::Model;
use serde_json::Value;

/// A consistency property a vendor claims for a configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Claim {
    /// Every key's history is linearizable (the `linearizable` checker).
    Linearizable,
    /// A session guarantee holds (the `session` checker, that guarantee's violations).
    Session(Guarantee),
    /// No acknowledged add is missing from the final read (the `set` checker).
    NoLostWrites,
    /// No two holders of one lock did protected work at once (the `mutual-exclusion` checker).
    MutualExclusion,
    /// The resource accepted no write with a stale fencing token (the `fencing` checker).
    Fencing,
    /// Transactions are at least this isolated (the `txn` checker rules out nothing at or
    /// below it).
    Txn(Model),
}

impl Claim {
    /// Every claim, in page order.
    pub const ALL: [Claim; 15] = [
        Claim::Linearizable,
        Claim::Session(Guarantee::ReadYourWrites),
        Claim::Session(Guarantee::MonotonicReads),
        Claim::Session(Guarantee::MonotonicWrites),
        Claim::Session(Guarantee::WritesFollowReads),
        Claim::NoLostWrites,
        Claim::MutualExclusion,
        Claim::Fencing,
        Claim::Txn(Model::ReadUncommitted),
        Claim::Txn(Model::ReadCommitted),
        Claim::Txn(Model::RepeatableRead),
        Claim::Txn(Model::SnapshotIsolation),
        Claim::Txn(Model::Serializable),
        Claim::Txn(Model::StrongSessionSerializable),
        Claim::Txn(Model::StrictSerializable),
    ];

    /// The claim's name in specs, pages and JUnit.
    pub fn name(self) -> &'static str {
        match self {
            Claim::Linearizable => "linearizable",
            Claim::Session(g) => g.name(),
            Claim::NoLostWrites => "no-lost-writes",
            Claim::MutualExclusion => crate::checker::lock::MUTEX_NAME,
            Claim::Fencing => crate::checker::lock::FENCING_NAME,
            Claim::Txn(m) => m.name(),
        }
    }

    /// The checker whose result decides the claim (its `checker` name in results.json).
    pub fn checker(self) -> &'static str {
        self.checkers()[0]
    }

    /// Every checker whose result can decide the claim, the first found in a run deciding:
    /// lost writes are the set checker's (adds) or the log checker's (acknowledged sends).
    pub fn checkers(self) -> &'static [&'static str] {
        match self {
            Claim::Linearizable => &["linearizable"],
            Claim::Session(_) => &["session"],
            Claim::NoLostWrites => &[crate::checker::set::NAME, crate::checker::log::NAME],
            Claim::MutualExclusion => &[crate::checker::lock::MUTEX_NAME],
            Claim::Fencing => &[crate::checker::lock::FENCING_NAME],
            Claim::Txn(_) => &[crate::checker::txn::NAME],
        }
    }

    /// Every claim name, for messages.
    pub fn names_text() -> String {
        Claim::ALL
            .iter()
            .map(|c| c.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl std::fmt::Display for Claim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Claim {
    type Err = String;
    fn from_str(s: &str) -> Result<Claim, String> {
        let want = s.trim().to_lowercase().replace(['_', ' '], "-");
        Claim::ALL
            .iter()
            .copied()
            .find(|c| c.name() == want)
            .ok_or_else(|| format!("unknown claim {s:?}; claims are: {}", Claim::names_text()))
    }
}

impl serde::Serialize for Claim {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Claim {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Claim, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// What one run says about one claim.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "status", content = "detail", rename_all = "kebab-case")]
pub enum Observed {
    /// The run completed and its checker found no violation of the claim.
    Held,
    /// The checker found a violation; what it found.
    Refuted(String),
    /// The run or its checker could not decide; why.
    Unknown(String),
}

impl Observed {
    /// `held`, `refuted` or `unknown`.
    pub fn status(&self) -> &'static str {
        match self {
            Observed::Held => "held",
            Observed::Refuted(_) => "refuted",
            Observed::Unknown(_) => "unknown",
        }
    }
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Judge `claim` against a run's `results.json`. A violation found in the recorded part of a
/// run that did not complete still refutes (it happened); holding needs a completed run.
pub fn judge(claim: Claim, results: &Value) -> Observed {
    let completion = results.get("completion");
    let completed = completion.and_then(|c| str_at(c, "status")) == Some("completed");
    let observed = judge_checker(claim, results);
    if completed {
        return observed;
    }
    let reason = completion
        .and_then(|c| str_at(c, "reason"))
        .or_else(|| str_at(results, "reason"))
        .unwrap_or("the run did not record how it ended");
    match observed {
        Observed::Refuted(what) => {
            Observed::Refuted(format!("{what} (run not completed: {reason})"))
        }
        _ => Observed::Unknown(format!("run not completed: {reason}")),
    }
}

fn judge_checker(claim: Claim, results: &Value) -> Observed {
    let checkers = results
        .get("checkers")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let Some(result) = checkers
        .iter()
        .find(|c| str_at(c, "checker").is_some_and(|name| claim.checkers().contains(&name)))
    else {
        return Observed::Unknown(format!(
            "not checked: the run has no {} checker result (does its workload support the claim?)",
            claim.checkers().join(" or ")
        ));
    };
    let verdict = str_at(result, "verdict").unwrap_or("unknown");
    let summary = str_at(result, "summary").unwrap_or("").trim().to_string();
    let details = result.get("details").unwrap_or(&Value::Null);
    match claim {
        Claim::Session(g) => {
            let row = details
                .get("guarantees")
                .and_then(Value::as_array)
                .and_then(|rows| {
                    rows.iter()
                        .find(|r| str_at(r, "guarantee") == Some(g.name()))
                });
            let Some(row) = row else {
                return Observed::Unknown(format!(
                    "the session checker did not report {}",
                    g.name()
                ));
            };
            let violations = row.get("violations").and_then(Value::as_u64).unwrap_or(0);
            let checks = row.get("checks").and_then(Value::as_u64).unwrap_or(0);
            if violations > 0 {
                Observed::Refuted(format!(
                    "{violations} {} violation{} in {checks} checks",
                    g.name(),
                    if violations == 1 { "" } else { "s" }
                ))
            } else if verdict == "unknown" {
                Observed::Unknown(non_empty(summary, "the session checker could not decide"))
            } else if checks == 0 {
                Observed::Unknown(format!(
                    "no {} comparisons were possible in this history",
                    g.name()
                ))
            } else {
                Observed::Held
            }
        }
        Claim::Linearizable if verdict == "invalid" => {
            // "3 of 42 keys not linearizable; key 1: cannot linearize op 31 (…)".
            let parts = details.get("parts").and_then(Value::as_array);
            let bad = parts.map(|p| {
                p.iter()
                    .filter(|x| str_at(x, "verdict") == Some("invalid"))
                    .count()
            });
            let first = str_at(details, "explanation")
                .and_then(|e| e.lines().find(|l| l.starts_with("key ")));
            match (parts, bad, first) {
                (Some(p), Some(b), Some(first)) => {
                    Observed::Refuted(format!("{b} of {} keys not linearizable; {first}", p.len()))
                }
                _ => Observed::Refuted(non_empty(summary, "the checker found a violation")),
            }
        }
        Claim::Txn(model) => {
            let listed = |key: &str| {
                details
                    .get(key)
                    .and_then(Value::as_array)
                    .is_some_and(|l| l.iter().any(|m| m.as_str() == Some(model.name())))
            };
            let unsearched = details
                .get("unsearched")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            if listed("not") || listed("also-not") || listed("also_not") {
                let found = details
                    .get("anomaly_counts")
                    .and_then(Value::as_object)
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| format!("{k} ×{}", v.as_u64().unwrap_or(0)))
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default();
                Observed::Refuted(format!("not {}: {found}", model.name()))
            } else if unsearched > 0 || verdict == "unknown" {
                Observed::Unknown(non_empty(
                    summary,
                    "the transaction checker could not decide",
                ))
            } else {
                // Anomalies that only rule out stronger models leave this one held.
                Observed::Held
            }
        }
        // The log checker judges more than losses (duplicates, offsets): the claim is its
        // lost count.
        Claim::NoLostWrites if str_at(result, "checker") == Some(crate::checker::log::NAME) => {
            let lost = details
                .get("lost")
                .and_then(|l| l.get("count"))
                .and_then(Value::as_u64);
            let acked = details.get("acknowledged").and_then(Value::as_u64);
            match (lost, acked) {
                (Some(l), Some(a)) if l > 0 => {
                    Observed::Refuted(format!("{l} of {a} acknowledged sends lost"))
                }
                _ if verdict == "unknown" => {
                    Observed::Unknown(non_empty(summary, "the log checker could not decide"))
                }
                (Some(0), Some(_)) => Observed::Held,
                _ => Observed::Unknown("the log checker did not count lost sends".into()),
            }
        }
        Claim::Linearizable | Claim::NoLostWrites | Claim::MutualExclusion | Claim::Fencing => {
            match verdict {
                "valid" => Observed::Held,
                "invalid" => Observed::Refuted(non_empty(summary, "the checker found a violation")),
                _ => Observed::Unknown(non_empty(summary, "the checker could not decide")),
            }
        }
    }
}

fn non_empty(s: String, fallback: &str) -> String {
    if s.is_empty() {
        fallback.to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(status: &str, checkers: Value) -> Value {
        json!({
            "valid": "valid",
            "completion": { "status": status, "reason": format!("{status} 3.0 s of 10 s") },
            "checkers": checkers,
        })
    }

    #[test]
    fn claims_parse_by_name_and_refuse_typos_listing_the_vocabulary() {
        assert_eq!("linearizable".parse::<Claim>(), Ok(Claim::Linearizable));
        assert_eq!(
            "Read_Your_Writes".parse::<Claim>(),
            Ok(Claim::Session(Guarantee::ReadYourWrites))
        );
        let e = "linearisable".parse::<Claim>().unwrap_err();
        assert!(e.contains("no-lost-writes"), "{e}");
        for c in Claim::ALL {
            assert_eq!(c.name().parse::<Claim>(), Ok(c));
        }
    }

    #[test]
    fn a_claim_follows_its_checker_and_an_incomplete_run_decides_nothing() {
        let checkers = json!([
            {"checker": "linearizable", "verdict": "invalid", "summary": "key 3: stale read", "details": {}},
            {"checker": "session", "verdict": "invalid", "summary": "", "details": {"guarantees": [
                {"guarantee": "read-your-writes", "checks": 40, "violations": 0},
                {"guarantee": "monotonic-reads", "checks": 40, "violations": 2},
                {"guarantee": "monotonic-writes", "checks": 0, "violations": 0}
            ]}}
        ]);
        let done = run("completed", checkers.clone());
        assert_eq!(
            judge(Claim::Linearizable, &done),
            Observed::Refuted("key 3: stale read".into())
        );
        assert_eq!(
            judge(Claim::Session(Guarantee::ReadYourWrites), &done),
            Observed::Held
        );
        assert_eq!(
            judge(Claim::Session(Guarantee::MonotonicReads), &done),
            Observed::Refuted("2 monotonic-reads violations in 40 checks".into())
        );
        assert_eq!(
            judge(Claim::Session(Guarantee::MonotonicWrites), &done).status(),
            "unknown"
        );
        assert_eq!(
            judge(Claim::Session(Guarantee::WritesFollowReads), &done).status(),
            "unknown"
        );
        let Observed::Unknown(why) = judge(Claim::NoLostWrites, &done) else {
            panic!("a register run says nothing about lost set elements");
        };
        assert!(why.contains("no set or log checker"), "{why}");
        // Interrupted: a violation it recorded still refutes; nothing holds.
        let cut = run("interrupted", checkers);
        let Observed::Refuted(why) = judge(Claim::Linearizable, &cut) else {
            panic!("a recorded violation refutes even when the run was cut short");
        };
        assert!(why.contains("interrupted 3.0 s"), "{why}");
        let Observed::Unknown(why) = judge(Claim::Session(Guarantee::ReadYourWrites), &cut) else {
            panic!("an interrupted run holds nothing");
        };
        assert!(why.contains("run not completed"), "{why}");
        assert_eq!(judge(Claim::Linearizable, &json!({})).status(), "unknown");
    }

    #[test]
    fn a_linearizability_refutation_names_the_keys_and_the_first_witness() {
        let r = run(
            "completed",
            json!([{"checker": "linearizable", "verdict": "invalid", "summary": "invalid: 9 ops in 2 parts",
                    "details": {"parts": [{"verdict": "invalid"}, {"verdict": "valid"}],
                                "explanation": "invalid: 9 ops\nkey 1: cannot linearize op 3 (read → 3)\n  essential ops"}}]),
        );
        assert_eq!(
            judge(Claim::Linearizable, &r),
            Observed::Refuted(
                "1 of 2 keys not linearizable; key 1: cannot linearize op 3 (read → 3)".into()
            )
        );
    }

    #[test]
    fn an_isolation_claim_is_refuted_only_by_anomalies_that_rule_it_out() {
        let r = run(
            "completed",
            json!([{"checker": "txn", "verdict": "invalid", "summary": "G2-item",
                    "details": {"not": ["repeatable-read"], "also_not": ["serializable", "strict-serializable"],
                                "anomaly_counts": {"G2-item": 39}, "unsearched": []}}]),
        );
        assert_eq!(
            judge(Claim::Txn(Model::Serializable), &r),
            Observed::Refuted("not serializable: G2-item ×39".into())
        );
        assert_eq!(judge(Claim::Txn(Model::ReadCommitted), &r), Observed::Held);
        assert_eq!(
            "snapshot-isolation".parse(),
            Ok(Claim::Txn(Model::SnapshotIsolation))
        );
        let cut = run(
            "completed",
            json!([{"checker": "txn", "verdict": "unknown", "summary": "search budget",
                    "details": {"not": [], "also_not": [], "unsearched": [{"why": "budget"}]}}]),
        );
        assert_eq!(
            judge(Claim::Txn(Model::ReadCommitted), &cut).status(),
            "unknown"
        );
    }

    #[test]
    fn valid_means_held_and_unknown_stays_unknown() {
        let r = run(
            "completed",
            json!([{"checker": "linearizable", "verdict": "unknown", "summary": "search budget exceeded"},
                   {"checker": "set", "verdict": "valid", "summary": "0 of 10 lost"}]),
        );
        assert_eq!(
            judge(Claim::Linearizable, &r),
            Observed::Unknown("search budget exceeded".into())
        );
        assert_eq!(judge(Claim::NoLostWrites, &r), Observed::Held);
    }

    #[test]
    fn lost_writes_of_a_log_run_are_its_lost_sends_only() {
        let log = |verdict: &str, lost: u64, duplicated: u64| {
            run(
                "completed",
                json!([{"checker": "log", "verdict": verdict, "summary": "…",
                        "details": {"acknowledged": 5236, "lost": {"count": lost},
                                    "duplicated": {"count": duplicated}}}]),
            )
        };
        assert_eq!(
            judge(Claim::NoLostWrites, &log("invalid", 5, 0)),
            Observed::Refuted("5 of 5236 acknowledged sends lost".into())
        );
        // Duplicates make the log invalid but lose nothing.
        assert_eq!(
            judge(Claim::NoLostWrites, &log("invalid", 0, 3)),
            Observed::Held
        );
        assert_eq!(
            judge(Claim::NoLostWrites, &log("valid", 0, 0)),
            Observed::Held
        );
        assert_eq!(
            judge(Claim::NoLostWrites, &log("unknown", 0, 0)).status(),
            "unknown"
        );
        let no_counts = run(
            "completed",
            json!([{"checker": "log", "verdict": "valid", "details": {}}]),
        );
        assert_eq!(judge(Claim::NoLostWrites, &no_counts).status(), "unknown");
    }
}
