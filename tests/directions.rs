//! The import directions between the parts (ARCHITECTURE.md), read from the source as text so
//! an arrow the wrong way fails here even when it compiles:
//!
//! - the report is a function of a run directory and imports nothing from chaos, compare, the
//!   systems or the runner; the runner imports nothing from chaos or compare (they build on it:
//!   `app` chooses chaos's results writer, compare's page lives in `compare`); a spec imports no
//!   shell part (fault parameters are the core's); the systems' seam (`db`) imports no fault or
//!   system code;
//! - no import cycle: neither between the top-level modules of the binary crate (`src/<m>.rs`
//!   with `src/<m>/**`) nor of the core (`core/src/`), nor between the sibling submodules of one
//!   folder (`provision::host` and `provision::node`).
//!
//! A reference is any path that starts with `crate::`, `super::` or `self::` (in a `use` or
//! inline; grouped `use crate::{a, b::{c}}` imports are expanded; `super::` chains are resolved
//! from the file's module, inline `mod x { … }` blocks included), with comments, strings and
//! character literals blanked first. This file owns the scan and the rules, not the modules.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

/// Each part (a top-level module of `src/`) and the top-level modules it must not name.
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

/// Edges (from, to) between top-level modules of `src/` that may close a cycle for now.
const ALLOWED_EDGES: &[(&str, &str)] = &[];

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
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

/// The module path of a source file below `src` (`src/report/page/faults.rs` →
/// `[report, page, faults]`; `mod.rs` names its folder; `lib.rs` is the root, `[]`).
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("a file under src/");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && !(parts.is_empty() && stem == "lib") {
        parts.push(stem.to_string());
    }
    parts
}

/// `text` with comments, string literals and character literals blanked (replaced by spaces,
/// newlines kept, so byte offsets and line numbers stay those of the file).
fn code_of(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        let prev_ident = i > 0 && ident(b[i - 1]);
        if b[i..].starts_with(b"//") {
            let end = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |n| i + n);
            blank(&mut out, i, end);
            i = end;
        } else if b[i..].starts_with(b"/*") {
            let (mut depth, mut j) = (1, i + 2);
            while j < b.len() && depth > 0 {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if b[i] == b'r' && !prev_ident && {
            let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
            b.get(i + 1 + hashes) == Some(&b'"')
        } {
            // r"…", r#"…"#: ends at a quote followed by as many hashes.
            let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let start = i + 2 + hashes;
            let end = b[start..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |n| start + n + close.len());
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if b[i] == b'\'' {
            // A character literal ('a', '\n', '\u{7f}', 'é'), else a lifetime or label.
            let end = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..]
                    .iter()
                    .position(|&c| c == b'\'')
                    .map(|n| i + 2 + n + 1)
            } else {
                let len = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (b.get(i + 1 + len) == Some(&b'\'')).then_some(i + 2 + len)
            };
            match end {
                Some(end) => {
                    blank(&mut out, i, end);
                    i = end;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).expect("only ASCII bytes replaced")
}

/// `code` (blanked by [`code_of`]) without its `#[cfg(test)]` items: a unit test may build its
/// input through a part above its module (the CLI's parser, say) without making it a dependency.
fn without_tests(code: &str) -> String {
    let mut out = code.as_bytes().to_vec();
    for (i, _) in code.match_indices("#[cfg(test)]") {
        let mut depth = 0usize;
        let mut end = code.len();
        for (j, c) in code[i..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + j + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = i + j + 1;
                    break;
                }
                _ => {}
            }
        }
        for c in &mut out[i..end] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    }
    String::from_utf8(out).expect("only ASCII bytes replaced")
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// A path one file names: where (1-based line) and how it was written.
#[derive(Debug, Clone, PartialEq)]
struct Ref {
    /// The absolute module path named (the prefix resolved, then the written segments).
    target: Vec<String>,
    line: usize,
    /// The path as written, groups shown as `{…, name, …}`.
    form: String,
}

/// Reads a use tree at `at`: `a::b::c`, `a::{b, c::{d}}`, `*`; calls `leaf` with each path's
/// segments and the text of its group (if any). Returns where the tree ends.
fn use_tree(
    code: &str,
    mut at: usize,
    prefix: &mut Vec<String>,
    leaf: &mut dyn FnMut(&[String], bool),
) -> usize {
    let skip_ws = |at: usize| at + code[at..].len() - code[at..].trim_start().len();
    let pushed = prefix.len();
    loop {
        at = skip_ws(at);
        let rest = &code[at..];
        if rest.starts_with('{') {
            at += 1;
            loop {
                at = skip_ws(at);
                if code[at..].starts_with('}') {
                    at += 1;
                    break;
                }
                if at >= code.len() {
                    break;
                }
                let before = at;
                let mut inner = prefix.clone();
                at = use_tree(code, at, &mut inner, &mut |p, _| leaf(p, true));
                at = skip_ws(at);
                if code[at..].starts_with(',') {
                    at += 1;
                } else if at == before {
                    // Not a use tree after all (`crate::{` in something else): stop.
                    at += 1;
                }
            }
            break;
        }
        let len = rest.find(|c: char| !is_ident_char(c)).unwrap_or(rest.len());
        if len == 0 {
            break;
        }
        let name = &rest[..len];
        at += len;
        if name != "self" {
            prefix.push(name.to_string());
        }
        let after = skip_ws(at);
        if code[after..].starts_with("::") && !code[after + 2..].starts_with('<') {
            at = after + 2;
            continue;
        }
        leaf(prefix, false);
        // `x as y`: the alias is no path.
        if code[after..].starts_with("as") && code[after + 2..].starts_with(char::is_whitespace) {
            let alias = skip_ws(after + 2);
            at = alias + code[alias..].find(|c: char| !is_ident_char(c)).unwrap_or(0);
        }
        break;
    }
    prefix.truncate(pushed);
    at
}

/// Every `crate::`, `super::` and `self::` path in `code` (blanked by [`code_of`]) of the file
/// whose module is `module`.
fn refs(code: &str, module: &[String]) -> Vec<Ref> {
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    // Inline modules: (name, brace depth inside them).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut pending_mod: Option<String> = None;
    let mut out = Vec::new();
    let mut i = 0;
    let word_start = |i: usize| !code[..i].chars().next_back().is_some_and(is_ident_char);
    while i < code.len() {
        let rest = &code[i..];
        let c = rest.chars().next().unwrap();
        if c == '{' {
            depth += 1;
            if let Some(name) = pending_mod.take() {
                inline.push((name, depth));
            }
            i += 1;
            continue;
        }
        if c == '}' {
            if inline.last().is_some_and(|(_, d)| *d == depth) {
                inline.pop();
            }
            depth = depth.saturating_sub(1);
            i += 1;
            continue;
        }
        if c == ';' {
            pending_mod = None;
        }
        if !word_start(i) || !(c.is_alphabetic() || c == '_') {
            i += c.len_utf8();
            continue;
        }
        let len = rest.find(|c: char| !is_ident_char(c)).unwrap_or(rest.len());
        let word = &rest[..len];
        if word == "mod" {
            let after = rest[len..].trim_start();
            let n = after
                .find(|c: char| !is_ident_char(c))
                .unwrap_or(after.len());
            if n > 0 {
                pending_mod = Some(after[..n].to_string());
            }
            i += len;
            continue;
        }
        let preceded_by_path = code[..i].trim_end().ends_with("::");
        if !matches!(word, "crate" | "super" | "self")
            || preceded_by_path
            || !rest[len..].starts_with("::")
        {
            i += len;
            continue;
        }
        let mut here: Vec<String> = module.to_vec();
        here.extend(inline.iter().map(|(n, _)| n.clone()));
        let mut at = i;
        let base: Option<Vec<String>> = match word {
            "crate" => {
                at += "crate::".len();
                Some(Vec::new())
            }
            "self" => {
                at += "self::".len();
                Some(here)
            }
            _ => {
                let mut ups = 0;
                while code[at..].starts_with("super::") {
                    at += "super::".len();
                    ups += 1;
                }
                (ups <= here.len()).then(|| here[..here.len() - ups].to_vec())
            }
        };
        let written = code[i..at].to_string();
        let Some(mut base) = base else {
            i = at;
            continue;
        };
        let line = line_of(i);
        let base_len = base.len();
        let end = use_tree(code, at, &mut base, &mut |path, grouped| {
            let named = path[base_len..].join("::");
            let form = if grouped {
                format!("{written}{{…, {named}, …}}")
            } else {
                format!("{written}{named}")
            };
            out.push(Ref {
                target: path.to_vec(),
                line,
                form,
            });
        });
        i = end.max(at);
    }
    out
}

/// Where an edge was first seen: `src/config.rs:128 uses crate::systems::SystemConfig`.
type Evidence = String;

/// The graphs of one crate: the top-level modules, and the children of every folder module.
struct Graphs {
    /// Top-level module → module it names → first evidence.
    top: BTreeMap<String, BTreeMap<String, Evidence>>,
    /// Folder module → (child → sibling it names → first evidence).
    siblings: BTreeMap<String, BTreeMap<String, BTreeMap<String, Evidence>>>,
}

/// The module graphs of the crate whose sources are under `src` (paths shown relative to
/// `shown_from`).
fn graphs(src: &Path, shown_from: &Path) -> Graphs {
    let files = rust_files(src);
    let modules: Vec<Vec<String>> = files.iter().map(|f| module_path(src, f)).collect();
    let top_names: BTreeSet<String> = modules.iter().filter_map(|m| m.first().cloned()).collect();
    let children: BTreeSet<(String, String)> = modules
        .iter()
        .filter(|m| m.len() >= 2)
        .map(|m| (m[0].clone(), m[1].clone()))
        .collect();
    let mut g = Graphs {
        top: top_names
            .iter()
            .map(|n| (n.clone(), BTreeMap::new()))
            .collect(),
        siblings: BTreeMap::new(),
    };
    for (file, module) in files.iter().zip(&modules) {
        let Some(from) = module.first() else {
            continue; // lib.rs declares the modules
        };
        if matches!(from.as_str(), "main" | "build") {
            continue; // the binary and the build script: not modules of the library
        }
        let text = std::fs::read_to_string(file).unwrap();
        let shown = file
            .strip_prefix(shown_from)
            .unwrap_or(file)
            .display()
            .to_string();
        for r in refs(&without_tests(&code_of(&text)), module) {
            let evidence = || format!("{shown}:{} uses {}", r.line, r.form);
            let Some(to) = r.target.first() else { continue };
            if to != from && top_names.contains(to) {
                g.top
                    .get_mut(from)
                    .unwrap()
                    .entry(to.clone())
                    .or_insert_with(evidence);
            }
            if to == from && module.len() >= 2 && r.target.len() >= 2 {
                let (child, sibling) = (&module[1], &r.target[1]);
                if child != sibling && children.contains(&(from.clone(), sibling.clone())) {
                    g.siblings
                        .entry(from.clone())
                        .or_default()
                        .entry(child.clone())
                        .or_default()
                        .entry(sibling.clone())
                        .or_insert_with(evidence);
                }
            }
        }
    }
    g
}

/// The cycles of `graph` (node → the nodes it names): in every strongly connected component of
/// more than one node, the shortest cycle through each of its nodes, each said once, starting
/// at its smallest node, sorted. Tarjan's algorithm, then a breadth-first search inside the
/// component.
fn cycles<E>(graph: &BTreeMap<String, BTreeMap<String, E>>) -> Vec<Vec<String>> {
    let nodes: Vec<&String> = graph
        .keys()
        .chain(graph.values().flat_map(|m| m.keys()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let index_of: BTreeMap<&String, usize> =
        nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let succ: Vec<Vec<usize>> = nodes
        .iter()
        .map(|n| {
            graph
                .get(*n)
                .map_or(Vec::new(), |m| m.keys().map(|t| index_of[t]).collect())
        })
        .collect();
    // Tarjan, recursive (module graphs are small).
    struct T<'a> {
        succ: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        sccs: Vec<Vec<usize>>,
    }
    fn visit(t: &mut T, v: usize) {
        t.index[v] = Some(t.next);
        t.low[v] = t.next;
        t.next += 1;
        t.stack.push(v);
        t.on_stack[v] = true;
        for &w in &t.succ[v] {
            match t.index[w] {
                None => {
                    visit(t, w);
                    t.low[v] = t.low[v].min(t.low[w]);
                }
                Some(iw) if t.on_stack[w] => t.low[v] = t.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(t.low[v]) == t.index[v] {
            let mut scc = Vec::new();
            loop {
                let w = t.stack.pop().unwrap();
                t.on_stack[w] = false;
                scc.push(w);
                if w == v {
                    break;
                }
            }
            t.sccs.push(scc);
        }
    }
    let n = nodes.len();
    let mut t = T {
        succ: &succ,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        sccs: Vec::new(),
    };
    for v in 0..n {
        if t.index[v].is_none() {
            visit(&mut t, v);
        }
    }
    let mut found = BTreeSet::new();
    for scc in t.sccs.iter().filter(|s| s.len() > 1) {
        let inside: BTreeSet<usize> = scc.iter().copied().collect();
        for &start in scc {
            let mut path = shortest_cycle(&succ, &inside, start);
            // The same cycle through another of its nodes is said once, from its smallest.
            let min = path.iter().enumerate().min_by_key(|(_, v)| **v).unwrap().0;
            path.rotate_left(min);
            found.insert(
                path.into_iter()
                    .map(|i| nodes[i].clone())
                    .collect::<Vec<_>>(),
            );
        }
    }
    found.into_iter().collect()
}

/// The shortest cycle through `start` using only the nodes `inside` (a strongly connected
/// component holding it): a breadth-first search from `start` back to it.
fn shortest_cycle(succ: &[Vec<usize>], inside: &BTreeSet<usize>, start: usize) -> Vec<usize> {
    let mut parent: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    let mut last = None;
    'bfs: while let Some(v) = queue.pop_front() {
        for &w in &succ[v] {
            if !inside.contains(&w) {
                continue;
            }
            if w == start {
                last = Some(v);
                break 'bfs;
            }
            if let std::collections::btree_map::Entry::Vacant(e) = parent.entry(w) {
                e.insert(v);
                queue.push_back(w);
            }
        }
    }
    let mut path = vec![last.expect("a component of two or more nodes has a cycle")];
    while *path.last().unwrap() != start {
        path.push(parent[path.last().unwrap()]);
    }
    path.reverse();
    path
}

/// `config -> systems -> config (…; …)`: a cycle with the evidence of each of its edges.
fn describe(cycle: &[String], graph: &BTreeMap<String, BTreeMap<String, Evidence>>) -> String {
    let mut names = cycle.to_vec();
    names.push(cycle[0].clone());
    let evidence: Vec<&str> = names
        .windows(2)
        .map(|w| graph[&w[0]][&w[1]].as_str())
        .collect();
    format!("{} ({})", names.join(" -> "), evidence.join("; "))
}

/// The cycles of one crate's graphs, described; `allowed` edges of the top-level graph left out.
fn crate_cycles(src: &Path, shown_from: &Path, allowed: &[(&str, &str)]) -> Vec<String> {
    let mut g = graphs(src, shown_from);
    for (from, to) in allowed {
        let removed = g.top.get_mut(*from).and_then(|m| m.remove(*to));
        assert!(
            removed.is_some(),
            "allowed edge {from} -> {to} no longer exists: remove it from ALLOWED_EDGES"
        );
    }
    let mut out: Vec<String> = cycles(&g.top).iter().map(|c| describe(c, &g.top)).collect();
    for (folder, graph) in &g.siblings {
        for c in cycles(graph) {
            out.push(format!("in {folder}: {}", describe(&c, graph)));
        }
    }
    out
}

#[test]
fn report_and_runner_import_only_downwards() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let g = graphs(&root.join("src"), root);
    let mut wrong = Vec::new();
    for (part, forbidden) in RULES {
        let named = &g.top[*part];
        for bad in *forbidden {
            if let Some(evidence) = named.get(*bad) {
                wrong.push(format!("{part} -> {bad}: {evidence}"));
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
fn no_import_cycles_in_the_binary_crate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let found = crate_cycles(&root.join("src"), root, ALLOWED_EDGES);
    assert!(
        found.is_empty(),
        "import cycles (ARCHITECTURE.md, \"What each part may import\"):\n{}",
        found.join("\n")
    );
}

#[test]
fn no_import_cycles_in_the_core() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let found = crate_cycles(&root.join("core/src"), root, &[]);
    assert!(
        found.is_empty(),
        "import cycles in the core:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_cycle_finder_finds_made_up_cycles() {
    let graph = |edges: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for (a, b) in edges {
            g.entry(a.to_string())
                .or_default()
                .insert(b.to_string(), format!("{a}.rs uses {b}"));
        }
        g
    };
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    // a -> b -> c -> a, and a longer way round (a -> d -> e -> c); f -> g -> f; h a leaf.
    let g = graph(&[
        ("a", "b"),
        ("b", "c"),
        ("c", "a"),
        ("a", "d"),
        ("d", "e"),
        ("e", "c"),
        ("c", "h"),
        ("g", "f"),
        ("f", "g"),
    ]);
    assert_eq!(
        cycles(&g),
        [
            s(&["a", "b", "c"]),
            s(&["a", "d", "e", "c"]),
            s(&["f", "g"])
        ]
    );
    assert_eq!(
        describe(&s(&["f", "g"]), &g),
        "f -> g -> f (f.rs uses g; g.rs uses f)"
    );
    assert!(cycles(&graph(&[("a", "b"), ("b", "c"), ("a", "c")])).is_empty());
    assert!(
        cycles(&graph(&[("a", "a")])).is_empty(),
        "a module naming itself is no cycle"
    );
}

#[test]
fn the_scan_sees_every_form_of_import() {
    let m = |p: &str| p.split("::").map(str::to_string).collect::<Vec<_>>();
    let seen = |code: &str| {
        refs(&code_of(code), &m("report::page::faults"))
            .into_iter()
            .map(|r| (r.target.join("::"), r.form))
            .collect::<Vec<_>>()
    };
    let one = |t: &str, f: &str| vec![(t.to_string(), f.to_string())];
    assert_eq!(
        seen("use crate::chaos::slo::CHECKER;"),
        one("chaos::slo::CHECKER", "crate::chaos::slo::CHECKER")
    );
    assert_eq!(
        seen("let x = crate::systems::external::X::new();"),
        one(
            "systems::external::X::new",
            "crate::systems::external::X::new"
        )
    );
    assert_eq!(
        seen("use crate::{\n    store::RunDir,\n    compare::outcome::{A, B as C},\n};"),
        [
            ("store::RunDir", "crate::{…, store::RunDir, …}"),
            ("compare::outcome::A", "crate::{…, compare::outcome::A, …}"),
            ("compare::outcome::B", "crate::{…, compare::outcome::B, …}"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    assert_eq!(
        seen("use super::super::super::chaos::run;"),
        one("chaos::run", "super::super::super::chaos::run")
    );
    assert_eq!(
        seen("use super::chaos;"),
        one("report::page::chaos", "super::chaos")
    );
    assert_eq!(seen("use self::x::{self, y};").len(), 2);
    assert_eq!(
        seen("use self::x::{self, y};")[0].0,
        "report::page::faults::x"
    );
    assert!(seen("// crate::chaos::slo in prose\n/// `crate::systems`").is_empty());
    assert!(
        seen("/* crate::chaos */ let s = \"crate::chaos\"; let r = r#\"crate::x\"#;").is_empty()
    );
    assert_eq!(
        seen("let c = '{'; fn f<'a>(x: &'a str) {} use crate::store;"),
        one("store", "crate::store")
    );
    assert_eq!(
        seen("mod tests {\n    use super::helper;\n    mod deeper { use super::super::x; }\n}"),
        [
            ("report::page::faults::helper", "super::helper"),
            ("report::page::faults::x", "super::super::x"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    assert_eq!(
        seen("use crate::{chaos};"),
        one("chaos", "crate::{…, chaos, …}")
    );
    assert_eq!(seen("x::<crate::store::Dir>()")[0].0, "store::Dir");
}
