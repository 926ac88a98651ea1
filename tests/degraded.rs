//! Degraded nodes on a real sandbox (`sddeg`, 10.64.0.0/24): a node's sshd dies mid-run (the
//! `ssh-drop` fault) and the run goes on — faults apply on the other nodes, the lost node is
//! named per node, the controller reconnects when sshd is back; `shakedown heal` with one node
//! unreachable heals the others, names the missing one and exits non-zero, and heals it once it
//! answers again. Needs root; when not root each test prints why it did nothing. Run under the
//! machine-wide sandbox lock (`flock /tmp/shakedown-sandbox.lock cargo test --test degraded`).
//!
//! Faults are observed from outside the tool: rules with `iptables -S` run by `ip netns exec`,
//! sshd by the sandbox's status and the reaper's PID.

use serde_json::{Value, json};
use shakedown::control::SshConfig;
use shakedown::history::{History, Process};
use shakedown::nemesis::{Nemesis, NemesisConfig, PartitionConfig};
use shakedown::node::Node;
use shakedown::sandbox::{self, SandboxConfig};
use shakedown::systems::etcd::Etcd;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

#[path = "common/cli.rs"]
mod cli;
use cli::{SandboxGuard, root, run_results, shakedown};

static SERIAL: Mutex<()> = Mutex::new(());
const NAME: &str = "sddeg";
const SUBNET: &str = "10.64.0.0/24";
const SANDBOX: [&str; 4] = ["--sandbox-name", NAME, "--sandbox-subnet", SUBNET];

fn sandbox_cfg() -> SandboxConfig {
    SandboxConfig {
        name: NAME.into(),
        subnet: SUBNET.into(),
        nodes: 5,
        ..Default::default()
    }
}

fn up() -> sandbox::SandboxInfo {
    let mut args = vec!["sandbox", "up"];
    args.extend(SANDBOX);
    let out = shakedown(&args);
    assert!(
        out.status.success(),
        "sandbox up: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    sandbox::load(&sandbox_cfg().state_dir()).expect("sandbox state")
}

/// The tool's partition/loss rules on a node, seen from inside its network namespace.
fn chain_rules(node: &str) -> Vec<String> {
    let out = Command::new("ip")
        .args(["netns", "exec", &format!("sd-{NAME}-{node}")])
        .args(["iptables", "-w", "-S", "SHAKEDOWN"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("-A "))
        .map(str::to_string)
        .collect()
}

/// Take a node's sshd away for `hold_ms` from the host, as the ssh-drop fault does from the
/// node (hold file in its private /tmp, SIGUSR1 to its reaper), without journaling anything.
fn drop_sshd_from_host(info: &sandbox::SandboxInfo, node: &str, hold_ms: u64) {
    let n = info.node(node).unwrap();
    let hold = n
        .tmp_dir()
        .join(Path::new(sandbox::SSHD_HOLD_FILE).file_name().unwrap());
    std::fs::write(&hold, format!("{hold_ms}\n")).unwrap();
    signal(n.init_pid.expect("reaper pid"), libc::SIGUSR1);
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) on the sandbox's recorded reaper PID.
    assert_eq!(unsafe { libc::kill(pid as i32, sig) }, 0);
}

/// Wait until the node's SSH port refuses (`up = false`) or accepts (`up = true`).
fn wait_port(info: &sandbox::SandboxInfo, node: &str, up: bool) {
    let addr = std::net::SocketAddr::from((info.node(node).unwrap().address, 22));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let open = std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok();
        if open == up {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{node}: port 22 still {}",
            if up { "closed" } else { "open" }
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Direct children of `pid` whose command name is `comm`.
fn children_named(pid: u32, comm: &str) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|c| c.parse::<u32>().ok())
        .filter(|c| {
            std::fs::read_to_string(format!("/proc/{c}/comm")).is_ok_and(|n| n.trim() == comm)
        })
        .collect()
}

fn nodes_of(info: &sandbox::SandboxInfo) -> Vec<Node> {
    info.nodes
        .iter()
        .map(|n| Node {
            name: n.name.clone(),
            host: n.address.to_string(),
        })
        .collect()
}

#[test]
fn ssh_drop_mid_run_faults_apply_elsewhere_and_the_node_reconnects() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    // Stacked: SSH dropped on one node for 5 s, then a partition while it is away (applies on
    // the four others), its stop (the dropped node still away), then waiting for sshd.
    let nem = tmp.path().join("degraded.toml");
    std::fs::write(
        &nem,
        r#"interval_s = 1.0
order = "stacked"
[[faults]]
kind = "ssh-drop"
targets = "one"
duration_ms = 5000
[[faults]]
kind = "partition"
shape = "one"
"#,
    )
    .unwrap();
    let reports = tmp.path().join("reports");
    let (code, run_dir, results) = run_results(
        &SANDBOX,
        &[
            // Ends after the first cycle: drop (1 s), partition (2 s), its stop (3 s), waiting
            // for sshd (4 s to ~6.3 s); the final heal then stops the partition on all nodes.
            "--time-limit",
            "7",
            "--seed",
            "7",
            "--nemesis",
            nem.to_str().unwrap(),
        ],
        &reports,
    );
    assert!(
        (0..=2).contains(&code),
        "run did not complete (exit {code}): {results}"
    );
    let h = History::read_file(&run_dir.join("history.jsonl")).unwrap();
    let nemesis: Vec<_> = h
        .ops
        .iter()
        .filter(|o| o.process == Process::Nemesis)
        .collect();
    let dropped = nemesis
        .iter()
        .find(|o| o.f == "start-ssh-drop" && o.value["nodes"].is_array())
        .unwrap_or_else(|| panic!("no ssh-drop completion: {nemesis:#?}"));
    assert!(dropped.error.is_none(), "{dropped:?}");
    let lost = dropped.value["nodes"][0].as_str().unwrap().to_string();

    // The partition while the node was away: applied on the four others, the lost one named.
    let partial = nemesis
        .iter()
        .find(|o| o.f == "start-partition" && o.value["applied"].is_array())
        .unwrap_or_else(|| panic!("no partly applied partition: {nemesis:#?}"));
    let applied: Vec<&str> = partial.value["applied"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(applied.len(), 4, "{partial:?}");
    assert!(!applied.contains(&lost.as_str()), "{partial:?}");
    assert!(partial.value["failed"][&lost].is_string(), "{partial:?}");
    let error = partial.error.as_deref().unwrap();
    assert!(error.starts_with(&format!("{lost}: ")), "{error}");
    for bad in ["Session(", "os error"] {
        assert!(!error.contains(bad), "{error}");
    }

    // Reconnected: waiting for sshd ended well, and a later partition stop reached every node.
    let back = nemesis
        .iter()
        .position(|o| o.f == "stop-ssh-drop" && o.error.is_none())
        .unwrap_or_else(|| panic!("sshd never came back: {nemesis:#?}"));
    let later_full = nemesis[back..]
        .iter()
        .any(|o| o.f == "stop-partition" && o.value == json!("healed") && o.error.is_none());
    assert!(
        later_full,
        "no op reached {lost} after it came back: {nemesis:#?}"
    );
    // Cleanup reached the node too: its DB log was downloaded, no rule left anywhere.
    assert!(
        run_dir.join("logs").join(&lost).read_dir().is_ok(),
        "no logs of {lost} in {}",
        run_dir.display()
    );
    for n in 1..=5 {
        assert!(
            chain_rules(&format!("n{n}")).is_empty(),
            "rules left on n{n}"
        );
    }
    // The fault journal says per node what the partial inject did.
    let journal = std::fs::read_to_string(run_dir.join("faults.jsonl")).unwrap();
    let failed: Vec<Value> = journal
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["f"] == "start-partition" && r["event"] == "failed")
        .collect();
    assert!(
        failed.iter().any(|r| r["failed"][&lost].is_string()),
        "{journal}"
    );
    assert!(sandbox::status(&sandbox_cfg()).unwrap().healthy());
}

#[test]
fn heal_with_one_node_unreachable_heals_the_others_and_names_it() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let info = up();
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    let journal = run.join("faults.jsonl");

    // A "crashed" controller left a partition and packet loss on every node.
    let nodes = nodes_of(&info);
    let ssh = SshConfig {
        private_key: Some(info.private_key.clone()),
        known_hosts: Some(info.known_hosts.clone()),
        ..SshConfig::default()
    };
    {
        let sink = shakedown::store::RunDir::open(&run)
            .jsonl_sink("faults.jsonl")
            .unwrap();
        let mut n = Nemesis::new(NemesisConfig {
            helper_exe: None,
            nodes: nodes.clone(),
            remotes: shakedown::runner::connect(&nodes, &ssh).unwrap(),
            db: Arc::new(Etcd::default()),
            partition: PartitionConfig::default(),
            rng: ChaCha8Rng::seed_from_u64(1),
            journal: Some(sink),
        });
        n.setup().unwrap();
        let c = n.invoke("start-partition", &json!("halves"));
        assert!(c.error().is_none(), "{c:?}");
        let c = n.invoke("start-loss", &json!({"targets": "all", "probability": 0.1}));
        assert!(c.error().is_none(), "{c:?}");
    }
    for n in 1..=5 {
        assert!(
            !chain_rules(&format!("n{n}")).is_empty(),
            "n{n} has no rules"
        );
    }

    // n3's sshd goes away (connection refused), its rules stay.
    drop_sshd_from_host(&info, "n3", 120_000);
    wait_port(&info, "n3", false);
    let heal = |journal: &Path| {
        let mut args = vec!["heal", "--journal", journal.to_str().unwrap()];
        args.extend(SANDBOX);
        shakedown(&args)
    };
    let out = heal(&journal);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(4), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(
            "n3: NOT REACHED (cannot connect to 10.64.0.3:22: connection refused (no SSH server listening on that port?)): nothing was undone there"
        ),
        "{stdout}"
    );
    for n in ["n1", "n2", "n4", "n5"] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("{n}: ")))
            .unwrap_or_else(|| panic!("no line for {n}: {stdout}"));
        assert!(
            line.contains("loss rule(s)") && line.contains("removed iptables chain SHAKEDOWN"),
            "{line}"
        );
        assert!(chain_rules(n).is_empty(), "{n} still has rules");
    }
    assert!(!stdout.contains("not undone"), "{stdout}");
    assert!(
        stderr.contains("heal left") && stderr.contains("n3: not reached"),
        "{stderr}"
    );
    assert!(
        !chain_rules("n3").is_empty(),
        "n3 was not reachable, its rules stay"
    );
    let records: Vec<Value> = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let open = shakedown::nemesis::outstanding_faults(&records);
    assert_eq!(
        open.len(),
        2,
        "both faults stay outstanding for n3: {open:?}"
    );
    assert!(
        stdout.contains("still in effect: start-partition"),
        "{stdout}"
    );

    // n3 answers again: a second heal finishes the job and exits 0.
    signal(info.node("n3").unwrap().init_pid.unwrap(), libc::SIGUSR2);
    wait_port(&info, "n3", true);
    let out = heal(&journal);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let n3 = stdout.lines().find(|l| l.starts_with("n3: ")).unwrap();
    assert!(n3.contains("removed iptables chain SHAKEDOWN"), "{n3}");
    assert!(chain_rules("n3").is_empty());
    let records: Vec<Value> = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(shakedown::nemesis::outstanding_faults(&records).is_empty());
}

#[test]
fn reaper_restarts_a_killed_sshd_and_the_remote_reconnects() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let info = up();
    let n2 = info.node("n2").unwrap().clone();
    let ssh = SshConfig {
        private_key: Some(info.private_key.clone()),
        known_hosts: Some(info.known_hosts.clone()),
        retries: 1,
        backoff_ms: 50,
        ..SshConfig::default()
    };
    let r = shakedown::control::SshRemote::connect("n2", &n2.address.to_string(), &ssh).unwrap();
    use shakedown::control::{Cmd, Remote};
    assert_eq!(r.exec_ok(&Cmd::new("hostname")).unwrap().trim(), "n2");
    // Kill by hand, from the host, every sshd of the node: the listener (the reaper's child)
    // and the per-connection process serving our session.
    let st = sandbox::status(&sandbox_cfg()).unwrap();
    let sshd = st.nodes[1].sshd_pid.unwrap();
    let session = children_named(sshd, "sshd");
    assert!(!session.is_empty(), "no per-connection sshd under {sshd}");
    signal(sshd, libc::SIGKILL);
    for pid in session {
        signal(pid, libc::SIGKILL);
    }
    let t0 = Instant::now();
    // The pooled session is dead; the next command reconnects (sshd is back within ~100 ms).
    let mut out = r.exec(&Cmd::new("hostname"));
    while out.is_err() && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(100));
        out = r.exec(&Cmd::new("hostname"));
    }
    assert_eq!(out.unwrap().stdout.trim(), "n2");
    assert!(r.sessions_opened() >= 2);
    let st = sandbox::status(&sandbox_cfg()).unwrap();
    assert!(st.healthy(), "{st}");
    assert_ne!(st.nodes[1].sshd_pid, Some(sshd));
    let log = std::fs::read_to_string(n2.log_file()).unwrap();
    assert!(log.contains("sd-reaper: sshd (pid"), "{log}");
}

#[test]
fn a_node_that_goes_silent_mid_command_is_noticed_before_the_command_deadline() {
    if !root() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _guard = SandboxGuard(&SANDBOX);
    let info = up();
    let n4 = info.node("n4").unwrap().clone();
    let ssh = SshConfig {
        private_key: Some(info.private_key.clone()),
        known_hosts: Some(info.known_hosts.clone()),
        connect_timeout_ms: 2_000,
        retries: 0,
        ..SshConfig::default()
    };
    use shakedown::control::{Cmd, ExecError, Remote};
    let r = shakedown::control::SshRemote::connect("n4", &n4.address.to_string(), &ssh).unwrap();
    // Silence n4 towards the controller: its SSH port drops everything, no RST (by hand, in its
    // own namespace; removed below).
    let rule = ["INPUT", "-p", "tcp", "--dport", "22", "-j", "DROP"];
    let iptables = |op: &str| {
        let out = Command::new("ip")
            .args(["netns", "exec", &n4.netns, "iptables", "-w", op])
            .args(rule)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    let t0 = Instant::now();
    let result = std::thread::scope(|s| {
        let h = s.spawn(|| r.exec(&Cmd::new("sleep").arg("45").timeout_ms(60_000)));
        std::thread::sleep(Duration::from_millis(500));
        iptables("-I");
        h.join().unwrap()
    });
    let took = t0.elapsed();
    iptables("-D");
    let err = result.unwrap_err();
    assert!(matches!(err, ExecError::Transport { .. }), "{err:?}");
    // Keepalive: ~5 s idle + 3 probes 2 s apart, not the 45 s of the command or its 60 s limit.
    assert!(took < Duration::from_secs(30), "noticed after {took:?}");
    eprintln!("silent node noticed after {took:?}: {err}");
    // Audible again: the next command reconnects.
    assert_eq!(r.exec_ok(&Cmd::new("hostname")).unwrap().trim(), "n4");
}
