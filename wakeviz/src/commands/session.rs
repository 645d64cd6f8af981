//! What every capture does around its probes, the streaming one (`main`'s live run) and the
//! in-kernel aggregate one alike, with or without `-- CMD`, in this order:
//!
//! 1. [`Session::begin`]: the checks that change nothing (the command can start, the topology
//!    reads), the signal handlers, and the threads that will copy the command's output (every
//!    thread wakeviz runs exists before the capture reads its list of own threads); a run
//!    refused here leaves nothing behind;
//! 2. the mode's own checks (a recording path, a listening address);
//! 3. [`Session::set_features`]: the scheduler features, restored by the guard on every way
//!    out of the run, set before the probes load;
//! 4. the probes load; [`Session::run_meta`] describes the run for the recording and the
//!    reports (label, command, the features as the kernel ran with them);
//! 5. once the capture runs, [`Session::workload`] starts the command, so its first wakeups
//!    are seen.
use wakeviz_core::{run::RunMeta, topology::Topology};

use crate::{capture::meta, cli::Cli, command, features, signals};

pub struct Session {
    store: features::Store,
    /// Restores the features it set when dropped: it lives as long as the session.
    features: Option<features::Guard>,
    argv: Vec<String>,
    /// `-- CMD`'s output copiers, started here so that they exist before the capture.
    tees: Option<command::Tees>,
}

impl Session {
    /// The checks that change nothing, then the signal handlers; the machine's topology.
    pub fn begin(cli: &Cli) -> anyhow::Result<(Self, Topology)> {
        if !cli.command.is_empty() {
            // Before anything is attached or created: a command that cannot start leaves nothing.
            command::check(&cli.command)?;
        }
        signals::install();
        let topo = meta::topology(cli.topology.as_deref())?;
        let argv = cli
            .command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let s = Self {
            store: features::Store::new(cli.sched_features_file.as_deref()),
            features: None,
            tees: (!cli.command.is_empty()).then(command::Tees::start),
            argv,
        };
        Ok((s, topo))
    }

    /// Sets `--sched-feature` for the run (after every check that needs no change, before the
    /// probes load: a bad name or no debugfs leaves nothing attached or run).
    pub fn set_features(&mut self, cli: &Cli) -> Result<(), features::FeatureError> {
        if !cli.sched_features.is_empty() {
            self.features = Some(features::apply(
                self.store.clone(),
                &cli.sched_features,
                cli.restore_leftovers,
            )?);
        }
        Ok(())
    }

    /// The command line of `-- CMD`, as text.
    pub fn argv(&self) -> &[String] {
        &self.argv
    }

    /// The run's metadata: `--label` (else `default_label`), the command, and the scheduler
    /// features as read after they were set: what the kernel ran with.
    pub fn run_meta(&self, cli: &Cli, default_label: Option<String>) -> RunMeta {
        let mut run = meta::run_meta(
            cli.label.clone().or(default_label),
            (!self.argv.is_empty()).then(|| self.argv.clone()),
        );
        if self.features.is_some() || cli.sched_features_file.is_some() {
            run.sched_features = features::state(&self.store).ok();
        }
        if let Some(guard) = &self.features {
            run.sched_feature_overrides = guard.requested().to_vec();
        }
        // The scope is fixed when the run starts: a `-- CMD` run is about CMD unless told.
        run.scope = match &cli.scope {
            Some(s) => s.0.clone(),
            None => (!self.argv.is_empty()).then_some(wakeviz_core::analysis::Filter::Command),
        };
        run
    }

    /// Starts `-- CMD` (none without one). `pass`: the command gets the terminal's stdin and
    /// output (no dashboard holds it).
    pub fn workload(
        &mut self,
        cli: &Cli,
        pass: bool,
    ) -> Result<Option<command::Workload>, command::SpawnError> {
        if cli.command.is_empty() {
            return Ok(None);
        }
        command::Workload::spawn(
            &cli.command,
            self.tees.take().unwrap_or_else(command::Tees::start),
            pass,
            cli.report.is_some(),
            cli.keep_command_on_exit,
        )
        .map(Some)
    }
}
