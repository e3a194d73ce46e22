//! Rewrites of scripts that publish: the publish command they use, and
//! the native call that names it (`VIA`), shared by the primitives whose
//! commands take it.

use super::scripts::{native, publish_command, Call, Rewrite};

/// A script's arguments before its publish command, and that command.
pub type Publishing<'a> = (&'a [&'a [u8]], &'static [u8]);

/// The texts from 3.22.0 take the publish command as their last argument.
pub fn last_names_publish<'a>(call: &'a Call) -> Option<Publishing<'a>> {
    let (publish, argv) = call.argv.split_last()?;
    Some((argv, publish_command(publish)?))
}

/// The older texts call `publish` (whatever the arguments say).
pub fn text_names_publish<'a>(call: &'a Call) -> Publishing<'a> {
    (call.argv, b"PUBLISH")
}

/// `command` publishing with `publish` on `channel`, the script's.
pub fn rewrite_via(command: &[&[u8]], publish: &[u8], channel: &[u8]) -> Rewrite {
    rewrite_via_then(command, publish, channel, &[])
}

/// [`rewrite_via`] for a command that takes the channel too (`CHANNEL`,
/// which Redis checks against the caller's ACL before the command runs).
pub fn rewrite_via_naming_channel(command: &[&[u8]], publish: &[u8], channel: &[u8]) -> Rewrite {
    rewrite_via_then(command, publish, channel, &[b"CHANNEL", channel])
}

/// `command`, `VIA publish` and `tail`, collected at once.
fn rewrite_via_then(command: &[&[u8]], publish: &[u8], channel: &[u8], tail: &[&[u8]]) -> Rewrite {
    let via: [&[u8]; 2] = [b"VIA", publish];
    let mut all: [&[u8]; 16] = [&[]; 16];
    let count = command.len() + via.len() + tail.len();
    let argv = if count <= all.len() {
        // One copy of them all (each copy has a fixed cost).
        all.iter_mut().zip(command.iter().chain(&via).chain(tail)).for_each(|(place, arg)| *place = arg);
        native(&all[..count])
    } else {
        let mut argv = native(command);
        argv.extend_from_slices(&via);
        argv.extend_from_slices(tail);
        argv
    };
    Rewrite { argv, channel: Some(channel.into()) }
}
