//! Cluster nodes: `Node`, parsing node lists (`--nodes`, `--nodes-file`), and saying one cause
//! once for many nodes (`one_cause_once`).
//!
//! A leaf module: it imports nothing from the rest of the crate, so every layer (core, shell,
//! CLI) can name a node. Does not own reaching nodes (`control`) or the sandbox's nodes
//! (`sandbox`).

/// A node of the cluster under test.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Node {
    /// Short name used in histories, logs and grudges (e.g. `n1`).
    pub name: String,
    /// Address to reach it over SSH and for client traffic (IP or DNS name).
    pub host: String,
}

/// A malformed node list, naming its source (`--nodes`, a file) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeListError {
    /// Where the list came from (a flag or a file name).
    pub source: String,
    /// What is wrong and what was expected.
    pub message: String,
}

impl NodeListError {
    fn new(source: impl Into<String>, message: impl Into<String>) -> NodeListError {
        NodeListError {
            source: source.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for NodeListError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.source, self.message)
    }
}

impl std::error::Error for NodeListError {}

fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | ':'))
}

/// Parse a node list: comma- or whitespace-separated entries, each `host` or `name=host`
/// (a bare `host` is also its name). `source` labels errors (e.g. `--nodes`).
pub fn parse_nodes(text: &str, source: &str) -> Result<Vec<Node>, NodeListError> {
    let mut nodes: Vec<Node> = Vec::new();
    for (i, entry) in text
        .split(|c: char| c == ',' || c.is_whitespace())
        .enumerate()
    {
        let entry = entry.trim();
        if entry.is_empty() {
            if text.contains(",,")
                || text.trim_start().starts_with(',')
                || text.trim_end().ends_with(',')
            {
                return Err(NodeListError::new(
                    source,
                    format!("empty node entry in {text:?}"),
                ));
            }
            continue;
        }
        let (name, host) = match entry.split_once('=') {
            Some((n, h)) => (n.trim(), h.trim()),
            None => (entry, entry),
        };
        for (label, v) in [("name", name), ("host", host)] {
            if !valid_name(v) {
                return Err(NodeListError::new(
                    source,
                    format!(
                        "entry {} ({entry:?}): invalid node {label} {v:?}: expected letters, digits, '-', '.', '_' or ':'",
                        i + 1
                    ),
                ));
            }
        }
        if nodes.iter().any(|n| n.name == name) {
            return Err(NodeListError::new(
                source,
                format!("node {name:?} is listed twice"),
            ));
        }
        nodes.push(Node {
            name: name.to_string(),
            host: host.to_string(),
        });
    }
    if nodes.is_empty() {
        return Err(NodeListError::new(source, "no nodes given"));
    }
    Ok(nodes)
}

/// Groups `node: cause` messages by cause, keeping the first appearance's order.
pub fn one_cause_once(errs: &[String]) -> String {
    let mut groups: Vec<(Vec<&str>, &str)> = Vec::new();
    for e in errs {
        let (node, cause) = match e.split_once(": ") {
            Some((n, c)) if !n.is_empty() && !n.contains(char::is_whitespace) => (n, c),
            _ => ("", e.as_str()),
        };
        match groups.iter_mut().find(|(_, c)| *c == cause) {
            Some((nodes, _)) if !node.is_empty() => nodes.push(node),
            Some(_) => {}
            None => groups.push((
                vec![node].into_iter().filter(|n| !n.is_empty()).collect(),
                cause,
            )),
        }
    }
    groups
        .iter()
        .map(|(nodes, cause)| match nodes.as_slice() {
            [] => cause.to_string(),
            _ => format!("{}: {cause}", nodes.join(", ")),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_cause_is_said_once_naming_its_nodes() {
        let errs: Vec<String> = [
            "n1: cannot reach a package source (x)",
            "n2: etcd not found; fix",
            "n3: cannot reach a package source (x)",
            "teardown: failed badly",
            "no node named here",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            one_cause_once(&errs),
            "n1, n3: cannot reach a package source (x); n2: etcd not found; fix; \
             teardown: failed badly; no node named here"
        );
        assert_eq!(one_cause_once(&[]), "");
    }

    #[test]
    fn parses_bare_hosts_and_named_hosts() {
        let n = parse_nodes("n1=10.0.0.1, n2=10.0.0.2 db3.example", "--nodes").unwrap();
        assert_eq!(n.len(), 3);
        assert_eq!(
            n[0],
            Node {
                name: "n1".into(),
                host: "10.0.0.1".into()
            }
        );
        assert_eq!(n[2].name, "db3.example");
    }

    #[test]
    fn rejects_malformed_lists_naming_the_entry() {
        let e = parse_nodes("n1,,n2", "--nodes").unwrap_err().to_string();
        assert!(e.contains("--nodes") && e.contains("empty"), "{e}");
        let e = parse_nodes("n1;rm -rf /", "--nodes")
            .unwrap_err()
            .to_string();
        assert!(e.contains("invalid node"), "{e}");
        let e = parse_nodes("n1,n1", "--nodes").unwrap_err().to_string();
        assert!(e.contains("twice"), "{e}");
        assert!(parse_nodes("  ", "--nodes").is_err());
        assert!(parse_nodes("a=", "--nodes").is_err());
    }
}
