//! A critical section end to end: four workers increment one counter with
//! a non-atomic read-modify-write, serialised by an rlock lock.
//!
//! Start a server with the module (`make run`), then:
//!
//! ```sh
//! cargo run -p rlock-client --example critical_section [redis://127.0.0.1:6379/]
//! ```

use redis::AsyncCommands;
use rlock_client::{Client, Error};

const WORKERS: usize = 4;
const ROUNDS: usize = 25;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args().nth(1).unwrap_or_else(|| "redis://127.0.0.1:6379/".into());
    // The URL in the error: the default may not be where the server is.
    let client = Client::open(&url).await.map_err(|err| format!("cannot connect to {url}: {err}"))?;
    let redis = redis::Client::open(url.as_str())?;
    let mut con = redis.get_multiplexed_async_connection().await?;
    let _: () = con.set("example:counter", 0).await?;

    let workers: Vec<_> = (0..WORKERS)
        .map(|worker| {
            // One handle per worker: each is its own lock owner.
            let lock = client.lock("example:counter-lock");
            let mut con = con.clone();
            tokio::spawn(async move {
                for _ in 0..ROUNDS {
                    // Waits for the lock; the watchdog keeps it while we work.
                    let guard = lock.lock().await?;
                    let work = async {
                        let value: i64 = con.get("example:counter").await?;
                        con.set::<_, _, ()>("example:counter", value + 1).await
                    };
                    tokio::select! {
                        // If the lock is lost (say, force-released), stop at once.
                        _ = guard.lost() => return Err(Error::NotOwner),
                        result = work => result?,
                    }
                    guard.unlock().await?;
                }
                println!("worker {worker} done");
                Ok::<_, Error>(())
            })
        })
        .collect();
    for worker in workers {
        worker.await??;
    }
    let total: i64 = con.get("example:counter").await?;
    println!("counter = {total} (expected {})", WORKERS * ROUNDS);
    Ok(())
}
