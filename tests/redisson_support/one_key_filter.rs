//! The filter differentials of a family with one key a twin (the latch,
//! the semaphore): each step calls one of its scripts on both twins, by
//! SHA-1 or with its body, with either publish command; or changes the
//! twins' keys as no script does; or lets their short expiries run out.

use super::{family_native_count, load};
use redis::{Cmd, Connection};
use std::fmt::Debug;
use testkit::{drive, At, Differential, FilterTwins, Rng, Server};

/// A family's scripts as its differential calls them.
pub trait OneKeyFamily {
    type Op: Debug;

    fn random_op(&self, rng: &mut Rng) -> Self::Op;

    /// A step that lets the twins' short expiries run out.
    fn pauses(op: &Self::Op) -> bool;

    /// The script call of `op` on `name`; `None` for the steps that make none.
    fn script(&self, by_sha: bool, name: &str, op: &Self::Op, publish: &str) -> Option<Cmd>;

    /// Sets up what a step that makes no script call leaves at `name`
    /// (inside MULTI: its replies are `QUEUED`).
    fn prepare(con: &mut Connection, name: &str, op: &Self::Op);
}

/// A twin's only key.
pub fn one_key(name: &str) -> Vec<Vec<u8>> {
    vec![name.as_bytes().to_vec()]
}

struct OneKeyDifferential<'a, F> {
    family: &'a F,
    twins: &'a FilterTwins,
    server: Server,
    con: Connection,
    control: Connection,
    calls: i64,
    errors: i64,
}

impl<F: OneKeyFamily> Differential for OneKeyDifferential<'_, F> {
    /// The operation, whether by SHA-1, the publish command.
    type Step = (F::Op, bool, &'static str);

    fn draw(&mut self, rng: &mut Rng) -> Self::Step {
        let op = self.family.random_op(rng);
        (op, rng.chance(50), ["publish", "PUBLISH"][rng.below(2) as usize])
    }

    fn run(&mut self, (op, by_sha, publish): &Self::Step, at: &At) {
        let call = |name: &str| self.family.script(*by_sha, name, op, publish);
        let cons = [&mut self.con, &mut self.control];
        let prepare = |con: &mut Connection, name: &str| F::prepare(con, name, op);
        let (server, context, pause) = (&self.server, at.context, F::pauses(op));
        if let Some(failed) = self.twins.step_or_prepare(server, cons, context, pause, call, prepare, one_key) {
            self.errors += i64::from(failed);
            self.calls += 1;
        }
    }
}

/// Runs 300 steps of `family` on `twins`, seeded under `seed`, its
/// scripts' `bodies` loaded for EVALSHA; asserts that every call on the
/// native twin ran natively (`info_family`'s count in INFO): the
/// comparison was not Lua's with itself. How many steps called, and in
/// how many both calls failed.
pub fn one_key_differential<F: OneKeyFamily>(
    family: &F,
    twins: &FilterTwins,
    seed: &str,
    bodies: &[&[u8]],
    info_family: &str,
) -> (i64, i64) {
    let server = Server::builder().config("notify-keyspace-events", "KEA").start();
    let mut con = server.connection();
    load(&mut con, bodies);
    let control = server.connection();
    let mut differential = OneKeyDifferential { family, twins, server, con, control, calls: 0, errors: 0 };
    drive(seed, 1, 300, &mut differential);
    let OneKeyDifferential { mut con, calls, errors, .. } = differential;
    assert_eq!(family_native_count(&mut con, info_family), calls);
    (calls, errors)
}
