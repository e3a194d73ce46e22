//! rlock-client as the user of docs/commands.md's `rlock-client` ACL
//! recipe (run as documented, `testkit::acl_recipe`): every kind, waits
//! by blocking connection and by pub/sub, on one server and in a cluster,
//! with no refusal in `ACL LOG`. A user the recipe's SUBSCRIBE is taken
//! from gets the refusal as an error, not a silent wait.

use rlock_client::{Client, ClientOptions, Error};
use std::time::Duration;
use testkit::{acl_log, acl_recipe, newer_than_redis_7_0, AclRecipe, Cluster, Server};

mod common;

const LEASE: Duration = Duration::from_secs(30);

/// `url` (`redis://host:port/`) with the recipe user's credentials.
fn as_user(url: &str, recipe: &AclRecipe) -> String {
    url.replacen("redis://", &format!("redis://{}:{}@", recipe.user(), recipe.password()), 1)
}

/// The recipe, and where the server has `CLIENT SETINFO` its line for it.
fn apply(server: &Server, recipe: &AclRecipe) {
    let mut admin = server.connection();
    recipe.apply(&mut admin);
    if newer_than_redis_7_0(&mut admin) {
        acl_recipe("rlock-client-setinfo").apply(&mut admin);
    }
    let () = redis::cmd("ACL").arg(&["LOG", "RESET"]).query(&mut server.connection()).unwrap();
}

/// The servers a waiter's calls reach, and whether its plain and fair
/// locks wait there on a blocking connection (a single server only).
struct Waiting<'a> {
    servers: Vec<&'a Server>,
    blocks: bool,
}

impl Waiting<'_> {
    /// Whether the waiter on `name` (of kind `kind`) waits: blocked in its
    /// acquire, or subscribed to a channel named after it (sharded or not).
    async fn on(&self, name: &str, kind: &str) -> bool {
        let pattern = format!("*{name}*");
        let mut waits = 0;
        for server in &self.servers {
            let mut admin = common::admin(server).await;
            if self.blocks && ["l", "f"].contains(&kind) {
                waits += testkit::rlock_info_async(&mut admin, "blocked").await;
                continue;
            }
            for list in ["CHANNELS", "SHARDCHANNELS"] {
                let cmd = redis::cmd("PUBSUB").arg(list).arg(&pattern).clone();
                waits += cmd.query_async::<Vec<Vec<u8>>>(&mut admin).await.unwrap().len() as i64;
            }
        }
        waits > 0
    }
}

/// Each kind taken by `holder` while `waiter` waits for it (by blocking
/// connection or pub/sub, as `waiter`'s options say), then released once
/// the waiter waits.
async fn every_kind(holder: &Client, waiter: &Client, prefix: &str, waiting: &Waiting<'_>) {
    let name = |kind: &str| format!("{prefix}{kind}");
    let wait = Duration::from_secs(10);
    let waits = |kind: &'static str| async move {
        testkit::eventually!(format!("the waiter on {}", name(kind)), waiting.on(&name(kind), kind).await);
    };

    let guard = holder.lock(name("l")).lock().await.unwrap();
    let lock = waiter.lock(name("l"));
    assert!(lock.try_lock(Duration::from_millis(20), Some(LEASE)).await.unwrap().is_none(), "held");
    let waiting = tokio::spawn(async move { lock.try_lock(wait, Some(LEASE)).await });
    waits("l").await;
    guard.unlock().await.unwrap();
    waiting.await.unwrap().unwrap().expect("granted after the release").unlock().await.unwrap();

    let guard = holder.fair_lock(name("f")).lock().await.unwrap();
    let fair = waiter.fair_lock(name("f"));
    let waiting = tokio::spawn(async move { fair.try_lock(wait, Some(LEASE)).await });
    waits("f").await;
    guard.unlock().await.unwrap();
    waiting.await.unwrap().unwrap().expect("granted after the release").unlock().await.unwrap();

    let guard = holder.read_write_lock(name("rw")).write().lock().await.unwrap();
    let read = waiter.read_write_lock(name("rw")).read();
    let waiting = tokio::spawn(async move { read.try_lock(wait, Some(LEASE)).await });
    waits("rw").await;
    guard.unlock().await.unwrap();
    waiting.await.unwrap().unwrap().expect("read after the write").unlock().await.unwrap();

    let fenced = holder.fenced_lock(name("fenced")).lock().await.unwrap();
    fenced.unlock().await.unwrap();

    let semaphore = holder.semaphore(name("s"));
    assert!(semaphore.try_set_permits(1).await.unwrap());
    semaphore.acquire(1).await.unwrap();
    let other = waiter.semaphore(name("s"));
    let waiting = tokio::spawn(async move { other.try_acquire(1, wait).await });
    waits("s").await;
    semaphore.release(1).await.unwrap();
    assert!(waiting.await.unwrap().unwrap(), "a permit after the release");

    let permits = holder.permit_semaphore(name("p"));
    assert!(permits.try_set_permits(1).await.unwrap());
    let permit = permits.acquire(LEASE).await.unwrap();
    let other = waiter.permit_semaphore(name("p"));
    let waiting = tokio::spawn(async move { other.try_acquire(LEASE, wait).await });
    waits("p").await;
    permit.release().await.unwrap();
    waiting.await.unwrap().unwrap().expect("a permit after the release").release().await.unwrap();

    let latch = holder.count_down_latch(name("c"));
    assert!(latch.try_set_count(1).await.unwrap());
    let other = waiter.count_down_latch(name("c"));
    let waiting = tokio::spawn(async move { other.wait_timeout(wait).await });
    waits("c").await;
    latch.count_down().await.unwrap();
    assert!(waiting.await.unwrap().unwrap(), "opened");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_recipe_user_runs_every_kind_with_blocking_and_pub_sub_waits() {
    let server = Server::start();
    let recipe = acl_recipe("rlock-client");
    apply(&server, &recipe);
    let url = as_user(&server.url(), &recipe);
    let connect = |options| Client::connect(redis::Client::open(url.as_str()).unwrap(), options);
    let blocking = connect(ClientOptions::default()).await.unwrap();
    let pub_sub = connect(ClientOptions::default().with_blocking_connections(0)).await.unwrap();
    every_kind(&pub_sub, &blocking, "app:blocking:", &Waiting { servers: vec![&server], blocks: true }).await;
    every_kind(&blocking, &pub_sub, "app:pubsub:", &Waiting { servers: vec![&server], blocks: false }).await;
    // A blocking wait given up (its connection killed), then the holder's.
    let guard = pub_sub.lock("app:given-up").lock().await.unwrap();
    assert!(blocking.lock("app:given-up").try_lock(Duration::from_millis(100), None).await.unwrap().is_none());
    guard.unlock().await.unwrap();
    drop((blocking, pub_sub));
    assert_eq!(acl_log(&mut server.connection()), Vec::<String>::new(), "no refusal");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_subscribe_is_an_error_not_a_silent_wait() {
    let server = Server::start();
    let recipe = acl_recipe("rlock-client");
    apply(&server, &recipe);
    let () = redis::cmd("ACL").arg(&["SETUSER", recipe.user(), "-subscribe"]).query(&mut server.connection()).unwrap();
    let url = as_user(&server.url(), &recipe);
    let client =
        Client::connect(redis::Client::open(url).unwrap(), ClientOptions::default().with_blocking_connections(0))
            .await
            .unwrap();
    let guard = client.lock("app:l").lock().await.unwrap();
    let lock = client.lock("app:l");
    let waited = lock.try_lock(Duration::from_secs(60), None);
    let refused = tokio::time::timeout(testkit::PATIENCE, waited).await.expect("no silent wait");
    match refused {
        Err(Error::Redis(err)) if err.code() == Some("NOPERM") => {}
        other => panic!("expected the SUBSCRIBE's NOPERM: {other:?}"),
    }
    guard.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_cluster_the_recipe_user_runs_every_kind() {
    let cluster = Cluster::start(3, 0);
    let recipe = acl_recipe("rlock-client");
    let port = |url: &String| url.trim_end_matches('/').rsplit(':').next().unwrap().parse().unwrap();
    let ports: Vec<u16> = cluster.urls().iter().map(port).collect();
    for &port in &ports {
        apply(cluster.node(port), &recipe);
    }
    let urls: Vec<String> = cluster.urls().iter().map(|url| as_user(url, &recipe)).collect();
    let connect = |options| Client::connect_cluster(urls.clone(), options);
    let blocking = connect(ClientOptions::default()).await.unwrap();
    let pub_sub = connect(ClientOptions::default().with_blocking_connections(0)).await.unwrap();
    // Names spread over the primaries.
    let waiting = Waiting { servers: ports.iter().map(|&port| cluster.node(port)).collect(), blocks: false };
    for prefix in ["app:a:", "app:b:", "app:c:", "app:d:"] {
        every_kind(&pub_sub, &blocking, prefix, &waiting).await;
    }
    drop((blocking, pub_sub));
    for port in ports {
        assert_eq!(acl_log(&mut cluster.node(port).connection()), Vec::<String>::new(), "no refusal on {port}");
    }
}
