#!/usr/bin/env bash
# Install wakeviz system-wide: the binary, its man page, shell completions and the systemd unit
# of the metrics exporter (installed, not enabled).
#   sudo scripts/install.sh                        under /usr/local
#   PREFIX=/usr DESTDIR=/tmp/pkg scripts/install.sh   staged, for a package
# Environment:
#   PREFIX       install prefix (default /usr/local)
#   DESTDIR      staging root prepended to every path (default: none)
#   WAKEVIZ_BIN  an already built binary to install instead of building one
#                (default: `cargo build --release -p wakeviz`, which needs scripts/setup.sh's
#                toolchain: run scripts/run.sh once first)
# The man page and completions come from the binary itself (`wakeviz --generate ...`), so they
# describe exactly the options it has.
set -euo pipefail
cd "$(dirname "$0")/.."

prefix=${PREFIX:-/usr/local}
dest=${DESTDIR:-}
case $prefix in
/*) ;;
*) echo "install.sh: PREFIX must be an absolute path, not '$prefix'" >&2; exit 2 ;;
esac

bin=${WAKEVIZ_BIN:-}
if [ -z "$bin" ]; then
    cargo build --release -p wakeviz
    bin=target/release/wakeviz
fi
[ -x "$bin" ] || { echo "install.sh: $bin is not an executable" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$bin" --generate man >"$tmp/wakeviz.1"
"$bin" --generate bash >"$tmp/wakeviz.bash"
"$bin" --generate zsh >"$tmp/_wakeviz"
"$bin" --generate fish >"$tmp/wakeviz.fish"
sed "s|^ExecStart=/usr/local/bin/wakeviz |ExecStart=$prefix/bin/wakeviz |" \
    packaging/wakeviz-serve.service >"$tmp/wakeviz-serve.service"

# Installs one file. A root-run install must not write through a symbolic link someone
# planted at the target (or at a directory on the way), so links are refused, never followed;
# the file is written beside the target and renamed over it, so a reader never sees half a file.
put() {
    local mode=$1 src=$2 target=$3
    local dir
    dir=$(dirname "$target")
    local d=$dir stop=${dest%/}
    while [ "$d" != / ] && [ "$d" != . ] && [ "$d" != "${stop:-/}" ]; do
        if [ -L "$d" ] && ! is_system_link "$d"; then
            echo "install.sh: refusing to install through the symbolic link $d" >&2
            exit 1
        fi
        d=$(dirname "$d")
    done
    if [ -L "$target" ]; then
        echo "install.sh: refusing to overwrite the symbolic link $target" >&2
        exit 1
    fi
    if [ -e "$target" ] && [ ! -f "$target" ]; then
        echo "install.sh: $target exists and is not a regular file" >&2
        exit 1
    fi
    install -d -m 0755 "$dir"
    local part
    part=$(mktemp "$dir/.wakeviz-install.XXXXXX")
    install -m "$mode" "$src" "$part"
    mv -fT "$part" "$target"
    echo "installed $target"
}

# Links the distribution itself sets up (/lib -> usr/lib on merged-/usr systems, /usr/local/man
# on some) are part of the system: a link only root could have made (owned by root, in a
# root-owned directory nobody else may write) is followed. A staging tree (DESTDIR) is built
# by this script alone, so a link in it is never followed.
is_system_link() {
    local parent
    parent=$(dirname "$1")
    [ -z "$dest" ] && [ "$(stat -c %u "$1")" = 0 ] && [ "$(stat -c %u "$parent")" = 0 ] &&
        [ $((0$(stat -c %a "$parent") & 022)) = 0 ]
}

root=$dest$prefix
put 0755 "$bin" "$root/bin/wakeviz"
put 0644 "$tmp/wakeviz.1" "$root/share/man/man1/wakeviz.1"
put 0644 "$tmp/wakeviz.bash" "$root/share/bash-completion/completions/wakeviz"
put 0644 "$tmp/_wakeviz" "$root/share/zsh/site-functions/_wakeviz"
put 0644 "$tmp/wakeviz.fish" "$root/share/fish/vendor_completions.d/wakeviz.fish"
put 0644 "$tmp/wakeviz-serve.service" "$root/lib/systemd/system/wakeviz-serve.service"

if [ -z "$dest" ] && command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    systemctl daemon-reload || true
    echo "the exporter is installed but not enabled: systemctl enable --now wakeviz-serve"
fi
