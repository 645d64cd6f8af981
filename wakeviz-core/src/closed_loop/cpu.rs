//! The simulated CPUs: who runs, who waits, in order.
use std::collections::VecDeque;

#[derive(Default)]
pub struct Cpu {
    /// The running task (0: idle).
    pub cur: u32,
    pub queue: VecDeque<u32>,
    /// Bumped whenever `cur` changes, so a stale burst or slice end is recognised.
    pub epoch: u64,
}

impl Cpu {
    /// Tasks on this CPU, running or waiting.
    pub fn load(&self) -> usize {
        usize::from(self.cur != 0) + self.queue.len()
    }
}
