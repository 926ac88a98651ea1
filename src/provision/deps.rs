//! Which `.deb` files a node lacks: reading `apt-cache depends` output and walking the
//! dependencies of the wanted packages against the set a node already has installed. Pure: the
//! caller runs `apt-cache` (on the controller) and `dpkg-query` (on the node) and hands the text in.
//!
//! The walk follows Depends and Pre-Depends (not Recommends), takes an alternative group
//! (`a | b`) as satisfied when any member is installed or already chosen, else chooses its first
//! member (for a virtual package, its first provider), and ignores version constraints: the
//! controller and the node must run the same distribution release, which `provision::node`
//! checks before it uploads anything. Does not download, upload or install.

use std::collections::{BTreeMap, HashSet};

/// One member of an alternative group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Alt {
    /// A real package.
    Real(String),
    /// A virtual package and the packages that provide it.
    Virtual {
        /// Its name (without the angle brackets).
        name: String,
        /// Real packages providing it, in apt's order.
        providers: Vec<String>,
    },
}

/// A package's hard dependencies: each group is a list of alternatives.
pub type Groups = Vec<Vec<Alt>>;

/// A package name without an architecture qualifier (`python3:any` → `python3`).
fn bare(name: &str) -> String {
    name.split(':').next().unwrap_or(name).to_string()
}

/// Parses `apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks
/// --no-replaces --no-enhances P…` output into each package's dependency groups. Lines it does
/// not understand are skipped.
pub fn parse_depends(text: &str) -> BTreeMap<String, Groups> {
    let mut out: BTreeMap<String, Groups> = BTreeMap::new();
    let mut current: Option<String> = None;
    // Whether the last dependency line ended with `|` (its group continues).
    let mut open_group = false;
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if !line.starts_with(' ') {
            let name = line.trim();
            current = (!name.starts_with('<')).then(|| bare(name));
            if let Some(c) = &current {
                out.entry(c.clone()).or_default();
            }
            open_group = false;
            continue;
        }
        let Some(pkg) = current.as_ref() else {
            continue;
        };
        let groups = out.entry(pkg.clone()).or_default();
        let trimmed = line.trim_start();
        let (or_next, rest) = match trimmed.strip_prefix('|') {
            Some(r) => (true, r),
            None => (false, trimmed),
        };
        if let Some((kind, target)) = rest.split_once(':')
            && !kind.contains(' ')
            && !target.trim().is_empty()
        {
            if kind != "Depends" && kind != "PreDepends" {
                open_group = false;
                continue;
            }
            let target = target.trim();
            let alt = match target.strip_prefix('<').and_then(|t| t.strip_suffix('>')) {
                Some(v) => Alt::Virtual {
                    name: bare(v),
                    providers: Vec::new(),
                },
                None => Alt::Real(bare(target)),
            };
            if open_group && let Some(last) = groups.last_mut() {
                last.push(alt);
            } else {
                groups.push(vec![alt]);
            }
            open_group = or_next;
            continue;
        }
        // A provider line under a virtual dependency (deeper indentation, a bare name).
        if let Some(Alt::Virtual { providers, .. }) = groups.last_mut().and_then(|g| g.last_mut()) {
            let p = bare(trimmed);
            if !providers.contains(&p) {
                providers.push(p);
            }
        }
    }
    out
}

/// The packages to install, in discovery order, so that `roots` and their hard dependencies are
/// all present on a node with `installed`. `depends` answers a batch of package names with
/// their groups (one `apt-cache depends` call per level); a name it does not know is taken as
/// having no dependencies (apt-get download will then say it does not exist).
pub fn plan<E>(
    roots: &[String],
    installed: &HashSet<String>,
    mut depends: impl FnMut(&[String]) -> Result<BTreeMap<String, Groups>, E>,
) -> Result<Vec<String>, E> {
    let mut chosen: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut frontier: Vec<String> = Vec::new();
    for r in roots {
        let r = bare(r);
        if !installed.contains(&r) && seen.insert(r.clone()) {
            frontier.push(r);
        }
    }
    while !frontier.is_empty() {
        let info = depends(&frontier)?;
        chosen.extend(frontier.iter().cloned());
        let mut next: Vec<String> = Vec::new();
        for p in &frontier {
            for group in info.get(p).map(Vec::as_slice).unwrap_or_default() {
                let have = |n: &String| installed.contains(n) || seen.contains(n);
                let satisfied = group.iter().any(|alt| match alt {
                    Alt::Real(n) => have(n),
                    Alt::Virtual { providers, .. } => providers.iter().any(have),
                });
                if satisfied {
                    continue;
                }
                let pick = group.iter().find_map(|alt| match alt {
                    Alt::Real(n) => Some(n.clone()),
                    Alt::Virtual { providers, .. } => providers.first().cloned(),
                });
                if let Some(n) = pick
                    && seen.insert(n.clone())
                {
                    next.push(n);
                }
            }
        }
        frontier = next;
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
etcd-server
  Depends: adduser
  Depends: libc6
 |Depends: mawk
  Depends: gawk
  PreDepends: <debconf-2.0>
    debconf
    cdebconf
  Recommends: etcd-client
hello
  Depends: libc6
<virtual-only>
python3-kazoo
  Depends: python3:any
";

    #[test]
    fn parses_groups_alternatives_and_providers() {
        let m = parse_depends(SAMPLE);
        let etcd = &m["etcd-server"];
        assert_eq!(etcd.len(), 4, "{etcd:?}");
        assert_eq!(etcd[0], vec![Alt::Real("adduser".into())]);
        assert_eq!(
            etcd[2],
            vec![Alt::Real("mawk".into()), Alt::Real("gawk".into())]
        );
        assert_eq!(
            etcd[3],
            vec![Alt::Virtual {
                name: "debconf-2.0".into(),
                providers: vec!["debconf".into(), "cdebconf".into()],
            }]
        );
        assert_eq!(m["hello"], vec![vec![Alt::Real("libc6".into())]]);
        assert_eq!(m["python3-kazoo"], vec![vec![Alt::Real("python3".into())]]);
        assert!(!m.contains_key("<virtual-only>") && !m.contains_key("virtual-only"));
        assert!(
            parse_depends("garbage: : :\n  |\n")
                .values()
                .all(Vec::is_empty)
        );
    }

    fn plan_on(installed: &[&str], roots: &[&str]) -> Vec<String> {
        let m = parse_depends(SAMPLE);
        let mut extra: BTreeMap<String, Groups> = BTreeMap::new();
        extra.insert("adduser".into(), vec![vec![Alt::Real("passwd".into())]]);
        let installed: HashSet<String> = installed.iter().map(|s| s.to_string()).collect();
        let roots: Vec<String> = roots.iter().map(|s| s.to_string()).collect();
        plan::<()>(&roots, &installed, |batch| {
            Ok(batch
                .iter()
                .filter_map(|p| m.get(p).or(extra.get(p)).map(|g| (p.clone(), g.clone())))
                .collect())
        })
        .expect("plan")
    }

    #[test]
    fn plans_only_what_the_node_lacks() {
        assert_eq!(
            plan_on(&["libc6", "debconf", "gawk", "passwd"], &["etcd-server"]),
            vec!["etcd-server", "adduser"]
        );
        // Nothing of the alternatives or providers installed: the first of each is chosen.
        assert_eq!(
            plan_on(&["libc6"], &["etcd-server"]),
            vec!["etcd-server", "adduser", "mawk", "debconf", "passwd"]
        );
        assert_eq!(
            plan_on(&["hello", "libc6"], &["hello"]),
            Vec::<String>::new()
        );
        assert_eq!(plan_on(&[], &["hello", "hello"]), vec!["hello", "libc6"]);
    }
}
