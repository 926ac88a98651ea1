//! The install path with a small real Debian package that nothing else needs (`hello`): on a
//! sandbox node, whose network namespace has no route to a package source, `apt-get` there fails
//! within seconds with an error naming the node, the package and the remedies;
//! `--packages-from controller` downloads the `.deb` here, uploads it over SSH and installs it on
//! the node, where `hello` then runs; and this machine's own install path (what sandbox runs use)
//! installs it too. The test removes `hello` again each time it installed it; when `hello` was
//! already installed before the test, it leaves it alone and says so.
//!
//! Needs root (when not root it prints why it did nothing). Brings its own sandbox (`sdprov`,
//! 10.91.0.0/24) down at the end, also on failure.

use shakedown::control::{Cmd, Remote, SshConfig};
use shakedown::provision::{self, Install, ProvisionError};
use shakedown::sandbox::SandboxConfig;
use std::process::Command;
use std::time::Instant;

#[path = "common/cli.rs"]
mod cli;
use cli::{SandboxGuard, root};

const NAME: &str = "sdprov";
const SUBNET: &str = "10.91.0.0/24";
const SANDBOX: [&str; 4] = ["--sandbox-name", NAME, "--sandbox-subnet", SUBNET];
const PACKAGE: &str = "hello";

fn hello() -> Vec<String> {
    vec![PACKAGE.to_string()]
}

fn installed_here() -> bool {
    provision::host::missing(&hello())
        .expect("dpkg-query")
        .is_empty()
}

fn remove_hello() {
    let out = Command::new("dpkg")
        .args(["--purge", PACKAGE])
        .output()
        .expect("dpkg --purge");
    assert!(
        out.status.success(),
        "dpkg --purge hello: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!installed_here(), "hello still installed after --purge");
}

fn first_node() -> Box<dyn Remote> {
    let cfg = SandboxConfig {
        subnet: SUBNET.into(),
        nodes: 2,
        ..SandboxConfig::named(NAME)
    };
    let info = shakedown::sandbox::up(&cfg).expect("sandbox up");
    let n = &info.nodes[0];
    let ssh = SshConfig {
        private_key: Some(info.private_key.clone()),
        known_hosts: Some(info.known_hosts.clone()),
        ..SshConfig::default()
    };
    Box::new(
        shakedown::control::SshRemote::connect(&n.name, &n.address.to_string(), &ssh)
            .expect("connect"),
    )
}

#[test]
fn a_node_without_a_package_source_gets_packages_from_the_controller() {
    if !root() {
        return;
    }
    if installed_here() {
        eprintln!("skipping: {PACKAGE} is installed on this machine already; not touching it");
        return;
    }
    let _guard = SandboxGuard(&SANDBOX);
    let node = first_node();

    // apt-get on the node: no route out, so the probe fails fast and says what to do.
    let t0 = Instant::now();
    let err = provision::node::ensure(node.as_ref(), &hello(), Install::Node).unwrap_err();
    let took = t0.elapsed();
    eprintln!("unreachable source reported after {took:?}: {err}");
    assert!(matches!(err, ProvisionError::Unreachable { .. }), "{err:?}");
    let msg = err.to_string();
    for want in ["n1", PACKAGE, "--packages-from controller", "--no-install"] {
        assert!(msg.contains(want), "{want:?} missing from: {msg}");
    }
    assert!(!installed_here());

    // Skip installs nothing and asks nothing.
    let done = provision::node::ensure(node.as_ref(), &hello(), Install::Skip).expect("skip");
    assert!(done.packages.is_empty());
    assert!(!installed_here());

    // From the controller: downloaded here, uploaded, installed on the node, and it runs there.
    let done =
        provision::node::ensure(node.as_ref(), &hello(), Install::Controller).expect("install");
    provision::host::clear_downloads();
    assert!(done.packages.contains(&PACKAGE.to_string()), "{done:?}");
    assert!(done.log.contains("uploaded"), "{}", done.log);
    let greeting = node.exec_ok(&Cmd::new(PACKAGE)).expect("run hello on n1");
    assert!(greeting.contains("Hello, world!"), "{greeting}");
    assert!(
        provision::node::missing(node.as_ref(), &hello())
            .expect("missing")
            .is_empty()
    );
    // Present now: a second ensure does nothing.
    let again =
        provision::node::ensure(node.as_ref(), &hello(), Install::Controller).expect("again");
    assert!(again.packages.is_empty());
    remove_hello();
    assert_eq!(
        provision::node::missing(node.as_ref(), &hello()).expect("missing"),
        hello()
    );

    // This machine's own path, as sandbox runs use it.
    let done = provision::host::ensure(&hello()).expect("host install");
    assert_eq!(done.packages, hello());
    assert!(done.log.contains("apt-get"), "{}", done.log);
    let out = Command::new(PACKAGE).output().expect("run hello");
    assert!(String::from_utf8_lossy(&out.stdout).contains("Hello, world!"));
    remove_hello();
}

#[test]
fn a_package_that_does_not_exist_is_named_in_the_error() {
    if !root() {
        return;
    }
    let bogus = vec!["shakedown-no-such-package".to_string()];
    let err = provision::host::ensure(&bogus).unwrap_err().to_string();
    assert!(
        err.contains("this machine") && err.contains("shakedown-no-such-package"),
        "{err}"
    );
    assert!(err.contains("Unable to locate package"), "{err}");
}
