use crate::engine::kind::Kind;
use crate::lock::Lock;
use crate::shared::Shared;
use std::sync::Arc;

/// Redisson's read-write lock: one name, one owner id, two sides. Get it
/// from [`Client::read_write_lock`](crate::Client::read_write_lock).
///
/// Readers share the lock; a writer excludes readers and other writers.
/// The writer may also read (its reads outlive its write: the lock then
/// goes on as read-locked); a reader waiting for the write side while it
/// reads waits for ever, as in Redisson. Waiters of both sides listen on
/// one channel: a write release wakes them all, a read release that frees
/// the lock every reader and one writer.
///
/// ```no_run
/// # async fn example(client: rlock_client::Client) -> rlock_client::Result<()> {
/// let catalog = client.read_write_lock("catalog");
/// let writing = catalog.write().lock().await?;
/// let reading = catalog.read().lock().await?; // the writer may read too
/// writing.unlock().await?; // the lock goes on as read-locked
/// reading.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ReadWriteLock {
    read: Lock,
    write: Lock,
}

impl std::fmt::Debug for ReadWriteLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadWriteLock")
            .field("name", &String::from_utf8_lossy(self.read.name()))
            .field("owner", &String::from_utf8_lossy(self.read.owner()))
            .finish()
    }
}

impl ReadWriteLock {
    pub(crate) fn new(shared: Arc<Shared>, name: &[u8], owner: (&[u8], bool)) -> Self {
        Self {
            read: Lock::new(shared.clone(), name, owner, Kind::Read),
            write: Lock::new(shared, name, owner, Kind::Write),
        }
    }

    /// The lock's name: its Redis key.
    pub fn name(&self) -> &[u8] {
        self.read.name()
    }

    /// The owner id both sides hold under (the write side's hash field is
    /// this with `:write` appended, as Redisson's).
    pub fn owner(&self) -> &[u8] {
        self.read.owner()
    }

    /// The read side ([`Kind::Read`]): held by any number of readers at
    /// once, never while someone else writes.
    pub fn read(&self) -> Lock {
        self.read.clone()
    }

    /// The write side ([`Kind::Write`]): one writer, no readers but the
    /// writer itself.
    pub fn write(&self) -> Lock {
        self.write.clone()
    }
}
