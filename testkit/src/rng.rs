//! A small seeded generator (SplitMix64) so random tests can be replayed:
//! each test prints its seed and reads `RLOCK_SEED` to repeat a run.

pub struct Rng(u64);

impl Rng {
    /// Seeded from `RLOCK_SEED`, else from the clock; the seed is printed.
    pub fn from_env(test: &str) -> Self {
        Self::from_seed(Self::seed_from_env(test))
    }

    /// `RLOCK_SEED`, else one from the clock; printed with the test's name.
    pub fn seed_from_env(test: &str) -> u64 {
        let seed = std::env::var("RLOCK_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
        });
        eprintln!("{test}: RLOCK_SEED={seed}");
        seed
    }

    pub fn from_seed(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }
}
