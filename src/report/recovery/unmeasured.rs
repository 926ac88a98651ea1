//! Why a fault's recovery was not measured, kept as a reason per fault and named in the
//! recovery summary line per fault ("kill n2 at 55.0 s: never healed").
//!
//! Owns the reasons ([`Unmeasured`]), their words, reading them from the text of results stored
//! before reasons were kept, and the grouped text of the summary line. Does not own deciding
//! which reason applies (`recovery::fault_recovery`) or the rest of the summary line.

use super::{FaultRecovery, Recovery};
use serde::{Deserialize, Serialize};

/// Why a fault's recovery was not measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unmeasured {
    /// The history never shows it healed.
    NeverHealed,
    /// No usable pre-fault level: too little time without fault changes before it, or nothing
    /// served then.
    NoBaseline,
    /// Healed only when the workload had already stopped (the final heal, after the time limit).
    HealedAfterWorkload,
    /// The workload stopped before a sustained recovery could be seen after the heal.
    WorkloadStopped,
    /// The next fault began too soon after the heal.
    NextFault,
    /// The history ended too soon after the heal.
    HistoryEnded,
}

impl Unmeasured {
    /// The reason in words, for the summary line.
    pub fn phrase(self) -> &'static str {
        match self {
            Unmeasured::NeverHealed => "never healed",
            Unmeasured::NoBaseline => "no baseline before it",
            Unmeasured::HealedAfterWorkload => {
                "healed by the final heal, after the workload stopped"
            }
            Unmeasured::WorkloadStopped => "the workload stopped before recovery could be seen",
            Unmeasured::NextFault => "the next fault came too soon after the heal",
            Unmeasured::HistoryEnded => "the history ended too soon after the heal",
        }
    }

    /// The reason of a fault stored before reasons were kept, from its `not_recovered` text.
    fn from_text(why: &str) -> Option<Unmeasured> {
        Some(if why.starts_with("never healed") {
            Unmeasured::NeverHealed
        } else if why.starts_with("no baseline") {
            Unmeasured::NoBaseline
        } else if why.starts_with("only 0.0 s from the heal until the workload stopped") {
            Unmeasured::HealedAfterWorkload
        } else if why.contains("the workload stopped") {
            Unmeasured::WorkloadStopped
        } else if why.contains("the next fault change") {
            Unmeasured::NextFault
        } else if why.contains("the end of the history") {
            Unmeasured::HistoryEnded
        } else {
            return None;
        })
    }
}

impl FaultRecovery {
    /// Why recovery was not measured; `None` when it was (recovered or not).
    pub fn unmeasured_reason(&self) -> Option<Unmeasured> {
        if self.measured || self.recovery_s.is_some() {
            return None;
        }
        self.unmeasured.or_else(|| {
            self.not_recovered
                .as_deref()
                .and_then(Unmeasured::from_text)
        })
    }
}

impl Recovery {
    /// The faults whose recovery was not measured, grouped by why: "kill n2 at 55.0 s: never
    /// healed; isolate n1 at 0.5 s, pause n3 at 12.0 s: no baseline before it". At most
    /// [`UNMEASURED_NAMED`] faults are named per reason, then "and N more".
    pub fn unmeasured_text(&self) -> String {
        let mut by_reason: Vec<(Option<Unmeasured>, Vec<&FaultRecovery>)> = Vec::new();
        for f in self
            .faults
            .iter()
            .filter(|f| !f.measured && f.recovery_s.is_none())
        {
            let why = f.unmeasured_reason();
            match by_reason.iter_mut().find(|(w, _)| *w == why) {
                Some((_, fs)) => fs.push(f),
                None => by_reason.push((why, vec![f])),
            }
        }
        by_reason.sort_by_key(|(w, _)| (w.is_none(), *w));
        by_reason
            .iter()
            .map(|(why, fs)| {
                let named: Vec<String> = fs
                    .iter()
                    .take(UNMEASURED_NAMED)
                    .map(|f| format!("{} at {:.1} s", f.label, f.start_s))
                    .collect();
                let mut text = named.join(", ");
                if fs.len() > UNMEASURED_NAMED {
                    text.push_str(&format!(" and {} more", fs.len() - UNMEASURED_NAMED));
                }
                format!(
                    "{text}: {}",
                    why.map_or("for another reason", Unmeasured::phrase)
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Faults named per reason in [`Recovery::unmeasured_text`].
pub const UNMEASURED_NAMED: usize = 3;
