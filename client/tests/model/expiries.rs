//! Which lock keys the server expired, as the server tells it (keyspace
//! notifications), placed among markers the model publishes: a watchdog
//! hold whose lease ran out on the server (a client starved of the CPU
//! for longer than a lease renews late) shows as an expiry of its key
//! after the marker published once it was granted; a release or delete
//! never does.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use testkit::{Server, PATIENCE, POLL};
use tokio::time::Instant;

const MARKERS: &[u8] = b"model-marker";
const EXPIRED: &str = "__keyevent@*__:expired";
/// How long a published marker takes to reach a subscribed subscriber at
/// most, a loaded machine's delays included; past it, it is published again.
const RESUBSCRIBED: Duration = Duration::from_secs(1);

/// Server config that publishes key expiries.
pub const NOTIFY: (&str, &str) = ("notify-keyspace-events", "Ex");

#[derive(Debug, Clone, PartialEq, Eq)]
enum Event {
    Expired(Vec<u8>),
    Marker(u64),
}

/// The events, in the order the server sent them, from a subscriber
/// thread that subscribes again after a restart (events while it is away
/// are missing: a marker not seen proves nothing).
pub struct Expiries {
    events: Arc<Mutex<Vec<Event>>>,
    stop: Arc<AtomicBool>,
    next_marker: u64,
}

impl Expiries {
    pub fn start(server: &Server) -> Self {
        let (events, stop) = (Arc::default(), Arc::new(AtomicBool::new(false)));
        let (port, log, stopped) = (server.port(), Arc::clone(&events), Arc::clone(&stop));
        std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                // A refused or broken connection: the server is restarting.
                let _ = listen(port, &log);
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        Self { events, stop, next_marker: 0 }
    }

    /// Publishes a new marker; returns it.
    pub async fn mark(&mut self, admin: &mut redis::aio::ConnectionManager) -> u64 {
        let marker = self.reserve();
        let _: redis::RedisResult<i64> = redis::cmd("PUBLISH").arg(MARKERS).arg(marker).query_async(admin).await;
        marker
    }

    /// A new marker, to publish later (with [`mark_holder`]).
    pub fn reserve(&mut self) -> u64 {
        self.next_marker += 1;
        self.next_marker
    }

    /// Whether `marker` reached the subscriber.
    pub fn seen(&self, marker: u64) -> bool {
        self.position(marker).is_some()
    }

    /// Publishes a marker until the subscriber sees one (at most
    /// [`PATIENCE`]): every expiry the server ran before it is then in.
    /// `None` when none was seen (the subscriber stayed away).
    pub async fn barrier(&mut self, admin: &mut redis::aio::ConnectionManager) -> Option<u64> {
        let deadline = Instant::now() + PATIENCE;
        while Instant::now() < deadline {
            let marker = self.mark(admin).await;
            // A marker published while the subscriber was away (a restart) is lost.
            let lost_by = Instant::now() + RESUBSCRIBED;
            while Instant::now() < lost_by {
                if self.position(marker).is_some() {
                    return Some(marker);
                }
                tokio::time::sleep(POLL).await;
            }
        }
        None
    }

    /// Whether `key` expired after `since` and before `until` (markers).
    pub fn expired_between(&self, key: &[u8], since: u64, until: u64) -> bool {
        let (Some(from), Some(to)) = (self.position(since), self.position(until)) else { return false };
        let events = self.events.lock().unwrap();
        events[from..to].iter().any(|event| *event == Event::Expired(key.to_vec()))
    }

    fn position(&self, marker: u64) -> Option<usize> {
        self.events.lock().unwrap().iter().position(|event| *event == Event::Marker(marker))
    }
}

/// Publishes `marker` with a read of whether `owner` holds `key`, in one
/// transaction: an expiry of `key` after the marker ended a hold present
/// then. `None` when the server did not answer.
pub async fn mark_holder(
    admin: &mut redis::aio::ConnectionManager,
    marker: u64,
    key: &str,
    owner: &[u8],
) -> Option<super::Marked> {
    let mut read_and_mark = redis::pipe();
    read_and_mark.atomic().cmd("HEXISTS").arg(key).arg(owner).cmd("PUBLISH").arg(MARKERS).arg(marker).ignore();
    let (held,): (bool,) = read_and_mark.query_async(admin).await.ok()?;
    Some(super::Marked { marker, held })
}

impl Drop for Expiries {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One subscription, until its connection ends.
fn listen(port: u16, log: &Mutex<Vec<Event>>) -> std::io::Result<()> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    let patterns = [EXPIRED.as_bytes(), MARKERS];
    let mut command = format!("*{}\r\n$10\r\nPSUBSCRIBE\r\n", patterns.len() + 1).into_bytes();
    for pattern in patterns {
        command.extend(format!("${}\r\n", pattern.len()).as_bytes());
        command.extend(pattern);
        command.extend(b"\r\n");
    }
    stream.write_all(&command)?;
    let mut reader = BufReader::new(stream);
    loop {
        let parts = read_array(&mut reader)?;
        // pmessage, pattern, channel, payload
        if parts.len() != 4 || parts[0] != b"pmessage" {
            continue;
        }
        let event = match parts[2] == MARKERS {
            true => String::from_utf8_lossy(&parts[3]).parse().ok().map(Event::Marker),
            false => Some(Event::Expired(parts[3].clone())),
        };
        log.lock().unwrap().extend(event);
    }
}

/// A RESP array of bulk strings and integers (integers as their text).
fn read_array(reader: &mut impl BufRead) -> std::io::Result<Vec<Vec<u8>>> {
    let closed = || std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Err(closed());
    }
    let count: usize = line.trim_end().strip_prefix('*').and_then(|n| n.parse().ok()).unwrap_or(0);
    let mut parts = Vec::with_capacity(count);
    for _ in 0..count {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Err(closed());
        }
        let header = line.trim_end();
        match header.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()) {
            Some(len) => {
                let mut bulk = vec![0; len + 2];
                reader.read_exact(&mut bulk)?;
                bulk.truncate(len);
                parts.push(bulk);
            }
            None => parts.push(header.get(1..).unwrap_or("").as_bytes().to_vec()),
        }
    }
    Ok(parts)
}
