//! The lock engine: one acquire attempt of any kind (pub/sub or blocking
//! waits), the hold bookkeeping, releases, settling a lost reply, the
//! watchdog, and each kind's commands. Crate-internal.

pub(crate) mod acquire_request;
pub(crate) mod attempt;
pub(crate) mod blocking;
pub(crate) mod channel_wait;
pub(crate) mod commands;
pub(crate) mod handle;
pub(crate) mod hold;
pub(crate) mod holds;
pub(crate) mod kind;
pub(crate) mod lock_state;
pub(crate) mod named;
pub(crate) mod protocol;
pub(crate) mod release;
pub(crate) mod requests;
pub(crate) mod resend;
pub(crate) mod run_to_end;
pub(crate) mod waiting;
pub(crate) mod watchdog;
