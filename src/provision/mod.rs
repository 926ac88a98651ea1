//! Provisioning: getting the Debian packages a system needs onto the machines that run it.
//!
//! Owns the vocabulary of installing ([`Install`]: from each node's own package source, from the
//! controller, or not at all), the errors a person sees when it cannot happen
//! ([`ProvisionError`]: which machine, which packages, why, and what to do instead), and the two
//! places packages go:
//! - [`host`]: this machine (the controller). The built-in sandbox's nodes are network namespaces
//!   that share this machine's files but have no route to any package source, so a sandbox run
//!   installs everything here, once, before any node needs it.
//! - [`node`]: a real node over SSH, with `apt-get` there (after a quick probe that its package
//!   source answers), or with `.deb` files this machine downloads and uploads
//!   (`--packages-from controller`, for air-gapped clusters).
//!
//! Does not own which packages a system needs (`Db::packages`, in each system's folder) nor the
//! system-specific steps after them (`Db::install`).

pub mod deps;
pub mod host;
pub mod node;

/// `ARCH ID CODENAME` of a machine, run on the controller (`host`) and on a node (`node`) to
/// compare their releases.
const RELEASE_SCRIPT: &str = r#"a=$(dpkg --print-architecture 2>/dev/null || echo unknown)
. /etc/os-release 2>/dev/null
echo "$a ${ID:-unknown} ${VERSION_CODENAME:-unknown}"
"#;

/// How a run gets missing packages onto its nodes (`--packages-from`, `--no-install`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Install {
    /// Each node runs `apt-get` against its own package sources (the default).
    #[default]
    Node,
    /// The controller downloads the `.deb` files a node lacks and installs them over SSH.
    Controller,
    /// Install nothing: the user manages the nodes' packages.
    Skip,
}

impl Install {
    /// The flag that selects this way (for messages).
    pub fn flag(self) -> &'static str {
        match self {
            Install::Node => "--packages-from node",
            Install::Controller => "--packages-from controller",
            Install::Skip => "--no-install",
        }
    }
}

/// What to do when a node cannot get its packages itself (one text, shared by every message).
pub const REMEDIES: &str = "run with `--packages-from controller` (this machine downloads the \
     .deb files and installs them over SSH), or install them yourself and run with `--no-install`";

/// Why packages could not be provided.
#[derive(Debug, thiserror::Error)]
pub enum ProvisionError {
    /// Packages are missing here and this process may not install them.
    #[error(
        "missing packages on this machine: {}; run as root so shakedown can install them, or \
         install them with `apt-get install {}`",
        .packages.join(", "), .packages.join(" ")
    )]
    NotRoot {
        /// The missing packages.
        packages: Vec<String>,
    },
    /// Another package manager held the dpkg lock for longer than we wait.
    #[error(
        "another package manager ({holder}) has held {lock} for {waited_s} s; let it finish, \
         then run again"
    )]
    Busy {
        /// The lock file.
        lock: String,
        /// Who holds it (process name and PID, when known).
        holder: String,
        /// How long we waited.
        waited_s: u64,
    },
    /// A program could not be started on this machine.
    #[error("cannot run {command}: {reason}")]
    Spawn {
        /// The command line.
        command: String,
        /// The reason, in words.
        reason: String,
    },
    /// apt-get (or dpkg) ran and the packages are still missing.
    #[error("{place}: installing {} failed: {detail}", .packages.join(", "))]
    Failed {
        /// `this machine` or the node's name.
        place: String,
        /// The packages that were to be installed.
        packages: Vec<String>,
        /// What apt-get said (the last lines that matter).
        detail: String,
    },
    /// A node's package source did not answer.
    #[error(
        "{node}: cannot reach a package source ({detail}); missing there: {}. Either {REMEDIES}",
        .packages.join(", ")
    )]
    Unreachable {
        /// The node.
        node: String,
        /// The packages it lacks.
        packages: Vec<String>,
        /// What apt-get update said.
        detail: String,
    },
    /// A node cannot take this machine's packages.
    #[error("{node}: {reason}")]
    Incompatible {
        /// The node.
        node: String,
        /// Why (distribution release, architecture, no dpkg).
        reason: String,
    },
    /// A command on a node could not be run.
    #[error(transparent)]
    Exec(#[from] crate::control::ExecError),
}

/// What an install did: which packages it installed and apt's output (kept in the run's logs,
/// shown only on failure).
#[derive(Debug, Default, Clone)]
pub struct Installed {
    /// Packages that were missing and are now installed.
    pub packages: Vec<String>,
    /// Every command run and its output, in order.
    pub log: String,
}

impl Installed {
    /// Nothing was missing.
    pub fn nothing() -> Installed {
        Installed::default()
    }
}

/// The lines of apt/dpkg output worth showing a person: errors and warnings, else the tail.
pub fn apt_gist(output: &str) -> String {
    let lines: Vec<&str> = output.lines().map(str::trim_end).collect();
    let errors: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("E: ") || l.starts_with("dpkg: error") || l.starts_with("Err:"))
        .collect();
    let picked: Vec<&str> = if errors.is_empty() {
        let tail = lines.iter().rev().filter(|l| !l.trim().is_empty()).take(4);
        let mut tail: Vec<&str> = tail.copied().collect();
        tail.reverse();
        tail
    } else {
        errors.into_iter().take(4).collect()
    };
    if picked.is_empty() {
        return "no output".to_string();
    }
    picked.join(" | ")
}

/// Package names as Debian allows them (at least two lowercase letters, digits or `+-.`,
/// starting alphanumeric; an optional `:arch`): what may reach apt-get's command line.
pub fn valid_package_name(name: &str) -> bool {
    let (pkg, arch) = name.split_once(':').unwrap_or((name, "a"));
    let ok = |s: &str, extra: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || extra.contains(c))
    };
    pkg.len() >= 2
        && ok(pkg, "+-.")
        && pkg.starts_with(|c: char| c.is_ascii_alphanumeric())
        && ok(arch, "-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gist_prefers_errors_and_falls_back_to_the_tail() {
        let out = "Reading package lists...\nE: Unable to locate package nosuch\n";
        assert_eq!(apt_gist(out), "E: Unable to locate package nosuch");
        let out = "a\nb\n\nc\nd\ne\n";
        assert_eq!(apt_gist(out), "b | c | d | e");
        assert_eq!(apt_gist(""), "no output");
    }

    #[test]
    fn package_names_are_debian_names() {
        for good in [
            "etcd-server",
            "libc6-dev",
            "g++",
            "python3.11",
            "libssl3:amd64",
        ] {
            assert!(valid_package_name(good), "{good}");
        }
        for bad in ["", "a", "Etcd", "a b", "x;rm", "-o", "foo:", "$(x)"] {
            assert!(!valid_package_name(bad), "{bad}");
        }
    }
}
