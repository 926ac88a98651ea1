//! Sandbox configuration: validated name, node count, subnet, state directory, and the names
//! (namespaces, bridge, veths) derived from them. Pure: no IO beyond path arithmetic.

use std::fmt;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{MAX_NODES, Result, SandboxError};

/// How to build a sandbox. Parse CLI flags into this, then [`SandboxConfig::validate`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SandboxConfig {
    /// Sandbox name: 1..=32 chars of `[a-z0-9-]`, starting with a letter. All namespace, bridge
    /// and veth names derive from it, so sandboxes with different names coexist.
    pub name: String,
    /// Number of nodes, `1..=250`, named `n1..nN`.
    pub nodes: usize,
    /// IPv4 subnet in CIDR form with prefix length 8..=24, e.g. `10.78.0.0/24`. Node `i` gets
    /// network address + `i`, the bridge gets network address + 254.
    pub subnet: String,
    /// State directory; `None` means `/var/lib/shakedown/sandbox/<name>`. Every ancestor must be
    /// root-owned and not group/world-writable (sshd `StrictModes` checks the authorized_keys
    /// path), so it cannot live under `/tmp`.
    pub state_dir: Option<PathBuf>,
    /// How long `up` waits for every sshd to accept connections, in milliseconds.
    pub ready_timeout_ms: u64,
    /// Patch the vDSO of Go and static programs on the nodes so they read their node's clock
    /// (`clockpatch`); off, they read the host's.
    pub clock_patch: bool,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            name: "shakedown".to_string(),
            nodes: 5,
            subnet: "10.78.0.0/24".to_string(),
            state_dir: None,
            ready_timeout_ms: 5_000,
            clock_patch: true,
        }
    }
}

impl SandboxConfig {
    /// The default config with another name (state dir follows the name).
    pub fn named(name: &str) -> Self {
        SandboxConfig {
            name: name.to_string(),
            ..SandboxConfig::default()
        }
    }

    /// The state directory: `state_dir` or `/var/lib/shakedown/sandbox/<name>`.
    pub fn state_dir(&self) -> PathBuf {
        match &self.state_dir {
            Some(dir) => dir.clone(),
            None => Path::new("/var/lib/shakedown/sandbox").join(&self.name),
        }
    }

    /// Checks every field; returns the parsed subnet on success.
    pub fn validate(&self) -> Result<Subnet> {
        validate_name(&self.name)?;
        if self.nodes == 0 || self.nodes > MAX_NODES {
            return Err(SandboxError::InvalidConfig {
                field: "nodes",
                reason: format!("{} is out of range 1..={MAX_NODES}", self.nodes),
            });
        }
        let subnet = Subnet::parse(&self.subnet)?;
        let state_dir = self.state_dir();
        if !state_dir.is_absolute() {
            return Err(SandboxError::InvalidConfig {
                field: "state_dir",
                reason: format!("{} is not an absolute path", state_dir.display()),
            });
        }
        if state_dir
            .to_str()
            .is_none_or(|s| s.contains(char::is_whitespace))
        {
            return Err(SandboxError::InvalidConfig {
                field: "state_dir",
                reason: format!(
                    "{} must be valid UTF-8 without whitespace (it goes into sshd_config)",
                    state_dir.display()
                ),
            });
        }
        Ok(subnet)
    }
}

pub(super) fn validate_name(name: &str) -> Result<()> {
    let invalid = |reason: String| SandboxError::InvalidConfig {
        field: "name",
        reason,
    };
    if name.is_empty() || name.len() > 32 {
        return Err(invalid(format!("{name:?} must be 1..=32 characters long")));
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err(invalid(format!("{name:?} must start with a letter a-z")));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Err(invalid(format!(
            "{name:?} contains {bad:?}; allowed are a-z, 0-9 and '-'"
        )));
    }
    Ok(())
}

/// A validated IPv4 subnet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subnet {
    /// The network address (host bits zero).
    pub network: Ipv4Addr,
    /// The prefix length, 8..=24.
    pub prefix_len: u8,
}

impl Subnet {
    /// Parses `a.b.c.d/len`; rejects host bits, prefixes outside 8..=24.
    pub fn parse(text: &str) -> Result<Subnet> {
        let invalid = |reason: String| SandboxError::InvalidConfig {
            field: "subnet",
            reason,
        };
        let (addr, len) = text
            .split_once('/')
            .ok_or_else(|| invalid(format!("{text:?} is not in CIDR form like 10.78.0.0/24")))?;
        let network: Ipv4Addr = addr
            .parse()
            .map_err(|_| invalid(format!("{addr:?} in {text:?} is not an IPv4 address")))?;
        let prefix_len: u8 = len
            .parse()
            .map_err(|_| invalid(format!("prefix length {len:?} in {text:?} is not a number")))?;
        if !(8..=24).contains(&prefix_len) {
            return Err(invalid(format!(
                "prefix length /{prefix_len} in {text:?} is out of range /8../24"
            )));
        }
        let subnet = Subnet {
            network,
            prefix_len,
        };
        if u32::from(network) & !subnet.mask() != 0 {
            let fixed = Ipv4Addr::from(u32::from(network) & subnet.mask());
            return Err(invalid(format!(
                "{text:?} has host bits set; did you mean {fixed}/{prefix_len}"
            )));
        }
        Ok(subnet)
    }

    fn mask(&self) -> u32 {
        u32::MAX << (32 - u32::from(self.prefix_len))
    }

    /// The address `network + offset`.
    pub fn host(&self, offset: u32) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.network) + offset)
    }

    /// The bridge address (`network + 254`).
    pub fn bridge_address(&self) -> Ipv4Addr {
        self.host(254)
    }

    /// Whether two subnets share any address.
    pub fn overlaps(&self, other: &Subnet) -> bool {
        let mask = self.mask() & other.mask();
        u32::from(self.network) & mask == u32::from(other.network) & mask
    }
}

impl fmt::Display for Subnet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix_len)
    }
}

/// Derived names of one sandbox: a pure function of the name and node count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    /// Bridge interface name.
    pub bridge: String,
    /// Per node: (node name, network namespace, host veth).
    pub nodes: Vec<(String, String, String)>,
}

/// Derives interface and namespace names from the sandbox name. Interface names are
/// `sd<tag>br` and `sd<tag>v<i>` where `<tag>` is up to 3 letters/digits of the name plus 4 hex
/// digits of its FNV-1a hash, so they stay ≤ 15 chars; namespaces are `sd-<name>-n<i>`.
pub fn names(name: &str, nodes: usize) -> Names {
    let hash = name.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    let prefix: String = name.chars().filter(|c| *c != '-').take(3).collect();
    let tag = format!("{prefix}{:04x}", hash & 0xffff);
    Names {
        bridge: format!("sd{tag}br"),
        nodes: (1..=nodes)
            .map(|i| {
                (
                    format!("n{i}"),
                    format!("sd-{name}-n{i}"),
                    format!("sd{tag}v{i}"),
                )
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_linux_interface_limit_and_differ_by_sandbox() {
        let long = "a-very-long-sandbox-name-32chars";
        assert_eq!(long.len(), 32);
        let n = names(long, MAX_NODES);
        assert!(n.bridge.len() <= 15, "{}", n.bridge);
        for (_, _, veth) in &n.nodes {
            assert!(veth.len() <= 15, "{veth}");
        }
        let a = names("shakedown", 5);
        let b = names("ci", 5);
        assert_ne!(a.bridge, b.bridge);
        assert_ne!(a.nodes[0].1, b.nodes[0].1);
        assert_ne!(a.nodes[0].2, b.nodes[0].2);
        assert_eq!(a.nodes[4].0, "n5");
    }

    #[test]
    fn subnet_parsing_rejects_bad_input() {
        let ok = Subnet::parse("10.78.0.0/24").unwrap();
        assert_eq!(ok.host(3), Ipv4Addr::new(10, 78, 0, 3));
        assert_eq!(ok.bridge_address(), Ipv4Addr::new(10, 78, 0, 254));
        for bad in [
            "10.78.0.0",
            "10.78.0.0/25",
            "10.78.0.0/4",
            "10.78.0.1/24",
            "x/24",
            "10.78.0.0/x",
        ] {
            assert!(Subnet::parse(bad).is_err(), "{bad} accepted");
        }
        let err = Subnet::parse("10.78.0.5/24").unwrap_err().to_string();
        assert!(err.contains("did you mean 10.78.0.0/24"), "{err}");
    }

    #[test]
    fn subnet_overlap() {
        let a = Subnet::parse("10.78.0.0/24").unwrap();
        let b = Subnet::parse("10.79.0.0/24").unwrap();
        let wide = Subnet::parse("10.0.0.0/8").unwrap();
        assert!(!a.overlaps(&b));
        assert!(a.overlaps(&wide) && wide.overlaps(&a));
    }

    #[test]
    fn config_validation_names_the_field() {
        let mut cfg = SandboxConfig::named("ci");
        assert_eq!(
            cfg.state_dir(),
            PathBuf::from("/var/lib/shakedown/sandbox/ci")
        );
        assert!(cfg.validate().is_ok());
        cfg.nodes = 251;
        assert!(cfg.validate().unwrap_err().to_string().contains("nodes"));
        cfg.nodes = 0;
        assert!(cfg.validate().is_err());
        for bad in [
            "",
            "Upper",
            "1abc",
            "has space",
            "a/b",
            "x".repeat(33).as_str(),
        ] {
            let err = SandboxConfig::named(bad)
                .validate()
                .unwrap_err()
                .to_string();
            assert!(err.contains("name"), "{bad}: {err}");
        }
        let mut cfg = SandboxConfig::named("ci");
        cfg.state_dir = Some(PathBuf::from("relative/dir"));
        assert!(
            cfg.validate()
                .unwrap_err()
                .to_string()
                .contains("state_dir")
        );
    }
}
