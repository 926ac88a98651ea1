//! Terminal summary of a run: op counts by function and outcome, latencies, verdicts, and the
//! one-line recovery summary.
//!
//! Pure: computed from a history's ops one at a time ([`Summarizer`]: a history in memory or
//! its file as it streams, in memory bounded whatever the run's length) and check results,
//! rendered as a small aligned text table; plus the lines saying how an incomplete run ended
//! and what cleanup left behind.

use crate::checker::CheckResult;
use crate::history::{History, Name, Op, OpType};
use serde::Serialize;
use std::collections::BTreeMap;

/// Counts and latency for one function.
#[derive(Debug, Default, Clone, Serialize)]
pub struct FnSummary {
    /// Completed ok.
    pub ok: u64,
    /// Completed fail.
    pub fail: u64,
    /// Completed info (or never completed).
    pub info: u64,
    /// Median latency of ok ops, milliseconds.
    pub p50_ms: f64,
    /// 99th percentile latency of ok ops, milliseconds.
    pub p99_ms: f64,
}

/// Per-function summary of client ops, keyed by `f`.
pub fn summarize(history: &History) -> BTreeMap<String, FnSummary> {
    let mut s = Summarizer::default();
    history.ops.iter().for_each(|op| s.push(op));
    s.finish()
}

/// Latencies kept exactly up to this many per function; past it they go to a histogram.
const EXACT_LATENCIES: usize = 1 << 20;

/// One function's ok latencies (ns): every one while few (exact quantiles), then a histogram of
/// three significant digits (within 0.1 %, a few tens of KiB however many ops).
#[derive(Default)]
struct Latencies {
    exact: Vec<u64>,
    histogram: Option<hdrhistogram::Histogram<u64>>,
}

impl Latencies {
    fn push(&mut self, ns: u64) {
        if self.histogram.is_none() && self.exact.len() >= EXACT_LATENCIES {
            // Three significant digits, any range (the histogram grows as values need).
            if let Ok(mut h) = hdrhistogram::Histogram::new(3) {
                self.exact.drain(..).for_each(|v| record(&mut h, v));
                self.histogram = Some(h);
            }
        }
        match &mut self.histogram {
            Some(h) => record(h, ns),
            None => self.exact.push(ns),
        }
    }

    /// The latency at quantile `q`, in ms (0 when there is none).
    fn quantile_ms(&mut self, q: f64) -> f64 {
        let ns = match &self.histogram {
            Some(h) => h.value_at_quantile(q),
            None if self.exact.is_empty() => 0,
            None => {
                let v = &mut self.exact;
                let at = ((v.len() - 1) as f64 * q).round() as usize;
                *v.select_nth_unstable(at).1
            }
        };
        ns as f64 / 1e6
    }
}

/// Record `ns`, growing the histogram's range as needed (clamped where it cannot grow).
fn record(h: &mut hdrhistogram::Histogram<u64>, ns: u64) {
    if h.record(ns).is_err() {
        h.saturating_record(ns);
    }
}

/// [`summarize`] one op at a time (a history in memory or read from its file as it streams):
/// counts per function and outcome, ok latencies, invokes never completed counted as info.
#[derive(Default)]
pub struct Summarizer {
    /// Per function (interned: an op costs no allocation).
    out: rustc_hash::FxHashMap<Name, FnSummary>,
    latencies: rustc_hash::FxHashMap<Name, Latencies>,
    /// Per client process, its open invoke's function and time.
    open: rustc_hash::FxHashMap<u64, (Name, u64)>,
}

impl Summarizer {
    /// Take the history's next op (nemesis ops are ignored).
    pub fn push(&mut self, op: &Op) {
        if !op.is_client() {
            return;
        }
        let p = op.process.client().unwrap_or(0);
        let s = self.out.entry(op.f.clone()).or_default();
        let t = op.op_type;
        match t {
            OpType::Invoke => {
                self.open.insert(p, (op.f.clone(), op.time_ns));
                return;
            }
            OpType::Ok => s.ok += 1,
            OpType::Fail => s.fail += 1,
            OpType::Info => s.info += 1,
        }
        if let Some((_, start)) = self.open.remove(&p)
            && t == OpType::Ok
        {
            self.latencies
                .entry(op.f.clone())
                .or_default()
                .push(op.time_ns.saturating_sub(start));
        }
    }

    /// The summary; invokes that never completed count as info.
    pub fn finish(mut self) -> BTreeMap<String, FnSummary> {
        for (f, _) in self.open.into_values() {
            if let Some(s) = self.out.get_mut(&f) {
                s.info += 1;
            }
        }
        for (f, mut l) in self.latencies {
            if let Some(s) = self.out.get_mut(&f) {
                s.p50_ms = l.quantile_ms(0.5);
                s.p99_ms = l.quantile_ms(0.99);
            }
        }
        self.out
            .into_iter()
            .map(|(f, s)| (f.to_string(), s))
            .collect()
    }
}

/// The one-line recovery summary of a run ("recovery after heal: p50 0.8 s, max 4.1 s over 9
/// faults; longest outage …", see `report::recovery`) from its results.json value, or `None`
/// when it had no faults or the results hold no recovery.
pub fn recovery_line(results: &serde_json::Value) -> Option<String> {
    crate::report::recovery::from_results(results)?.summary_line()
}

/// Render the table and the verdict lines.
pub fn render(summary: &BTreeMap<String, FnSummary>, results: &[CheckResult]) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "{:<8} {:>8} {:>8} {:>8} {:>9} {:>9}\n",
        "f", "ok", "fail", "info", "p50 ms", "p99 ms"
    ));
    for (f, x) in summary {
        s.push_str(&format!(
            "{:<8} {:>8} {:>8} {:>8} {:>9.2} {:>9.2}\n",
            f, x.ok, x.fail, x.info, x.p50_ms, x.p99_ms
        ));
    }
    for r in results {
        s.push_str(&format!(
            "{:<14} {:<8} {}\n",
            r.checker,
            r.verdict.to_string(),
            r.summary
        ));
    }
    s
}

/// Lines saying how the run ended when it did not complete, and what cleanup could not undo;
/// empty for a complete run that cleaned up. Each line ends with a newline.
pub fn render_completion(c: &crate::completion::CompletionRecord) -> String {
    let mut s = String::new();
    if !c.is_complete() {
        s.push_str(&format!("run: {}\n", c.reason));
    }
    if !c.cleanup_ok() {
        s.push_str("cleanup failed on some nodes; left behind (run `shakedown heal`):\n");
        for f in &c.cleanup_failures {
            s.push_str(&format!("  {f}\n"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Process;
    use serde_json::Value;

    #[test]
    fn counts_outcomes_and_open_invokes() {
        let mk = |t, p, f: &str, time| {
            let mut o = Op::new(t, Process::Client(p), f, Value::Null);
            o.time_ns = time;
            o
        };
        let h = History::from_ops(vec![
            mk(OpType::Invoke, 0, "read", 0),
            mk(OpType::Ok, 0, "read", 2_000_000),
            mk(OpType::Invoke, 1, "write", 1),
            mk(OpType::Info, 1, "write", 5),
            mk(OpType::Invoke, 2, "cas", 7),
            mk(OpType::Fail, 2, "cas", 9),
            mk(OpType::Invoke, 3, "write", 10),
        ]);
        let s = summarize(&h);
        assert_eq!((s["read"].ok, s["read"].p50_ms), (1, 2.0));
        assert_eq!(s["write"].info, 2);
        assert_eq!(s["cas"].fail, 1);
        let text = render(&s, &[]);
        assert!(text.contains("write"));
        let results = serde_json::json!({"recovery": crate::report::recovery::to_json(&h)});
        assert_eq!(recovery_line(&results), None, "no faults, no recovery line");
        assert_eq!(
            recovery_line(&serde_json::json!({})),
            None,
            "no recovery stored"
        );
    }

    #[test]
    fn latency_quantiles_past_the_exact_limit_stay_within_a_tenth_of_a_percent() {
        // Three times the exact limit, spread from 0.2 ms to ~50 ms with a tail.
        let n = 3 * EXACT_LATENCIES as u64;
        let ns = |i: u64| {
            200_000 + (i * 7_919 % n) * 16 + if i.is_multiple_of(100) { 30_000_000 } else { 0 }
        };
        let mut l = Latencies::default();
        let mut all: Vec<u64> = (0..n).map(ns).collect();
        all.iter().for_each(|&v| l.push(v));
        assert!(l.histogram.is_some() && l.exact.is_empty());
        all.sort_unstable();
        for q in [0.5, 0.99] {
            let exact = all[((n - 1) as f64 * q).round() as usize] as f64 / 1e6;
            let got = l.quantile_ms(q);
            assert!(
                (got - exact).abs() <= exact * 1e-3,
                "q {q}: {got} ms, exactly {exact} ms"
            );
        }
        // Below the limit: exact.
        let mut few = Latencies::default();
        [5, 1, 4, 2, 3]
            .iter()
            .for_each(|&v| few.push(v * 1_000_000));
        assert_eq!((few.quantile_ms(0.5), few.quantile_ms(0.99)), (3.0, 5.0));
    }

    #[test]
    fn recovery_line_summarises_recovery_after_heals() {
        let mut ops = Vec::new();
        let mut at = |t_ms: u64, ty: OpType, p: Process, f: &str| {
            let mut o = Op::new(ty, p, f, Value::Null);
            o.time_ns = t_ms * 1_000_000;
            ops.push(o);
        };
        for t in (0..20_000).step_by(100) {
            // Nothing served from 10 s to 11.5 s (1.5 s after the heal at 10 s).
            let down = (10_000..11_500).contains(&t);
            at(t, OpType::Invoke, Process::Client(t), "read");
            let end = if down { OpType::Info } else { OpType::Ok };
            at(t + 5, end, Process::Client(t), "read");
        }
        at(5_000, OpType::Info, Process::Nemesis, "pause");
        at(5_010, OpType::Info, Process::Nemesis, "pause");
        at(10_000, OpType::Info, Process::Nemesis, "resume");
        at(10_000, OpType::Info, Process::Nemesis, "resume");
        ops.sort_by_key(|o| o.time_ns);
        let h = History::from_ops(ops);
        let results = serde_json::json!({"recovery": crate::report::recovery::to_json(&h)});
        let line = recovery_line(&results).unwrap();
        assert_eq!(
            line,
            "recovery after heal: p50 1.5 s, max 1.5 s (1 of 1 fault recovered); \
             longest outage 1.6 s (all ops on all nodes at 9.9 s)"
        );
    }

    #[test]
    fn completion_lines_name_the_reason_and_what_was_left() {
        use crate::completion::CompletionRecord;
        assert_eq!(
            render_completion(&CompletionRecord::completed(60.0, 60.0)),
            ""
        );
        let text = render_completion(
            &CompletionRecord::interrupted(5.1, 60.0)
                .with_cleanup_failures(vec!["n3: removing chain SHAKEDOWN: busy".into()]),
        );
        assert!(
            text.starts_with("run: interrupted after 5.1 s of 60 s\n"),
            "{text}"
        );
        assert!(
            text.contains("  n3: removing chain SHAKEDOWN: busy\n"),
            "{text}"
        );
    }
}
