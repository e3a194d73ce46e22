//! The one driver of the differential tests: a seeded loop of sequences of
//! steps. Each step is drawn by the test's own generator and run on both
//! twins by its own executor, which compares what the twins replied and
//! hold; when a comparison fails, the driver prints the seed and the steps
//! of the sequence so far, to replay it (`RLOCK_SEED`).

use crate::Rng;
use std::fmt::Debug;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// Where a step is in the run, and its description for failure messages.
pub struct At<'a> {
    pub sequence: usize,
    /// The step's index in its sequence.
    pub index: usize,
    /// The step's index in the whole run (for `StepMessages`).
    pub step: usize,
    /// "sequence S step I: <the drawn step>".
    pub context: &'a str,
}

/// A differential test: its generator and its executor.
pub trait Differential {
    /// One step as drawn: what it does and with what arguments.
    type Step: Debug;

    /// Before each sequence (a fresh keyspace, counters of its own).
    fn reset(&mut self) {}

    /// Draws the next step.
    fn draw(&mut self, rng: &mut Rng) -> Self::Step;

    /// Runs `step` on both twins and asserts that they agree.
    fn run(&mut self, step: &Self::Step, at: &At);
}

/// Runs `sequences` sequences of `steps` steps of `test`, seeded from
/// `RLOCK_SEED` or the clock (the seed is printed under `label`).
pub fn drive<D: Differential>(label: &str, sequences: usize, steps: usize, test: &mut D) {
    let seed = Rng::seed_from_env(label);
    let mut rng = Rng::from_seed(seed);
    let mut step = 0;
    for sequence in 0..sequences {
        test.reset();
        let mut history: Vec<String> = Vec::new();
        for index in 0..steps {
            let drawn = test.draw(&mut rng);
            history.push(format!("{drawn:?}"));
            let context = format!("sequence {sequence} step {index}: {drawn:?}");
            let at = At { sequence, index, step, context: &context };
            if let Err(failure) = catch_unwind(AssertUnwindSafe(|| test.run(&drawn, &at))) {
                eprintln!("{label}: failed with RLOCK_SEED={seed} at {context}; the sequence's steps:");
                for (number, past) in history.iter().enumerate() {
                    eprintln!("  {number}: {past}");
                }
                resume_unwind(failure);
            }
            step += 1;
        }
    }
}
