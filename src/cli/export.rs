//! `shakedown export`'s flags: the run directory (or history file), the format and where to
//! write. What it does is `app::export`; the writers are the core's `export`.

use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// `shakedown export` flags.
#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// A run directory (its history.jsonl), or a history file in any format `check` reads.
    pub run_dir: PathBuf,
    /// edn: Jepsen / Elle / Knossos EDN, one op map per line; porcupine: Porcupine's kv lines
    /// (get, put and append only; read and write become get and put; nemesis ops left out);
    /// elle-json: elle-cli's JSON array of op objects. Ops with keys carry jepsen.independent
    /// [key value] tuples in edn and elle-json.
    #[arg(long, value_enum)]
    pub format: ExportFormatArg,
    /// Write to this file instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// `--format`.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ExportFormatArg {
    /// Jepsen / Elle / Knossos EDN.
    Edn,
    /// Porcupine's kv lines.
    Porcupine,
    /// elle-cli's JSON.
    ElleJson,
}

impl From<ExportFormatArg> for crate::export::ExportFormat {
    fn from(f: ExportFormatArg) -> Self {
        match f {
            ExportFormatArg::Edn => crate::export::ExportFormat::Edn,
            ExportFormatArg::Porcupine => crate::export::ExportFormat::Porcupine,
            ExportFormatArg::ElleJson => crate::export::ExportFormat::ElleJson,
        }
    }
}
