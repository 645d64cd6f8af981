//! `/proc/kallsyms`, read at most once per probe load: the kernel formats all of its several
//! megabytes again on every read (about 0.13 s on a 2-vCPU development machine, far more in
//! an emulated guest), and the loader asks it whether each function exists and where the
//! wake-up entries are.
use std::cell::OnceCell;

#[derive(Default)]
pub struct Kallsyms(OnceCell<Result<String, String>>);

impl Kallsyms {
    /// The whole text, or why it could not be read.
    pub fn text(&self) -> Result<&str, &str> {
        self.0
            .get_or_init(|| {
                std::fs::read_to_string("/proc/kallsyms")
                    .map_err(|e| format!("/proc/kallsyms: {e}"))
            })
            .as_deref()
            .map_err(String::as_str)
    }

    /// Whether the running kernel has a symbol `name` (names are listed even when addresses
    /// are hidden); `None` when the file cannot be read.
    pub fn has(&self, name: &str) -> Option<bool> {
        let text = self.text().ok()?;
        Some(
            text.lines()
                .any(|l| l.split_whitespace().nth(2) == Some(name)),
        )
    }
}
