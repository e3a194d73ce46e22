//! Rewrites of scripts that publish: the publish command they use, and
//! the native call that names it (`VIA`), shared by the primitives whose
//! commands take it.

use super::scripts::{publish_command, Argv, Call, Rewrite};

/// A script's arguments before its publish command, and that command.
pub type Publishing<'a> = (&'a [&'a [u8]], &'static [u8]);

/// The texts from 3.22.0 take the publish command as their last argument.
pub fn last_names_publish<'a>(call: &Call<'a>) -> Option<Publishing<'a>> {
    let (publish, argv) = call.argv.split_last()?;
    Some((argv, publish_command(publish)?))
}

/// The older texts call `publish` (whatever the arguments say).
pub fn text_names_publish<'a>(call: &Call<'a>) -> Publishing<'a> {
    (call.argv, b"PUBLISH")
}

/// `command` publishing with `publish` on `channel`, the script's.
pub fn rewrite_via<'a>(command: &[&'a [u8]], publish: &'a [u8], channel: &'a [u8]) -> Rewrite<'a> {
    rewrite_via_then(command, publish, channel, &[])
}

/// [`rewrite_via`] for a command that takes the channel too (`CHANNEL`,
/// which Redis checks against the caller's ACL before the command runs).
pub fn rewrite_via_naming_channel<'a>(command: &[&'a [u8]], publish: &'a [u8], channel: &'a [u8]) -> Rewrite<'a> {
    rewrite_via_then(command, publish, channel, &[b"CHANNEL", channel])
}

/// `command`, `VIA publish` and `tail`, with one reservation.
fn rewrite_via_then<'a>(command: &[&'a [u8]], publish: &'a [u8], channel: &'a [u8], tail: &[&'a [u8]]) -> Rewrite<'a> {
    let mut rewrite = Rewrite { argv: Argv::default(), channel: Some(channel.into()) };
    rewrite.argv.extend_from_groups(&[command, &[b"VIA", publish], tail]);
    rewrite
}
