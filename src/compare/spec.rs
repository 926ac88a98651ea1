//! The matrix spec of `shakedown compare`: a TOML file (user-editable, under `compare/`) naming
//! the flags every run gets, the seeds, and the cells — each a set of `shakedown run` flags and
//! the claims the vendor makes for that configuration. `[[matrix]]` blocks expand into one cell
//! per combination of their axes' values.
//!
//! ```toml
//! title = "etcd: linearizable vs serializable reads"
//! seeds = 3                      # seeds 1..=3; or a list: [7, 11]
//! [run]                          # flags of `shakedown run` every cell gets (without the --)
//! db = "etcd"
//! time-limit = 30
//! [[cell]]
//! name = "quorum reads"
//! run = { read-mode = "linearizable" }
//! claims = ["linearizable"]
//! [[matrix]]
//! name = "{read-mode} reads, {nemesis}"   # optional; default "axis=value, …"
//! axes = { read-mode = ["linearizable", "serializable"], nemesis = ["none", "partitions"] }
//! claims = ["linearizable"]
//! ```
//!
//! Owns parsing and expansion and errors naming the file and line. Does not know which flags
//! `run` accepts (the driver checks every cell through the CLI before running) or what a claim
//! means ([`super::claim`]). Pure: text in, cells out.

use super::claim::Claim;
use crate::options::ConfigError;
use serde::Deserialize;

/// Flags the driver sets itself for every run; a spec may not give them.
pub const RESERVED_FLAGS: [&str; 5] = ["seed", "reports", "json", "quiet", "junit"];

/// The most seeds a spec may ask for per cell (a typo guard: `seeds = 1000` is weeks of runs).
pub const MAX_SEEDS: u64 = 100;

/// One configuration to run with every seed.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Cell {
    /// Unique name (shown on the page, used by `--cells` and `--resume`).
    pub name: String,
    /// `run` flags, `(name, value)`, the spec's `[run]` first then the cell's own (a cell's
    /// value replaces `[run]`'s). An empty value is a flag without a value (`true` in TOML).
    pub flags: Vec<(String, String)>,
    /// What is claimed for this configuration.
    pub claims: Vec<Claim>,
}

impl Cell {
    /// The cell's flags as command-line words: `--name value` (or `--name` alone).
    pub fn args(&self) -> Vec<String> {
        let mut out = Vec::with_capacity(self.flags.len() * 2);
        for (k, v) in &self.flags {
            out.push(format!("--{k}"));
            if !v.is_empty() {
                out.push(v.clone());
            }
        }
        out
    }

    /// The flags as one line, `--db etcd --read-mode serializable`.
    pub fn flags_text(&self) -> String {
        self.args().join(" ")
    }
}

/// A whole spec, expanded.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    /// Title for the page.
    pub title: String,
    /// Seeds every cell runs with.
    pub seeds: Vec<u64>,
    /// Cells in spec order (`[[cell]]`s first, then each `[[matrix]]`'s expansion).
    pub cells: Vec<Cell>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    title: Option<String>,
    seeds: Option<RawSeeds>,
    #[serde(default)]
    run: toml::Table,
    #[serde(default)]
    cell: Vec<RawCell>,
    #[serde(default)]
    matrix: Vec<RawMatrix>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawSeeds {
    Count(i64),
    List(Vec<i64>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCell {
    name: String,
    #[serde(default)]
    run: toml::Table,
    claims: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMatrix {
    name: Option<String>,
    axes: toml::Table,
    #[serde(default)]
    run: toml::Table,
    claims: Vec<String>,
}

/// The 1-based line of the first line of `text` containing `needle`, if any.
fn line_of(text: &str, needle: &str) -> Option<usize> {
    text.lines().position(|l| l.contains(needle)).map(|i| i + 1)
}

/// Parse and expand the spec `text`, read from `label` (a path, for messages).
pub fn parse(text: &str, label: &str) -> Result<Matrix, ConfigError> {
    let raw: RawSpec = crate::spec::parse_toml(text, label)?;
    let err = |needle: &str, message: String| {
        ConfigError::new(crate::spec::at(label, line_of(text, needle)), message)
    };
    let seeds = match raw.seeds {
        None => vec![1],
        Some(RawSeeds::Count(n)) if (1..=MAX_SEEDS as i64).contains(&n) => (1..=n as u64).collect(),
        Some(RawSeeds::Count(n)) => {
            return Err(err(
                "seeds",
                format!("seeds = {n}: expected a count from 1 to {MAX_SEEDS} or a list of seeds"),
            ));
        }
        Some(RawSeeds::List(list)) => {
            if list.is_empty() || list.len() as u64 > MAX_SEEDS || list.iter().any(|s| *s < 0) {
                return Err(err(
                    "seeds",
                    format!(
                        "seeds: expected 1 to {MAX_SEEDS} seeds, each a whole number ≥ 0, got {list:?}"
                    ),
                ));
            }
            let mut seen = std::collections::BTreeSet::new();
            if let Some(d) = list.iter().find(|s| !seen.insert(**s)) {
                return Err(err("seeds", format!("seeds: {d} is listed twice")));
            }
            list.into_iter().map(|s| s as u64).collect()
        }
    };
    let base = flags_of(&raw.run, "[run]", &err)?;
    let mut cells = Vec::new();
    for c in raw.cell {
        let here = format!("name = \"{}\"", c.name);
        if c.name.trim().is_empty() {
            return Err(err("[[cell]]", "a [[cell]] has an empty name".to_string()));
        }
        let own = flags_of(&c.run, &format!("cell \"{}\"", c.name), &|_, m| {
            err(&here, m)
        })?;
        let claims = claims_of(&c.claims, &format!("cell \"{}\"", c.name), &|n, m| {
            err(n, m)
        })?;
        cells.push(Cell {
            name: c.name.clone(),
            flags: merge(&base, &own),
            claims,
        });
    }
    for (i, m) in raw.matrix.into_iter().enumerate() {
        let what = format!("[[matrix]] {}", i + 1);
        let own = flags_of(&m.run, &what, &err)?;
        let claims = claims_of(&m.claims, &what, &|n, msg| err(n, msg))?;
        let mut axes: Vec<(String, Vec<String>)> = Vec::new();
        for (axis, values) in &m.axes {
            check_flag_name(axis, &what, &err)?;
            let toml::Value::Array(values) = values else {
                return Err(err(
                    &format!("{axis} ="),
                    format!(
                        "{what}: axis {axis} must be a list of values, e.g. {axis} = [\"a\", \"b\"]"
                    ),
                ));
            };
            if values.is_empty() {
                return Err(err(
                    &format!("{axis} ="),
                    format!("{what}: axis {axis} has no values"),
                ));
            }
            let mut texts = Vec::with_capacity(values.len());
            for v in values {
                texts.push(value_text(v).ok_or_else(|| {
                    err(
                        &format!("{axis} ="),
                        format!("{what}: axis {axis}: {v} is not a string, number or true/false"),
                    )
                })?);
            }
            axes.push((axis.clone(), texts));
        }
        if axes.is_empty() {
            return Err(err("axes", format!("{what}: axes is empty")));
        }
        for combo in product(&axes) {
            let name = match &m.name {
                Some(template) => fill(template, &combo),
                None => combo
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            let flags = merge(&merge(&base, &own), &combo);
            cells.push(Cell {
                name,
                flags,
                claims: claims.clone(),
            });
        }
    }
    if cells.is_empty() {
        return Err(ConfigError::new(
            label,
            "no cells: add a [[cell]] or a [[matrix]] block".to_string(),
        ));
    }
    let mut names = std::collections::BTreeSet::new();
    if let Some(dup) = cells.iter().find(|c| !names.insert(c.name.as_str())) {
        return Err(err(
            &dup.name,
            format!(
                "two cells are named \"{}\"; names must be unique (a [[matrix]] name template should use every axis)",
                dup.name
            ),
        ));
    }
    Ok(Matrix {
        title: raw
            .title
            .unwrap_or_else(|| label.rsplit('/').next().unwrap_or(label).to_string()),
        seeds,
        cells,
    })
}

fn check_flag_name(
    name: &str,
    what: &str,
    err: &dyn Fn(&str, String) -> ConfigError,
) -> Result<(), ConfigError> {
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-');
    if !plain {
        return Err(err(
            name,
            format!(
                "{what}: {name:?} is not a flag name (write run's long flags without --, e.g. read-mode)"
            ),
        ));
    }
    if RESERVED_FLAGS.contains(&name) {
        return Err(err(
            name,
            format!("{what}: {name} is set by compare itself for every run; remove it"),
        ));
    }
    Ok(())
}

/// A scalar as a flag value; `None` for tables, arrays and dates.
fn value_text(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Boolean(true) => Some(String::new()),
        _ => None,
    }
}

fn flags_of(
    table: &toml::Table,
    what: &str,
    err: &dyn Fn(&str, String) -> ConfigError,
) -> Result<Vec<(String, String)>, ConfigError> {
    let mut out = Vec::new();
    for (k, v) in table {
        check_flag_name(k, what, err)?;
        match v {
            toml::Value::Boolean(false) => {}
            toml::Value::Array(_) => {
                return Err(err(
                    k,
                    format!(
                        "{what}: {k} is a list; to run each value, make it an axis of a [[matrix]]"
                    ),
                ));
            }
            _ => {
                let text = value_text(v).ok_or_else(|| {
                    err(
                        k,
                        format!("{what}: {k} = {v}: expected a string, number or true/false"),
                    )
                })?;
                out.push((k.clone(), text));
            }
        }
    }
    Ok(out)
}

fn claims_of(
    names: &[String],
    what: &str,
    err: &dyn Fn(&str, String) -> ConfigError,
) -> Result<Vec<Claim>, ConfigError> {
    if names.is_empty() {
        return Err(err(
            "claims",
            format!(
                "{what}: claims is empty; name at least one of: {}",
                Claim::names_text()
            ),
        ));
    }
    let mut out: Vec<Claim> = Vec::new();
    for n in names {
        let c: Claim = n
            .parse()
            .map_err(|e: String| err(n, format!("{what}: {e}")))?;
        if !out.contains(&c) {
            out.push(c);
        }
    }
    Ok(out)
}

/// `base` with `over`'s flags replacing same-named ones (kept in `base`'s order), then `over`'s
/// new ones.
fn merge(base: &[(String, String)], over: &[(String, String)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = base
        .iter()
        .filter(|(k, _)| !over.iter().any(|(o, _)| o == k))
        .cloned()
        .collect();
    out.extend(over.iter().cloned());
    out
}

/// Every combination of the axes' values, the first axis varying slowest.
fn product(axes: &[(String, Vec<String>)]) -> Vec<Vec<(String, String)>> {
    let mut out: Vec<Vec<(String, String)>> = vec![vec![]];
    for (axis, values) in axes {
        let mut next = Vec::with_capacity(out.len() * values.len());
        for prefix in &out {
            for v in values {
                let mut combo = prefix.clone();
                combo.push((axis.clone(), v.clone()));
                next.push(combo);
            }
        }
        out = next;
    }
    out
}

/// `template` with each `{axis}` replaced by the combination's value.
fn fill(template: &str, combo: &[(String, String)]) -> String {
    let mut s = template.to_string();
    for (k, v) in combo {
        let shown = if v.is_empty() { k.as_str() } else { v.as_str() };
        s = s.replace(&format!("{{{k}}}"), shown);
    }
    s
}

/// Parse `--seeds`: a count `N` (seeds 1..=N) or a comma-separated list of distinct seeds.
pub fn parse_seeds(text: &str) -> Result<Vec<u64>, String> {
    let bad = || {
        format!(
            "--seeds {text:?}: expected a count from 1 to {MAX_SEEDS} or a comma-separated list of distinct whole numbers"
        )
    };
    let t = text.trim();
    if !t.contains(',')
        && let Ok(n) = t.parse::<u64>()
    {
        return if (1..=MAX_SEEDS).contains(&n) {
            Ok((1..=n).collect())
        } else {
            Err(bad())
        };
    }
    let list: Vec<u64> = t
        .split(',')
        .map(|w| w.trim().parse::<u64>())
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    let distinct: std::collections::BTreeSet<_> = list.iter().collect();
    if list.is_empty() || list.len() as u64 > MAX_SEEDS || distinct.len() != list.len() {
        return Err(bad());
    }
    Ok(list)
}

/// Keep the cells whose name contains any of the comma-separated, case-insensitive `filter`
/// words; an error names the filter when nothing matches.
pub fn select<'a>(cells: &'a [Cell], filter: Option<&str>) -> Result<Vec<&'a Cell>, String> {
    let Some(filter) = filter else {
        return Ok(cells.iter().collect());
    };
    let words: Vec<String> = filter
        .split(',')
        .map(|w| w.trim().to_lowercase())
        .filter(|w| !w.is_empty())
        .collect();
    let picked: Vec<&Cell> = cells
        .iter()
        .filter(|c| {
            let name = c.name.to_lowercase();
            words.iter().any(|w| name.contains(w.as_str()))
        })
        .collect();
    if picked.is_empty() {
        return Err(format!(
            "--cells {filter:?} matches no cell; the cells are: {}",
            cells
                .iter()
                .map(|c| format!("\"{}\"", c.name))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(picked)
}

/// The example matrices shipped in `compare/`, usable by name from anywhere.
const BUILTIN_COMPARES: &[(&str, &str)] = &[
    ("etcd-reads", include_str!("../../compare/etcd-reads.toml")),
    (
        "postgres-replicas",
        include_str!("../../compare/postgres-replicas.toml"),
    ),
    ("redis-wait", include_str!("../../compare/redis-wait.toml")),
    (
        "postgres-isolation",
        include_str!("../../compare/postgres-isolation.toml"),
    ),
    ("galera", include_str!("../../compare/galera.toml")),
    ("mariadb", include_str!("../../compare/mariadb.toml")),
    (
        "nats-membership",
        include_str!("../../compare/nats-membership.toml"),
    ),
];

/// Read the spec `arg` (a path, or a name under `compare/`, or a shipped example's name) and
/// parse it; returns the label it was read from and the matrix.
pub fn load(arg: &str) -> Result<(String, Matrix), ConfigError> {
    let (label, text) = crate::spec::locate(arg, "compare", BUILTIN_COMPARES)?;
    let m = parse(&text, &label)?;
    Ok((label, m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_compare_file_is_built_in_and_parses() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("compare");
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_stem().unwrap().to_string_lossy().to_string();
            assert!(
                BUILTIN_COMPARES.iter().any(|(n, _)| *n == name),
                "compare/{name}.toml is not built in"
            );
        }
        for (name, text) in BUILTIN_COMPARES {
            parse(text, name).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    const SPEC: &str = r#"
title = "etcd reads"
seeds = 2
[run]
db = "etcd"
time-limit = 30
nemesis = "none"

[[cell]]
name = "quorum"
run = { read-mode = "linearizable", time-limit = 10 }
claims = ["linearizable"]

[[matrix]]
name = "{read-mode} / {nemesis}"
axes = { read-mode = ["linearizable", "serializable"], nemesis = ["none", "partitions"] }
claims = ["linearizable", "read-your-writes"]
"#;

    #[test]
    fn cells_merge_run_flags_and_matrices_expand_every_combination() {
        let m = parse(SPEC, "compare/x.toml").unwrap();
        assert_eq!(m.title, "etcd reads");
        assert_eq!(m.seeds, vec![1, 2]);
        assert_eq!(m.cells.len(), 5);
        assert_eq!(
            m.cells[0].flags_text(),
            "--db etcd --nemesis none --read-mode linearizable --time-limit 10"
        );
        let names: Vec<&str> = m.cells.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "quorum",
                "linearizable / none",
                "linearizable / partitions",
                "serializable / none",
                "serializable / partitions"
            ]
        );
        // The axis replaces [run]'s nemesis.
        assert_eq!(
            m.cells[4].flags_text(),
            "--db etcd --time-limit 30 --read-mode serializable --nemesis partitions"
        );
        assert_eq!(m.cells[4].claims.len(), 2);
    }

    #[test]
    fn errors_name_the_line_and_the_cause() {
        let e = parse(
            "[[cell]]\nname = \"a\"\nclaims = [\"linearisable\"]\n",
            "f.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("f.toml:3"), "{e}");
        assert!(
            e.contains("linearisable") && e.contains("linearizable"),
            "{e}"
        );
        let e = parse(
            "[[cell]]\nname = \"a\"\nrun = { seed = 3 }\nclaims = [\"linearizable\"]\n",
            "f.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("seed is set by compare itself"), "{e}");
        let e = parse(
            "seeds = 0\n[[cell]]\nname = \"a\"\nclaims = [\"linearizable\"]\n",
            "f.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("f.toml:1") && e.contains("seeds = 0"), "{e}");
        let e = parse("title = \"t\"\n", "f.toml").unwrap_err().to_string();
        assert!(e.contains("no cells"), "{e}");
        let e = parse(
            "[[matrix]]\naxes = { nemesis = \"none\" }\nclaims = [\"linearizable\"]\n",
            "f.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("must be a list"), "{e}");
        let e = parse(
            "[[matrix]]\nname = \"same\"\naxes = { nemesis = [\"none\", \"partitions\"] }\nclaims = [\"linearizable\"]\n",
            "f.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("two cells are named \"same\""), "{e}");
        let e = parse("[[cell]]\nname = \"a\"\nclaim = []\n", "f.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("f.toml:"), "{e}");
    }

    #[test]
    fn booleans_are_bare_flags_and_lists_outside_axes_are_refused() {
        let m = parse(
            "[[cell]]\nname = \"a\"\nrun = { no-sandbox = true, verbose = false }\nclaims = [\"linearizable\"]\n",
            "f.toml",
        )
        .unwrap();
        assert_eq!(m.cells[0].args(), ["--no-sandbox"]);
        let e = parse(
            "[[cell]]\nname = \"a\"\nrun = { nemesis = [\"a\", \"b\"] }\nclaims = [\"linearizable\"]\n",
            "f.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("make it an axis"), "{e}");
    }

    #[test]
    fn seeds_flag_is_a_count_or_a_list() {
        assert_eq!(parse_seeds("3"), Ok(vec![1, 2, 3]));
        assert_eq!(parse_seeds("7, 11"), Ok(vec![7, 11]));
        assert!(parse_seeds("0").unwrap_err().contains("count from 1"));
        assert!(parse_seeds("7,7").is_err());
        assert!(parse_seeds("x").is_err());
    }

    #[test]
    fn select_filters_by_name_words_and_names_the_cells_when_nothing_matches() {
        let m = parse(SPEC, "x").unwrap();
        let picked = select(&m.cells, Some("SERIALIZABLE, quorum")).unwrap();
        assert_eq!(picked.len(), 3);
        let e = select(&m.cells, Some("nothing")).unwrap_err();
        assert!(e.contains("\"quorum\""), "{e}");
        assert_eq!(select(&m.cells, None).unwrap().len(), 5);
    }
}
