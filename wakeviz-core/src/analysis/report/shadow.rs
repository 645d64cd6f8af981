//! The shadow section of `--report text`, rendered from the typed shadow report.
