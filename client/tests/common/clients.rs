//! A server's clients as `CLIENT LIST` shows them.

use testkit::Server;

fn client_list(server: &Server) -> String {
    redis::cmd("CLIENT").arg("LIST").query(&mut server.connection()).unwrap()
}

/// The `CLIENT LIST` line of the first of `server`'s clients that `matches`.
pub fn client_line(server: &Server, matches: impl Fn(&str) -> bool) -> Option<String> {
    client_list(server).lines().find(|line| matches(line)).map(str::to_owned)
}

/// The id of the connection whose last command on `server` was `cmd`.
pub fn connection_that_ran(server: &Server, cmd: &str) -> String {
    testkit::client_id_of_cmd(&client_list(server), cmd).expect(cmd)
}

/// Whether a line is the client with `id`.
pub fn has_id(id: &str) -> impl Fn(&str) -> bool + '_ {
    move |line| line.starts_with(&format!("id={id} "))
}

/// Whether the client with `id` has sat idle more than a second (the
/// line's `idle` is whole seconds).
pub fn idle_over_a_second(server: &Server, id: &str) -> bool {
    client_line(server, has_id(id)).is_some_and(|line| !line.contains(" idle=0 ") && !line.contains(" idle=1 "))
}
