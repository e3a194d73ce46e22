//! The ACL recipes of docs/commands.md ("Permissions (ACL)"), read from
//! the document itself so that tests run exactly the lines users copy.
//! Each is a fenced block of `ACL SETUSER` lines after an HTML comment
//! `<!-- acl-recipe: NAME -->`.

const COMMANDS_DOC: &str = include_str!("../../docs/commands.md");

/// One recipe: its lines, each split into arguments at whitespace (as
/// redis-cli splits them: recipes quote nothing).
pub struct AclRecipe {
    pub lines: Vec<Vec<String>>,
}

impl AclRecipe {
    /// The user the recipe sets up (`ACL SETUSER <user> …`).
    pub fn user(&self) -> &str {
        &self.lines[0][2]
    }

    /// The password the recipe gives the user (its `>password` rule).
    pub fn password(&self) -> &str {
        self.lines.iter().flatten().find_map(|arg| arg.strip_prefix('>')).expect("the recipe sets a password")
    }

    /// A connection to `server` logged in as the recipe's user.
    pub fn connection(&self, server: &crate::Server) -> redis::Connection {
        let mut con = server.connection();
        let () = redis::cmd("AUTH").arg(self.user()).arg(self.password()).query(&mut con).expect("AUTH");
        con
    }

    /// Runs every line on `admin` (a connection of a user who may run ACL).
    pub fn apply(&self, admin: &mut dyn redis::ConnectionLike) {
        for line in &self.lines {
            let () = redis::cmd(&line[0]).arg(&line[1..]).query(admin).unwrap_or_else(|e| panic!("{line:?}: {e}"));
        }
    }
}

/// The recipe `name`, or a panic naming what is wrong with the document.
pub fn acl_recipe(name: &str) -> AclRecipe {
    let marker = format!("<!-- acl-recipe: {name} -->");
    let (_, after) = COMMANDS_DOC.split_once(&marker).unwrap_or_else(|| panic!("docs/commands.md has no {marker}"));
    let mut rest = after.trim_start().lines();
    let fence = rest.next().filter(|line| line.starts_with("```"));
    assert!(fence.is_some(), "{marker} is not followed by a fenced block");
    let lines: Vec<Vec<String>> = rest
        .take_while(|line| !line.starts_with("```"))
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.split_whitespace().map(str::to_owned).collect())
        .collect();
    for line in &lines {
        let setuser = line.len() > 2 && line[0] == "ACL" && line[1] == "SETUSER";
        assert!(setuser && line[2] == lines[0][2], "{marker}: every line is ACL SETUSER of one user: {line:?}");
    }
    assert!(!lines.is_empty(), "{marker}: an empty recipe");
    AclRecipe { lines }
}

/// The `ACL LOG` entries, newest first, each as text: a recipe's workload
/// must leave none.
pub fn acl_log(con: &mut dyn redis::ConnectionLike) -> Vec<String> {
    let log: Vec<redis::Value> = redis::cmd("ACL").arg("LOG").query(con).expect("ACL LOG");
    log.iter().map(|entry| format!("{entry:?}")).collect()
}

/// Whether the server is Redis 7.2+ or Valkey: it has module ACL
/// categories and `CLIENT SETINFO`, which Redis 7.0 lacks.
pub fn newer_than_redis_7_0(con: &mut dyn redis::ConnectionLike) -> bool {
    let info: String = redis::cmd("INFO").arg("server").query(con).expect("INFO server");
    let field = |name: &str| info.lines().find_map(|line| line.strip_prefix(name)).unwrap_or_default().trim();
    field("server_name:") == "valkey" || version_at_least(field("redis_version:"), (7, 2))
}

/// Whether `version` ("7.0.15", "10.0.1") is `(major, minor)` or later,
/// compared as numbers: as text "10.0" sorts before "7.2".
fn version_at_least(version: &str, (major, minor): (u64, u64)) -> bool {
    let mut parts = version.split('.').map(|part| part.parse::<u64>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) >= (major, minor)
}

/// Every recipe's name, in the document's order.
pub fn acl_recipe_names() -> Vec<&'static str> {
    COMMANDS_DOC
        .split("<!-- acl-recipe: ")
        .skip(1)
        .filter_map(|after| after.split_once(" -->").map(|(name, _)| name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::version_at_least;

    #[test]
    fn versions_compare_as_numbers() {
        assert!(!version_at_least("7.0.15", (7, 2)));
        assert!(version_at_least("7.2.0", (7, 2)));
        assert!(version_at_least("8.0.2", (7, 2)));
        assert!(version_at_least("10.0.1", (7, 2)));
        assert!(!version_at_least("6.10.0", (7, 2)));
    }
}
