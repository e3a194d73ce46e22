//! One step of a differential run of Redisson's scripts: the same call
//! through Lua on one name (filter off) and through the filter's rewrite
//! on a twin name (filter on), on one server; what each did must be the
//! same once the twin's name is read as the other's.

use super::set_mode;
use redis::{Connection, Value};
use testkit::{publications, Server};

/// A script call's reply, or its error's text; `None` for a step that
/// makes no script call.
pub type Reply = Option<Result<Value, String>>;

/// A key as TYPE, value and PTTL show it (`describe`).
pub type KeyState = (String, i64);

/// The two names a run compares: `lua`'s calls run as Lua, `native`'s
/// are rewritten.
pub struct Twins {
    pub lua: &'static str,
    pub native: &'static str,
}

impl Twins {
    /// Runs `call` on each twin and checks that both sent the same
    /// keyspace events and messages, once the twin's name is read as the
    /// other's (expiries are left out: the server announces them when it
    /// gets to them, not in the step that set them). Returns both replies.
    pub fn step(
        &self,
        server: &Server,
        context: &str,
        mut call: impl FnMut(&mut Connection, &str) -> Reply,
    ) -> [Reply; 2] {
        let mut replies = [None, None];
        let messages = publications(server, |con| {
            set_mode(con, "off");
            replies[0] = call(con, self.lua);
            set_mode(con, "native");
            replies[1] = call(con, self.native);
        });
        let stepped =
            messages.into_iter().filter(|(channel, message)| message != "expired" && !channel.ends_with(":expired"));
        let (lua, native): (Vec<_>, Vec<_>) =
            stepped.partition(|(channel, message)| !channel.contains(self.native) && !message.contains(self.native));
        let native: Vec<_> =
            native.into_iter().map(|(channel, message)| (self.as_lua(&channel), self.as_lua(&message))).collect();
        assert_eq!(lua, native, "{context}: keyspace events and messages");
        replies
    }

    /// Checks that the twins' keys (`keys` of each name) hold the same,
    /// with PTTLs a moment apart. A key about to expire on one twin may be
    /// gone on the other (they were written a moment apart): then both are
    /// read again once it expired.
    pub fn assert_same_keys(&self, con: &mut Connection, context: &str, keys: impl Fn(&str) -> Vec<Vec<u8>>) {
        let read = |con: &mut Connection| {
            [self.lua, self.native].map(|name| {
                let described = keys(name).into_iter().map(|key| describe(con, &key));
                described.map(|(text, pttl)| (self.as_lua(&text), pttl)).collect::<Vec<_>>()
            })
        };
        let [mut lua, mut native] = read(con);
        let expiring = |states: &[KeyState]| states.iter().any(|(_, pttl)| (0..=200).contains(pttl));
        if !same_keys(&lua, &native) && (expiring(&lua) || expiring(&native)) {
            std::thread::sleep(std::time::Duration::from_millis(250));
            [lua, native] = read(con);
        }
        assert!(same_keys(&lua, &native), "{context}: keys\n{lua:?}\n{native:?}");
    }

    fn as_lua(&self, text: &str) -> String {
        text.replace(self.native, self.lua)
    }
}

fn same_keys(lua: &[KeyState], native: &[KeyState]) -> bool {
    lua.len() == native.len()
        && lua.iter().zip(native).all(|((a, a_ttl), (b, b_ttl))| {
            a == b && (a_ttl == b_ttl || (*a_ttl >= 0 && *b_ttl >= 0 && (a_ttl - b_ttl).abs() <= 50))
        })
}

/// A key's name, TYPE and value (a hash's fields sorted), and its PTTL.
pub fn describe(con: &mut Connection, key: &[u8]) -> KeyState {
    let kind: String = redis::cmd("TYPE").arg(key).query(con).unwrap();
    let value = match kind.as_str() {
        "hash" => {
            let mut fields: Vec<(String, String)> = redis::cmd("HGETALL").arg(key).query(con).unwrap();
            fields.sort();
            format!("{fields:?}")
        }
        // A key may run out between TYPE and GET.
        "string" => redis::cmd("GET").arg(key).query::<Option<String>>(con).unwrap().unwrap_or_default(),
        "list" => format!("{:?}", redis::cmd("LRANGE").arg(key).arg(0).arg(-1).query::<Vec<String>>(con).unwrap()),
        _ => String::new(),
    };
    let pttl: i64 = redis::cmd("PTTL").arg(key).query(con).unwrap();
    (format!("{} {kind} {value}", String::from_utf8_lossy(key)), pttl)
}
