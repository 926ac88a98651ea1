//! Fuzzing the history readers: one harness per reader ([`Reader::read`]: bytes in, a history or
//! an error out, never a panic), and a small seeded mutator ([`Mutator`], [`short_run`]) for the
//! few-second run the test suite does on every `cargo test`.
//!
//! Owns what "reading" means for a fuzzer: the bytes as `shakedown check` would see them (UTF-8,
//! lossily, since the CLI refuses invalid UTF-8 before any reader runs), handed to
//! [`crate::import::read_text`] with the reader's format forced (or detected, for
//! [`Reader::Auto`]), then what `check` asks of every history before a checker sees it (its
//! invoke/completion pairing and its default model). Does not own the readers themselves
//! (`import`, `edn`, `history`), the coverage-guided fuzzer (the `fuzz/` crate at the repository
//! root drives these harnesses with libFuzzer; docs/guide/fuzzing.md), or the run-directory
//! reader's harness (the shell crate's `fuzz`).

use crate::import::{self, InputFormat};

/// A history reader under fuzzing: one per `--format`, and `auto` (detection, then the reader it
/// picks). Elle-cli's JSON histories are read by [`Reader::Json`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// Jepsen / Knossos EDN.
    Edn,
    /// shakedown JSONL.
    Jsonl,
    /// A JSON array of op objects (elle-cli's JSON).
    Json,
    /// Jepsen's `history.txt`.
    HistoryTxt,
    /// Jepsen console logs.
    JepsenLog,
    /// Porcupine kv lines.
    Porcupine,
    /// `--format auto`: format detection, then whichever reader it chose.
    Auto,
}

impl Reader {
    /// Every reader, in a fixed order.
    pub const ALL: [Reader; 7] = [
        Reader::Edn,
        Reader::Jsonl,
        Reader::Json,
        Reader::HistoryTxt,
        Reader::JepsenLog,
        Reader::Porcupine,
        Reader::Auto,
    ];

    /// The format this reader forces (`None`: detected).
    pub fn format(self) -> Option<InputFormat> {
        match self {
            Reader::Edn => Some(InputFormat::Edn),
            Reader::Jsonl => Some(InputFormat::Jsonl),
            Reader::Json => Some(InputFormat::Json),
            Reader::HistoryTxt => Some(InputFormat::HistoryTxt),
            Reader::JepsenLog => Some(InputFormat::JepsenLog),
            Reader::Porcupine => Some(InputFormat::Porcupine),
            Reader::Auto => None,
        }
    }

    /// The reader's name: its `--format` name, or `auto`.
    pub fn name(self) -> &'static str {
        self.format().map_or("auto", InputFormat::name)
    }

    /// The reader named `name` ([`Reader::name`]).
    pub fn from_name(name: &str) -> Option<Reader> {
        Reader::ALL.into_iter().find(|r| r.name() == name)
    }

    /// Read `bytes` as `shakedown check` would with this reader, then pair its ops and pick its
    /// default model. `Ok(ops)`: a history of that many ops; `Err`: the reader's error message.
    /// Must never panic, hang or allocate without bound, whatever the bytes.
    pub fn read(self, bytes: &[u8]) -> Result<usize, String> {
        let text = String::from_utf8_lossy(bytes);
        let imported = import::read_text(&text, "fuzz-input", self.format(), None)?;
        let history = &imported.history;
        let _ = history.pairs();
        let _ = import::default_model_for(imported.format, history);
        Ok(history.ops.len())
    }

    /// Tokens worth splicing into this reader's input: its syntax and the values it treats
    /// specially (used by [`Mutator`]; the libFuzzer runs find their own).
    pub fn tokens(self) -> Vec<&'static str> {
        const COMMON: &[&str] = &[
            "\n",
            "\t",
            " ",
            "nil",
            "null",
            "-1",
            "0",
            "9223372036854775807",
            "18446744073709551616",
            "-9223372036854775808",
            "1e400",
            "-0.0",
            "\"",
            "\\",
            "\u{0}",
            "\u{feff}",
            "é",
            "invoke",
            "ok",
            "fail",
            "info",
            "read",
            "write",
            "cas",
            "append",
            "txn",
            "nemesis",
            "process",
            "type",
            "value",
            "key",
            "time",
            "error",
        ];
        const EDN: &[&str] = &[
            "{",
            "}",
            "[",
            "]",
            "(",
            ")",
            "#{",
            "#_",
            "#inst ",
            "\\a",
            "\\newline",
            ":",
            ";",
            ":process",
            ":type",
            ":invoke",
            ":ok",
            ":f",
            ":value",
            ":key",
            ":time",
            ":nemesis",
            "[:append :x 1]",
            "[:r :x nil]",
            "1N",
            "1.5M",
            "\"\\u00e9\"",
        ];
        const JSON: &[&str] = &[
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            "\"type\":",
            "\"process\":",
            "\"f\":",
            "\"value\":",
            "\"key\":",
            "\"time\":",
            "\"invoke\"",
            "\":ok\"",
            "\"\\ud800\"",
            "[\"append\",\"x\",1]",
            "[\"r\",\"x\",null]",
            "true",
            "false",
        ];
        const LOG: &[&str] = &[
            "INFO  jepsen.util - ",
            "jepsen.util",
            "2017-03-03 12:00:00,123 ",
            ":invoke",
            ":ok",
            ":read",
            ":write",
            ":cas",
            "[1 2]",
            "[:a 1]",
            "\t:nemesis\t",
            "3\t",
            ":key",
            "{:process 0, :type :invoke, :f :put, :key \"1\", :value \"x\"}",
        ];
        match self {
            Reader::Edn | Reader::Porcupine => [COMMON, EDN].concat(),
            Reader::Jsonl | Reader::Json => [COMMON, JSON].concat(),
            Reader::HistoryTxt | Reader::JepsenLog => [COMMON, LOG, EDN].concat(),
            Reader::Auto => [COMMON, EDN, JSON, LOG].concat(),
        }
    }
}

/// Inputs the mutator makes are cut to this many bytes (the libFuzzer runs use the same bound,
/// `-max_len`): long enough for a few dozen ops, short enough for thousands of inputs a second.
pub const MAX_INPUT: usize = 16 << 10;

/// A seeded mutator of byte strings (xorshift64*): the same seed gives the same inputs, so a
/// failure of the short run names an input that can be made again.
#[derive(Debug, Clone)]
pub struct Mutator {
    state: u64,
    tokens: Vec<&'static [u8]>,
}

impl Mutator {
    /// A mutator splicing `tokens` among its byte edits, seeded with `seed`.
    pub fn new(seed: u64, tokens: &[&'static str]) -> Mutator {
        Mutator {
            state: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
            tokens: tokens.iter().map(|t| t.as_bytes()).collect(),
        }
    }

    fn next(&mut self) -> u64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn token(&mut self) -> &'static [u8] {
        let i = self.below(self.tokens.len());
        self.tokens[i]
    }

    /// A position in `0..=len`, biased towards the start (where headers and detection live).
    fn position(&mut self, len: usize) -> usize {
        if self.below(4) == 0 {
            self.below(len.min(64) + 1)
        } else {
            self.below(len + 1)
        }
    }

    /// `input` changed by one to four edits: a byte flipped, set, inserted or deleted, a range
    /// deleted, duplicated or repeated many times (for quadratic behaviour), a token inserted or
    /// written over, a cut at a random point, or a splice with `other`. At most [`MAX_INPUT`]
    /// bytes.
    pub fn mutate(&mut self, input: &[u8], other: &[u8]) -> Vec<u8> {
        let mut out = input.to_vec();
        for _ in 0..=self.below(4) {
            let len = out.len();
            match self.below(11) {
                0 if len > 0 => {
                    let i = self.below(len);
                    out[i] ^= 1 << self.below(8);
                }
                1 if len > 0 => {
                    let i = self.below(len);
                    out[i] = self.next() as u8;
                }
                2 => {
                    let i = self.position(len);
                    let b = self.next() as u8;
                    out.insert(i, b);
                }
                3 if len > 0 => {
                    let i = self.below(len);
                    let n = 1 + self.below((len - i).min(32));
                    out.drain(i..i + n);
                }
                4 | 5 if !self.tokens.is_empty() => {
                    let t = self.token();
                    let i = self.position(len);
                    out.splice(i..i, t.iter().copied());
                }
                6 if !self.tokens.is_empty() && len > 0 => {
                    let t = self.token();
                    let i = self.below(len);
                    let end = (i + t.len()).min(len);
                    out.splice(i..end, t.iter().copied());
                }
                7 if len > 0 => {
                    let i = self.below(len);
                    let n = 1 + self.below((len - i).min(64));
                    let chunk = out[i..i + n].to_vec();
                    let at = self.position(len);
                    out.splice(at..at, chunk);
                }
                8 if len > 0 => {
                    let i = self.below(len);
                    let n = 1 + self.below((len - i).min(8));
                    let chunk = out[i..i + n].to_vec();
                    let times = 1 + self.below(MAX_INPUT / n);
                    let repeated: Vec<u8> = chunk.repeat(times);
                    out.splice(i..i, repeated);
                }
                9 if len > 0 => {
                    out.truncate(self.below(len));
                }
                10 if !other.is_empty() => {
                    let cut = self.position(len);
                    let from = self.below(other.len());
                    out.truncate(cut);
                    out.extend_from_slice(&other[from..]);
                }
                _ => {}
            }
            out.truncate(MAX_INPUT);
        }
        out
    }
}

/// What a [`short_run`] tried.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Inputs read (the seeds and their mutants).
    pub inputs: u64,
    /// Of which the reader read a history from.
    pub read: u64,
}

/// Feed `check` every seed and `mutants` mutants of them (each mutant from a random seed, or
/// from an earlier mutant the reader accepted), made by a [`Mutator`] seeded with `seed`.
/// `check` returns whether the reader read a history; it is where a caller asserts (no panic, a
/// time bound). Deterministic for a given `seed`.
pub fn short_run(
    seeds: &[Vec<u8>],
    tokens: &[&'static str],
    mutants: u64,
    seed: u64,
    mut check: impl FnMut(&[u8]) -> bool,
) -> RunStats {
    let mut stats = RunStats::default();
    let mut pool: Vec<Vec<u8>> = Vec::new();
    for s in seeds {
        stats.inputs += 1;
        if check(s) {
            stats.read += 1;
        }
        pool.push(s.clone());
    }
    if pool.is_empty() {
        pool.push(Vec::new());
    }
    let mut m = Mutator::new(seed, tokens);
    for _ in 0..mutants {
        let base = &pool[m.below(pool.len())];
        let other = &pool[m.below(pool.len())];
        let input = m.mutate(base, other);
        stats.inputs += 1;
        if check(&input) {
            stats.read += 1;
            // Accepted mutants are kept (a few hundred at most), so later edits go deeper.
            if pool.len() < 512 {
                pool.push(input);
            }
        }
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};
    use std::time::{Duration, Instant};

    /// The repository's test corpora (`tests/data`).
    fn data_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data")
    }

    fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                files_under(&p, out);
            } else {
                out.push(p);
            }
        }
    }

    /// Whether the corpus file `p` is written in what `reader` reads.
    fn seeds_for(reader: Reader, p: &Path) -> bool {
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let history = p.to_string_lossy().contains("histories");
        match reader {
            Reader::Edn => ext == "edn",
            Reader::Jsonl => ext == "jsonl",
            Reader::Json => ext == "json" && history,
            Reader::HistoryTxt => name == "history.txt",
            Reader::JepsenLog => ext == "log" && history,
            Reader::Porcupine => name.starts_with("porcupine-kv"),
            Reader::Auto => history,
        }
    }

    /// At most [`MAX_INPUT`] bytes of the file, cut after a whole line.
    fn seed(p: &Path) -> Vec<u8> {
        let mut bytes = std::fs::read(p).unwrap();
        if bytes.len() > MAX_INPUT {
            bytes.truncate(MAX_INPUT);
            let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            bytes.truncate(keep);
        }
        bytes
    }

    /// The short in-suite fuzz run: every reader, its seeds from `tests/data` and a few thousand
    /// mutants of them; each input read without a panic and within a second. (The long,
    /// coverage-guided run is `fuzz/`, docs/guide/fuzzing.md.)
    #[test]
    fn readers_never_panic_or_hang_on_mutated_corpora() {
        let mut corpus = Vec::new();
        files_under(&data_dir(), &mut corpus);
        for (i, reader) in Reader::ALL.into_iter().enumerate() {
            let seeds: Vec<Vec<u8>> = corpus
                .iter()
                .filter(|p| seeds_for(reader, p))
                .map(|p| seed(p))
                .collect();
            assert!(!seeds.is_empty(), "no seed for {}", reader.name());
            let started = Instant::now();
            let stats = short_run(&seeds, &reader.tokens(), 3_000, 43 + i as u64, |input| {
                let t = Instant::now();
                let read = std::panic::catch_unwind(|| reader.read(input));
                let took = t.elapsed();
                let shown = String::from_utf8_lossy(input);
                let Ok(read) = read else {
                    panic!("{} reader panicked on {shown:?}", reader.name());
                };
                assert!(
                    took < Duration::from_secs(1),
                    "{} reader took {took:?} on {shown:?}",
                    reader.name()
                );
                read.is_ok()
            });
            eprintln!(
                "{}: {} inputs ({} read as histories) in {:.2?}",
                reader.name(),
                stats.inputs,
                stats.read,
                started.elapsed()
            );
            assert_eq!(stats.inputs, seeds.len() as u64 + 3_000);
        }
    }

    #[test]
    fn the_mutator_is_deterministic_and_bounded() {
        let tokens = Reader::Auto.tokens();
        let mut a = Mutator::new(7, &tokens);
        let mut b = Mutator::new(7, &tokens);
        let mut changed = 0;
        for _ in 0..1_000 {
            let x = a.mutate(b"[{:process 0}]", b"{\"f\":1}");
            assert_eq!(x, b.mutate(b"[{:process 0}]", b"{\"f\":1}"));
            assert!(x.len() <= MAX_INPUT);
            changed += usize::from(x != b"[{:process 0}]");
        }
        assert!(changed > 900, "only {changed} of 1000 mutants differ");
    }

    #[test]
    fn reader_names_round_trip() {
        for r in Reader::ALL {
            assert_eq!(Reader::from_name(r.name()), Some(r));
        }
        assert_eq!(Reader::from_name("xml"), None);
    }
}
