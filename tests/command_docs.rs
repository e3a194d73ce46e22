//! COMMAND DOCS of every command against docs/commands.md's "Syntax and
//! complexity" table: the syntax line redis-cli users see (rebuilt here
//! from the reply's arguments, their `optional` and `multiple` flags,
//! blocks and `oneof` choices) and the complexity must be what the page
//! says, for every command the module registers and no other.

use redis::{Connection, Value};
use std::collections::BTreeMap;
use testkit::Server;

const DOCS: &str = include_str!("../docs/commands.md");
const TABLE_HEADING: &str = "## Syntax and complexity";

/// A RESP2 map (a flat array of names and values) by name.
fn map(value: &Value) -> BTreeMap<String, Value> {
    let pairs: Vec<Value> = redis::from_redis_value(value.clone()).unwrap();
    pairs.chunks(2).map(|pair| (redis::from_redis_value(pair[0].clone()).unwrap(), pair[1].clone())).collect()
}

fn text(value: &Value) -> String {
    redis::from_redis_value(value.clone()).unwrap()
}

/// One argument of COMMAND DOCS as Redis's docs write it.
fn render(arg: &Value) -> String {
    let arg = map(arg);
    let flags: Vec<String> =
        arg.get("flags").map(|flags| redis::from_redis_value(flags.clone()).unwrap()).unwrap_or_default();
    let parts = || -> Vec<String> {
        let parts: Vec<Value> = redis::from_redis_value(arg["arguments"].clone()).unwrap();
        parts.iter().map(render).collect()
    };
    let token = arg.get("token").map(text);
    let mut body = match text(&arg["type"]).as_str() {
        "pure-token" => token.clone().unwrap(),
        "block" => parts().join(" "),
        // Keywords alone as `PUBLISH|SPUBLISH`, choices with values spaced.
        "oneof" => {
            let choices: Vec<Value> = redis::from_redis_value(arg["arguments"].clone()).unwrap();
            let keywords_alone = choices.iter().all(|choice| text(&map(choice)["type"]) == "pure-token");
            parts().join(if keywords_alone { "|" } else { " | " })
        }
        _ => text(&arg["name"]),
    };
    if flags.iter().any(|flag| flag == "multiple") {
        body = format!("{body} [{body} ...]");
    }
    if let Some(token) = token.filter(|_| text(&arg["type"]) != "pure-token") {
        body = format!("{token} {body}");
    }
    match flags.iter().any(|flag| flag == "optional") {
        true => format!("[{body}]"),
        false => body,
    }
}

/// The syntax line and complexity COMMAND DOCS gives `name`.
fn from_server(con: &mut Connection, name: &str) -> (String, String) {
    let docs: Vec<Value> = redis::cmd("COMMAND").arg("DOCS").arg(name).query(con).unwrap();
    let docs = map(&docs[1]);
    let args: Vec<Value> =
        docs.get("arguments").map(|args| redis::from_redis_value(args.clone()).unwrap()).unwrap_or_default();
    let line = std::iter::once(name.to_ascii_uppercase()).chain(args.iter().map(render)).collect::<Vec<_>>().join(" ");
    (line, text(&docs["complexity"]))
}

/// A markdown table row's cells; `\|` is a `|` inside a cell.
fn cells(row: &str) -> Vec<String> {
    let row = row.trim().trim_start_matches('|').trim_end_matches('|');
    let mut cells = vec![String::new()];
    let mut chars = row.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => cells.last_mut().unwrap().push(chars.next().unwrap()),
            '|' => cells.push(String::new()),
            c => cells.last_mut().unwrap().push(c),
        }
    }
    cells.iter().map(|cell| cell.trim().to_owned()).collect()
}

/// The page's table: syntax line (without its backticks) and complexity.
fn documented() -> Vec<(String, String)> {
    let table = DOCS.split(TABLE_HEADING).nth(1).expect("docs/commands.md has a syntax and complexity table");
    let table = table.split("\n#").next().unwrap();
    table
        .lines()
        .filter(|line| line.starts_with("| `"))
        .map(|row| {
            let cells = cells(row);
            (cells[0].trim_matches('`').to_owned(), cells[1].clone())
        })
        .collect()
}

fn as_row((line, complexity): &(String, String)) -> String {
    format!("| `{}` | {complexity} |", line.replace('|', "\\|"))
}

#[test]
fn command_docs_of_every_command_match_the_documented_syntax_and_complexity() {
    let server = Server::shared();
    let mut con = server.connection();
    let mut names: Vec<String> =
        redis::cmd("COMMAND").arg(&["LIST", "FILTERBY", "MODULE", "rlock"]).query(&mut con).unwrap();
    names.sort();
    assert!(names.len() > 40, "{names:?}");
    let served: Vec<(String, String)> = names.iter().map(|name| from_server(&mut con, name)).collect();
    let mut documented = documented();
    documented.sort();
    let table: Vec<String> = served.iter().map(as_row).collect();
    assert_eq!(documented, served, "docs/commands.md's table should read:\n{}", table.join("\n"));
}

#[test]
fn arguments_that_repeat_or_choose_say_so() {
    let server = Server::shared();
    let mut con = server.connection();
    let expected = [
        ("rpsem.release", "id [id ...]"),
        ("rpsem.tryacquire", "id [id ...]"),
        ("rpsem.release", "[ALL|ANY]"),
        ("rrw.acquire", "READ|WRITE"),
        ("rlock.release", "[VIA PUBLISH|SPUBLISH|NONE]"),
        ("rsem.release", "[VIA PUBLISH|SPUBLISH]"),
        ("rrw.renewreads", "numkeys key [key ...]"),
        ("rlock.renewall", "key owner [key owner ...]"),
    ];
    for (name, part) in expected {
        let (line, _) = from_server(&mut con, name);
        assert!(line.contains(part), "{name}: {line}");
    }
}
