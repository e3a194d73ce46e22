//! Random argument vectors (random arity, random bytes, huge values) sent
//! to every command never take the server down, and never touch keys that
//! are not locks.

use redis::{Commands, Connection, Value};
use testkit::{Rng, Server};

const CALLS: usize = 20_000;
const BATCH: usize = 200;
const COMMANDS: [&str; 6] =
    ["RLOCK.ACQUIRE", "RLOCK.RENEW", "RLOCK.RELEASE", "RLOCK.FORCERELEASE", "RLOCK.STATUS", "RLOCK.CANCEL"];
/// Keys of other people's data; no RLOCK command may change them.
const VICTIMS: [&str; 4] = ["victim:string", "victim:hash", "victim:list", "victim:zset"];

fn random_arg(rng: &mut Rng) -> Vec<u8> {
    match rng.below(12) {
        0 => {
            let len = rng.below(64) as usize;
            rng.bytes(len)
        }
        1 => {
            let len = if rng.chance(2) { 1 << 20 } else { 4096 };
            rng.bytes(len)
        }
        2 => (rng.below(u64::MAX) as i64).to_string().into_bytes(),
        3 => format!("-{}", rng.below(100_000)).into_bytes(),
        4 => "9".repeat(rng.below(400) as usize).into_bytes(),
        5 => format!("{}.{}", rng.below(1000), rng.below(1000)).into_bytes(),
        6 => b"".to_vec(),
        7 => rng
            .pick(&[
                b"0".as_slice(),
                b"1",
                b"30000",
                b"31536000000",
                b"31536000001",
                b"+5",
                b"1e9",
                b"0x10",
                b"ID",
                b"px",
                b"REPLY",
                b"FULL",
            ])
            .to_vec(),
        8 => rng.pick(&VICTIMS).as_bytes().to_vec(),
        _ => rng.pick(&[b"lock:a".as_slice(), b"lock:{b}", b"owner:1", b"owner:2", b"name", b"age"]).to_vec(),
    }
}

fn dump_victims(con: &mut Connection) -> Vec<Option<Vec<u8>>> {
    VICTIMS.iter().map(|k| redis::cmd("DUMP").arg(*k).query(con).unwrap()).collect()
}

#[test]
fn random_arguments_never_take_the_server_down() {
    let server = Server::shared();
    let mut con = server.connection();
    let _: () = con.set("victim:string", "v").unwrap();
    let _: () = con.hset_multiple("victim:hash", &[("name", "bob"), ("age", "x")]).unwrap();
    let _: () = con.rpush("victim:list", "v").unwrap();
    let _: () = con.zadd("victim:zset", "v", 1).unwrap();
    let victims = dump_victims(&mut con);

    let mut rng = Rng::from_env("fuzz");
    let (mut errors, mut replies) = (0, 0);
    for _ in 0..CALLS / BATCH {
        let mut pipe = redis::pipe();
        for _ in 0..BATCH {
            let command = pipe.cmd(rng.pick::<&str>(&COMMANDS));
            for _ in 0..rng.below(7) {
                command.arg(random_arg(&mut rng));
            }
        }
        // Errors come back per command; the batch itself must not fail.
        let results: Vec<redis::RedisResult<Value>> =
            pipe.ignore_errors().query(&mut con).expect("the server answered the batch");
        for result in results {
            match result {
                Ok(_) => replies += 1,
                Err(_) => errors += 1,
            }
        }
        let pong: String = redis::cmd("PING").query(&mut con).expect("the server is up");
        assert_eq!(pong, "PONG");
    }
    assert_eq!(dump_victims(&mut con), victims, "a lock command changed a key that is not a lock");
    assert!(
        errors > CALLS / 4 && replies > CALLS / 20,
        "both refusals ({errors}) and replies ({replies}) were exercised"
    );
    assert!(!server.log().contains("crashed"), "{}", server.log());
}
