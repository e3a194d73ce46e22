//! What the slot migration tests share: the locks a migration moves, and
//! how their owners ask for them, wait for them on the server and release
//! them.
#![allow(dead_code)] // each test file uses a part

use redis::Cmd;

pub const LEASE: i64 = 60_000;
pub const WAIT: i64 = 20_000;

/// A lock of one kind, by name.
pub struct Kind {
    pub name: &'static str,
    /// The commands' prefix (`RLOCK`, `RRW`, `RFAIR`).
    family: &'static str,
    /// What comes before the lease (a read-write lock's mode).
    mode: &'static [&'static str],
    /// A fair waiter keeps its place in the queue (`BLOCK`) while it waits.
    queued: bool,
}

impl Kind {
    pub const fn lock(name: &'static str) -> Self {
        Self { name, family: "RLOCK", mode: &[], queued: false }
    }

    pub const fn write(name: &'static str) -> Self {
        Self { name, family: "RRW", mode: &["WRITE"], queued: false }
    }

    pub const fn fair(name: &'static str) -> Self {
        Self { name, family: "RFAIR", mode: &[], queued: true }
    }

    /// `owner` asks once, for [`LEASE`].
    pub fn ask(&self, owner: &str) -> Cmd {
        let mut cmd = redis::cmd(&format!("{}.ACQUIRE", self.family));
        cmd.arg(self.name).arg(owner).arg(self.mode).arg(LEASE);
        cmd
    }

    /// `owner` waits on the server up to [`WAIT`].
    pub fn wait(&self, owner: &str) -> Cmd {
        let mut cmd = self.ask(owner);
        cmd.arg("WAIT").arg(WAIT);
        if self.queued {
            cmd.arg("BLOCK").arg(WAIT);
        }
        cmd
    }

    /// `owner` releases (a lock or a fair lock: no mode).
    pub fn release(&self, owner: &str) -> Cmd {
        let mut cmd = redis::cmd(&format!("{}.RELEASE", self.family));
        cmd.arg(self.name).arg(owner);
        cmd
    }
}
