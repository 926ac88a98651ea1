//! Integration tests of the local sandbox cluster (`shakedown::sandbox`) against the real host.
//!
//! Owns: bringing real sandboxes up and down and checking their isolation properties (no default
//! route, hostname, SSH with strict host key checking, bridge reachability, private /tmp, no
//! CAP_SYS_TIME, clean teardown, two coexisting sandboxes, a 100-node sandbox answering SSH on
//! every node and leaving nothing behind). Does not own: config parsing units (those are unit
//! tests in `src/sandbox/config.rs`).
//!
//! Needs root (namespaces, bridges); when not root each test prints why and returns.
//! Uses names `sdtest`/`sdtwo-*`/`sdhund` and subnets 10.77.x, 10.76.x, 10.137.0.0/24 so it never touches a developer's
//! default `shakedown` sandbox on 10.78.0.0/24.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Instant, SystemTime};

use shakedown::control::Remote;
use shakedown::sandbox::{self, SandboxConfig, SandboxInfo};

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Calls `down` when dropped, so a failing assertion still cleans up.
struct DownGuard(SandboxConfig);

impl Drop for DownGuard {
    fn drop(&mut self) {
        if let Err(e) = sandbox::down(&self.0) {
            eprintln!("cleanup: down {} failed: {e}", self.0.name);
        }
    }
}

fn config(name: &str, subnet: &str, nodes: usize) -> SandboxConfig {
    SandboxConfig {
        name: name.to_string(),
        nodes,
        subnet: subnet.to_string(),
        ..SandboxConfig::default()
    }
}

fn sh(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

fn ssh(info: &SandboxInfo, node: &str, remote: &str) -> Output {
    let addr = info.node(node).expect("node exists").address.to_string();
    sh(Command::new("ssh")
        .args(["-F", "/dev/null", "-i"])
        .arg(&info.private_key)
        .arg("-o")
        .arg(format!("UserKnownHostsFile={}", info.known_hosts.display()))
        .args([
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "BatchMode=yes",
            "-o",
            "ConnectTimeout=5",
        ])
        .arg(format!("root@{addr}"))
        .arg(remote))
}

/// Runs `remote` on `node` with ssh2, verifying the host key against `known_hosts` both by
/// address and by name; returns trimmed stdout.
fn ssh2_exec(info: &SandboxInfo, node: &str, remote: &str) -> String {
    use std::io::Read;
    let n = info.node(node).expect("node exists");
    let tcp = std::net::TcpStream::connect((n.address, info.ssh_port)).expect("tcp connect");
    let mut session = ssh2::Session::new().expect("ssh2 session");
    session.set_tcp_stream(tcp);
    session.handshake().expect("ssh2 handshake");
    let (key, _) = session.host_key().expect("host key");
    let key = key.to_vec();
    let mut known = session.known_hosts().expect("known hosts");
    known
        .read_file(&info.known_hosts, ssh2::KnownHostFileKind::OpenSSH)
        .expect("read known_hosts");
    for host in [n.address.to_string(), n.name.clone()] {
        let check = known.check_port(&host, info.ssh_port, &key);
        assert!(
            matches!(check, ssh2::CheckResult::Match),
            "{host}: {check:?}"
        );
    }
    session
        .userauth_pubkey_file(&info.user, None, &info.private_key, None)
        .expect("ssh2 pubkey auth");
    let mut channel = session.channel_session().expect("channel");
    channel.exec(remote).expect("exec");
    let mut out = String::new();
    channel.read_to_string(&mut out).expect("read stdout");
    channel.wait_close().expect("close");
    assert_eq!(channel.exit_status().expect("exit status"), 0, "{remote}");
    out.trim().to_string()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn process_exists(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.contains(") Z "),
        Err(_) => false,
    }
}

fn assert_gone(info: &SandboxInfo) {
    assert!(
        !Path::new("/sys/class/net").join(&info.bridge.name).exists(),
        "bridge {} still exists",
        info.bridge.name
    );
    for node in &info.nodes {
        assert!(
            !Path::new("/run/netns").join(&node.netns).exists(),
            "netns {} still exists",
            node.netns
        );
        assert!(
            !Path::new("/sys/class/net").join(&node.veth).exists(),
            "veth {} still exists",
            node.veth
        );
        assert!(
            !Path::new("/etc/netns").join(&node.netns).exists(),
            "/etc/netns/{} still exists",
            node.netns
        );
        for pid in [node.init_pid, node.sshd_pid, node.launcher_pid]
            .into_iter()
            .flatten()
        {
            assert!(
                !process_exists(pid),
                "{} process {pid} still alive",
                node.name
            );
        }
    }
    assert!(!info.state_file().exists(), "state file still exists");
}

#[test]
fn sandbox_up_isolates_nodes_and_down_removes_everything() {
    if !is_root() {
        eprintln!("skipping: sandbox tests need root (network namespaces, bridges)");
        return;
    }
    let cfg = config("sdtest", "10.77.0.0/24", 3);
    let _ = sandbox::down(&cfg); // Leftovers of an earlier crashed run.
    let guard = DownGuard(cfg.clone());

    let t = Instant::now();
    let info = sandbox::up(&cfg).expect("up");
    eprintln!("sandbox up (3 nodes): {} ms", t.elapsed().as_millis());

    assert_eq!(info.node_names(), ["n1", "n2", "n3"]);
    assert_eq!(info.nodes[1].address.to_string(), "10.77.0.2");
    assert_eq!(sandbox::load(&cfg.state_dir()).expect("load"), info);
    let st = sandbox::status(&cfg).expect("status");
    assert!(st.healthy(), "{st}");
    eprintln!("{st}");

    // Second up on a healthy sandbox is a no-op returning the same info.
    assert_eq!(sandbox::up(&cfg).expect("second up"), info);
    // ... but a different shape is refused.
    let mut other_shape = cfg.clone();
    other_shape.nodes = 4;
    let err = sandbox::up(&other_shape).unwrap_err().to_string();
    assert!(err.contains("already up"), "{err}");

    for node in &info.nodes {
        let routes = sh(Command::new("ip").args(["-n", &node.netns, "route", "show", "default"]));
        assert!(routes.status.success());
        assert_eq!(stdout(&routes), "", "{} has a default route", node.name);

        // The recorded reaper is PID 1 of its own PID namespace (NSpid: <host pid> 1), and the
        // recorded sshd is its child.
        let pid = node.init_pid.expect("init pid recorded").to_string();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("init status");
        let nspid = status
            .lines()
            .find(|l| l.starts_with("NSpid:"))
            .unwrap_or("");
        assert_eq!(
            nspid.split_whitespace().collect::<Vec<_>>(),
            ["NSpid:", &pid, "1"]
        );
        assert_eq!(
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .unwrap()
                .trim(),
            sandbox::REAPER_NAME
        );
        let sshd = node.sshd_pid.expect("sshd pid recorded");
        let stat = std::fs::read_to_string(format!("/proc/{sshd}/stat")).expect("sshd stat");
        let ppid = stat[stat.rfind(')').unwrap() + 2..]
            .split_whitespace()
            .nth(1)
            .unwrap()
            .to_string();
        assert_eq!(ppid, pid, "sshd is the reaper's child");
        let host = sh(Command::new("nsenter").args(["-t", &pid, "-u", "hostname"]));
        assert_eq!(stdout(&host), node.name);

        let out = ssh(&info, &node.name, "hostname");
        assert!(out.status.success(), "ssh {}: {out:?}", node.name);
        assert_eq!(stdout(&out), node.name);
    }

    // The runner's SSH library (ssh2/libssh2) accepts the key and known_hosts as written.
    for node in &info.nodes {
        assert_eq!(ssh2_exec(&info, &node.name, "hostname"), node.name);
    }

    // The reaper is PID 1 of the node; the per-node /etc/hosts resolves the other nodes.
    let out = ssh(&info, "n1", "cat /proc/1/comm; getent hosts n3");
    assert_eq!(stdout(&out), "sd-reaper\n10.77.0.3       n3");

    // Nodes reach each other over the bridge, from the namespace and over ssh by name.
    let reach = sh(Command::new("ip").args([
        "netns",
        "exec",
        &info.nodes[0].netns,
        "bash",
        "-c",
        "echo > /dev/tcp/10.77.0.2/22",
    ]));
    assert!(reach.status.success(), "n1 -> n2:22: {reach:?}");
    let out = ssh(&info, "n3", "echo > /dev/tcp/n1/22 && echo reached");
    assert_eq!(stdout(&out), "reached", "{out:?}");

    // /tmp is private per node and not the host's /tmp.
    let marker = "sdtest-private-tmp-marker";
    let out = ssh(&info, "n1", &format!("touch /tmp/{marker} && ls /tmp"));
    assert!(stdout(&out).contains(marker), "{out:?}");
    assert!(info.nodes[0].tmp_dir().join(marker).exists());
    assert!(!Path::new("/tmp").join(marker).exists());
    let out = ssh(&info, "n2", &format!("test -e /tmp/{marker}"));
    assert!(!out.status.success(), "n2 sees n1's /tmp");

    // Nothing on a node can step the host clock: CAP_SYS_TIME (bit 25) is out of the bounding set
    // and a `date -s` that bypasses the node's clock shim fails (a plain `date -s` only moves the
    // node's own offset, see tests/clock.rs). The value set is the current time, so even a
    // failure of this test would not move the clock.
    let out = ssh(&info, "n1", "grep CapBnd /proc/self/status");
    let hex = stdout(&out)
        .split_whitespace()
        .last()
        .unwrap_or("")
        .to_string();
    let bounding = u64::from_str_radix(&hex, 16).expect("CapBnd hex");
    assert_eq!(
        bounding & (1 << 25),
        0,
        "CAP_SYS_TIME still in bounding set"
    );
    assert_ne!(bounding, 0, "bounding set unexpectedly empty");
    let before = SystemTime::now();
    let out = ssh(&info, "n1", r#"env -u LD_PRELOAD date -s "$(date)""#);
    let after = SystemTime::now();
    assert!(
        !out.status.success(),
        "date -s succeeded on a node: {out:?}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Operation not permitted"), "{err}");
    let step = after.duration_since(before).expect("clock went backwards");
    assert!(step.as_secs() < 10, "clock moved by {step:?}");

    // Killing PID 1 of a node (sshd) tears the node down; status notices.
    let t = Instant::now();
    let report = sandbox::down(&cfg).expect("down");
    eprintln!("sandbox down (3 nodes): {} ms", t.elapsed().as_millis());
    assert!(report.was_recorded);
    assert!(
        report.removed.iter().any(|r| r.contains("sd-sdtest-n1")),
        "{report:?}"
    );
    assert_gone(&info);
    // The nodes' /tmp (database data) goes with them; sshd's log stays for inspection.
    assert!(!info.nodes[0].tmp_dir().exists(), "{report:?}");
    assert!(info.nodes[0].dir.exists());
    let again = sandbox::down(&cfg).expect("second down");
    assert!(!again.was_recorded);
    assert!(again.removed.is_empty());
    assert!(sandbox::status(&cfg).expect("status").phase.is_none());
    drop(guard);
}

#[test]
fn sandbox_two_names_coexist_and_crashed_node_is_detected() {
    if !is_root() {
        eprintln!("skipping: sandbox tests need root (network namespaces, bridges)");
        return;
    }
    let a = config("sdtwo-a", "10.76.0.0/24", 2);
    let b = config("sdtwo-b", "10.76.1.0/24", 2);
    let _ = sandbox::down(&a);
    let _ = sandbox::down(&b);
    let _ga = DownGuard(a.clone());
    let _gb = DownGuard(b.clone());

    let ia = sandbox::up(&a).expect("up a");
    let ib = sandbox::up(&b).expect("up b");
    assert_ne!(ia.bridge.name, ib.bridge.name);
    assert!(sandbox::status(&a).expect("status a").healthy());
    assert!(sandbox::status(&b).expect("status b").healthy());
    assert_eq!(stdout(&ssh(&ia, "n2", "hostname")), "n2");
    assert_eq!(stdout(&ssh(&ib, "n2", "hostname")), "n2");

    // A subnet overlapping a live sandbox is refused before anything is created.
    let clash = config("sdtwo-c", "10.76.0.0/16", 1);
    let err = sandbox::up(&clash).unwrap_err().to_string();
    assert!(err.contains("overlaps"), "{err}");
    assert!(!clash.state_dir().join("sandbox.json").exists());

    // Killing a node's sshd: the reaper starts it again (new PID), the node stays up.
    let sshd = ib.nodes[0].sshd_pid.expect("sshd pid");
    let kill = sh(Command::new("kill").args(["-KILL", &sshd.to_string()]));
    assert!(kill.status.success());
    let deadline = Instant::now() + std::time::Duration::from_secs(3);
    let mut st = sandbox::status(&b).expect("status b");
    while !(st.healthy() && st.nodes[0].sshd_pid != Some(sshd)) && Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
        st = sandbox::status(&b).expect("status b");
    }
    assert!(st.healthy(), "sshd not restarted: {st}");
    assert_ne!(st.nodes[0].sshd_pid, Some(sshd), "{st}");
    assert!(!process_exists(sshd));
    assert_eq!(stdout(&ssh(&ib, "n1", "hostname")), "n1");

    // Killing a node's PID 1 (the reaper) takes the node down; status reports it, others
    // unaffected.
    let victim = ib.nodes[0].init_pid.expect("init pid");
    let kill = sh(Command::new("kill").args(["-KILL", &victim.to_string()]));
    assert!(kill.status.success());
    let deadline = Instant::now() + std::time::Duration::from_secs(3);
    let mut st = sandbox::status(&b).expect("status b");
    while (st.nodes[0].sshd_alive || st.nodes[0].ssh_port_open) && Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
        st = sandbox::status(&b).expect("status b");
    }
    assert!(!st.healthy(), "{st}");
    assert!(
        !st.nodes[0].sshd_alive && !st.nodes[0].ssh_port_open,
        "{st}"
    );
    assert!(st.nodes[1].ssh_port_open, "{st}");
    assert!(st.to_string().contains("DEGRADED"), "{st}");

    // up over a degraded sandbox tears the stale state down and starts fresh.
    let ib2 = sandbox::up(&b).expect("up b again");
    assert!(sandbox::status(&b).expect("status b").healthy());
    assert!(!process_exists(ib.nodes[1].sshd_pid.expect("old sshd pid")));
    assert_ne!(ib2.nodes[0].sshd_pid, ib.nodes[0].sshd_pid);
    let ib = ib2;

    // Down on b leaves a intact.
    sandbox::down(&b).expect("down b");
    assert_gone(&ib);
    assert!(sandbox::status(&a).expect("status a").healthy());
    sandbox::down(&a).expect("down a");
    assert_gone(&ia);
}

#[test]
fn sandbox_bad_config_is_rejected_without_side_effects() {
    let mut cfg = config("sdbad", "10.75.0.1/24", 2);
    let err = sandbox::up(&cfg).unwrap_err().to_string();
    assert!(err.contains("subnet") && err.contains("host bits"), "{err}");
    cfg.subnet = "10.75.0.0/24".to_string();
    cfg.nodes = 251;
    let err = sandbox::up(&cfg).unwrap_err().to_string();
    assert!(err.contains("nodes"), "{err}");
    cfg.nodes = 2;
    cfg.name = "Bad_Name".to_string();
    let err = sandbox::up(&cfg).unwrap_err().to_string();
    assert!(err.contains("name"), "{err}");
    cfg.name = "sdbad".to_string();
    cfg.state_dir = Some("/tmp/shakedown-sdbad".into());
    let err = sandbox::up(&cfg).unwrap_err().to_string();
    if is_root() {
        assert!(err.contains("StrictModes"), "{err}");
    } else {
        assert!(
            err.contains("needs root") && err.contains("namespaces"),
            "{err}"
        );
    }
    assert!(!Path::new("/tmp/shakedown-sdbad").exists());
}

#[test]
fn sandbox_failed_up_cleans_up_and_down_after_partial_state_is_safe() {
    if !is_root() {
        eprintln!("skipping: sandbox tests need root (network namespaces, bridges)");
        return;
    }
    let mut cfg = config("sdpart", "10.76.2.0/24", 2);
    let _ = sandbox::down(&cfg);
    let _guard = DownGuard(cfg.clone());

    // sshd cannot be ready within 0 ms: up fails naming the node and its log, and removes
    // everything it created.
    cfg.ready_timeout_ms = 0;
    let err = sandbox::up(&cfg).unwrap_err().to_string();
    assert!(err.contains("node n") && err.contains("sshd.log"), "{err}");
    let names = sandbox::names(&cfg.name, cfg.nodes);
    assert!(!Path::new("/sys/class/net").join(&names.bridge).exists());
    for (_, netns, _) in &names.nodes {
        assert!(
            !Path::new("/run/netns").join(netns).exists(),
            "{netns} left"
        );
    }
    assert!(!cfg.state_dir().join("sandbox.json").exists());

    // A sandbox half removed by hand (one namespace deleted, one sshd killed): down removes the
    // rest, twice is fine.
    cfg.ready_timeout_ms = 5_000;
    let info = sandbox::up(&cfg).expect("up");
    let del = sh(Command::new("ip").args(["netns", "del", &info.nodes[0].netns]));
    assert!(del.status.success());
    let pid = info.nodes[1].sshd_pid.expect("sshd pid").to_string();
    assert!(
        sh(Command::new("kill").args(["-KILL", &pid]))
            .status
            .success()
    );
    let report = sandbox::down(&cfg).expect("down after partial removal");
    assert!(report.was_recorded);
    assert_gone(&info);
    assert!(!sandbox::down(&cfg).expect("second down").was_recorded);

    // `up` interrupted before it recorded a node's PIDs: down still kills that node's processes
    // (they live in the recorded namespace).
    let info = sandbox::up(&cfg).expect("up again");
    let mut partial = info.clone();
    partial.nodes[0].launcher_pid = None;
    partial.nodes[0].launcher_start_ticks = None;
    partial.nodes[0].sshd_pid = None;
    partial.nodes[0].sshd_start_ticks = None;
    partial.nodes[0].init_pid = None;
    partial.nodes[0].init_start_ticks = None;
    let json = serde_json::to_string_pretty(&partial).expect("serialize");
    std::fs::write(info.state_file(), json).expect("rewrite state file");
    let report = sandbox::down(&cfg).expect("down with unrecorded pids");
    // The node's processes are swept from its namespace in PID order: the launcher (unshare,
    // lowest) or the reaper, whichever is still alive when its turn comes — killing the
    // launcher kills the reaper (--kill-child), and with it the node's sshd, at the kernel's
    // pace, so which of them the report lists varies with the machine's load.
    let node0 = &info.nodes[0];
    let swept: Vec<u32> = [node0.launcher_pid, node0.init_pid]
        .into_iter()
        .flatten()
        .filter(|pid| {
            report
                .removed
                .contains(&format!("process {pid} (in {})", node0.netns))
        })
        .collect();
    assert!(!swept.is_empty(), "{report:?}");
    assert_gone(&info);
}

/// Nodes the large-sandbox test brings up: the 100 of issue 44's goal (`up` under 3 s on the
/// 2-core machine when it is idle; `SHAKEDOWN_BIG_SANDBOX_NODES` overrides it, at most 250).
const BIG_NODES: usize = 100;

#[test]
fn sandbox_of_100_nodes_answers_ssh_on_every_node_and_down_leaves_nothing() {
    if !is_root() {
        eprintln!("skipping: sandbox tests need root (network namespaces, bridges)");
        return;
    }
    let nodes = std::env::var("SHAKEDOWN_BIG_SANDBOX_NODES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(BIG_NODES);
    let cfg = config("sdhund", "10.137.0.0/24", nodes);
    let _ = sandbox::down(&cfg); // Leftovers of an earlier crashed run.
    let guard = DownGuard(cfg.clone());

    let t = Instant::now();
    let info = sandbox::up(&cfg).expect("up");
    let up_ms = t.elapsed().as_millis();
    assert_eq!(info.nodes.len(), nodes);
    assert!(sandbox::status(&cfg).expect("status").healthy());

    // Every node answers through the runner's own control path: one SSH session per node,
    // opened in parallel (bounded, `control::fanout`), and reused: two commands in a row on
    // every node open no second session.
    use shakedown::control::{Cmd, SshConfig, SshRemote, fanout};
    let t = Instant::now();
    let mut ssh = SshConfig::default();
    info.fill_ssh(&mut ssh);
    let run_nodes = info.run_nodes();
    let remotes: Vec<SshRemote> = fanout::each(&run_nodes, fanout::FAN_OUT, |n| {
        SshRemote::connect(&n.name, &n.host, &ssh)
    })
    .into_iter()
    .map(|r| r.expect("connect thread").expect("connect to every node"))
    .collect();
    let answers = fanout::each(&remotes, fanout::FAN_OUT, |r| {
        let first = r.exec_ok(&Cmd::new("hostname"))?;
        let second = r.exec_ok(&Cmd::new("cat").arg("/proc/sys/kernel/hostname"))?;
        Ok::<_, shakedown::control::ExecError>((
            first.trim().to_string(),
            second.trim().to_string(),
        ))
    });
    let ssh_ms = t.elapsed().as_millis();
    for ((name, answer), remote) in info.node_names().iter().zip(answers).zip(&remotes) {
        let (first, second) = answer.expect("ssh thread").expect("command");
        assert_eq!(
            (first.as_str(), second.as_str()),
            (name.as_str(), name.as_str())
        );
        assert_eq!(
            remote.sessions_opened(),
            1,
            "{name}: the session was not reused"
        );
    }
    drop(remotes);

    let t = Instant::now();
    let report = sandbox::down(&cfg).expect("down");
    let down_ms = t.elapsed().as_millis();
    assert!(report.was_recorded);
    assert_gone(&info);
    // Nothing of the sandbox is left anywhere: no process in its namespaces (they are gone), no
    // link or namespace by its names, no reaper or sshd of its nodes.
    let links = sh(Command::new("ip").args(["-o", "link", "show"]));
    let bridge_tag = info.bridge.name.trim_end_matches("br");
    assert!(!stdout(&links).contains(bridge_tag), "{}", stdout(&links));
    let netns = sh(Command::new("ip").args(["netns", "list"]));
    assert!(!stdout(&netns).contains("sd-sdhund-"), "{}", stdout(&netns));
    for node in &info.nodes {
        assert!(!node.tmp_dir().exists(), "{}'s /tmp left", node.name);
    }
    eprintln!(
        "sandbox of {nodes} nodes: up {up_ms} ms, one SSH command on every node {ssh_ms} ms, \
         down {down_ms} ms"
    );
    drop(guard);
}
