//! Runs one guest: qemu TCG with the serial console in a file and one virtio-serial port (also a
//! file) for the results, a hard timeout, and unpacking of what the guest sent.
use std::{
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};

pub const QEMU: &str = "qemu-system-x86_64";

/// `Ok(version)` when qemu runs here, `Err(reason)` when it cannot.
pub fn probe() -> std::result::Result<String, String> {
    match Command::new(QEMU).arg("--version").output() {
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout)
            .lines()
            .next()
            .unwrap_or("")
            .to_owned()),
        Ok(o) => Err(format!(
            "{QEMU} --version failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!(
            "{QEMU} not runnable ({e}); install Debian's qemu-system-x86 (scripts/setup.sh does)"
        )),
    }
}

pub struct Boot<'a> {
    pub work: &'a Path,
    pub kernel: &'a Path,
    pub initrd: &'a Path,
    pub machine: Vec<String>,
    /// Hard cap on the whole guest.
    pub timeout: Duration,
    /// A guest whose console and output port have not grown for this long is hung: the guest
    /// logs every step, so silence, not total time, tells a hang from a slow shared host.
    pub silence: Duration,
}

pub struct Outcome {
    pub wall: Duration,
    /// Wall time from qemu's start until /init said it booted.
    pub to_init: Option<Duration>,
    pub console: PathBuf,
}

fn booted(console: &Path) -> bool {
    fs::read(console).is_ok_and(|b| b.windows(14).any(|w| w == b"wvz-vm: booted"))
}

fn file_len(path: &Path) -> u64 {
    fs::metadata(path).map_or(0, |m| m.len())
}

/// Last `n` meaningful lines of the guest console, for error messages.
pub fn console_tail(path: &Path, n: usize) -> String {
    let text = fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| !l.trim().is_empty())
        .collect();
    let start = lines.len().saturating_sub(n);
    if lines.is_empty() {
        return "    (console empty: the kernel printed nothing)".into();
    }
    lines[start..]
        .iter()
        .map(|l| format!("    | {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

impl Boot<'_> {
    /// Boots, waits for power-off (or kills qemu at the timeout or after a silence) and unpacks
    /// the guest's archive into `results`. A guest that stops before /init runs is booted again
    /// (twice at most): multi-threaded TCG has rare races with the kernel's boot-time code
    /// patching, and such a death says nothing about wakeviz. Deaths after /init started are
    /// failures.
    pub fn run(&self, results: &Path) -> Result<Outcome> {
        let console = self.work.join("console.log");
        let mut attempt = 1;
        loop {
            match self.run_once(results) {
                Ok(o) => return Ok(o),
                Err(e) if attempt < 3 && !booted(&console) => {
                    let text = fs::read(&console)
                        .map(|b| String::from_utf8_lossy(&b).into_owned())
                        .unwrap_or_default();
                    let why = text
                        .lines()
                        .find(|l| l.contains("Oops") || l.contains("panic") || l.contains("BUG"))
                        .map(|l| l.trim().to_owned())
                        // Killed by the watchdog, or died without a message: say which.
                        .unwrap_or_else(|| {
                            let e = format!("{e:#}");
                            let first = e.lines().next().unwrap_or("no kernel message");
                            first
                                .split("; qemu killed")
                                .next()
                                .unwrap_or(first)
                                .to_owned()
                        });
                    let keep = self.work.join(format!("console.attempt{attempt}.log"));
                    let _ = fs::rename(&console, &keep);
                    eprintln!(
                        "vm-test: the guest stopped before /init (attempt {attempt}: {why}; \
                         {}); booting again",
                        keep.display()
                    );
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn run_once(&self, results: &Path) -> Result<Outcome> {
        let console = self.work.join("console.log");
        let port = self.work.join("out.bin");
        let qemu_log = self.work.join("qemu.log");
        for f in [&console, &port] {
            let _ = fs::remove_file(f);
        }
        let mut cmd = Command::new(QEMU);
        cmd.args(&self.machine)
            .args(["-nodefaults", "-display", "none", "-no-reboot"])
            .arg("-kernel")
            .arg(self.kernel)
            .arg("-initrd")
            .arg(self.initrd)
            .args([
                "-append",
                // tsc=reliable: no TSC watchdog or boot-time sync check, so the kernel never
                // flips the sched_clock static key while all vCPUs run. That runtime code
                // patching raced with multi-threaded TCG once here (an int3 Oops at boot).
                "console=ttyS0 panic=-1 quiet loglevel=4 mitigations=off tsc=reliable",
            ])
            .arg("-serial")
            .arg(format!("file:{}", console.display()))
            .args(["-device", "virtio-serial"])
            .arg("-chardev")
            .arg(format!("file,id=out,path={}", port.display()))
            .args(["-device", "virtserialport,chardev=out,name=out"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(
                fs::File::create(&qemu_log)
                    .with_context(|| format!("creating {}", qemu_log.display()))?,
            );
        fs::write(self.work.join("qemu.cmdline"), format!("{cmd:?}\n"))?;
        let start = Instant::now();
        let mut child = cmd.spawn().with_context(|| format!("starting {QEMU}"))?;
        let mut to_init = None;
        let (mut seen, mut grew) = (0, Instant::now());
        let status = loop {
            if let Some(st) = child.try_wait().context("waiting for qemu")? {
                break st;
            }
            if to_init.is_none() && booted(&console) {
                to_init = Some(start.elapsed());
            }
            let size = file_len(&console) + file_len(&port);
            if size != seen {
                seen = size;
                grew = Instant::now();
            }
            let why = if start.elapsed() > self.timeout {
                Some(format!(
                    "the guest did not power off within {} s",
                    self.timeout.as_secs()
                ))
            } else if grew.elapsed() > self.silence {
                Some(format!(
                    "the guest printed nothing for {} s ({:.0} s after qemu started)",
                    self.silence.as_secs(),
                    start.elapsed().as_secs_f64()
                ))
            } else {
                None
            };
            if let Some(why) = why {
                let _ = child.kill();
                let _ = child.wait();
                bail!(
                    "{why}; qemu killed. Last console lines ({}):\n{}",
                    console.display(),
                    console_tail(&console, 25)
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        let wall = start.elapsed();
        if !status.success() {
            let err = fs::read_to_string(&qemu_log).unwrap_or_default();
            let err: Vec<&str> = err
                .lines()
                .filter(|l| !l.contains("TCG doesn't support requested feature"))
                .collect();
            bail!(
                "qemu exited with {status}: {}\nLast console lines:\n{}",
                err.join("\n"),
                console_tail(&console, 25)
            );
        }
        unpack(&port, results, self.work).map_err(|e| {
            e.context(format!(
                "the guest sent no usable results; last console lines ({}):\n{}",
                console.display(),
                console_tail(&console, 25)
            ))
        })?;
        Ok(Outcome {
            wall,
            to_init,
            console,
        })
    }
}

/// Finds "WAKEVIZ-VM-TAR <len>\n" in the port's byte stream and extracts the archive after it.
fn unpack(port: &Path, results: &Path, work: &Path) -> Result<()> {
    let bytes = fs::read(port).with_context(|| format!("reading {}", port.display()))?;
    let tag = b"WAKEVIZ-VM-TAR ";
    let at = bytes
        .windows(tag.len())
        .position(|w| w == tag)
        .with_context(|| {
            format!(
                "no WAKEVIZ-VM-TAR frame on the virtio-serial port ({} bytes received)",
                bytes.len()
            )
        })?;
    let rest = &bytes[at + tag.len()..];
    let nl = rest
        .iter()
        .position(|&b| b == b'\n')
        .context("truncated frame header")?;
    let len: usize = std::str::from_utf8(&rest[..nl])
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .context("bad frame length")?;
    let body = &rest[nl + 1..];
    if body.len() < len {
        bail!(
            "results archive truncated: {} of {len} bytes arrived",
            body.len()
        );
    }
    let tar = work.join("out.tar");
    fs::write(&tar, &body[..len])?;
    fs::create_dir_all(results)?;
    let o = Command::new("tar")
        .arg("-xf")
        .arg(&tar)
        .arg("-C")
        .arg(results)
        .output()
        .context("running tar")?;
    if !o.status.success() {
        bail!(
            "tar -xf {} failed: {}",
            tar.display(),
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    Ok(())
}
