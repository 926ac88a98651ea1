//! etcd's membership ability (`db::Membership`) against a real etcd cluster of three in a
//! sandbox (`sdmem`, 10.116.0.0/24, brought down at the end, also on failure): n3 removed through
//! n1 leaves n1's and n2's views, is retired (no process, no data; a removed member that exited
//! by itself and one that did not are both handled), a key is written through n1, n3 is added
//! back fresh through n1 and joins: its own view lists all three started, a linearizable read
//! through it returns the key, and it is a new member (another id). Also the ability's
//! refusals and no-ops: a view of a retired node says etcd is not running, a second removal
//! sends nothing, adding a started member is refused naming it. Prints the seconds each step
//! took. The parsing of `member list` output is unit-tested in `systems::etcd::membership`.
//!
//! Two end-to-end tests of `shakedown` itself, each in its own five-node sandbox: a run under
//! membership changes (`sdmemrun`, 10.118.0.0/24), and `shakedown heal` after a controller
//! killed in the middle of a shrink (`sdmemh`, 10.127.0.0/24): every node a started member again.
//!
//! Needs root (CI runs as root); when not root it prints why it did nothing. Run under the
//! machine-wide lock: `flock /tmp/shakedown-sandbox.lock cargo test --release --test membership`.

use shakedown::control::{Cmd, Remote, SshConfig};
use shakedown::db::{Abilities, Db, DbError, MemberView, Membership};
use shakedown::node::Node;
use shakedown::options::ReadMode;
use shakedown::sandbox::SandboxConfig;
use shakedown::systems::etcd::client::{EtcdClient, EtcdClientConfig};
use shakedown::systems::etcd::{Etcd, EtcdConfig};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "common/cli.rs"]
mod cli;
use cli::root;

const NAME: &str = "sdmem";
const SUBNET: &str = "10.116.0.0/24";
/// How long a view may take to show a change that etcd acknowledged, or a fresh member to
/// join and serve a read.
const SETTLE: Duration = Duration::from_secs(30);

fn sandbox_config() -> SandboxConfig {
    SandboxConfig {
        subnet: SUBNET.into(),
        nodes: 3,
        ..SandboxConfig::named(NAME)
    }
}

/// Brings the test sandbox down when dropped.
struct SandboxGuard;

impl Drop for SandboxGuard {
    fn drop(&mut self) {
        if let Err(e) = shakedown::sandbox::down(&sandbox_config()) {
            eprintln!("sandbox down failed: {e}");
        }
    }
}

/// A sandbox's nodes and an SSH session to each.
fn sessions(info: &shakedown::sandbox::SandboxInfo) -> (Vec<Node>, Vec<Arc<dyn Remote>>) {
    let nodes = info.run_nodes();
    let mut ssh = SshConfig::default();
    info.fill_ssh(&mut ssh);
    let pairs: Vec<(String, String)> = nodes
        .iter()
        .map(|n| (n.name.clone(), n.host.clone()))
        .collect();
    let remotes = shakedown::control::connect_all(&pairs, &ssh).expect("connect");
    (nodes, remotes)
}

/// The sandbox's nodes and SSH sessions to them, with etcd started on all three the way runs
/// start it.
fn etcd_cluster(etcd: &Etcd) -> (Vec<Node>, Vec<Arc<dyn Remote>>) {
    let info = shakedown::sandbox::up(&sandbox_config()).expect("sandbox up");
    let (nodes, remotes) = sessions(&info);
    shakedown::sandbox::ensure_packages(&etcd.packages()).expect("etcd packages");
    for r in shakedown::runner::on_nodes(&remotes, &nodes, |r, n| {
        etcd.install(r)?;
        etcd.setup(r, n, &nodes)
    }) {
        r.expect("etcd setup");
    }
    for r in shakedown::runner::on_nodes(&remotes, &nodes, |r, n| etcd.await_ready(r, n)) {
        r.expect("etcd ready");
    }
    (nodes, remotes)
}

/// Polls `probe` every 200 ms until it returns `Some`, for at most [`SETTLE`]; panics with
/// `what` and the last observation otherwise.
fn wait_for<T>(what: &str, mut probe: impl FnMut() -> Result<Option<T>, String>) -> T {
    let deadline = Instant::now() + SETTLE;
    let mut last = String::from("nothing yet");
    loop {
        match probe() {
            Ok(Some(t)) => return t,
            Ok(None) => {}
            Err(e) => last = e,
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not within {SETTLE:?}; last: {last}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A client of `node`'s etcd with linearizable reads.
fn client(etcd: &Etcd, node: &Node) -> EtcdClient {
    EtcdClient::new(EtcdClientConfig {
        endpoint: etcd.endpoint(node),
        read_mode: ReadMode::Linearizable,
        timeout_ms: 2000,
        key_prefix: "/membership/".into(),
    })
    .expect("etcd client")
}

#[test]
fn etcd_member_removed_retired_and_added_back_fresh() {
    if !root() {
        return;
    }
    let _guard = SandboxGuard;
    let etcd = Etcd::new(EtcdConfig::default());
    let (nodes, remotes) = etcd_cluster(&etcd);
    let membership: &dyn Membership = etcd.as_membership().expect("etcd has membership");
    let kill = etcd.as_kill().expect("etcd has kill");
    let (n1, n2, n3) = (&nodes[0], &nodes[1], &nodes[2]);
    let (r1, r2, r3) = (
        remotes[0].as_ref(),
        remotes[1].as_ref(),
        remotes[2].as_ref(),
    );
    let view_of = |r: &dyn Remote, n: &Node| -> Result<MemberView, String> {
        membership.view(r, n, &nodes).map_err(|e| e.to_string())
    };
    let before = view_of(r1, n1).unwrap();
    assert_eq!(before.voters(), ["n1", "n2", "n3"], "{before:?}");
    let old_id = before.member("n3").unwrap().id.clone();
    assert_eq!(membership.quorum(nodes.len()), 2);

    // Remove n3 through n1; both remaining members stop listing it. etcd refuses a removal
    // ("unhealthy cluster") until the members have been connected for 5 s: a definite
    // refusal, asked again.
    let t = Instant::now();
    let refused = wait_for("etcd to take the removal of n3", || {
        match membership.remove(r1, n1, n3, &nodes) {
            Ok(()) => Ok(Some(t.elapsed().as_secs_f64())),
            Err(e @ DbError::Refused { .. }) => Err(e.to_string()),
            Err(e) => panic!("remove n3 via n1: {e}"),
        }
    });
    let t = Instant::now();
    for (r, n) in [(r1, n1), (r2, n2)] {
        let view = wait_for(&format!("{}'s view without n3", n.name), || {
            let v = view_of(r, n)?;
            Ok((!v.lists("n3")).then_some(v))
        });
        assert_eq!(view.voters(), ["n1", "n2"], "{}: {view:?}", n.name);
    }
    let remove_s = t.elapsed().as_secs_f64();
    // Removed already: nothing to send, no error.
    membership
        .remove(r1, n1, n3, &nodes)
        .expect("a second removal is a no-op");

    // Retire n3: whether its etcd exited by itself (etcd 3.4 does once it applies its own
    // removal; given 3 s) or not, afterwards it runs no more and has no data.
    let exited_by_itself = (0..15).any(|i| {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(200));
        }
        !kill
            .running(r3, n3)
            .expect("etcd can tell")
            .expect("running")
    });
    let t = Instant::now();
    membership.retire(r3, n3).expect("retire n3");
    let retire_s = t.elapsed().as_secs_f64();
    assert!(!kill.running(r3, n3).unwrap().unwrap(), "n3 still runs");
    let data = etcd.data_dir().unwrap();
    let left = r3
        .exec(&Cmd::new("test").args(["-e", &data]))
        .expect("test -e");
    assert!(!left.success(), "n3's {data} survived the retirement");
    let e = view_of(r3, n3).unwrap_err();
    assert!(
        e.starts_with("n3: etcd member list: etcd is not running"),
        "{e}"
    );
    // Retiring again finds nothing to stop and nothing to wipe.
    membership.retire(r3, n3).expect("retire is idempotent");

    // A write through n1 while the cluster has two members.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let key = "/membership/k";
    // (Removing a leader elects another; under load that can outlast one 2 s request.)
    wait_for("write through n1", || {
        rt.block_on(client(&etcd, n1).put(key, 42))
            .map(Some)
            .map_err(|e| format!("{e:?}"))
    });

    // Add n3 back fresh through n1; it joins, sees all three and serves the key.
    let t = Instant::now();
    membership
        .add(r1, n1, r3, n3, &nodes[..2], &nodes)
        .expect("add n3 via n1");
    let add_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let joined = wait_for("n3's own view listing all three started", || {
        let v = view_of(r3, n3)?;
        Ok((v.voters() == ["n1", "n2", "n3"]).then_some(v))
    });
    let read = wait_for("a linearizable read through n3", || {
        rt.block_on(client(&etcd, n3).get(key))
            .map(Some)
            .map_err(|e| e.to_string())
    });
    let rejoin_s = t.elapsed().as_secs_f64();
    assert_eq!(read.map(|(value, _)| value), Some(42));
    let new_id = &joined.member("n3").unwrap().id;
    assert_ne!(*new_id, old_id, "n3 came back as its old member");
    for (r, n) in [(r1, n1), (r2, n2)] {
        let v = view_of(r, n).unwrap();
        assert_eq!(v.voters(), ["n1", "n2", "n3"], "{}: {v:?}", n.name);
        assert_eq!(v.member("n3").unwrap().id, *new_id, "{}: {v:?}", n.name);
    }

    // Adding a started member is refused before anything is touched.
    let e = membership
        .add(r1, n1, r3, n3, &nodes[..2], &nodes)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("n3: cannot join through n1: n3 is a started member already"),
        "{e}"
    );
    assert!(
        kill.running(r3, n3).unwrap().unwrap(),
        "the refusal stopped n3"
    );

    println!(
        "membership timings: removal accepted {refused:.2} s after the cluster was ready, remove \
         (until n1 and n2 agree) {remove_s:.2} s, n3 exited by \
         itself: {exited_by_itself}, retire {retire_s:.2} s, add {add_s:.2} s, rejoin (until \
         n3 lists all three and serves the key) {rejoin_s:.2} s"
    );
}

/// The run test's sandbox: its own name and subnet, five nodes (shrinking stops at three).
const RUN_SANDBOX: [&str; 6] = [
    "--sandbox-name",
    "sdmemrun",
    "--sandbox-subnet",
    "10.118.0.0/24",
    "--sandbox-nodes",
    "5",
];

/// `shakedown run --db etcd --nemesis membership`: members are removed (and retired once the
/// views confirm it) and grown back during the run, the final heal leaves all five members,
/// every node's etcd runs at the end, every change names the member it went `via`, the journal
/// has nothing outstanding, and the register history is linearizable; results.json counts the
/// changes and the run page lists them.
#[test]
fn a_run_under_membership_changes_removes_members_and_grows_them_back() {
    if !root() {
        eprintln!("not root: the membership run test did nothing");
        return;
    }
    let _guard = cli::SandboxGuard(&RUN_SANDBOX);
    let reports = tempfile::tempdir().unwrap();
    let (code, dir, results) = cli::run_results(
        &RUN_SANDBOX,
        &[
            "--db",
            "etcd",
            "--workload",
            "register",
            "--nemesis",
            "membership",
            "--time-limit",
            "45",
            "--seed",
            "1",
        ],
        reports.path(),
    );
    let history = std::fs::read_to_string(dir.join("history.jsonl")).unwrap();
    let ops: Vec<serde_json::Value> = history
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let done = |f: &str| -> Vec<&serde_json::Value> {
        ops.iter()
            .filter(|o| o["process"] == "nemesis" && o["f"] == f && o["value"].is_object())
            .map(|o| &o["value"])
            .collect()
    };
    let shrinks = done("shrink-cluster");
    let retired: Vec<&str> = shrinks
        .iter()
        .filter(|v| v["retired"] == true)
        .filter_map(|v| v["node"].as_str())
        .collect();
    let added: Vec<String> = done("grow-cluster")
        .iter()
        .flat_map(|v| v["added"].as_array().cloned().unwrap_or_default())
        .filter_map(|n| n.as_str().map(str::to_string))
        .collect();
    eprintln!(
        "membership run: exit {code}, shrinks {shrinks:?}, retired {retired:?}, added back {added:?}, run dir {}",
        dir.display()
    );
    assert!(
        !retired.is_empty(),
        "no member was removed and retired: {shrinks:?}"
    );
    for n in &retired {
        assert!(
            added.iter().any(|a| a == n),
            "{n} was removed and never added back"
        );
    }
    // Every change that sent a request names the member it went through, grows too.
    let via = shakedown::faults::membership::timeline::VIA_KEY;
    for v in shrinks.iter().chain(&done("grow-cluster")) {
        let sent = v["node"].is_string() || v["added"].as_array().is_some_and(|a| !a.is_empty());
        assert!(!sent || v[via].is_string(), "no {via} in {v}");
    }
    // Every node runs etcd at the end (the db-status after the final heal).
    let status = done("db-status");
    let last = status.last().expect("a db-status op");
    assert_eq!(
        last["running"].as_array().map(Vec::len),
        Some(5),
        "not every node runs etcd at the end: {last}"
    );
    let journal = std::fs::read_to_string(dir.join("faults.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = journal
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(
        shakedown::nemesis::outstanding_faults(&records).is_empty(),
        "the journal has faults left in effect"
    );
    // results.json counts the changes by outcome; the run page draws them.
    let counts = &results["membership"]["changes"];
    let ok = |f: &str| counts[f]["ok"].as_u64().unwrap_or(0) as usize;
    assert_eq!(ok("shrink-cluster"), retired.len(), "{counts}");
    assert!(ok("grow-cluster") >= 1, "{counts}");
    let page = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(
        page.contains("id=\"membership\"") && page.contains("<td>shrink-cluster</td>"),
        "the run page has no membership part"
    );
    assert_eq!(code, 0, "the run is not valid: {results}");
}

/// The heal test's sandbox name (its state directory is found by it).
const HEAL_SANDBOX_NAME: &str = "sdmemh";

/// The heal test's sandbox: its own name and subnet, five nodes.
const HEAL_SANDBOX: [&str; 6] = [
    "--sandbox-name",
    HEAL_SANDBOX_NAME,
    "--sandbox-subnet",
    "10.127.0.0/24",
    "--sandbox-nodes",
    "5",
];

/// How long the run may take to record a removal etcd accepted (sandbox up, etcd started on
/// five nodes, the first shrink after the nemesis interval, refusals while etcd calls the
/// cluster unhealthy).
const REMOVAL_WITHIN: Duration = Duration::from_secs(240);

/// Kills the spawned controller (by its PID: our own child) when dropped, so a failing test
/// leaves no run behind.
struct ChildGuard(std::process::Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// The journal's records (lines that are not JSON yet, being written, are left out).
fn journal_records(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// A controller killed (SIGKILL) in the middle of a shrink, right after etcd accepted the
/// removal (the journal's `shrink-cluster` record is `done`), whether or not the node was
/// retired yet: `shakedown heal --journal` retires it if need be and adds it back, exits 0
/// saying so, every node's own view then lists all five as started voting members, and the
/// journal has nothing outstanding. Prints which case the kill hit and how long heal took.
#[test]
fn heal_after_a_controller_killed_mid_shrink_restores_every_member() {
    if !root() {
        eprintln!("not root: the membership heal test did nothing");
        return;
    }
    let started = Instant::now();
    let _guard = cli::SandboxGuard(&HEAL_SANDBOX);
    let tmp = tempfile::tempdir().unwrap();
    let reports = tmp.path().join("reports");
    let stderr_path = tmp.path().join("run.stderr");
    let run_stderr = || std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let child = cli::command()
        .args(["run", "--quiet", "--reports", reports.to_str().unwrap()])
        .args(HEAL_SANDBOX)
        .args(["--db", "etcd", "--workload", "register", "--nemesis"])
        .args(["membership", "--time-limit", "600", "--seed", "2"])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .expect("start shakedown run");
    let mut child = ChildGuard(child);

    // Wait for a removal etcd accepted: a `shrink-cluster` inject recorded `done`.
    let journal = reports.join("latest").join(shakedown::store::FAULTS_FILE);
    let deadline = Instant::now() + REMOVAL_WITHIN;
    let removal = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            panic!(
                "the run ended ({status}) before a removal was journaled done; its stderr:\n{}",
                run_stderr()
            );
        }
        let found = journal_records(&journal).into_iter().find(|r| {
            r["action"] == "inject"
                && r["f"] == shakedown::faults::verb::SHRINK_CLUSTER
                && r["event"] == "done"
        });
        if let Some(r) = found {
            break r;
        }
        assert!(
            Instant::now() < deadline,
            "no shrink-cluster journaled done in {} within {REMOVAL_WITHIN:?}; records: {:?}; run stderr:\n{}",
            journal.display(),
            journal_records(&journal),
            run_stderr()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    // SIGKILL: no cleanup, no final heal, no completion record.
    child.0.kill().expect("kill the controller");
    child.0.wait().unwrap();
    let killed_at = started.elapsed().as_secs_f64();
    let target = removal["detail"]["node"]
        .as_str()
        .unwrap_or_else(|| panic!("the removal names no node: {removal}"))
        .to_string();
    let journal = std::fs::canonicalize(&journal).unwrap();
    let run_dir = journal.parent().unwrap().to_path_buf();
    assert!(
        !run_dir.join(shakedown::store::COMPLETION_FILE).exists(),
        "the killed run wrote a completion record"
    );

    // SSH to the sandbox the run left up, and etcd as the run configured it.
    let cfg = SandboxConfig::named(HEAL_SANDBOX_NAME);
    let info = shakedown::sandbox::load(&cfg.state_dir()).expect("the run's sandbox");
    let (nodes, remotes) = sessions(&info);
    let etcd = Etcd::new(EtcdConfig::default());
    let membership: &dyn Membership = etcd.as_membership().expect("etcd has membership");
    let names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
    let ti = names
        .iter()
        .position(|n| *n == target)
        .unwrap_or_else(|| panic!("{target} is none of {names:?}"));

    // Which case the kill hit: the target's data wiped = retired (or being retired).
    let data = etcd.data_dir().unwrap();
    let has_data = remotes[ti]
        .exec(&Cmd::new("test").args(["-e", &data]))
        .expect("test -e")
        .success();
    let survivor_views: Vec<(String, Result<MemberView, String>)> = nodes
        .iter()
        .zip(&remotes)
        .filter(|(n, _)| n.name != target)
        .map(|(n, r)| {
            let v = membership.view(r.as_ref(), n, &nodes);
            (n.name.clone(), v.map_err(|e| e.to_string()))
        })
        .collect();
    let listed_by = survivor_views
        .iter()
        .filter(|(_, v)| v.as_ref().is_ok_and(|v| v.lists(&target)))
        .count();
    let case = match (has_data, listed_by) {
        (false, _) => "removed and retired before the kill",
        (true, 0) => "removed (every survivor's view without it), not retired yet",
        (true, _) => "removed, not yet in every survivor's view, not retired",
    };
    eprintln!(
        "membership heal: controller killed {killed_at:.1} s in, after the removal of {target} \
         through {}: {case}; survivors' views: {survivor_views:?}",
        removal["detail"]["via"]
    );

    // heal from the run's journal.
    let t = Instant::now();
    let mut args = vec![
        "heal",
        "--journal",
        journal.to_str().unwrap(),
        "--db",
        "etcd",
    ];
    args.extend(HEAL_SANDBOX);
    let out = cli::shakedown(&args);
    let heal_s = t.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("heal ({heal_s:.1} s) said:\n{stdout}{stderr}");
    assert_eq!(
        out.status.code(),
        Some(0),
        "heal did not complete:\n{stdout}\n{stderr}"
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with(&format!("{target}: ")))
        .unwrap_or_else(|| panic!("heal has no line for {target}:\n{stdout}"));
    assert!(
        line.contains("added back to etcd as a fresh member"),
        "heal does not say {target} was added back: {line}"
    );

    // Every node's own view: all five, started, voting, nobody else.
    for (n, r) in nodes.iter().zip(&remotes) {
        let v = membership
            .view(r.as_ref(), n, &nodes)
            .unwrap_or_else(|e| panic!("{}'s view after heal: {e}", n.name));
        assert_eq!(v.voters(), names, "{}'s view after heal: {v:?}", n.name);
        assert!(
            v.pending().is_empty() && v.strangers() == 0,
            "{}'s view after heal: {v:?}",
            n.name
        );
    }
    // Nothing outstanding in the journal.
    let records = journal_records(&journal);
    assert!(
        shakedown::nemesis::outstanding_faults(&records).is_empty(),
        "the journal has faults left in effect after heal: {records:?}"
    );
    let attempts: Vec<&serde_json::Value> = records
        .iter()
        .filter(|r| {
            r["action"] == "undo"
                && r["f"] == shakedown::faults::verb::GROW_CLUSTER
                && r["event"] != "begin"
        })
        .collect();
    eprintln!(
        "membership heal test: {case}; heal {heal_s:.1} s, its add attempts: {attempts:?}; whole test {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
