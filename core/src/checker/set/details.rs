//! The set checker's output: its details JSON (counts, per-key rows, capped witness lists), the
//! one-line summary, and the timing of each lost element against the fault intervals.
//!
//! Owns rendering a [`SetAnalysis`] as a [`CheckResult`]. Does not own classifying elements (the
//! parent module). Pure: no IO.

use super::{KEY_ROWS_CAP, KeyOutcome, NAME, SetAnalysis, WITNESS_CAP};
use crate::checker::{CheckResult, Verdict};
use crate::faults::intervals::FaultInterval;
use crate::history::Op;
use crate::model::value::Scalar;
use serde_json::{Value, json};
use std::collections::BTreeMap;

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn fmt_s(s: f64) -> String {
    format!("{s:.1} s")
}

/// `1234567` → `1,234,567`.
pub(crate) fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A lost element timed against the faults.
#[derive(Debug, Clone)]
pub(crate) struct Timing {
    active: Vec<String>,
    /// (label, seconds from the ack to the fault's start) of the nearest fault start before.
    before: Option<(String, f64)>,
    /// Likewise, the nearest fault start after the ack.
    after: Option<(String, f64)>,
}

impl Timing {
    pub(crate) fn of(faults: &[FaultInterval], at_s: f64) -> Timing {
        let active = faults
            .iter()
            .filter(|f| f.start_s <= at_s && at_s <= f.end_s)
            .map(|f| f.label.clone())
            .collect();
        let before = faults
            .iter()
            .filter(|f| f.start_s <= at_s)
            .max_by(|a, b| a.start_s.total_cmp(&b.start_s))
            .map(|f| (f.label.clone(), at_s - f.start_s));
        let after = faults
            .iter()
            .filter(|f| f.start_s > at_s)
            .min_by(|a, b| a.start_s.total_cmp(&b.start_s))
            .map(|f| (f.label.clone(), f.start_s - at_s));
        Timing {
            active,
            before,
            after,
        }
    }

    /// "acknowledged 1.2 s before partition n1 | n2 n3 began; during kill n2".
    pub(crate) fn text(&self) -> String {
        let mut parts = Vec::new();
        if let Some((label, gap)) = &self.after {
            parts.push(format!("{} before {label} began", fmt_s(*gap)));
        }
        // The last fault before only when nothing came after and none is active: otherwise
        // the next fault and the active ones say more.
        if let (None, true, Some((label, gap))) =
            (&self.after, self.active.is_empty(), &self.before)
        {
            parts.push(format!("{} after {label} began", fmt_s(*gap)));
        }
        if !self.active.is_empty() {
            parts.push(format!("during {}", self.active.join(", ")));
        }
        if parts.is_empty() {
            "acknowledged with no fault in the run".to_string()
        } else {
            format!("acknowledged {}", parts.join("; "))
        }
    }
}

impl SetAnalysis<'_> {
    fn op(&self, i: usize) -> &Op {
        &self.history.ops[i]
    }

    /// An element as JSON: integers as numbers, other values as they were written.
    fn elem(&self, e: Scalar) -> Value {
        match e {
            Scalar::Int(i) => Value::from(i),
            other => serde_json::from_str(&self.values.show(other)).unwrap_or(Value::Null),
        }
    }

    /// An element as text: `938`, `"x"`.
    fn show(&self, e: Scalar) -> String {
        self.values.show(e)
    }

    fn totals(&self) -> BTreeMap<&'static str, u64> {
        let mut t = BTreeMap::new();
        for k in std::iter::once(&KeyOutcome::default()).chain(&self.keys) {
            for (name, n) in [
                ("attempted", k.attempted),
                ("acknowledged", k.acknowledged),
                ("failed", k.failed),
                ("indeterminate", k.indeterminate),
                ("lost", k.lost.len() as u64),
                ("lost_after_read", k.lost_after_read.len() as u64),
                ("unexpected", k.unexpected.len() as u64),
                ("recovered", k.recovered.len() as u64),
                ("failed_but_present", k.failed_but_present.len() as u64),
                ("stale", k.stale.len() as u64),
                ("stale_reads", k.stale_reads),
                ("duplicate_adds", k.duplicate_adds),
            ] {
                *t.entry(name).or_insert(0) += n;
            }
        }
        t
    }

    /// The verdict: see the module doc.
    pub fn verdict(&self) -> Verdict {
        let v = self
            .keys
            .iter()
            .fold(Verdict::Valid, |v, k| v.merge(k.verdict()));
        if v == Verdict::Valid && self.totals()["attempted"] == 0 {
            Verdict::Unknown
        } else {
            v
        }
    }

    fn add_of(&self, key: &KeyOutcome, e: Scalar) -> Option<(&Op, Option<&Op>)> {
        let a = key.adds.get(&e)?;
        Some((self.op(a.invoke), a.completion.map(|j| self.op(j))))
    }

    fn lost_rows(&self) -> (Vec<Value>, usize) {
        let mut rows = Vec::new();
        let mut total = 0;
        for k in &self.keys {
            for (&e, acked) in k
                .lost
                .iter()
                .map(|e| (e, true))
                .chain(k.lost_after_read.iter().map(|e| (e, false)))
            {
                total += 1;
                if rows.len() >= WITNESS_CAP {
                    continue;
                }
                rows.push(self.lost_row(k, e, acked));
            }
        }
        {
            let kept = rows.len();
            (rows, total - kept)
        }
    }

    fn lost_row(&self, k: &KeyOutcome, e: Scalar, acked: bool) -> Value {
        let Some((inv, done)) = self.add_of(k, e) else {
            return json!({ "key": k.key, "element": self.elem(e) });
        };
        let ack_ns = done.map_or(inv.time_ns, |d| d.time_ns);
        let timing = Timing::of(&self.faults, secs(ack_ns));
        let seen = k
            .lost_seen
            .get(&e)
            .map(|&(first, last)| (secs(self.op(first).time_ns), secs(self.op(last).time_ns)));
        let seen_text = match seen {
            Some((first, last)) => {
                format!("; seen by reads from {} to {}", fmt_s(first), fmt_s(last))
            }
            None => "; never seen by a read".to_string(),
        };
        let what = if acked {
            format!(
                "add {} on key {} by process {}: ok at {}, absent from the final read; {}{seen_text}",
                self.show(e),
                k.key,
                inv.process,
                fmt_s(secs(ack_ns)),
                timing.text()
            )
        } else {
            format!(
                "add {} on key {} by process {}: {} at {}, then seen by a read, absent from the final read{seen_text}",
                self.show(e),
                k.key,
                inv.process,
                done.map_or("never completed".into(), |d| format!("{:?}", d.op_type)
                    .to_lowercase()),
                fmt_s(secs(ack_ns)),
            )
        };
        json!({
            "key": k.key,
            "element": self.elem(e),
            "acknowledged": acked,
            "process": inv.process,
            "node": inv.node,
            "invoke_index": inv.index,
            "invoke_ns": inv.time_ns,
            "complete_ns": done.map(|d| d.time_ns),
            "ack_s": secs(ack_ns),
            "first_seen_s": seen.map(|s| s.0),
            "last_seen_s": seen.map(|s| s.1),
            "faults_active": timing.active,
            "fault_before": timing.before.as_ref().map(|(l, g)| json!({"fault": l, "ack_after_start_s": g})),
            "fault_after": timing.after.as_ref().map(|(l, g)| json!({"fault": l, "ack_before_start_s": g})),
            "witness": what,
        })
    }

    fn element_rows(
        &self,
        pick: impl Fn(&KeyOutcome) -> Vec<(Scalar, usize)>,
        what: &str,
    ) -> (Vec<Value>, usize) {
        let mut rows = Vec::new();
        let mut total = 0;
        for k in &self.keys {
            for (e, read) in pick(k) {
                total += 1;
                if rows.len() >= WITNESS_CAP {
                    continue;
                }
                let r = self.op(read);
                rows.push(json!({
                    "key": k.key,
                    "element": self.elem(e),
                    "read_index": r.index,
                    "read_ns": r.time_ns,
                    "process": r.process,
                    "node": r.node,
                    "witness": format!(
                        "element {} on key {}: {what} (read completed at {} by process {})",
                        self.show(e),
                        k.key, fmt_s(secs(r.time_ns)), r.process
                    ),
                }));
            }
        }
        {
            let kept = rows.len();
            (rows, total - kept)
        }
    }

    fn key_row(&self, k: &KeyOutcome) -> Value {
        json!({
            "key": k.key,
            "verdict": k.verdict(),
            "attempted": k.attempted,
            "acknowledged": k.acknowledged,
            "failed": k.failed,
            "indeterminate": k.indeterminate,
            "final_read": k.final_read.map(|i| {
                let r = self.op(i);
                json!({ "index": r.index, "time_ns": r.time_ns, "size": k.final_size })
            }),
            "lost": k.lost.len(),
            "lost_after_read": k.lost_after_read.len(),
            "unexpected": k.unexpected.len(),
            "recovered": k.recovered.len(),
            "failed_but_present": k.failed_but_present.len(),
            "stale": k.stale.len(),
        })
    }

    /// The one-line summary, e.g. `3 of 4,210 acknowledged adds lost (key 2: 3, acknowledged
    /// 0.4–1.1 s before partition n1 | n2 n3 began)`.
    pub fn summary(&self) -> String {
        let t = self.totals();
        let unknown_keys: Vec<&str> = self
            .keys
            .iter()
            .filter(|k| k.attempted > 0 && k.final_read.is_none())
            .map(|k| k.key.as_str())
            .collect();
        if t["attempted"] == 0 {
            return "no client adds in the history: nothing to check".into();
        }
        let mut s = format!(
            "{} of {} acknowledged adds lost",
            thousands(t["lost"]),
            thousands(t["acknowledged"])
        );
        if t["lost"] > 0 {
            s.push_str(&format!(" ({})", self.lost_where()));
        }
        for (name, words) in [
            ("lost_after_read", "read then lost"),
            ("unexpected", "unexpected"),
            ("failed_but_present", "failed but present"),
            ("recovered", "recovered (indeterminate adds present)"),
            ("stale", "stale (read, then missing from a later read)"),
        ] {
            if t[name] > 0 {
                s.push_str(&format!("; {} {words}", thousands(t[name])));
            }
        }
        if unknown_keys == [""] {
            // A history without keys: one set.
            s.push_str("; no read after the last add completed (a final read): unknown");
        } else if !unknown_keys.is_empty() {
            s.push_str(&format!(
                "; {} key(s) without a final read ({}): unknown",
                unknown_keys.len(),
                preview(&unknown_keys)
            ));
        }
        s
    }

    /// "key 2: 3, key 5: 1, acknowledged 0.4–1.1 s before partition … began".
    fn lost_where(&self) -> String {
        let per_key: Vec<String> = self
            .keys
            .iter()
            .filter(|k| !k.lost.is_empty())
            .map(|k| format!("key {}: {}", k.key, k.lost.len()))
            .collect();
        let mut parts = vec![preview(&per_key)];
        // Group lost acks by the fault they came during or before: (lo gap, hi gap, count).
        let mut by_fault: BTreeMap<String, (f64, f64, usize)> = BTreeMap::new();
        for k in &self.keys {
            for &e in &k.lost {
                let Some((inv, done)) = self.add_of(k, e) else {
                    continue;
                };
                let ack = secs(done.map_or(inv.time_ns, |d| d.time_ns));
                let tm = Timing::of(&self.faults, ack);
                let (label, gap) = match (&tm.active.first(), &tm.after) {
                    (Some(a), _) => (format!("during {a}"), f64::NAN),
                    (None, Some((l, g))) => (format!("before {l} began"), *g),
                    (None, None) if self.faults.is_empty() => continue,
                    (None, None) => ("after the last fault began".to_string(), f64::NAN),
                };
                let entry = by_fault.entry(label).or_insert((f64::INFINITY, 0.0, 0));
                entry.2 += 1;
                if gap.is_finite() {
                    entry.0 = entry.0.min(gap);
                    entry.1 = entry.1.max(gap);
                }
            }
        }
        // The groups with most lost elements first; at most three.
        let mut groups: Vec<(&String, &(f64, f64, usize))> = by_fault.iter().collect();
        groups.sort_by_key(|(_, g)| std::cmp::Reverse(g.2));
        for (label, (lo, hi, _)) in groups.into_iter().take(3) {
            if lo.is_finite() && format!("{lo:.1}") == format!("{hi:.1}") {
                parts.push(format!("acknowledged {lo:.1} s {label}"));
            } else if lo.is_finite() {
                parts.push(format!("acknowledged {lo:.1}–{hi:.1} s {label}"));
            } else {
                parts.push(format!("acknowledged {label}"));
            }
        }
        parts.join(", ")
    }

    /// The checker result: verdict, summary and details JSON.
    pub fn result(&self) -> CheckResult {
        let t = self.totals();
        let (lost, lost_left_off) = self.lost_rows();
        let (unexpected, unexpected_left_off) = self.element_rows(
            |k| k.unexpected.clone(),
            "read but never attempted on this key",
        );
        let (failed, failed_left_off) = self.element_rows(
            |k| k.failed_but_present.clone(),
            "its add failed (definitely not added), yet a read returned it",
        );
        let (stale, stale_left_off) = self.element_rows(
            |k| {
                k.stale
                    .iter()
                    .map(|&(e, _, missing)| (e, missing))
                    .collect()
            },
            "seen by an earlier read, missing from this one",
        );
        let recovered: Vec<Value> = self
            .keys
            .iter()
            .flat_map(|k| {
                k.recovered
                    .iter()
                    .map(|&e| json!({"key": k.key, "element": self.elem(e)}))
            })
            .take(WITNESS_CAP)
            .collect();
        let unknown_keys: Vec<&str> = self
            .keys
            .iter()
            .filter(|k| k.attempted > 0 && k.final_read.is_none())
            .map(|k| k.key.as_str())
            .collect();
        let verdict = self.verdict();
        let rows: Vec<Value> = self
            .keys
            .iter()
            .take(KEY_ROWS_CAP)
            .map(|k| self.key_row(k))
            .collect();
        let mut details = json!({
            "verdict": verdict,
            "keys_total": self.keys.len(),
            "keys_unknown": unknown_keys.len(),
            "unknown_keys": unknown_keys.iter().take(WITNESS_CAP).collect::<Vec<_>>(),
            "keys": rows,
            "keys_left_off": self.keys.len().saturating_sub(KEY_ROWS_CAP),
            "lost_elements": lost,
            "lost_left_off": lost_left_off,
            "unexpected_elements": unexpected,
            "unexpected_left_off": unexpected_left_off,
            "failed_but_present_elements": failed,
            "failed_but_present_left_off": failed_left_off,
            "recovered_elements": recovered,
            "recovered_left_off": (t["recovered"] as usize).saturating_sub(WITNESS_CAP),
            "stale_elements": stale,
            "stale_left_off": stale_left_off,
        });
        if let Value::Object(m) = &mut details {
            for (name, n) in &t {
                m.insert((*name).into(), json!(n));
            }
            if verdict == Verdict::Unknown {
                let reason = if t["attempted"] == 0 {
                    "no client adds in the history".to_string()
                } else {
                    format!(
                        "{} key(s) with adds have no final read that began after their last add: {}",
                        unknown_keys.len(),
                        preview(&unknown_keys)
                    )
                };
                m.insert("unknown_reason".into(), reason.into());
            }
        }
        CheckResult {
            checker: NAME.into(),
            verdict,
            summary: self.summary(),
            details,
        }
    }
}

/// At most five items joined, with "and N more".
fn preview<S: AsRef<str>>(items: &[S]) -> String {
    let shown: Vec<&str> = items.iter().take(5).map(AsRef::as_ref).collect();
    let mut s = shown.join(", ");
    if items.len() > 5 {
        s.push_str(&format!(" and {} more", items.len() - 5));
    }
    s
}
