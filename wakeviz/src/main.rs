//! The `wakeviz` binary: the whole program is the library's [`wakeviz::main`].
fn main() -> std::process::ExitCode {
    wakeviz::main()
}
