//! `--serve ADDR`: an OpenMetrics `/metrics` endpoint (issue 14, part 3). Placeholder until
//! the server lands.
