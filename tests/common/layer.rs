//! What the power-loss tests share: the set checker's result in a run's results.json, and what
//! of the lose-unsynced layer (mounts, `lazyfs serve` processes) is left in a sandbox's nodes.
//! Included with `#[path = "common/layer.rs"] mod layer;` next to `common/cli.rs`; each test
//! uses what it needs.

#![allow(dead_code)]

use serde_json::Value;

/// The `set` checker's entry of a results.json value.
pub fn set_checker(results: &Value) -> Value {
    results["checkers"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["checker"] == "set"))
        .cloned()
        .unwrap_or_else(|| panic!("no set checker in {results}"))
}

/// Lazyfs mounts and layer processes left in the sandbox's nodes (their mount namespaces).
pub fn layer_leftovers(sandbox: &str) -> Vec<String> {
    let state = shakedown::sandbox::SandboxConfig::named(sandbox).state_dir();
    let s: Value =
        serde_json::from_slice(&std::fs::read(state.join("sandbox.json")).unwrap()).unwrap();
    let mut left = Vec::new();
    for n in s["nodes"].as_array().unwrap() {
        let pid = n["init_pid"].as_u64().unwrap();
        let info = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).unwrap_or_default();
        for l in info.lines().filter(|l| l.contains("lazyfs")) {
            left.push(format!("{}: {l}", n["name"]));
        }
    }
    // Layer processes in the nodes' PID namespaces.
    let node_ns: Vec<std::path::PathBuf> = s["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| std::fs::read_link(format!("/proc/{}/ns/pid", n["init_pid"])).ok())
        .collect();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let p = e.path();
        let cmd = std::fs::read(p.join("cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains("lazyfs serve")
            && std::fs::read_link(p.join("ns/pid")).is_ok_and(|ns| node_ns.contains(&ns))
        {
            left.push(format!("layer process {}: {cmd}", p.display()));
        }
    }
    left
}
