//! What a run uses of an external system: its spec plus the option values (`--db-opt` applied
//! to the spec's defaults), the record a run keeps of them, and the refusals before any node is
//! touched (workloads the client does not declare, faults the commands or `[durability]` cannot
//! serve). Does not parse the spec file (`spec`).

use super::{CommandKind, ExternalSpec, SYSTEMS_DIR, load, locate};
use crate::options::ConfigError;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A spec plus the option values a run uses. Serialized as the record a run keeps
/// (`{"arg", "spec", "options"}`); deserializing reloads the spec file and checks the options.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "ConfigRecord", into = "ConfigRecord")]
pub struct ExternalConfig {
    /// `--db` as the user gave it (for the rerun command).
    pub arg: String,
    /// The spec.
    pub spec: ExternalSpec,
    /// Every option's value (defaults filled in).
    pub options: BTreeMap<String, String>,
    /// The `shakedown` binary serving the spec's durability directory from the lose-unsynced
    /// layer (runs with `power-loss`, `os-crash` or a `disk` fault); `None`: a plain directory.
    pub lazyfs: Option<String>,
}

/// What a run records of an external system's configuration.
#[derive(serde::Serialize, serde::Deserialize)]
struct ConfigRecord {
    arg: String,
    spec: PathBuf,
    options: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lazyfs: Option<String>,
}

impl From<ExternalConfig> for ConfigRecord {
    fn from(c: ExternalConfig) -> ConfigRecord {
        ConfigRecord {
            arg: c.arg,
            spec: c.spec.path,
            options: c.options,
            lazyfs: c.lazyfs,
        }
    }
}

impl TryFrom<ConfigRecord> for ExternalConfig {
    type Error = ConfigError;
    fn try_from(r: ConfigRecord) -> Result<ExternalConfig, ConfigError> {
        let spec = load(&r.spec)?;
        let opts: Vec<String> = r.options.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let options = apply_opts(&spec, &opts)?;
        Ok(ExternalConfig {
            arg: r.arg,
            spec,
            options,
            lazyfs: r.lazyfs,
        })
    }
}

impl ExternalConfig {
    /// `--db-opt key=value` flags for the options that differ from their defaults.
    pub fn non_default_opts(&self) -> Vec<String> {
        self.options
            .iter()
            .filter(|(k, v)| self.spec.options.get(*k).is_some_and(|o| &o.default != *v))
            .map(|(k, v)| format!("{k}={v}"))
            .collect()
    }

    /// Refuse a workload whose kind the spec's client does not declare (when it declares any;
    /// a lock workload always needs declaring).
    pub fn validate_workload(
        &self,
        workload: &crate::spec::WorkloadSpec,
    ) -> Result<(), ConfigError> {
        let declared = &self.spec.workloads;
        if declared.contains(&workload.kind) {
            return Ok(());
        }
        let own_ops = crate::generator::lock::is_lock_kind(&workload.kind)
            || workload.kind == crate::generator::log::KIND;
        if declared.is_empty() && own_ops {
            return Err(ConfigError::new(
                "--workload",
                format!(
                    "{}'s client does not declare the {} workload (client.workloads in {}): a client serves the lock and log ops only when it says so (PROTOCOL.md)",
                    self.spec.name,
                    workload.kind,
                    self.spec.path.display()
                ),
            ));
        }
        if declared.is_empty() {
            return Ok(());
        }
        Err(ConfigError::new(
            "--workload",
            format!(
                "{}'s client performs {} (client.workloads in {}), not {}",
                self.spec.name,
                declared.join(", "),
                self.spec.path.display(),
                workload.kind
            ),
        ))
    }

    /// Refuse the client-side `stall` fault unless the workload is a lock workload (which the
    /// client declared: [`Self::validate_workload`] checks that first). A stall freezes the
    /// stalled thread's client process (`freeze`); it stands for a lock holder's GC pause.
    pub fn validate_stall(
        &self,
        workload: &crate::spec::WorkloadSpec,
        nemesis: &crate::spec::NemesisSpec,
    ) -> Result<(), ConfigError> {
        let stalls = nemesis.faults.iter().any(crate::spec::FaultSpec::is_stall);
        if !stalls || crate::generator::lock::is_lock_kind(&workload.kind) {
            return Ok(());
        }
        Err(ConfigError::new(
            "--nemesis",
            format!(
                "the stall fault pauses a lock holder's client process; with {} it needs --workload {} or {} (declared in client.workloads in {}), not {}",
                self.spec.name,
                crate::generator::lock::KIND,
                crate::generator::lock::FENCED_KIND,
                self.spec.path.display(),
                workload.kind
            ),
        ))
    }

    /// Refuse, before any node is touched, faults the spec's commands cannot serve: `kill`
    /// (and the power and corruption faults, which stop the server first) needs `kill`, `pause`
    /// needs `pause`/`resume`, `promote` needs `promote`, and targets or partitions of
    /// `primaries` need `primaries`; then the faults its `[durability]` table cannot serve
    /// ([`Self::validate_durability`]).
    pub fn validate_faults(&self, nemesis: &crate::spec::NemesisSpec) -> Result<(), ConfigError> {
        let has = |k: CommandKind| self.spec.commands.contains_key(&k);
        for fault in &nemesis.faults {
            let verb = fault.ops().start;
            let n = fault.needs();
            let needs = [
                (n.kill, CommandKind::Kill),
                (n.pause, CommandKind::Pause),
                (n.promote, CommandKind::Promote),
            ]
            .into_iter()
            .find_map(|(needed, k)| needed.then_some(k));
            let needs = needs
                .filter(|k| !has(*k))
                .or((fault.aims_at_primaries() && !has(CommandKind::Primaries))
                    .then_some(CommandKind::Primaries));
            if let Some(k) = needs {
                return Err(ConfigError::new(
                    "--nemesis",
                    format!(
                        "{} has no `{}` command in {}, so it cannot serve the {verb} fault{}",
                        self.spec.name,
                        k.as_str(),
                        self.spec.path.display(),
                        if k == CommandKind::Primaries {
                            " aimed at primaries"
                        } else {
                            ""
                        }
                    ),
                ));
            }
            self.validate_durability(fault, verb.as_str())?;
        }
        Ok(())
    }

    /// Refuse a fault that needs what `[durability]` declares: the lose-unsynced layer
    /// (`power-loss`, `os-crash`, `disk`) needs its `dir`; `bitflip` / `truncate` need it too, and
    /// globs of files to damage (its `files`, or the fault's own).
    fn validate_durability(
        &self,
        fault: &crate::spec::FaultSpec,
        verb: &str,
    ) -> Result<(), ConfigError> {
        let durability = self.spec.durability.as_ref();
        let n = fault.needs();
        let missing = if n.data_layer && durability.is_none() {
            Some(
                "`[durability]` table with the `dir` holding its data (the layer that loses unsynced writes is mounted there)",
            )
        } else if n.data_dir && durability.is_none() {
            Some(
                "`[durability]` table with the `dir` holding its data (the corrupted files are chosen there)",
            )
        } else if n.data_files && durability.is_some_and(|d| d.files.is_empty()) {
            Some(
                "`files` in its `[durability]` table (globs of the files to corrupt; or name them with `files = [...]` in the fault)",
            )
        } else {
            None
        };
        match missing {
            None => Ok(()),
            Some(what) => Err(ConfigError::new(
                "--nemesis",
                format!(
                    "{} has no {what} in {}, so it cannot serve the {verb} fault (PROTOCOL.md)",
                    self.spec.name,
                    self.spec.path.display()
                ),
            )),
        }
    }
}

/// The option values for a run: the spec's defaults, overridden by `--db-opt key=value`
/// entries. Unknown keys and values outside `allowed` are errors naming the flag.
pub fn apply_opts(
    spec: &ExternalSpec,
    opts: &[String],
) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut values: BTreeMap<String, String> = spec
        .options
        .iter()
        .map(|(k, o)| (k.clone(), o.default.clone()))
        .collect();
    for opt in opts {
        let Some((key, value)) = opt.split_once('=') else {
            return Err(ConfigError::new(
                "--db-opt",
                format!("{opt:?}: expected key=value"),
            ));
        };
        let Some(o) = spec.options.get(key.trim()) else {
            let known: Vec<&str> = spec.options.keys().map(String::as_str).collect();
            return Err(ConfigError::new(
                "--db-opt",
                format!(
                    "{} has no option {key:?} (options: {})",
                    spec.name,
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        };
        if !o.allowed.is_empty() && !o.allowed.iter().any(|a| a == value) {
            return Err(ConfigError::new(
                "--db-opt",
                format!("{key}={value}: expected one of {}", o.allowed.join(", ")),
            ));
        }
        values.insert(key.trim().to_string(), value.to_string());
    }
    Ok(values)
}

/// Load `--db ARG` with `--db-opt` values: the whole configuration of an external system.
pub fn configure(arg: &str, opts: &[String]) -> Result<ExternalConfig, ConfigError> {
    let path = locate(arg).ok_or_else(|| {
        ConfigError::new(
            "--db",
            format!(
                "{arg:?}: not a built-in system (etcd, postgres) and no {SYSTEMS_DIR}/{arg}.toml"
            ),
        )
    })?;
    let spec = load(&path)?;
    let options = apply_opts(&spec, opts)?;
    Ok(ExternalConfig {
        arg: arg.to_string(),
        spec,
        options,
        lazyfs: None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::{GOOD, parse_str};
    use super::*;

    #[test]
    fn faults_that_need_durability_are_refused_in_the_specs_words() {
        let cfg = |text: &str| ExternalConfig {
            arg: "toy".into(),
            spec: parse_str(text).unwrap(),
            options: BTreeMap::new(),
            lazyfs: None,
        };
        let with_kill = GOOD.replace("[client]", "kill = \"x\"\n[client]");
        let bare = cfg(&with_kill);
        let declared = cfg(&with_kill.replace(
            "[options.reads]",
            "[durability]\ndir = \"data\"\n[options.reads]",
        ));
        let with_files = cfg(&with_kill.replace(
            "[options.reads]",
            "[durability]\ndir = \"data\"\nfiles = [\"*.log\"]\n[options.reads]",
        ));
        for nemesis in [
            "power-loss",
            "os-crash",
            "disk-error",
            "bitflip",
            "truncate",
        ] {
            let n = crate::spec::load_nemesis(nemesis).unwrap();
            let e = bare.validate_faults(&n).unwrap_err().to_string();
            assert!(
                e.contains("--nemesis")
                    && e.contains("toy has no `[durability]` table with the `dir`")
                    && e.contains("systems/toy.toml"),
                "{nemesis}: {e}"
            );
            assert!(with_files.validate_faults(&n).is_ok(), "{nemesis}");
        }
        for nemesis in ["power-loss", "os-crash", "slow-disk"] {
            let n = crate::spec::load_nemesis(nemesis).unwrap();
            assert!(declared.validate_faults(&n).is_ok(), "{nemesis}");
        }
        let e = declared
            .validate_faults(&crate::spec::load_nemesis("bitflip").unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("`files` in its `[durability]` table"), "{e}");
        // Without `kill` the power faults are refused for the missing command first.
        let e = cfg(GOOD)
            .validate_faults(&crate::spec::load_nemesis("os-crash").unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no `kill` command") && e.contains("os-crash fault"),
            "{e}"
        );
    }

    #[test]
    fn a_config_round_trips_through_its_record_by_reloading_the_spec() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toy.toml");
        std::fs::write(&path, GOOD).unwrap();
        let spec = load(&path).unwrap();
        let options = apply_opts(&spec, &["reads=sync".into()]).unwrap();
        let cfg = ExternalConfig {
            arg: path.display().to_string(),
            spec,
            options,
            lazyfs: Some("/opt/shakedown".into()),
        };
        let v = serde_json::to_value(&cfg).unwrap();
        assert_eq!(v["options"]["reads"], "sync");
        let back: ExternalConfig = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(back, cfg);
        std::fs::remove_file(&path).unwrap();
        let e = serde_json::from_value::<ExternalConfig>(v)
            .unwrap_err()
            .to_string();
        assert!(e.contains("toy.toml") && e.contains("no such file"), "{e}");
    }

    #[test]
    fn db_opts_are_checked_against_the_spec() {
        let s = parse_str(GOOD).unwrap();
        let e = apply_opts(&s, &["color=red".into()])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--db-opt") && e.contains("no option \"color\"") && e.contains("reads"),
            "{e}"
        );
        let e = apply_opts(&s, &["reads=fast".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("plain, sync"), "{e}");
        let e = apply_opts(&s, &["reads".into()]).unwrap_err().to_string();
        assert!(e.contains("key=value"), "{e}");
    }
}
