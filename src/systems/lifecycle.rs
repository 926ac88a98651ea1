//! The server lifecycle every built-in system shares, once: kill, pause and resume as signals
//! to its server process, the restart after a kill (a node a membership change retired stays
//! down; the lose-unsynced layer is remounted keeping its files; then the system's own start),
//! the end-of-run status, the stop of a teardown and before a wipe, and the layer over empty data.
//!
//! A system implements [`Lifecycle`] with what differs — its server process, base directory,
//! executable pattern, data directory, the user owning its data, its retired-node marker and its
//! restart command — and [`Kill`] and [`Pause`] follow from it. Does not own the node-side
//! process scripts (`systems::strays`), readiness (`systems::ready`), a system's setup — its
//! wipe, configs and first start differ — or the external systems (spec-driven,
//! `systems::external`).

use crate::control::{Cmd, Remote};
use crate::db::{Abilities, DbError, Kill, Pause};
use crate::node::Node;
use crate::systems::strays::{self, Server, Signal};

/// Hand the data directory (a freshly mounted layer's root) to the server's user with the mode
/// PostgreSQL demands: `$1` = data dir, `$2` = OS user.
const CHOWN_SCRIPT: &str = r#"chown "$2:" "$1" && chmod 700 "$1""#;

/// Where a built-in system's server lives on a node and how it is run: its lifecycle's
/// differences, as data. Every path is under the base directory: the pidfile
/// `<base>/<name>.pid`, the data directory `<base>/data`, the retired marker `<base>/retired`.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The directory under which the system's files and server processes live (the strays
    /// sweep's).
    pub base_dir: String,
    /// The server process the kill and pause faults act on and `db-status` reads.
    pub server: Server,
    /// The file names of the system's server executables (an extended regular expression), for
    /// [`strays::sweep`].
    pub exe_pattern: &'static str,
    /// The OS user the data directory belongs to, handed the layer's root after a mount; `None`:
    /// the user that starts the server.
    pub data_owner: Option<String>,
    /// Whether a membership change can retire the node (leaving `<base>/retired`, outside the
    /// data directory and its layer; removed by the next fresh start).
    pub retires: bool,
}

impl Layout {
    /// A server run by the connecting user from `<base_dir>/<name>.pid`, its command line
    /// mentioning `word`, its executables matching `exe_pattern`.
    pub fn new(base_dir: &str, name: &str, word: &'static str, exe_pattern: &'static str) -> Self {
        Layout {
            base_dir: base_dir.to_string(),
            server: Server {
                pidfile: format!("{base_dir}/{name}.pid"),
                word,
                sudo: false,
                alone: false,
            },
            exe_pattern,
            data_owner: None,
            retires: false,
        }
    }

    /// Its commands run through `sudo` (a server run as root or another user).
    pub fn sudo(mut self) -> Self {
        self.server.sudo = true;
        self
    }

    /// Signals reach its server alone, not the server's children.
    pub fn alone(mut self) -> Self {
        self.server.alone = true;
        self
    }

    /// Its data directory belongs to `user`.
    pub fn owned_by(mut self, user: &str) -> Self {
        self.data_owner = Some(user.to_string());
        self
    }

    /// A membership change can retire the node.
    pub fn retiring(mut self) -> Self {
        self.retires = true;
        self
    }
}

/// What a built-in system's server lifecycle differs in ([`Lifecycle::layout`] and
/// [`Lifecycle::restart`]); the rest is provided.
pub trait Lifecycle: Abilities {
    /// Where its server lives and how it is run.
    fn layout(&self) -> Layout;
    /// Start the server unless it runs, with the data it has: the last step of [`Kill::start`].
    fn restart(&self, remote: &dyn Remote, node: &Node, cluster: &[Node]) -> Result<(), DbError>;

    /// The server process ([`Layout::server`]).
    fn server(&self) -> Server {
        self.layout().server
    }

    /// Where the durable state lives: the lose-unsynced layer's mount point, what a wipe
    /// removes.
    fn data_path(&self) -> String {
        format!("{}/data", self.layout().base_dir)
    }

    /// The file whose presence says a membership change retired this node; `None`: the system
    /// has no membership changes ([`Layout::retires`]).
    fn retired_marker(&self) -> Option<String> {
        let layout = self.layout();
        layout
            .retires
            .then(|| format!("{}/retired", layout.base_dir))
    }

    /// Send `sig` to the server (and its children: [`strays::SIGNAL_SCRIPT`]).
    fn signal(&self, remote: &dyn Remote, sig: Signal) -> Result<(), DbError> {
        self.server().signal(remote, sig)
    }

    /// End every server process of the system its pidfiles name, a paused one too (CONT,
    /// then KILL): [`Lifecycle::stop`]'s first step. Default: the one [`Layout::server`].
    fn end_servers(&self, remote: &dyn Remote) -> Result<(), DbError> {
        self.signal(remote, Signal::Cont)?;
        self.signal(remote, Signal::Kill)
    }

    /// Mount the lose-unsynced layer on the data directory when the run has one (`fresh`: empty,
    /// at setup; else keeping its files, remounting a stale one) and hand its root to
    /// [`Layout::data_owner`].
    fn mount_layer(&self, remote: &dyn Remote, fresh: bool) -> Result<(), DbError> {
        let Some(layer) = self.data_layer() else {
            return Ok(());
        };
        layer.mount(remote, fresh)?;
        if let Some(owner) = self.layout().data_owner {
            remote.exec_ok(&Cmd::script(CHOWN_SCRIPT, [self.data_path(), owner]).sudo(true))?;
        }
        Ok(())
    }

    /// Stop the server for good ([`Lifecycle::end_servers`]; succeeds when it is not running),
    /// end the strays of ours under the base directory ([`strays::sweep`]) and
    /// unmount the layer over the data directory if one is mounted (stale or not): a teardown,
    /// and what comes before a wipe. The data and logs stay.
    fn stop(&self, remote: &dyn Remote) -> Result<(), DbError> {
        self.end_servers(remote)?;
        let layout = self.layout();
        strays::sweep(remote, &layout.base_dir, layout.exe_pattern)?;
        crate::db::layer::unmount(remote, &self.data_path()).map(|_| ())
    }

    /// [`Lifecycle::stop`], then remove the data directory.
    fn stop_and_wipe(&self, remote: &dyn Remote) -> Result<(), DbError> {
        self.stop(remote)?;
        remote.exec_ok(&Cmd::new("rm").args(["-rf", &self.data_path()]))?;
        Ok(())
    }

    /// Whether a membership change retired this node (its [`Lifecycle::retired_marker`] is
    /// there); never for a system without one.
    fn is_retired(&self, remote: &dyn Remote) -> Result<bool, DbError> {
        let Some(marker) = self.retired_marker() else {
            return Ok(false);
        };
        Ok(remote.exec(&Cmd::new("test").args(["-e", &marker]))?.status == 0)
    }

    /// Leave the retired marker (`Membership::retire`'s last step, after the wipe).
    fn mark_retired(&self, remote: &dyn Remote) -> Result<(), DbError> {
        if let Some(marker) = self.retired_marker() {
            remote.exec_ok(&Cmd::new("touch").arg(marker))?;
        }
        Ok(())
    }

    /// Ready wiped data for a fresh start: the retired marker goes (the node is a member
    /// again), a fresh layer is mounted when the run serves data from one.
    fn fresh_data(&self, remote: &dyn Remote) -> Result<(), DbError> {
        if let Some(marker) = self.retired_marker() {
            remote.exec_ok(&Cmd::new("rm").args(["-f", &marker]))?;
        }
        self.mount_layer(remote, true)
    }
}

impl<T: Lifecycle> Kill for T {
    fn kill(&self, remote: &dyn Remote, _node: &Node) -> Result<(), DbError> {
        self.signal(remote, Signal::Kill)
    }

    /// Start the server again with its data; with the lose-unsynced layer, remount it first if
    /// its process died (a stale mount), keeping its files. A node a membership change retired
    /// ([`Lifecycle::retired_marker`], written by `Membership::retire`) is no member: started as
    /// one it would hang or join unasked, and `Membership::add` brings it back, so it stays down.
    fn start(&self, remote: &dyn Remote, node: &Node, cluster: &[Node]) -> Result<(), DbError> {
        if self.is_retired(remote)? {
            return Ok(());
        }
        self.mount_layer(remote, false)?;
        self.restart(remote, node, cluster)
    }

    fn running(&self, remote: &dyn Remote, _node: &Node) -> Option<Result<bool, DbError>> {
        Some(self.server().running(remote))
    }
}

impl<T: Lifecycle> Pause for T {
    /// SIGSTOP the server (and, through [`strays::SIGNAL_SCRIPT`], its children: PostgreSQL's
    /// backends, walsenders and walreceiver, MariaDB's state-transfer scripts).
    fn pause(&self, remote: &dyn Remote, _node: &Node) -> Result<(), DbError> {
        self.signal(remote, Signal::Stop)
    }

    fn resume(&self, remote: &dyn Remote, _node: &Node) -> Result<(), DbError> {
        self.signal(remote, Signal::Cont)
    }
}

#[cfg(test)]
mod tests {
    //! The provided lifecycle on a recording node: which commands run, in which order.
    use super::*;
    use crate::control::canned::{Canned, output};

    /// A system whose restart is one recognisable command.
    struct Fake {
        retires: bool,
    }

    impl Abilities for Fake {
        fn name(&self) -> &str {
            "fake"
        }
    }

    impl Lifecycle for Fake {
        fn layout(&self) -> Layout {
            let layout = Layout::new("/base", "fake", "fake-server", "^fake$");
            if self.retires {
                layout.retiring()
            } else {
                layout
            }
        }
        fn restart(&self, remote: &dyn Remote, _: &Node, _: &[Node]) -> Result<(), DbError> {
            remote.exec_ok(&Cmd::new("start-fake"))?;
            Ok(())
        }
    }

    fn node() -> Node {
        Node {
            name: "n1".into(),
            host: "10.0.0.1".into(),
        }
    }

    /// A node where the retired marker is there (`retired`) or not.
    fn host(retired: bool) -> Canned {
        Canned::new("n1", move |cmd| {
            let marker_test = cmd.to_shell().starts_with("test -e");
            output(if marker_test && !retired { 1 } else { 0 }, "")
        })
    }

    #[test]
    fn a_retired_node_stays_down_and_a_member_restarts() {
        let fake = Fake { retires: true };
        let retired = host(true);
        fake.start(&retired, &node(), &[node()]).unwrap();
        assert_eq!(retired.asked(), ["test -e /base/retired"]);
        let member = host(false);
        fake.start(&member, &node(), &[node()]).unwrap();
        assert_eq!(member.asked(), ["test -e /base/retired", "start-fake"]);
        let plain = host(true);
        Fake { retires: false }
            .start(&plain, &node(), &[node()])
            .unwrap();
        assert_eq!(plain.asked(), ["start-fake"], "no marker, no test");
    }

    #[test]
    fn stop_resumes_then_kills_the_server_then_sweeps_then_unmounts() {
        let remote = host(false);
        Fake { retires: false }.stop(&remote).unwrap();
        let asked = remote.asked();
        assert!(asked.len() >= 4, "{asked:?}");
        for (cmd, sig) in asked.iter().zip([" CONT", " KILL"]) {
            assert!(
                cmd.ends_with(&format!("/base/fake.pid fake-server{sig} children")),
                "{cmd}"
            );
        }
        assert!(
            asked[2].contains("ours()") && asked[2].contains("'^fake$'"),
            "{}",
            asked[2]
        );
        assert!(
            asked[3..].iter().any(|c| c.contains("/base/data")),
            "{asked:?}"
        );
    }
}
