//! Prediction against reality (issue 13, part 3): a shadow policy's figures on baseline runs
//! against the figures measured where the kernel used the setting that policy models.
//! Placeholder until it lands.
