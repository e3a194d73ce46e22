//! [`until_ok`]: [`eventually!`](crate::eventually!) for a caller that
//! reports its own failure (a model test printing its steps), so it gets
//! the last error back instead of a panic.

use crate::POLL;
use std::time::{Duration, Instant};

/// Polls `check` every [`POLL`] until it is `Ok`, for at most `patience`;
/// its last `Err` once that has passed.
pub async fn until_ok<T, E>(patience: Duration, mut check: impl AsyncFnMut() -> Result<T, E>) -> Result<T, E> {
    let deadline = Instant::now() + patience;
    loop {
        match check().await {
            Err(err) if Instant::now() < deadline => drop(err),
            done => return done,
        }
        tokio::time::sleep(POLL).await;
    }
}
