//! `wakeviz scan-points`'s command line (the command: `crate::commands::scan_points`).
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
#[command(
    about = "Find the idle-CPU scan's kprobe points in a debug vmlinux and print them as JSON",
    after_help = "For kernels that inline select_idle_cpu into select_task_rq_fair. The points \
are valid only for the kernel build the vmlinux is from (its build id is in the file). Debug \
vmlinux packages: linux-image-$(uname -r)-dbg (Debian), linux-image-$(uname -r)-dbgsym \
(Ubuntu), kernel-debuginfo (Fedora)."
)]
pub struct ScanPointsArgs {
    /// The vmlinux with DWARF debug info; by default the running kernel's, looked for where
    /// distributions install it (/usr/lib/debug/boot/vmlinux-RELEASE and others).
    #[arg(long, value_name = "PATH")]
    pub vmlinux: Option<PathBuf>,
    /// Write the points to FILE (mode 0600, never through a symbolic link) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// With --out: replace an existing FILE (the old one is kept as FILE.old).
    #[arg(long, requires = "out")]
    pub force: bool,
}
