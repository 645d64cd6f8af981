#!/usr/bin/env bash
# One-hour soak (run by hand as root, not in CI: an hour is too long for a test run):
# `wakeviz --record --headless` under a continuous `perf bench sched pipe` load, sampling the
# recorder's resident memory every 30 s, then printing its drop accounting and the RSS trend.
#
#   sudo scripts/soak.sh [MINUTES] [WORKLOAD_CPUS]
#
# MINUTES defaults to 60. WORKLOAD_CPUS (a taskset list, e.g. "1") pins the benchmark so that
# the recorder keeps a CPU of its own on a small machine; empty = unpinned.
# Output goes to target/soak/: soak.wvz, rss.csv, wakeviz.log.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-60}
cpus=${2:-}
out=target/soak
bin=target/release/wakeviz
[[ $(id -u) == 0 ]] || { echo "soak.sh: needs root (live capture)" >&2; exit 1; }
[[ -x $bin ]] || cargo build --release -p wakeviz
command -v perf >/dev/null || { echo "soak.sh: perf missing (scripts/setup.sh installs linux-perf)" >&2; exit 1; }
mkdir -p "$out"
rm -f "$out/soak.wvz" "$out/rss.csv"

pin=()
[[ -n $cpus ]] && pin=(taskset -c "$cpus")
( while :; do "${pin[@]}" perf bench sched pipe -l 5000000 >/dev/null 2>&1 || sleep 1; done ) &
load=$!
trap 'kill $load 2>/dev/null; pkill -P $load 2>/dev/null || true' EXIT

"$bin" --record "$out/soak.wvz" --headless --duration "${minutes}m" 2>"$out/wakeviz.log" &
wv=$!
t0=$(date +%s)
echo "seconds,rss_kb" >"$out/rss.csv"
while kill -0 "$wv" 2>/dev/null; do
    rss=$(awk '/^VmRSS/ {print $2}' "/proc/$wv/status" 2>/dev/null || true)
    [[ -n $rss ]] && echo "$(( $(date +%s) - t0 )),$rss" >>"$out/rss.csv"
    for _ in $(seq 30); do kill -0 "$wv" 2>/dev/null || break; sleep 1; done
done
rc=0
wait "$wv" || rc=$?
kill $load 2>/dev/null || true
pkill -P $load 2>/dev/null || true
echo "wakeviz exit status: $rc"
grep -E "events|drops|missed|accounting|wrote" "$out/wakeviz.log" || true
ls -l "$out/soak.wvz"
# RSS trend: the first 5 minutes are warm-up (task table, buffers); after that it must be flat.
awk -F, 'NR > 1 { n++; s[n] = $1; r[n] = $2 }
    END {
        if (n < 2) { print "rss: too few samples"; exit }
        first = 0
        for (i = 1; i <= n; i++) if (s[i] >= 300 && first == 0) first = i
        if (first == 0) first = 1
        min = max = r[first]
        for (i = first; i <= n; i++) { if (r[i] < min) min = r[i]; if (r[i] > max) max = r[i] }
        printf "rss after warm-up (t=%ds..%ds, %d samples): first %.1f MiB, last %.1f MiB, min %.1f MiB, max %.1f MiB\n",
            s[first], s[n], n - first + 1, r[first] / 1024, r[n] / 1024, min / 1024, max / 1024
    }' "$out/rss.csv"
exit "$rc"
