# The cost of wakeviz's function probes (fentry/fexit on select_task_rq_fair), which
# this project's development machine refuses. Sourced by scenario.sh (test mode) when
# WVZ_FENTRY_COST is "rounds:iterations"; results in /out/fentry/times.txt, one line per run:
#   round config start_uptime end_uptime
# Configs, order rotated each round: alone; under `wakeviz --record --no-function-probes`; under
# `wakeviz --record` (the same plus fentry/fexit); under `wakeviz --record` with
# WAKEVIZ_SKIP_SELECT_INPUTS=1 (fentry/fexit without the ABI-2/3 input reads: what they cost);
# under `wakeviz --record --scan-points` (the same plus the idle-scan kprobes). The
# ping-pong pair shares CPUs 1-2 (taskset): a task pinned to one CPU never reaches
# select_task_rq_fair (the kernel skips the class's select for nr_cpus_allowed == 1), so a pinned
# pair would not exercise the probes.
FC=/out/fentry

fc_one() {
    round=$1 cfg=$2
    pid=
    skip=0
    case $cfg in
    nofunc) set -- --no-function-probes ;;
    func) set -- ;;
    noinputs) set -- ; skip=1 ;;
    scan) if [ -f /vm/scan_points.json ]; then set -- --scan-points /vm/scan_points.json; else set --; fi ;;
    esac
    if [ "$cfg" != alone ]; then
        WAKEVIZ_SKIP_SELECT_INPUTS=$skip "$WVZ" --record "$FC/$cfg.wvz" --headless "$@" 2>"$FC/$cfg-$round.stderr" &
        pid=$!
        t=0
        while ! grep -q "$WVZ_READY" "$FC/$cfg-$round.stderr" 2>/dev/null; do
            t=$((t + 1))
            if [ $t -gt 240 ] || ! kill -0 "$pid" 2>/dev/null; then
                fail "fentry cost: wakeviz ($cfg) not ready, see fentry/$cfg-$round.stderr"
                kill -KILL "$pid" 2>/dev/null
                return 1
            fi
            sleep 0.5
        done
        sleep 1
    fi
    t0=$(now)
    taskset -c 1,2 /tmp/wvz-fc workload pingpong --iterations "$FC_ITER" --comm wvz-fc \
        >/dev/null &
    ok=0
    fc_wait $! 120 "ping-pong ($cfg, round $round)" || ok=1
    t1=$(now)
    if [ -n "$pid" ]; then
        kill -INT "$pid"
        fc_wait "$pid" 60 "wakeviz ($cfg, round $round) after SIGINT" || ok=1
        if [ "$cfg" = scan ]; then
            "$WVZ" --replay "$FC/$cfg.wvz" --report json >"$FC/scan-$round.json" 2>/dev/null
        fi
        rm -f "$FC/$cfg.wvz"
    fi
    [ "$ok" -eq 0 ] || return 1
    echo "$round $cfg $t0 $t1" >>$FC/times.txt
    # One line per run: the host's watchdog kills a guest whose console stays silent.
    log "fentry cost: round $round $cfg, ping-pong $t0 .. $t1, stopped at $(now)"
}

# Waits for PID (scenario.sh's wait_within); a hang or a failure is named.
fc_wait() {
    wait_within "$1" "$2" "fentry cost: $3 did not finish within $2 s; killed"
    rc=$?
    [ "$rc" -eq 0 ] || fail "fentry cost: $3 exited with $rc"
    return "$rc"
}

fentry_cost() {
    mkdir -p $FC
    IFS=: read -r rounds FC_ITER <<EOF
$WVZ_FENTRY_COST
EOF
    link_comm wvz-fc
    r=0
    while [ $r -lt "$rounds" ]; do
        case $((r % 4)) in
        0) order="alone nofunc func noinputs scan" ;;
        1) order="nofunc func noinputs scan alone" ;;
        2) order="func noinputs scan alone nofunc" ;;
        3) order="noinputs scan alone nofunc func" ;;
        *) order="scan alone nofunc func noinputs" ;;
        esac
        for c in $order; do
            fc_one "$r" "$c" || return 1
        done
        r=$((r + 1))
    done
    log "fentry cost: $rounds rounds x 5 configs of $FC_ITER round trips done at $(now)"
}
fentry_cost
