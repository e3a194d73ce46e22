//! Keyspace notifications, collected to compare two ways of doing the same.

use crate::Server;
use std::time::Duration;

const DONE: &str = "testkit:keyspace-events:done";

/// Runs `act` on a connection to `server` (started with
/// `notify-keyspace-events KEA`) and returns every keyspace event of db 0
/// it caused, in order, as `(key, event)`.
pub fn keyspace_events(server: &Server, act: impl FnOnce(&mut redis::Connection)) -> Vec<(String, String)> {
    let mut listener = server.connection();
    let mut pubsub = listener.as_pubsub();
    pubsub.psubscribe("__keyspace@0__:*").expect("PSUBSCRIBE");
    pubsub.subscribe(DONE).expect("SUBSCRIBE");
    let mut con = server.connection();
    act(&mut con);
    let _: () = redis::cmd("PUBLISH").arg(DONE).arg("").query(&mut con).expect("PUBLISH");
    pubsub.set_read_timeout(Some(Duration::from_secs(10))).expect("read timeout");
    let mut events = vec![];
    loop {
        let message = pubsub.get_message().expect("keyspace events");
        let channel = message.get_channel_name();
        if channel == DONE {
            return events;
        }
        let key = channel.strip_prefix("__keyspace@0__:").unwrap_or(channel).to_owned();
        events.push((key, message.get_payload().expect("an event name")));
    }
}
