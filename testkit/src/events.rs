//! Keyspace notifications and pub/sub messages, collected to compare two
//! ways of doing the same.

use crate::Server;
use std::time::Duration;

const DONE: &str = "testkit:events:done";
const KEYSPACE: &str = "__keyspace@0__:";

/// Runs `act` on a connection to `server` (started with
/// `notify-keyspace-events KEA`) and returns every keyspace event of db 0
/// it caused, in order, as `(key, event)`.
pub fn keyspace_events(server: &Server, act: impl FnOnce(&mut redis::Connection)) -> Vec<(String, String)> {
    let events = messages(server, &format!("{KEYSPACE}*"), act);
    events
        .into_iter()
        .map(|(channel, event)| (channel.strip_prefix(KEYSPACE).unwrap_or(&channel).to_owned(), event))
        .collect()
}

/// Runs `act` on a connection to `server` and returns every message it
/// published (PUBLISH), in order, as `(channel, message)`.
pub fn publications(server: &Server, act: impl FnOnce(&mut redis::Connection)) -> Vec<(String, String)> {
    messages(server, "*", act)
}

fn messages(server: &Server, pattern: &str, act: impl FnOnce(&mut redis::Connection)) -> Vec<(String, String)> {
    let mut listener = server.connection();
    let mut pubsub = listener.as_pubsub();
    pubsub.psubscribe(pattern).expect("PSUBSCRIBE");
    pubsub.subscribe(DONE).expect("SUBSCRIBE");
    let mut con = server.connection();
    act(&mut con);
    let _: () = redis::cmd("PUBLISH").arg(DONE).arg("").query(&mut con).expect("PUBLISH");
    pubsub.set_read_timeout(Some(Duration::from_secs(10))).expect("read timeout");
    let mut messages = vec![];
    loop {
        let message = pubsub.get_message().expect("messages");
        let channel = message.get_channel_name().to_owned();
        if channel == DONE {
            return messages;
        }
        messages.push((channel, message.get_payload().expect("a text payload")));
    }
}
