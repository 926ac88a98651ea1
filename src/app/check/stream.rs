//! `shakedown check --stream`: whether a history is checked as it is read
//! (`stream`) or whole, and the streamed result as a [`FileCheck`] like the
//! whole check's.
//!
//! Owns the choice: a JSONL file (its format told by its first MiB, or `--format jsonl`), over
//! [`STREAM_ABOVE`] with `--stream auto` or any size with `--stream always`, checked with a model
//! the stream can check (the run's, `--model`, or `auto` read from the file's first MiB and
//! confirmed by the whole file), and no option that needs the whole history (`--html`,
//! `--export-edn`, `--independent`, `--linearizable`); `--session` streams too. Anything else is checked whole,
//! as before; with `--stream always`, or when a big file could not be streamed, a note says why.
//! Also owns the notes on what the stream held. Does not own the stream itself or the verdict
//! rules (`check`).

use super::{Facts, FileCheck, Primary, Settings, judged, model_options, plan_for, what_ran};
use crate::checker::txn::parse::TxnKind;
use crate::cli::{CheckArgs, StreamArg};
use crate::history::{History, JsonlReader};
use crate::import::{InputFormat, ModelSniff, STREAM_ABOVE, detect_format};
use crate::model::SemanticsPreset;
use crate::stream::{self, HOLD_NOTE_OPS, IDLE_OPS, Outcome, StreamPlan};
use std::io::Read;
use std::path::Path;

/// How much of the file its format and `--model auto`'s first guess are read from.
const HEAD_BYTES: u64 = 1 << 20;

/// What became of trying to stream a history.
pub(super) enum Tried {
    /// Checked as it streamed.
    Streamed(Box<FileCheck>),
    /// To be checked whole; a note saying why, when the user should know.
    Whole(Option<String>),
}

/// The whole JSONL history as the stream reads it: no ops held, the reader's warnings.
fn streamed_history(warnings: Vec<String>, cut_short: Option<String>) -> super::LoadedHistory {
    super::LoadedHistory {
        history: History {
            warnings,
            cut_short,
            ..History::default()
        },
        format: InputFormat::Jsonl,
        independent: false,
        semantics: SemanticsPreset::Etcd,
    }
}

/// The file's first lines (up to [`HEAD_BYTES`], whole lines only), when they are text.
fn head(file: &Path, size: u64) -> Option<String> {
    let mut bytes = Vec::new();
    std::fs::File::open(file)
        .ok()?
        .take(HEAD_BYTES)
        .read_to_end(&mut bytes)
        .ok()?;
    if size > HEAD_BYTES {
        let whole_lines = bytes.iter().rposition(|&b| b == b'\n')?;
        bytes.truncate(whole_lines);
    }
    String::from_utf8(bytes).ok()
}

/// Check `path` as it streams when it can be (see the module doc). `Err` as the whole check's.
pub(super) fn check(path: &Path, args: &CheckArgs, settings: &Settings) -> Result<Tried, String> {
    if args.stream == StreamArg::Never {
        return Ok(Tried::Whole(None));
    }
    let always = args.stream == StreamArg::Always;
    let whole = |why: String, big: bool| {
        Ok(Tried::Whole((always || big).then(|| {
            format!("{}: checked whole: {why}", path.display())
        })))
    };
    let Ok(file) = crate::store::resolve_history(path) else {
        return Ok(Tried::Whole(None));
    };
    let size = std::fs::metadata(&file).map_or(0, |m| m.len());
    let big = size > STREAM_ABOVE;
    if !always && !big {
        return Ok(Tried::Whole(None));
    }
    if args.html.is_some() || args.export_edn.is_some() || args.independent || args.linearizable {
        let why = "--html, --export-edn, --independent and --linearizable need the whole history";
        return whole(why.into(), big);
    }
    let Some(head) = head(&file, size).filter(|h| !h.trim().is_empty()) else {
        return Ok(Tried::Whole(None));
    };
    let format = InputFormat::from_arg(&args.format)?.unwrap_or_else(|| detect_format(&head));
    if format != InputFormat::Jsonl {
        return whole(format!("{} input is read whole", format.name()), big);
    }
    let mut sniff = ModelSniff::default();
    let mut lines = JsonlReader::new(head.as_bytes(), "head");
    while let Ok(Some((op, _))) = lines.next_op() {
        sniff.see(&op);
    }
    let head_model = sniff.model(InputFormat::Jsonl);
    let ran = what_ran(path)?;
    // `auto` and elle-cli's names are confirmed by the whole file as it streams.
    let (model, auto) = match (args.model.as_str(), TxnKind::parse(&args.model)) {
        ("auto", _) => match &ran.model {
            Some(m) => (m.clone(), None),
            None => (head_model.to_string(), Some(InputFormat::Jsonl)),
        },
        (m, Some(_)) if m == head_model => (m.to_string(), Some(InputFormat::Jsonl)),
        (m, Some(_)) => {
            return whole(
                format!("model {m} on these ops needs the whole history"),
                big,
            );
        }
        (m, None) => (m.to_string(), None),
    };
    if !stream::streams(&model) {
        return whole(
            format!("model {model} is checked on the whole history"),
            big,
        );
    }
    let loaded = streamed_history(Vec::new(), None);
    let options = model_options(args, settings, &loaded, &ran);
    let plan = plan_for(args, settings, &model, &options, &ran);
    let name = file.display().to_string();
    let open = || std::fs::File::open(&file).map(|f| std::io::BufReader::with_capacity(1 << 20, f));
    let s = match stream::check_jsonl(open, &name, &StreamPlan::new(plan, auto)) {
        Outcome::Checked(s) => s,
        Outcome::Whole(why) => return whole(why, true),
        // The whole check's error, without reading the history whole for it.
        Outcome::Unreadable(reason) => return Err(format!("{}: {reason}", path.display())),
    };
    let mut notes = Vec::new();
    if s.held.ops > HOLD_NOTE_OPS {
        notes.push(format!(
            "{name}: the streamed check held up to {} ops of {} keys at once: a key is held \
             until every process that worked on it has moved to another key (or not been seen \
             for {IDLE_OPS} ops) and none of its ops is open, and these had not (keys that \
             never rotate, such as the session workload's, are held to the end of the file)",
            s.held.ops, s.held.keys
        ));
    }
    if s.late_replayed > 0 {
        notes.push(format!(
            "{name}: {} had ops after they looked retired (such as a run's final reads) that \
             fit the state their earlier ops ended in (and, with --session, what each session \
             had seen of them): checked without reading them again",
            crate::plural::counted(s.late_replayed, "key"),
        ));
    }
    if s.late_passes > 0 {
        notes.push(format!(
            "{name}: {} had ops after they looked retired (such as a run's final reads): the \
             file was read {} more for them, holding up to {} ops of {} keys at once",
            crate::plural::counted(s.late_keys - s.late_replayed, "key"),
            crate::plural::counted(s.late_passes, "time"),
            s.late_held.ops,
            s.late_held.keys
        ));
    }
    let facts = Facts {
        events: s.events,
        clients: s.clients,
        nemesis_client_ops: s.nemesis_client_ops,
    };
    let loaded = streamed_history(s.warnings, s.cut_short);
    let session = s.session.as_ref().map(|r| r.check_result());
    let mut fc = judged(
        loaded,
        model,
        options,
        Primary::Linear(s.result),
        session,
        facts,
    );
    fc.notes = notes;
    Ok(Tried::Streamed(Box::new(fc)))
}
