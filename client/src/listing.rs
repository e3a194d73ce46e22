//! The locks on a server, as `RLOCK.LIST` walks them
//! ([`Client::list_locks`](crate::Client::list_locks)): one `SCAN` step per
//! page, fetched as the listing is read.

use crate::error::{Error, Result};
use crate::info::{bytes, int, lease, pairs, text};
use crate::shared::Shared;
use crate::transport::cluster::Node;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

/// One key holding lock-family state.
///
/// ```no_run
/// # async fn example(client: rlock_client::Client) -> rlock_client::Result<()> {
/// let mut listing = client.list_locks(None);
/// while let Some(listed) = listing.next().await {
///     let listed = listed?;
///     println!("{} ({}): {} holders, ttl {:?}", String::from_utf8_lossy(&listed.name), listed.kind, listed.holders, listed.ttl);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListedLock {
    /// The key: the lock's name.
    pub name: Vec<u8>,
    /// `lock`, `fair`, `read-write`, `fenced` or `permit-semaphore`.
    pub kind: String,
    /// How many hold it.
    pub holders: u64,
    /// The key's time to live; `None` without expiry.
    pub ttl: Option<Duration>,
}

/// A walk over the locks of the server, or of every primary of a
/// cluster one after the other, page by page (`SCAN`'s guarantees: a lock
/// there throughout is listed at least once, maybe twice). Read it with
/// [`LockListing::next`].
///
/// ```no_run
/// # async fn example(client: rlock_client::Client) -> rlock_client::Result<()> {
/// let mut orders = client.list_locks(Some("orders:*"));
/// let mut count = 0;
/// while let Some(listed) = orders.next().await {
///     listed?;
///     count += 1;
/// }
/// println!("{count} order locks");
/// # Ok(()) }
/// ```
pub struct LockListing {
    shared: Arc<Shared>,
    pattern: Option<String>,
    /// The servers still to walk, the current one first, with its next
    /// page's cursor; `None` until first read.
    servers: Option<VecDeque<Option<Node>>>,
    cursor: String,
    page: VecDeque<ListedLock>,
}

/// How long reading a cluster's primaries may take.
const SLOT_MAP_TIMEOUT: Duration = Duration::from_secs(5);

impl LockListing {
    pub(crate) fn new(shared: Arc<Shared>, pattern: Option<&str>) -> Self {
        Self { shared, pattern: pattern.map(str::to_owned), servers: None, cursor: "0".into(), page: VecDeque::new() }
    }

    /// The next lock, fetching pages as needed; `None` at the end. After
    /// an error, calling again fetches the same page again.
    pub async fn next(&mut self) -> Option<Result<ListedLock>> {
        while self.page.is_empty() {
            if self.servers.is_none() {
                match self.shared.connection.key_servers(SLOT_MAP_TIMEOUT).await {
                    Ok(servers) => self.servers = Some(servers.into()),
                    Err(err) => return Some(Err(err.into())),
                }
            }
            let server = self.servers.as_ref()?.front()?.clone();
            if let Err(err) = self.fetch(server.as_ref()).await {
                return Some(Err(err));
            }
        }
        self.page.pop_front().map(Ok)
    }

    /// One page of `server`; at its last, the walk moves to the next server.
    async fn fetch(&mut self, server: Option<&Node>) -> Result<()> {
        let mut list = redis::cmd("RLOCK.LIST");
        list.arg(&self.cursor).arg("COUNT").arg(100);
        if let Some(pattern) = &self.pattern {
            list.arg("MATCH").arg(pattern);
        }
        let read = || async { Ok(self.shared.connection.clone().query_on(server, list.clone()).await?) };
        let (next, entries): (String, Vec<redis::Value>) =
            self.shared.options.retry.run(Error::is_transient, read).await?;
        for entry in entries {
            self.page.push_back(listed(entry)?);
        }
        if next == "0" {
            self.servers.as_mut().map(VecDeque::pop_front);
        }
        self.cursor = next;
        Ok(())
    }
}

fn listed(entry: redis::Value) -> Result<ListedLock> {
    let fields = pairs(entry)?;
    Ok(ListedLock {
        name: bytes(&fields, "key")?,
        kind: text(&fields, "kind")?,
        holders: int(&fields, "holders")?.max(0) as u64,
        ttl: lease(int(&fields, "ttl_ms")?),
    })
}
