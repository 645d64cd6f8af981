use std::path::PathBuf;

/// Why a recording could not be read (or written). Callers branch on these: a damaged chunk
/// after good ones is a warning, a bad preamble is fatal.
///
/// Every message is one line that already contains the OS error: no variant exposes the
/// `io::Error` as its `source()`, because `anyhow`'s `{:#}` would print it a second time.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    #[error("{path}: {err}")]
    Io { path: PathBuf, err: std::io::Error },
    #[error("{path}: not a regular file ({kind}); only regular files are replayed")]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("{path}: not a wakeviz recording (bad magic at offset 0)")]
    NotWakeviz { path: PathBuf },
    #[error(
        "{path}: written by a newer wakeviz (format version {found} at offset 8, this build reads up to {supported})"
    )]
    NewerVersion {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error(
        "{path}: unsupported format version {found} at offset 8 (this build reads versions 1 to {supported})"
    )]
    BadVersion {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error("{path}: truncated {what} at offset {offset}")]
    Truncated {
        path: PathBuf,
        what: &'static str,
        offset: u64,
    },
    #[error("{path}: corrupt header at offset {offset}: {msg}")]
    BadHeader {
        path: PathBuf,
        offset: u64,
        msg: String,
    },
    #[error("{path}: chunk {index} at offset {offset} is damaged: {msg}")]
    BadChunk {
        path: PathBuf,
        index: u64,
        offset: u64,
        msg: String,
    },
    #[error("write failed: {0}")]
    Write(std::io::Error),
}
