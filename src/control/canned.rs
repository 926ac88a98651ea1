//! A node for unit tests of pure logic above the control layer: every command gets the answer a
//! function gives, and every command line is recorded. Test-only (`#[cfg(test)]`); integration
//! tests use real sshd nodes. Does not own any real transport.

use super::{Cmd, ExecError, ExecOutput, Remote};
use std::path::Path;
use std::sync::Mutex;

/// The answer to one command.
type Answer = Box<dyn Fn(&Cmd) -> ExecOutput + Send + Sync>;

/// A node answering from a function, recording what it was asked.
pub struct Canned {
    name: String,
    answer: Answer,
    asked: Mutex<Vec<String>>,
}

impl Canned {
    /// A node `name` whose commands get `answer`'s output.
    pub fn new(
        name: impl Into<String>,
        answer: impl Fn(&Cmd) -> ExecOutput + Send + Sync + 'static,
    ) -> Canned {
        Canned {
            name: name.into(),
            answer: Box::new(answer),
            asked: Mutex::default(),
        }
    }

    /// A node where every command succeeds and prints nothing.
    pub fn quiet(name: impl Into<String>) -> Canned {
        Canned::new(name, |_| output(0, ""))
    }

    /// The command lines asked so far (`Cmd::to_shell`), in order.
    pub fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// An output with exit `status` and `stdout` (stderr empty, no signal).
pub fn output(status: i32, stdout: &str) -> ExecOutput {
    ExecOutput {
        status,
        signal: None,
        stdout: stdout.to_string(),
        stderr: String::new(),
    }
}

impl Remote for Canned {
    fn node(&self) -> &str {
        &self.name
    }
    fn exec(&self, cmd: &Cmd) -> Result<ExecOutput, ExecError> {
        self.asked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(cmd.to_shell());
        Ok((self.answer)(cmd))
    }
    fn upload(&self, _: &[u8], _: &str, _: u32) -> Result<(), ExecError> {
        Ok(())
    }
    fn download(&self, _: &str, _: &Path) -> Result<(), ExecError> {
        Ok(())
    }
}
