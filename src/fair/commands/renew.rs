use crate::commands::args::{LEASE_MS, OWNER};
use crate::commands::info::CommandInfo;
use crate::commands::registry::command;
use crate::lock::commands::renew::renew;
use redis_module::raw;

// `RFAIR.RENEW key owner [lease_ms]`: RLOCK.RENEW under the fair lock's
// name. The fair lock's hash is RLock's, and Redisson renews both with the
// same script.
command!(
    renew,
    c"write fast",
    CommandInfo {
        name: c"rfair.renew",
        summary: c"Resets the lease when owner holds the fair lock; replies 1, or 0 when it does not.",
        arity: -3,
        complexity: c"O(1)",
        key_flags: raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_UPDATE,
        args: &[OWNER, LEASE_MS],
    },
);
