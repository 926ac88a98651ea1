//! A compare's record (`matrix.json`): per cell its runs (one per seed) with what each said about
//! each claim, and the claimed-vs-observed fold over seeds ("held in 5/5 seeds", "refuted in
//! 3/5: …"). The exit code of the whole matrix. Also what `--resume` reads back.
//!
//! Owns the record types and the fold. Does not judge a run (`claim::judge`), run anything or
//! write files. Pure.

use super::claim::{Claim, Observed};
use super::spec::Cell;
use crate::checker::Verdict;

/// One `shakedown run` of a cell with one seed.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunRecord {
    /// The seed.
    pub seed: u64,
    /// The run directory, if the run got far enough to create one.
    pub run_dir: Option<String>,
    /// The run's exit code (`None`: it could not be started or was killed by a signal).
    pub exit_code: Option<i32>,
    /// The run's verdict (`valid`, `invalid`, `unknown`).
    pub verdict: Verdict,
    /// How the run ended (`completed`, `interrupted`, …; `not-run` when it never started).
    pub completion: String,
    /// Wall-clock seconds the run took.
    pub duration_s: f64,
    /// What the run said about each of the cell's claims.
    pub observed: Vec<(Claim, Observed)>,
    /// Why the run has no results (its error output), if so.
    pub error: Option<String>,
    /// The version of the system the run tested (test.json's `db.version`), when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

impl RunRecord {
    /// A run that completed: `--resume` keeps it instead of running it again.
    pub fn is_done(&self) -> bool {
        self.completion == "completed" && self.run_dir.is_some()
    }
}

impl CellRecord {
    /// The distinct versions of the system the cell's runs tested, in run order.
    pub fn versions(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for v in self.runs.iter().filter_map(|r| r.version.as_deref()) {
            if !out.contains(&v) {
                out.push(v);
            }
        }
        out
    }
}

/// Claimed vs observed for one claim of a cell, over its seeds.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClaimOutcome {
    /// The claim.
    pub claim: Claim,
    /// `held` (every seed held it), `refuted` (some seed refuted it), `unknown` (otherwise).
    pub status: String,
    /// Seeds that held, refuted, could not decide it.
    pub held: usize,
    /// Seeds whose run refuted the claim.
    pub refuted: usize,
    /// Seeds whose run could not decide (including seeds not run).
    pub unknown: usize,
    /// Seeds the cell should have run.
    pub seeds: usize,
    /// In words: "held in 5/5 seeds", "refuted in 3/5: …".
    pub text: String,
    /// The first refuting run's directory (the witness), if any.
    pub witness_run: Option<String>,
}

/// One cell with its runs and outcomes.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CellRecord {
    /// The cell (name, flags, claims).
    pub cell: Cell,
    /// Its runs, one per seed run so far, in seed order.
    pub runs: Vec<RunRecord>,
    /// One per claim.
    pub outcomes: Vec<ClaimOutcome>,
}

/// The whole compare, as `matrix.json`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MatrixRecord {
    /// The spec's title.
    pub title: String,
    /// The spec file.
    pub spec: String,
    /// Seeds per cell.
    pub seeds: Vec<u64>,
    /// Cells selected for this compare (after `--cells`).
    pub cells: Vec<CellRecord>,
    /// Flags given after `--` to every run (they replace the spec's flags of the same name).
    #[serde(default)]
    pub run_args: Vec<String>,
    /// Seconds spent running, over every invocation (a resumed compare adds to it).
    pub total_s: f64,
    /// Whether the last invocation was interrupted before every run was done.
    pub interrupted: bool,
    /// Held / refuted / unknown claims over all cells.
    pub held: usize,
    /// Refuted claims.
    pub refuted: usize,
    /// Undecided claims.
    pub unknown: usize,
}

use crate::plural::counted as plural;

/// Fold a claim over the runs of a cell that should have run `seeds` seeds.
pub fn fold(claim: Claim, runs: &[RunRecord], seeds: usize) -> ClaimOutcome {
    let (mut held, mut refuted, mut unknown) = (0, 0, 0);
    let (mut first_refuted, mut first_unknown, mut witness_run) = (None, None, None);
    for r in runs {
        match r.observed.iter().find(|(c, _)| *c == claim).map(|(_, o)| o) {
            Some(Observed::Held) => held += 1,
            Some(Observed::Refuted(what)) => {
                refuted += 1;
                if first_refuted.is_none() {
                    first_refuted = Some(format!("seed {}: {what}", r.seed));
                    witness_run = r.run_dir.clone();
                }
            }
            Some(Observed::Unknown(why)) => {
                unknown += 1;
                first_unknown.get_or_insert_with(|| format!("seed {}: {why}", r.seed));
            }
            None => {
                unknown += 1;
                let why = r.error.as_deref().unwrap_or("no result");
                first_unknown.get_or_insert_with(|| format!("seed {}: {why}", r.seed));
            }
        }
    }
    let not_run = seeds.saturating_sub(runs.len());
    unknown += not_run;
    if not_run > 0 && first_unknown.is_none() {
        first_unknown = Some(format!("{} not run", plural(not_run, "seed")));
    }
    let (status, text) = if refuted > 0 {
        (
            "refuted",
            format!(
                "refuted in {refuted}/{seeds}: {}",
                first_refuted.unwrap_or_default()
            ),
        )
    } else if unknown > 0 || seeds == 0 {
        (
            "unknown",
            format!(
                "unknown in {unknown}/{seeds} (held in {held}): {}",
                first_unknown.unwrap_or_else(|| "no seeds".to_string())
            ),
        )
    } else {
        ("held", format!("held in {held}/{seeds} seeds"))
    };
    ClaimOutcome {
        claim,
        status: status.to_string(),
        held,
        refuted,
        unknown,
        seeds,
        text,
        witness_run,
    }
}

impl CellRecord {
    /// A cell with no runs yet.
    pub fn new(cell: Cell) -> CellRecord {
        CellRecord {
            cell,
            runs: vec![],
            outcomes: vec![],
        }
    }

    /// Recompute the outcomes from the runs.
    pub fn refold(&mut self, seeds: usize) {
        self.runs.sort_by_key(|r| r.seed);
        self.outcomes = self
            .cell
            .claims
            .iter()
            .map(|c| fold(*c, &self.runs, seeds))
            .collect();
    }
}

impl MatrixRecord {
    /// Recompute every cell's outcomes and the totals.
    pub fn refold(&mut self) {
        let seeds = self.seeds.len();
        let (mut h, mut r, mut u) = (0, 0, 0);
        for c in &mut self.cells {
            c.refold(seeds);
            for o in &c.outcomes {
                match o.status.as_str() {
                    "held" => h += 1,
                    "refuted" => r += 1,
                    _ => u += 1,
                }
            }
        }
        (self.held, self.refuted, self.unknown) = (h, r, u);
    }

    /// 1 when any claim was refuted, else 2 when any is undecided, else 0.
    pub fn exit_code(&self) -> i32 {
        if self.refuted > 0 {
            Verdict::Invalid.exit_code()
        } else if self.unknown > 0 || self.cells.is_empty() {
            Verdict::Unknown.exit_code()
        } else {
            Verdict::Valid.exit_code()
        }
    }

    /// One line: "4 claims held, 2 refuted, 0 unknown".
    pub fn totals_text(&self) -> String {
        format!(
            "{} held, {} refuted, {} unknown",
            plural(self.held, "claim"),
            self.refuted,
            self.unknown
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(seed: u64, o: Observed) -> RunRecord {
        RunRecord {
            seed,
            run_dir: Some(format!("reports/r{seed}")),
            exit_code: Some(0),
            verdict: Verdict::Valid,
            completion: "completed".into(),
            duration_s: 1.0,
            observed: vec![(Claim::Linearizable, o)],
            error: None,
            version: None,
        }
    }

    #[test]
    fn one_refuting_seed_refutes_and_missing_seeds_are_unknown() {
        let runs = [
            rec(1, Observed::Held),
            rec(2, Observed::Refuted("stale read".into())),
            rec(3, Observed::Unknown("budget".into())),
        ];
        let o = fold(Claim::Linearizable, &runs, 3);
        assert_eq!(
            (o.status.as_str(), o.held, o.refuted, o.unknown),
            ("refuted", 1, 1, 1)
        );
        assert_eq!(o.text, "refuted in 1/3: seed 2: stale read");
        assert_eq!(o.witness_run.as_deref(), Some("reports/r2"));
        let o = fold(Claim::Linearizable, &runs[..1], 3);
        assert_eq!(o.status, "unknown");
        assert_eq!(o.text, "unknown in 2/3 (held in 1): 2 seeds not run");
        let o = fold(
            Claim::Linearizable,
            &[rec(1, Observed::Held), rec(2, Observed::Held)],
            2,
        );
        assert_eq!(
            (o.status.as_str(), o.text.as_str()),
            ("held", "held in 2/2 seeds")
        );
    }

    #[test]
    fn the_matrix_exit_code_is_refuted_over_unknown_over_held() {
        let cell = |name: &str| Cell {
            name: name.into(),
            flags: vec![],
            claims: vec![Claim::Linearizable],
        };
        let mut m = MatrixRecord {
            title: "t".into(),
            spec: "s".into(),
            seeds: vec![1],
            cells: vec![CellRecord::new(cell("a")), CellRecord::new(cell("b"))],
            run_args: vec![],
            total_s: 0.0,
            interrupted: false,
            held: 0,
            refuted: 0,
            unknown: 0,
        };
        m.refold();
        assert_eq!(m.exit_code(), 2, "nothing run is unknown, never held");
        m.cells[0].runs.push(rec(1, Observed::Held));
        m.cells[1].runs.push(rec(1, Observed::Held));
        m.refold();
        assert_eq!(
            (m.exit_code(), m.totals_text()),
            (0, "2 claims held, 0 refuted, 0 unknown".to_string())
        );
        m.cells[1].runs[0] = rec(1, Observed::Refuted("x".into()));
        m.refold();
        assert_eq!(m.exit_code(), 1);
        let json = serde_json::to_string(&m).unwrap();
        let back: MatrixRecord = serde_json::from_str(&json).unwrap();
        assert_eq!(back, m, "matrix.json reads back for --resume");
    }
}
