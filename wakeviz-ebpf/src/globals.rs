//! Values userspace sets at load time (`EbpfLoader::override_global`), read with volatile loads
//! so the compiler cannot fold the defaults in. Offsets come from the running kernel's BTF or
//! from the tracefs `format` files; 0 means "unknown, do not read". The names are the list in
//! `wakeviz_common::names`, which userspace takes its strings from.
use aya_ebpf::Global;

macro_rules! declare {
    ($($name:ident),* $(,)?) => {
        $( #[unsafe(no_mangle)] pub static $name: Global<u64> = Global::new(0); )*
    };
}

wakeviz_common::for_each_global!(declare);
