//! The import directions between the parts (ARCHITECTURE.md): the report is a function of a run
//! directory and imports nothing from chaos, compare, the systems or the runner; the runner
//! imports nothing from chaos or compare (they build on it: `app` chooses chaos's results
//! writer, compare's page lives in `compare`); a spec imports no shell part (fault parameters
//! are the core's); the systems' seam (`db`) imports no fault or system code. Scans the
//! source as text, so an arrow the wrong way fails here even when it
//! compiles: `crate::chaos::…` paths, grouped `use crate::{chaos, …}` imports, and `super::`
//! chains that climb to the crate root and back down into a forbidden part.

use std::path::{Path, PathBuf};

/// Each part (a folder under `src/`) and the top-level modules it must not name.
const RULES: &[(&str, &[&str])] = &[
    (
        "report",
        &[
            "chaos",
            "compare",
            "systems",
            "runner",
            "spec",
            "nemesis",
            "control",
            "sandbox",
            "provision",
            "config",
        ],
    ),
    ("runner", &["chaos", "compare"]),
    // Fault parameters live with the faults (the core's `faults`); a spec names them, it does
    // not reach into the code that injects them.
    (
        "spec",
        &[
            "nemesis", "systems", "runner", "chaos", "compare", "report", "control", "sandbox",
        ],
    ),
    // The systems' seam (`Db`, `Abilities`, the data layer) is below the faults that use it:
    // the nemesis imports it, never the other way (it once did, for the data layer).
    (
        "db",
        &["nemesis", "systems", "runner", "chaos", "compare", "report"],
    ),
];

/// Every `.rs` file of a part: `src/<part>.rs` and everything under `src/<part>/`.
fn part_files(src: &Path, part: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let single = src.join(format!("{part}.rs"));
    if single.is_file() {
        out.push(single);
    }
    let mut dirs = vec![src.join(part)];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The module path of a source file below `src/` (`src/report/page/faults.rs` →
/// `[report, page, faults]`; `mod.rs` names its folder).
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("a file under src/");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" {
        parts.push(stem.to_string());
    }
    parts
}

/// The code of `text` without `//` comments (doc comments name other parts in prose).
fn code_of(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `code` at `at` starts the identifier `name` as a whole word.
fn word_at(code: &str, at: usize, name: &str) -> bool {
    code[at..].starts_with(name)
        && !code[at + name.len()..]
            .chars()
            .next()
            .is_some_and(is_ident_char)
        && !code[..at].chars().next_back().is_some_and(is_ident_char)
}

/// The forbidden modules `code` (of the module at `module`) names, with the form it used.
fn violations(code: &str, module: &[String], forbidden: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    // `crate::name` anywhere, in a `use` or inline.
    for (i, _) in code.match_indices("crate::") {
        let rest = i + "crate::".len();
        if code[..i].chars().next_back().is_some_and(is_ident_char) {
            continue;
        }
        for name in forbidden {
            if word_at(code, rest, name) {
                found.push(format!("crate::{name}"));
            }
        }
        // `use crate::{a, chaos::x, b::{c}}`: the top-level names of the group.
        if code[rest..].starts_with('{') {
            let mut depth = 0usize;
            let mut item_start = true;
            for (j, c) in code[rest..].char_indices() {
                match c {
                    '{' => {
                        depth += 1;
                        item_start = depth == 1;
                        continue;
                    }
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => {
                        item_start = true;
                        continue;
                    }
                    c if c.is_whitespace() => continue,
                    _ => {}
                }
                if item_start && depth == 1 {
                    for name in forbidden {
                        if word_at(code, rest + j, name) {
                            found.push(format!("use crate::{{{name}, …}}"));
                        }
                    }
                }
                item_start = false;
            }
        }
    }
    // `super::super::name` climbing to the crate root.
    for (i, _) in code.match_indices("super::") {
        if code[..i].chars().next_back().is_some_and(is_ident_char)
            || code[..i].ends_with("super::")
        {
            continue;
        }
        let mut at = i;
        let mut ups = 0;
        while code[at..].starts_with("super::") {
            at += "super::".len();
            ups += 1;
        }
        if ups >= module.len() {
            for name in forbidden {
                if word_at(code, at, name) {
                    found.push(format!("{}{name}", "super::".repeat(ups)));
                }
            }
        }
    }
    found
}

#[test]
fn report_and_runner_import_only_downwards() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut wrong = Vec::new();
    for (part, forbidden) in RULES {
        let files = part_files(&src, part);
        assert!(files.len() >= 2, "{part}: found only {files:?}");
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let module = module_path(&src, &file);
            for v in violations(&code_of(&text), &module, forbidden) {
                wrong.push(format!("{}: {v}", file.display()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the direction (ARCHITECTURE.md):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_scan_sees_every_form_of_import() {
    let m = |p: &str| p.split("::").map(str::to_string).collect::<Vec<_>>();
    let bad = ["chaos", "compare", "systems"];
    let seen = |code: &str| violations(&code_of(code), &m("report::page::faults"), &bad);
    assert_eq!(seen("use crate::chaos::slo::CHECKER;"), ["crate::chaos"]);
    assert_eq!(
        seen("let x = crate::systems::external::X;"),
        ["crate::systems"]
    );
    assert_eq!(
        seen("use crate::{\n    store::RunDir,\n    compare::outcome::MatrixRecord,\n};"),
        ["use crate::{compare, …}"]
    );
    assert_eq!(
        seen("use crate::{history::{A, chaos}, store};"),
        Vec::<String>::new(),
        "a nested name is not a top-level module"
    );
    assert_eq!(
        seen("use super::super::super::chaos::run;"),
        ["super::super::super::chaos"]
    );
    assert!(
        seen("use super::chaos;").is_empty(),
        "report::page::chaos is the report's own"
    );
    assert!(seen("// crate::chaos::slo in prose\n/// `crate::systems`").is_empty());
    assert!(seen("use crate::chaosmonkey::x; use crate::store::compare_x;").is_empty());
    assert_eq!(seen("use crate::{chaos};"), ["use crate::{chaos, …}"]);
}
