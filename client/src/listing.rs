//! The locks on a server, as `RLOCK.LIST` walks them
//! ([`Client::list_locks`](crate::Client::list_locks)): one `SCAN` step per
//! page, fetched as the listing is read.

use crate::error::{Error, Result};
use crate::info::{bytes, int, lease, pairs, text};
use crate::shared::Shared;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

/// One key holding lock-family state.
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

/// A walk over the locks of the server, page by page (`SCAN`'s
/// guarantees: a lock there throughout is listed at least once, maybe
/// twice). Read it with [`LockListing::next`].
pub struct LockListing {
    shared: Arc<Shared>,
    pattern: Option<String>,
    /// The next page's cursor; `None` once the walk is done.
    cursor: Option<String>,
    page: VecDeque<ListedLock>,
}

impl LockListing {
    pub(crate) fn new(shared: Arc<Shared>, pattern: Option<&str>) -> Self {
        Self { shared, pattern: pattern.map(str::to_owned), cursor: Some("0".into()), page: VecDeque::new() }
    }

    /// The next lock, fetching pages as needed; `None` at the end.
    pub async fn next(&mut self) -> Option<Result<ListedLock>> {
        while self.page.is_empty() {
            let cursor = self.cursor.take()?;
            match self.fetch(&cursor).await {
                Ok(()) => {}
                Err(err) => {
                    self.cursor = Some(cursor); // the same page, if called again
                    return Some(Err(err));
                }
            }
        }
        self.page.pop_front().map(Ok)
    }

    async fn fetch(&mut self, cursor: &str) -> Result<()> {
        let mut list = redis::cmd("RLOCK.LIST");
        list.arg(cursor).arg("COUNT").arg(100);
        if let Some(pattern) = &self.pattern {
            list.arg("MATCH").arg(pattern);
        }
        let read = || async { Ok(list.query_async(&mut self.shared.connection.clone()).await?) };
        let (next, entries): (String, Vec<redis::Value>) =
            self.shared.options.retry.run(Error::is_transient, read).await?;
        for entry in entries {
            self.page.push_back(listed(entry)?);
        }
        self.cursor = (next != "0").then_some(next);
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
