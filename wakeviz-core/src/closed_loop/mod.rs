//! Closed-loop prediction: the extracted workload ([`crate::workload::Shape`]) run again, in
//! simulation, under one shadow policy, so that the workload reacts to the policy's
//! placements (a task placed behind a busy CPU starts later and wakes its partner later),
//! which the open-loop shadow, scoring the recorded events, cannot show.
//!
//! The model, stated:
//! - **Tasks** follow [`crate::workload::rtapp::plan`]: a star's hub, once every client has
//!   answered, runs and wakes every client; a client runs, answers and sleeps. A round's
//!   last answer wakes the hub; another answer that finds it asleep wakes it as often as such
//!   answers did in the recording (a hub that reads answers as they come is woken by each,
//!   one still busy finds them waiting), and the hub then runs a short burst. A task outside any star runs, then sleeps for a length drawn from its own
//!   distribution and is woken by a timer on the CPU it slept on. CPU-bound tasks never sleep.
//!   Run and sleep lengths are drawn from each task's recorded quantiles (piecewise uniform
//!   between them), with a seeded generator: the same seed gives the same events.
//! - **CPUs** ([`cpu`]) are run queues served in order, a running task keeping the CPU for
//!   its burst or a slice (3 ms) when others wait; a woken task never preempts. A CPU going
//!   idle pulls a waiting task from the busiest queue of its LLC (the kernel's newidle
//!   balance, reduced to one rule); there is no periodic balancing.
//! - **Placement**: each wakeup is handed to a [`crate::shadow::ShadowEval`] fed with the
//!   simulated events, so the policy decides on the simulated machine's state exactly as it
//!   does in the open-loop shadow, and the simulation follows that policy's answer.
//!
//! The output is an event stream like a capture's (waking, select, migrate, wakeup,
//! switch), which the ordinary analysis folds into the same figures as a recording.
mod cpu;
mod sample;
mod sim;
mod tasks;

pub use sim::{Config, SimError, Summary, names, simulate};
