//! [`JsonlReader`]: the JSONL history format read one op at a time, as [`History::read_jsonl`](super::History::read_jsonl)
//! reads it whole (which is built on it), so that a history can also be checked as it is read
//! (`stream`) with the same errors, warnings and crash artefacts.
//!
//! Owns the line rules: every non-blank line is an op object; only the *last* line may be a torn
//! op (dropped with a warning), and zero bytes after the last record (a killed writer's padding)
//! are dropped with a warning; both mark the history cut short. Does not own what an op is
//! (`history`).

use super::{HistoryError, Op, is_torn_op, json_error_text};
use std::io::BufRead;

/// Reads a JSONL history op by op (see the module doc).
pub struct JsonlReader<R> {
    reader: R,
    name: String,
    line: Vec<u8>,
    /// Lines read so far.
    lines: usize,
    /// Ops returned so far.
    ops: usize,
    /// A torn line, allowed only if nothing follows it.
    torn: Option<(usize, String)>,
    warnings: Vec<String>,
    cut_short: Option<String>,
}

impl<R: BufRead> JsonlReader<R> {
    /// Read `reader`; `name` labels errors (usually the file path).
    pub fn new(reader: R, name: &str) -> Self {
        JsonlReader {
            reader,
            name: name.to_string(),
            line: Vec::new(),
            lines: 0,
            ops: 0,
            torn: None,
            warnings: Vec::new(),
            cut_short: None,
        }
    }

    fn malformed(&self, line: usize, message: String) -> HistoryError {
        HistoryError::Malformed {
            path: self.name.clone(),
            line,
            message,
        }
    }

    fn io(&self, source: std::io::Error) -> HistoryError {
        HistoryError::Io {
            path: self.name.clone(),
            source,
        }
    }

    /// The next op with the 1-based line it is on, or `None` at the end of the input.
    pub fn next_op(&mut self) -> Result<Option<(Op, usize)>, HistoryError> {
        loop {
            self.line.clear();
            let i = self.lines;
            match self.reader.read_until(b'\n', &mut self.line) {
                Ok(0) => return Ok(None),
                Ok(_) => {}
                Err(e) => return Err(self.io(e)),
            }
            self.lines += 1;
            if self.line.last() == Some(&b'\n') {
                self.line.pop();
            }
            let at_end = match self.reader.fill_buf() {
                Ok(rest) => rest.is_empty(),
                Err(e) => return Err(self.io(e)),
            };
            if at_end {
                // Zeros after the last record: the padding of a mapped history whose writer
                // was killed (`mapped`); a record cut short before them is torn as any other.
                let kept = self.line.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
                if kept < self.line.len() {
                    let w = format!(
                        "{}:{}: ignoring {} zero bytes at the end (a writer stopped before it trimmed the file)",
                        self.name,
                        i + 1,
                        self.line.len() - kept
                    );
                    self.cut_short = Some(w.clone());
                    self.warnings.push(w);
                    self.line.truncate(kept);
                }
            }
            let trimmed = self.line.trim_ascii();
            if trimmed.is_empty() {
                continue;
            }
            // A torn line followed by more lines is not a crash artefact: malformed.
            if let Some((line, message)) = self.torn.take() {
                return Err(self.malformed(line, message));
            }
            match serde_json::from_slice::<Op>(trimmed) {
                Ok(op) => {
                    self.ops += 1;
                    return Ok(Some((op, i + 1)));
                }
                Err(_) if self.ops == 0 && trimmed.starts_with(b"[") => {
                    return Err(self.malformed(
                        i + 1,
                        "expected one JSON op object per line, found a JSON array: read it with --format json (or auto)".into(),
                    ));
                }
                Err(e) if is_torn_op(trimmed, &e) => {
                    self.torn = Some((
                        i + 1,
                        format!(
                            "expected a JSON op object, the line ends early: {}",
                            json_error_text(&e)
                        ),
                    ));
                }
                Err(e) => {
                    let message = format!("expected a JSON op object: {}", json_error_text(&e));
                    return Err(self.malformed(i + 1, message));
                }
            }
        }
    }

    /// After the last op: the warnings and, when the input ends in a crash artefact, why (see
    /// [`History::cut_short`](super::History::cut_short)). A torn only line is an error.
    pub fn finish(mut self) -> Result<(Vec<String>, Option<String>), HistoryError> {
        if let Some((line, message)) = self.torn.take() {
            if self.ops == 0 {
                return Err(
                    self.malformed(line, format!("{message} (and no complete op before it)"))
                );
            }
            let w = format!("{}:{line}: ignoring torn last line ({message})", self.name);
            self.cut_short = Some(w.clone());
            self.warnings.push(w);
        }
        Ok((self.warnings, self.cut_short))
    }
}

/// How many bytes of whole lines one block holds, at least.
const BLOCK_BYTES: u64 = 1 << 20;
/// Blocks parsed at once.
const BLOCKS_AT_ONCE: usize = 8;

/// A JSONL history read in blocks of whole lines, each block parsed on rayon's pool, the ops
/// handed out in history order: [`JsonlReader`] at several times its speed on a big file. Only
/// the last block (where a torn line or a killed writer's padding can be) is read by a
/// [`JsonlReader`], so warnings and crash artefacts are its. Every other non-blank line must
/// be an op: a line that is not is an error naming it, with less detail than
/// [`JsonlReader`]'s (callers that need its exact message read the file with it).
pub struct JsonlBlocks<R> {
    reader: R,
    name: String,
    /// Bytes after the last whole line read.
    carry: Vec<u8>,
    /// Lines handed out before the next block.
    lines: usize,
    /// The position of the next op (ops handed out so far; with `keep`, those not parsed too).
    position: u64,
    /// The end of the file was reached: the rest is read by `tail`.
    tail: Option<JsonlReader<std::io::Cursor<Vec<u8>>>>,
    /// Only the lines it may keep are parsed ([`JsonlBlocks::filtered`]).
    keep: Option<LineFilter>,
}

/// Which op lines a filtered read parses (`true`: maybe one the reader wants; a line it is
/// not sure of must give `true`): the others are counted, not parsed.
pub type LineFilter = std::sync::Arc<dyn Fn(&[u8]) -> bool + Send + Sync>;

/// The plain string a JSONL op line's `"key"` field names, found without parsing the line;
/// `None` when that cannot be told so (no such field, the name seen twice, a key that is not a
/// plain string: a number, an escape).
pub fn plain_key(line: &[u8]) -> Option<&[u8]> {
    const FIELD: &[u8] = b"\"key\"";
    static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(FIELD));
    let at = FINDER.find(line)? + FIELD.len();
    if FINDER.find(&line[at..]).is_some() {
        return None;
    }
    let rest = line[at..].trim_ascii_start();
    let rest = rest.strip_prefix(b":")?.trim_ascii_start();
    let rest = rest.strip_prefix(b"\"")?;
    let end = rest.iter().position(|&c| c == b'"' || c == b'\\')?;
    (rest[end] == b'"').then(|| &rest[..end])
}

impl<R: std::io::Read> JsonlBlocks<R> {
    /// Read `reader`; `name` labels errors.
    pub fn new(reader: R, name: &str) -> Self {
        JsonlBlocks {
            reader,
            name: name.to_string(),
            carry: Vec::new(),
            lines: 0,
            position: 0,
            tail: None,
            keep: None,
        }
    }

    /// Read `reader`, parsing only the lines `keep` may want (the last block's are all
    /// parsed): each op handed out has its position in the file in `index` (the ops skipped
    /// counted). For a file already read whole once (its errors are known).
    pub fn filtered(reader: R, name: &str, keep: LineFilter) -> Self {
        JsonlBlocks {
            keep: Some(keep),
            ..JsonlBlocks::new(reader, name)
        }
    }

    /// The next block of whole lines, or `None` at the end of the file (the rest then in
    /// `carry`).
    fn block(&mut self) -> Result<Option<Vec<u8>>, HistoryError> {
        use std::io::Read;
        let mut buf = std::mem::take(&mut self.carry);
        loop {
            let before = buf.len();
            (&mut self.reader)
                .take(BLOCK_BYTES)
                .read_to_end(&mut buf)
                .map_err(|source| HistoryError::Io {
                    path: self.name.clone(),
                    source,
                })?;
            if buf.len() == before {
                self.carry = buf;
                return Ok(None);
            }
            if let Some(nl) = buf.iter().rposition(|&b| b == b'\n') {
                self.carry = buf.split_off(nl + 1);
                return Ok(Some(buf));
            }
        }
    }

    /// The next ops, in history order (several vectors, one per block), or `None` at the end.
    pub fn next_ops(&mut self) -> Result<Option<Vec<Vec<Op>>>, HistoryError> {
        if let Some(tail) = &mut self.tail {
            let mut ops = Vec::new();
            while ops.len() < 1 << 16
                && let Some((mut op, _)) = tail.next_op()?
            {
                if self.keep.is_some() {
                    op.index = self.position;
                }
                self.position += 1;
                ops.push(op);
            }
            return Ok((!ops.is_empty()).then(|| vec![ops]));
        }
        let mut blocks = Vec::with_capacity(BLOCKS_AT_ONCE);
        let mut at_end = false;
        while blocks.len() < BLOCKS_AT_ONCE {
            match self.block()? {
                Some(b) => blocks.push(b),
                None => {
                    at_end = true;
                    break;
                }
            }
        }
        if at_end {
            // The last block and what follows it are read line by line, with the end rules.
            let mut last = blocks.pop().unwrap_or_default();
            last.append(&mut self.carry);
            self.tail = Some(JsonlReader::new(std::io::Cursor::new(last), &self.name));
        }
        use rayon::prelude::*;
        let first_line = self.lines;
        let keep = self.keep.as_ref();
        let parsed: Vec<Parsed> = blocks
            .par_iter()
            .map(|b| parse_block(b.as_slice(), keep))
            .collect();
        let mut out = Vec::with_capacity(parsed.len());
        let mut line = first_line;
        for p in parsed {
            match p {
                Ok((mut ops, lines, counted)) => {
                    line += lines;
                    if self.keep.is_some() {
                        // Positions within the block, made the file's.
                        for op in &mut ops {
                            op.index += self.position;
                        }
                    }
                    self.position += counted as u64;
                    out.push(ops);
                }
                Err((at, message)) => {
                    return Err(HistoryError::Malformed {
                        path: self.name.clone(),
                        line: line + at,
                        message,
                    });
                }
            }
        }
        self.lines = line;
        if let Some(tail) = self.tail.as_mut().filter(|t| t.lines == 0) {
            // The tail's lines and ops counted from the file's start.
            tail.lines = self.lines;
            tail.ops = self.position as usize;
        }
        if out.is_empty() && self.tail.is_some() {
            return self.next_ops();
        }
        Ok(Some(out))
    }

    /// After the last op: as [`JsonlReader::finish`].
    pub fn finish(self) -> Result<(Vec<String>, Option<String>), HistoryError> {
        match self.tail {
            Some(t) => t.finish(),
            None => Ok((Vec::new(), None)),
        }
    }
}

/// Groups of blocks parsed ahead of the reader by [`JsonlAhead`], besides the one it reads.
const GROUPS_AHEAD: usize = 1;

/// What a reader leaves at the end: its warnings and why the history is cut short, if it is.
type Ending = Result<(Vec<String>, Option<String>), HistoryError>;

/// What the read-ahead thread hands over.
enum Ahead {
    Ops(Vec<Vec<Op>>),
    Failed(HistoryError),
    End(Ending),
}

/// [`JsonlBlocks`] on a thread of its own, the next group of blocks read and parsed while the
/// caller works through the last one (the caller's work per op and the parse overlap instead of
/// taking turns). The same ops, errors, warnings and crash artefacts as [`JsonlBlocks`]; at most
/// [`GROUPS_AHEAD`] groups wait. Dropping it stops the thread (it ends at its next hand-over).
pub struct JsonlAhead {
    rx: Option<std::sync::mpsc::Receiver<Ahead>>,
    thread: Option<std::thread::JoinHandle<()>>,
    name: String,
    end: Option<Ending>,
}

impl JsonlAhead {
    /// Start reading `reader` on a thread; `name` labels errors.
    pub fn new<R: std::io::Read + Send + 'static>(
        reader: R,
        name: &str,
    ) -> Result<Self, HistoryError> {
        Self::start(reader, name, None)
    }

    /// As [`JsonlBlocks::filtered`], on a thread.
    pub fn filtered<R: std::io::Read + Send + 'static>(
        reader: R,
        name: &str,
        keep: LineFilter,
    ) -> Result<Self, HistoryError> {
        Self::start(reader, name, Some(keep))
    }

    fn start<R: std::io::Read + Send + 'static>(
        reader: R,
        name: &str,
        keep: Option<LineFilter>,
    ) -> Result<Self, HistoryError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(GROUPS_AHEAD);
        let path = name.to_string();
        let thread = std::thread::Builder::new()
            .name("history-read".into())
            .spawn(move || {
                let mut blocks = match keep {
                    Some(keep) => JsonlBlocks::filtered(reader, &path, keep),
                    None => JsonlBlocks::new(reader, &path),
                };
                let last = loop {
                    match blocks.next_ops() {
                        Ok(Some(ops)) => {
                            if tx.send(Ahead::Ops(ops)).is_err() {
                                return;
                            }
                        }
                        Ok(None) => break Ahead::End(blocks.finish()),
                        Err(e) => break Ahead::Failed(e),
                    }
                };
                let _ = tx.send(last);
            })
            .map_err(|source| HistoryError::Io {
                path: name.to_string(),
                source,
            })?;
        Ok(JsonlAhead {
            rx: Some(rx),
            thread: Some(thread),
            name: name.to_string(),
            end: None,
        })
    }

    /// As [`JsonlBlocks::next_ops`].
    pub fn next_ops(&mut self) -> Result<Option<Vec<Vec<Op>>>, HistoryError> {
        if self.end.is_some() {
            return Ok(None);
        }
        let next = self.rx.as_ref().and_then(|rx| rx.recv().ok());
        match next {
            Some(Ahead::Ops(ops)) => Ok(Some(ops)),
            Some(Ahead::Failed(e)) => Err(e),
            Some(Ahead::End(end)) => {
                self.end = Some(end);
                Ok(None)
            }
            // The thread ended without a word: it panicked.
            None => Err(HistoryError::Io {
                path: self.name.clone(),
                source: std::io::Error::other("the thread reading it stopped"),
            }),
        }
    }

    /// After the last op: as [`JsonlBlocks::finish`].
    pub fn finish(mut self) -> Ending {
        self.end.take().unwrap_or_else(|| Ok((Vec::new(), None)))
    }
}

impl Drop for JsonlAhead {
    fn drop(&mut self) {
        // Hang up first: a thread waiting to hand over a group then ends.
        drop(self.rx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A block parsed: its ops, its line count and its op count (with a filter, the ops it did not
/// parse too); or the 1-based line (within the block) that is not an op, and why.
type Parsed = Result<(Vec<Op>, usize, usize), (usize, String)>;

/// Parse a block of whole lines; with `keep`, only the lines it may want, each op's position
/// within the block in its `index`.
fn parse_block(b: &[u8], keep: Option<&LineFilter>) -> Parsed {
    let mut ops = Vec::with_capacity(if keep.is_some() { 0 } else { b.len() / 100 });
    let (mut lines, mut counted) = (0, 0u64);
    for line in b.split(|&c| c == b'\n') {
        lines += 1;
        let trimmed = line.trim_ascii();
        if trimmed.is_empty() {
            continue;
        }
        counted += 1;
        if keep.is_some_and(|k| !k(trimmed)) {
            continue;
        }
        match serde_json::from_slice::<Op>(trimmed) {
            Ok(mut op) if keep.is_some() => {
                op.index = counted - 1;
                ops.push(op);
            }
            Ok(op) => ops.push(op),
            Err(e) => {
                let message = format!("expected a JSON op object: {}", json_error_text(&e));
                return Err((lines, message));
            }
        }
    }
    // The block ends with a newline: the empty piece after it is no line.
    Ok((ops, lines - 1, counted as usize))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::History;
    use std::io::Cursor;

    /// `n` op lines (about 100 bytes each).
    fn lines(n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| {
                format!(
                    r#"{{"index":{i},"time":{i},"type":"invoke","process":{},"f":"read","key":"k{}","value":null}}"#,
                    i % 7,
                    i % 13
                )
                .into_bytes()
            })
            .collect()
    }

    fn joined(lines: &[Vec<u8>]) -> Vec<u8> {
        lines
            .iter()
            .flat_map(|l| l.iter().copied().chain([b'\n']))
            .collect()
    }

    /// The ops read, the warnings and why the history is cut short.
    type Read = (Vec<Op>, Vec<String>, Option<String>);

    fn all(mut r: JsonlAhead) -> Result<Read, HistoryError> {
        let mut ops = Vec::new();
        while let Some(group) = r.next_ops()? {
            ops.extend(group.into_iter().flatten());
        }
        let (warnings, cut_short) = r.finish()?;
        Ok((ops, warnings, cut_short))
    }

    #[test]
    fn reading_ahead_gives_the_line_readers_ops_warnings_and_errors() {
        // Over two groups of blocks (8 MiB each), then the tail, ending in a torn line.
        let mut bytes = joined(&lines(200_000));
        bytes.extend_from_slice(br#"{"type":"ok","proc"#);
        assert!(bytes.len() > 2 * BLOCKS_AT_ONCE * BLOCK_BYTES as usize);
        let whole = History::read_jsonl(&bytes[..], "h").unwrap();
        let (ops, warnings, cut_short) =
            all(JsonlAhead::new(Cursor::new(bytes), "h").unwrap()).unwrap();
        assert_eq!(ops.len(), 200_000);
        assert!(ops == whole.ops, "the same ops in the same order");
        assert_eq!((warnings, cut_short), (whole.warnings, whole.cut_short));
        // A line that is not an op, in the second group: the error names its line.
        let mut bad = lines(200_000);
        bad[150_000] = b"{not json".to_vec();
        let e = all(JsonlAhead::new(Cursor::new(joined(&bad)), "h").unwrap()).unwrap_err();
        assert!(e.to_string().starts_with("h:150001: "), "{e}");
    }

    #[test]
    fn a_plain_key_is_read_without_parsing_and_anything_else_is_not_guessed() {
        assert_eq!(
            plain_key(br#"{"f":"read","key":"k1","value":2}"#),
            Some(&b"k1"[..])
        );
        assert_eq!(plain_key(br#"{"key" : "a b"}"#), Some(&b"a b"[..]));
        for unsure in [
            &br#"{"f":"read","value":2}"#[..],
            br#"{"key":5}"#,
            br#"{"key":"a\"b"}"#,
            br#"{"key":"k1","value":{"key":"k2"}}"#,
            br#"{"value":"key","key":"k1"}"#,
            br#"{"key":"unterminated"#,
        ] {
            assert_eq!(
                plain_key(unsure),
                None,
                "{}",
                String::from_utf8_lossy(unsure)
            );
        }
    }

    #[test]
    fn a_filtered_read_gives_the_ops_it_may_want_at_their_positions() {
        // No "index" fields: positions come from the reader. Blank lines, keys written as
        // numbers and ops without keys between, over three groups of blocks and the tail.
        let mut ls = Vec::new();
        for i in 0..300_000u64 {
            let key = match i % 101 {
                0 => String::new(),
                1 => format!(r#","key":{i}"#),
                _ => format!(r#","key":"k{}""#, i % 13),
            };
            ls.push(
                format!(
                    r#"{{"time":{i},"type":"invoke","process":{}{key},"f":"read"}}"#,
                    i % 7
                )
                .into_bytes(),
            );
            if i % 1_000 == 0 {
                ls.push(Vec::new());
            }
        }
        let bytes = joined(&ls);
        assert!(bytes.len() > 2 * BLOCKS_AT_ONCE * BLOCK_BYTES as usize);
        let (every, ..) = all(JsonlAhead::new(Cursor::new(bytes.clone()), "h").unwrap()).unwrap();
        let wanted = |op: &Op| {
            op.key
                .as_deref()
                .is_none_or(|k| k == "k3" || !k.starts_with('k'))
        };
        let expected: Vec<(u64, u64)> = every
            .iter()
            .enumerate()
            .filter(|(_, o)| wanted(o))
            .map(|(i, o)| (i as u64, o.time_ns))
            .collect();
        let keep: LineFilter =
            std::sync::Arc::new(|l: &[u8]| plain_key(l).is_none_or(|k| k == b"k3"));
        let (got, ..) = all(JsonlAhead::filtered(Cursor::new(bytes), "h", keep).unwrap()).unwrap();
        // Every op of the last block is parsed (and kept by the caller's own test).
        let got: Vec<(u64, u64)> = got
            .iter()
            .filter(|o| wanted(o))
            .map(|o| (o.index, o.time_ns))
            .collect();
        assert_eq!(got.len(), expected.len());
        assert!(got == expected, "the same ops at the same positions");
    }

    #[test]
    fn a_reader_that_stops_early_stops_the_thread() {
        let mut r = JsonlAhead::new(Cursor::new(joined(&lines(300_000))), "h").unwrap();
        assert!(r.next_ops().unwrap().is_some());
        // Dropping it with groups still to come ends the thread (the drop joins it): a drop
        // that never returns fails here instead of hanging the suite.
        let (done, dropped) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            drop(r);
            let _ = done.send(());
        });
        assert!(
            dropped
                .recv_timeout(std::time::Duration::from_secs(60))
                .is_ok(),
            "dropping the reader did not stop its thread"
        );
    }
}
