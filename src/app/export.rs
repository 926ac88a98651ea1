//! `shakedown export RUN_DIR --format edn|porcupine|elle-json [--out FILE]`: write a run's history
//! in a form Jepsen, Elle, Knossos, elle-cli or Porcupine read, and say which `shakedown check`
//! flags judge the exported file as the run was judged.
//!
//! Owns reading the input (a run directory through `store`, or any history file `check` reads),
//! choosing those flags (the model and register semantics the run recorded, which no exported
//! format carries) and writing the output. Does not own the writers (the core's `export`) or
//! checking (`app::check`).

use super::check::what_ran;
use super::load_history;
use crate::cli::{EXIT_RUNTIME, EXIT_USAGE, ExportArgs};
use crate::export::ExportFormat;
use crate::import::default_model_for;
use crate::model::ModelOptions;
use std::path::Path;

/// The `check` flags that judge `format`'s export of the history at `path` as `check path`
/// does: `--model M`, and `--semantics S` for a register model.
fn check_flags(
    path: &Path,
    loaded: &super::LoadedHistory,
    format: ExportFormat,
) -> Result<Vec<String>, String> {
    let ran = what_ran(path)?;
    let model = ran
        .model
        .clone()
        .unwrap_or_else(|| default_model_for(loaded.format, &loaded.history).to_string());
    // Porcupine's lines turn reads and writes into kv gets and puts: the kv model, whose keys
    // start as "" for that input, as the nil reads written as "" assume.
    if format == ExportFormat::Porcupine {
        return Ok(vec!["--model".into(), "kv".into()]);
    }
    let mut flags = vec!["--model".to_string(), model.clone()];
    let preset = ran.semantics.unwrap_or(loaded.semantics);
    if let Some(name) = ModelOptions::preset(preset).to_json(&model)["preset"].as_str() {
        flags.extend(["--semantics".to_string(), name.to_string()]);
    }
    Ok(flags)
}

/// `shakedown export`.
pub fn export(args: ExportArgs) -> i32 {
    let format: ExportFormat = args.format.into();
    let loaded = match load_history(&args.run_dir, "auto", None) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    let flags = match check_flags(&args.run_dir, &loaded, format) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    let exported = match crate::export::export(&loaded.history, format) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("error: {}: {e}", args.run_dir.display());
            return EXIT_USAGE;
        }
    };
    for w in &loaded.history.warnings {
        eprintln!("warning: {w}");
    }
    if let Some(cut) = &loaded.history.cut_short {
        eprintln!(
            "note: the history was cut short by a crash ({cut}); the export holds the ops before it, and a check of the export cannot know ops may be missing"
        );
    }
    for n in &exported.notes {
        eprintln!("note: {n}");
    }
    let target = match &args.out {
        Some(out) => {
            if let Err(e) = std::fs::write(out, &exported.text) {
                eprintln!("error: could not write {}: {e}", out.display());
                return EXIT_RUNTIME;
            }
            eprintln!(
                "wrote {} op(s) as {} to {}",
                exported.ops,
                format.name(),
                out.display()
            );
            out.display().to_string()
        }
        None => {
            print!("{}", exported.text);
            "FILE".to_string()
        }
    };
    eprintln!(
        "check it as the run was checked: shakedown check {target} {}",
        flags.join(" ")
    );
    0
}
