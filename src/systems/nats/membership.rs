//! NATS JetStream's membership ability ([`Membership`]): a node's view of the JetStream meta
//! group (its `/raftz` on the monitoring port, read on the node; servers without `/raftz`, such
//! as Debian's 2.9, list the group's peers only on its leader, in `/jsz`), removing a server from
//! the meta group through another member (`$JS.API.SERVER.REMOVE` in the system account, naming
//! the server as that member sees the group, else as the meta leader answers through it; the
//! meta leader moves the removed server's stream replicas elsewhere), retiring a removed node
//! (process stopped, data wiped, a new server name for its next life) and starting it again
//! fresh, when it joins the running cluster by itself under its new name (JetStream adds a new
//! server to the meta group when its routes connect; there is no add request).
//!
//! A server that comes back is a new peer with a new name (`n3` → `n3-2` → `n3-3`, kept in
//! `nats.name` on the node), as an operator replacing a server would do and as Jepsen's NATS
//! test does: reusing a removed peer's name reuses its Raft identity with none of its state.
//! Views map every name back to its node ([`node_of`]).
//!
//! Owns reading `/raftz` and `/jsz` into a [`MemberView`] ([`view_from_raftz`],
//! [`view_from_jsz`]), the names ([`next_name`]) and the admin request. Does not own deciding
//! when a change is confirmed, pending changes or schedules (the membership fault), nor how the
//! server starts (`db`) or its config (`server`).

use super::db::Nats;
use super::server::{ADMIN_PASSWORD, ADMIN_USER};
use crate::control::{Cmd, Remote};
use crate::db::{DbError, Member, MemberView, Membership};
use crate::node::Node;
use crate::systems::http;
use crate::systems::lifecycle::Lifecycle;
use serde_json::{Value, json};
use std::time::Duration;

/// The JetStream API subject that removes a server from the meta group (system account).
const SERVER_REMOVE: &str = "$JS.API.SERVER.REMOVE";

/// The system request every server answers with its `/jsz`; with `leader_only`, the meta
/// leader alone answers.
const PING_JSZ: &str = "$SYS.REQ.SERVER.PING.JSZ";

/// JetStream's error code for removing a server that is no member ("server is not a member of
/// the cluster"): an earlier removal committed.
const NOT_A_MEMBER: u64 = 10044;

/// The meta group's name in `/raftz` (under the system account's name).
const META_GROUP: &str = "_meta_";

/// How long the admin connection and its request may take.
const ADMIN_TIMEOUT: Duration = Duration::from_secs(5);

/// At most this many characters of a server's reply go into an error.
const REPLY_CHARS: usize = 300;

/// The node a server name is: the node of that name, else, for a name `NODE-K` a membership
/// change gave a node's later life, that node. `None`: none of the cluster's nodes.
pub fn node_of<'a>(name: &str, cluster: &'a [Node]) -> Option<&'a Node> {
    if let Some(n) = cluster.iter().find(|n| n.name == name) {
        return Some(n);
    }
    let (base, k) = name.rsplit_once('-')?;
    if k.is_empty() || !k.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    cluster.iter().find(|n| n.name == base)
}

/// The server name of `node`'s next life, after the one named `current`: `NODE-2` after the
/// node's own name, `NODE-(K+1)` after `NODE-K`.
pub fn next_name(node: &str, current: &str) -> String {
    let k = current
        .strip_prefix(node)
        .and_then(|r| r.strip_prefix('-'))
        .and_then(|k| k.parse::<u64>().ok())
        .unwrap_or(1);
    format!("{node}-{}", k + 1)
}

fn cut(s: &str) -> String {
    s.trim().chars().take(REPLY_CHARS).collect()
}

fn member(name: &str, id: &str, cluster: &[Node]) -> Member {
    Member {
        node: node_of(name, cluster).map(|n| n.name.clone()),
        id: id.to_string(),
        name: name.to_string(),
        learner: false,
        started: true,
    }
}

/// The meta group in `/raftz` as `node` serves it: the peers it knows (by name) and itself. A
/// server that is in no meta group (removed, or JetStream off) lists nobody, itself included.
pub fn view_from_raftz(body: &str, node: &Node, cluster: &[Node]) -> Result<MemberView, String> {
    let v: Value = serde_json::from_str(body)
        .map_err(|e| format!("/raftz is not JSON ({e}): {}", cut(body)))?;
    let Some(accounts) = v.as_object() else {
        return Err(format!("/raftz is no object: {}", cut(body)));
    };
    let Some(meta) = accounts.values().find_map(|groups| groups.get(META_GROUP)) else {
        return Ok(MemberView::default());
    };
    let own = meta.get("id").and_then(Value::as_str).unwrap_or_default();
    let mut members = vec![member(&node.name, own, cluster)];
    if let Some(peers) = meta.get("peers").and_then(Value::as_object) {
        for (id, p) in peers {
            let name = p.get("name").and_then(Value::as_str).unwrap_or_default();
            members.push(member(name, id, cluster));
        }
    }
    Ok(MemberView { members })
}

/// The meta group in `/jsz`, which lists its peers only when the server asked leads it (the leader
/// and its `replicas`). An error on a follower: it says who leads, not who the members are.
pub fn view_from_jsz(body: &str, cluster: &[Node]) -> Result<MemberView, String> {
    let v: Value =
        serde_json::from_str(body).map_err(|e| format!("/jsz is not JSON ({e}): {}", cut(body)))?;
    let Some(meta) = v.get("meta_cluster") else {
        return Ok(MemberView::default());
    };
    let leader = meta
        .get("leader")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some(replicas) = meta.get("replicas").and_then(Value::as_array) else {
        let leader = if leader.is_empty() { "none" } else { leader };
        return Err(format!(
            "this nats-server lists the meta group's peers only on its leader (leader: {leader}) \
             and has no /raftz"
        ));
    };
    let peer = meta.get("peer").and_then(Value::as_str).unwrap_or_default();
    let mut members = vec![member(leader, peer, cluster)];
    for r in replicas {
        let name = r.get("name").and_then(Value::as_str).unwrap_or_default();
        let id = r.get("peer").and_then(Value::as_str).unwrap_or_default();
        members.push(member(name, id, cluster));
    }
    Ok(MemberView { members })
}

/// Why an admin request has no answer.
#[derive(Debug, thiserror::Error)]
enum AdminError {
    /// It was never sent (no connection): nothing changed.
    #[error("{0}")]
    NotSent(String),
    /// Sent, and no (readable) answer came: it may have taken effect.
    #[error("{0}")]
    Unanswered(String),
}

/// Why a server removal's answer is not "done".
#[derive(Debug, PartialEq, Eq)]
enum Rejection {
    /// JetStream answered with an error: it checked the request and did not propose it.
    Refused(String),
    /// An answer with neither success nor error: whether it was proposed is unknown.
    Unclear(String),
}

/// What JetStream answered to a server removal: done, nothing to do (no member), turned down
/// in its words, or unclear.
fn removal_reply(reply: &Value) -> Result<(), Rejection> {
    if reply.get("success").and_then(Value::as_bool) == Some(true) {
        return Ok(());
    }
    let Some(error) = reply.get("error") else {
        return Err(Rejection::Unclear(format!(
            "an answer without success or error: {}",
            cut(&reply.to_string())
        )));
    };
    if error.get("err_code").and_then(Value::as_u64) == Some(NOT_A_MEMBER) {
        return Ok(());
    }
    let words = error
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("no description");
    let code = error.get("err_code").and_then(Value::as_u64).unwrap_or(0);
    Err(Rejection::Refused(format!(
        "{words} (JetStream error {code})"
    )))
}

impl Nats {
    /// One admin request (system account) through `via`'s client port; the reply as JSON.
    /// Connection errors and timeouts are errors: the request may or may not have been made.
    fn admin_request(
        &self,
        via: &Node,
        subject: &str,
        payload: &Value,
    ) -> Result<Value, AdminError> {
        let url = self.url(via);
        let body = payload.to_string();
        let ask = async {
            let client = async_nats::ConnectOptions::with_user_and_password(
                ADMIN_USER.into(),
                ADMIN_PASSWORD.into(),
            )
            .connection_timeout(ADMIN_TIMEOUT)
            .request_timeout(Some(ADMIN_TIMEOUT))
            .ignore_discovered_servers()
            .connect(&url)
            .await
            .map_err(|e| {
                AdminError::NotSent(format!("connecting to {url} as {ADMIN_USER}: {e}"))
            })?;
            let reply = client
                .request(subject.to_string(), body.into())
                .await
                .map_err(|e| AdminError::Unanswered(format!("{subject} through {url}: {e}")));
            let _ = client.drain().await;
            let reply = reply?;
            serde_json::from_slice::<Value>(&reply.payload).map_err(|e| {
                AdminError::Unanswered(format!(
                    "{subject}: the answer is not JSON ({e}): {}",
                    cut(&String::from_utf8_lossy(&reply.payload))
                ))
            })
        };
        // A runtime of its own on a thread of its own: callers may run inside another runtime.
        std::thread::scope(|s| {
            s.spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| {
                        AdminError::NotSent(format!("cannot start a runtime to ask NATS: {e}"))
                    })?
                    .block_on(ask)
            })
            .join()
            .unwrap_or_else(|_| {
                Err(AdminError::Unanswered(
                    "the request's thread panicked".into(),
                ))
            })
        })
    }

    /// The membership as `via` sees it, else (a server that lists the meta group only on its
    /// leader) as the meta leader says through `via`: whom a request through `via` names.
    fn members_through(
        &self,
        remote: &dyn Remote,
        via: &Node,
        cluster: &[Node],
    ) -> Result<MemberView, DbError> {
        let own = match self.view(remote, via, cluster) {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        let other = |why: String| DbError::Other {
            node: via.name.clone(),
            message: format!("{own}; and asking the meta leader through it: {why}"),
        };
        let reply = self
            .admin_request(via, PING_JSZ, &json!({ "leader_only": true }))
            .map_err(|e| other(e.to_string()))?;
        let data = reply.get("data").cloned().unwrap_or(Value::Null);
        view_from_jsz(&data.to_string(), cluster).map_err(other)
    }

    /// GET `path` from `node`'s monitoring port, on the node: status and body.
    fn monitor_get(
        &self,
        remote: &dyn Remote,
        node: &Node,
        path: &str,
    ) -> Result<(u16, String), DbError> {
        let other = |message: String| DbError::Other {
            node: node.name.clone(),
            message,
        };
        let out = remote.exec(&http::get(&node.host, self.cfg.monitor_port, path))?;
        if !out.success() {
            return Err(other(format!(
                "nats-server's monitoring port {} did not answer {path}: {}",
                self.cfg.monitor_port,
                cut(&out.stderr)
            )));
        }
        let (code, body) = http::reply(&out.stdout).map_err(|e| other(format!("{path}: {e}")))?;
        Ok((code, body.to_string()))
    }
}

impl Membership for Nats {
    fn view(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
    ) -> Result<MemberView, DbError> {
        let other = |message: String| DbError::Other {
            node: node.name.clone(),
            message,
        };
        let (code, body) = self.monitor_get(remote, node, "/raftz")?;
        let view = match code {
            200 => view_from_raftz(&body, node, cluster),
            404 => {
                let (code, body) = self.monitor_get(remote, node, "/jsz")?;
                if code != 200 {
                    return Err(other(format!("/jsz answered {code}: {}", cut(&body))));
                }
                view_from_jsz(&body, cluster)
            }
            code => return Err(other(format!("/raftz answered {code}: {}", cut(&body)))),
        };
        view.map_err(|e| other(format!("nats-server's meta group: {e}")))
    }

    fn remove(
        &self,
        via_remote: &dyn Remote,
        via: &Node,
        target: &Node,
        cluster: &[Node],
    ) -> Result<(), DbError> {
        // Nothing is sent when the members cannot be read: a definite failure.
        let view = self
            .members_through(via_remote, via, cluster)
            .map_err(|e| DbError::Refused {
                node: via.name.clone(),
                message: format!("nothing sent, the members are unknown: {e}"),
            })?;
        let Some(m) = view.member(&target.name) else {
            return Ok(());
        };
        let payload = if m.name.is_empty() {
            json!({ "peer_id": m.id })
        } else {
            json!({ "peer": m.name })
        };
        let what = format!(
            "removing {} (server {}, peer {}) from the JetStream cluster through {}",
            target.name, m.name, m.id, via.name
        );
        let reply = self
            .admin_request(via, SERVER_REMOVE, &payload)
            .map_err(|e| match e {
                // Never sent: nothing changed.
                AdminError::NotSent(e) => DbError::Refused {
                    node: via.name.clone(),
                    message: format!("{what}: nothing sent: {e}"),
                },
                AdminError::Unanswered(e) => DbError::Other {
                    node: via.name.clone(),
                    message: format!("{what}: {e}"),
                },
            })?;
        removal_reply(&reply).map_err(|e| match e {
            Rejection::Refused(e) => DbError::Refused {
                node: via.name.clone(),
                message: format!("{what}: nats-server refused: {e}"),
            },
            Rejection::Unclear(e) => DbError::Other {
                node: via.name.clone(),
                message: format!("{what}: {e}"),
            },
        })
    }

    /// Stop and wipe, name the node's next life, and leave the marker that keeps `Kill::start`
    /// from starting it (started, it would join as a new server unasked).
    fn retire(&self, remote: &dyn Remote, node: &Node) -> Result<(), DbError> {
        self.stop_and_wipe(remote)?;
        let current = remote.exec(&Cmd::new("cat").arg(self.name_path()))?;
        let current = match current.status {
            0 if !current.stdout.trim().is_empty() => current.stdout.trim().to_string(),
            _ => node.name.clone(),
        };
        let next = next_name(&node.name, &current);
        remote.upload(next.as_bytes(), &self.name_path(), 0o644)?;
        self.mark_retired(remote)
    }

    /// No request: a fresh server joins the meta group when its routes connect. Refused while
    /// `via`'s view still lists the node and the node is retired (its removal has not
    /// committed: it would come back beside its old self); nothing to do when the view lists it
    /// and its server runs (an earlier add joined).
    fn add(
        &self,
        via_remote: &dyn Remote,
        via: &Node,
        target_remote: &dyn Remote,
        target: &Node,
        members: &[Node],
        _cluster: &[Node],
    ) -> Result<(), DbError> {
        let mut cluster: Vec<Node> = members.to_vec();
        if !cluster.iter().any(|n| n.name == target.name) {
            cluster.push(target.clone());
        }
        let view = self.members_through(via_remote, via, &cluster)?;
        let retired = self.is_retired(target_remote)?;
        if let Some(m) = view.member(&target.name) {
            if retired {
                return Err(DbError::Refused {
                    node: target.name.clone(),
                    message: format!(
                        "{} still lists {} (as server {}): its removal has not committed",
                        via.name, target.name, m.name
                    ),
                });
            }
            if self.server().running(target_remote)? {
                return Ok(());
            }
        }
        self.stop_and_wipe(target_remote)?;
        self.start_fresh(target_remote, target, &cluster)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::db::test_nodes as nodes;

    #[test]
    fn server_names_map_to_their_nodes_and_lives_count_up() {
        let c = nodes(3);
        let of = |name: &str| node_of(name, &c).map(|n| n.name.as_str());
        assert_eq!(of("n2"), Some("n2"));
        assert_eq!(of("n2-2"), Some("n2"));
        assert_eq!(of("n2-17"), Some("n2"));
        for stranger in ["n4", "n2-", "n2-x", "x-2", "", "n2-2-"] {
            assert_eq!(of(stranger), None, "{stranger}");
        }
        // A node whose own name ends in -digits is itself first.
        let odd = vec![
            Node {
                name: "db-1".into(),
                host: "h1".into(),
            },
            Node {
                name: "db".into(),
                host: "h2".into(),
            },
        ];
        assert_eq!(node_of("db-1", &odd).map(|n| n.name.as_str()), Some("db-1"));
        assert_eq!(
            node_of("db-1-3", &odd).map(|n| n.name.as_str()),
            Some("db-1")
        );
        assert_eq!(next_name("n3", "n3"), "n3-2");
        assert_eq!(next_name("n3", "n3-2"), "n3-3");
        assert_eq!(next_name("n3", "n3-41"), "n3-42");
        assert_eq!(next_name("db-1", "db-1"), "db-1-2");
    }

    /// `/raftz` as nats-server 2.12.1 served it on n1 after n3 came back as n3-2.
    const RAFTZ: &str = r#"{"SYS": {"_meta_": {"id": "fjFyEjc1", "state": "FOLLOWER", "size": 5,
        "peers": {"44jzkV9D": {"name": "n2", "known": true}, "C7B8kAbl": {"name": "n4",
        "known": true}, "C8OtEtgR": {"name": "n5", "known": true}, "QUVmGLOC": {"name": "n3-2",
        "known": true}}}}}"#;

    #[test]
    fn raftz_lists_the_peers_and_the_node_itself() {
        let c = nodes(5);
        let v = view_from_raftz(RAFTZ, &c[0], &c).unwrap();
        assert_eq!(v.nodes(), ["n1", "n2", "n3", "n4", "n5"]);
        assert_eq!(v.voters(), v.nodes());
        let n3 = v.member("n3").unwrap();
        assert_eq!((n3.name.as_str(), n3.id.as_str()), ("n3-2", "QUVmGLOC"));
        assert_eq!(v.member("n1").unwrap().id, "fjFyEjc1");
        // A removed server (JetStream disabled) is in no meta group: it lists nobody.
        let removed = view_from_raftz(r#"{}"#, &c[2], &c).unwrap();
        assert!(removed.members.is_empty());
        // A peer whose name is not known yet is a stranger.
        let young =
            r#"{"SYS": {"_meta_": {"id": "a", "peers": {"b": {"name": "", "known": false}}}}}"#;
        assert_eq!(view_from_raftz(young, &c[0], &c).unwrap().strangers(), 1);
        for bad in ["", "[1]", "{not json"] {
            assert!(view_from_raftz(bad, &c[0], &c).is_err(), "{bad}");
        }
    }

    #[test]
    fn jsz_lists_the_members_on_the_leader_only() {
        let c = nodes(5);
        let leader = r#"{"meta_cluster": {"name": "shakedown", "leader": "n4", "peer": "C7",
            "replicas": [{"name": "n1", "peer": "fj"}, {"name": "n2", "peer": "44"},
            {"name": "n5", "peer": "C8"}], "cluster_size": 4}}"#;
        let v = view_from_jsz(leader, &c).unwrap();
        assert_eq!(v.nodes(), ["n1", "n2", "n4", "n5"]);
        let follower =
            r#"{"meta_cluster": {"name": "shakedown", "leader": "n4", "cluster_size": 4}}"#;
        let e = view_from_jsz(follower, &c).unwrap_err();
        assert!(e.contains("only on its leader (leader: n4)"), "{e}");
        assert!(
            view_from_jsz(r#"{"config": {}}"#, &c)
                .unwrap()
                .members
                .is_empty()
        );
    }

    #[test]
    fn removal_replies_read_as_done_nothing_to_do_or_refused() {
        assert_eq!(removal_reply(&json!({"success": true})), Ok(()));
        let gone = json!({"error": {"code": 400, "err_code": 10044,
            "description": "server is not a member of the cluster"}});
        assert_eq!(removal_reply(&gone), Ok(()));
        let no = json!({"error": {"code": 500, "err_code": 10008,
            "description": "JetStream cluster not available"}});
        assert_eq!(
            removal_reply(&no),
            Err(Rejection::Refused(
                "JetStream cluster not available (JetStream error 10008)".into()
            ))
        );
        assert!(matches!(
            removal_reply(&json!({})),
            Err(Rejection::Unclear(_))
        ));
    }
}
