#!/bin/sh
# The vm-test scenario, run by /init inside the guest. Everything it produces goes to /out, which
# /init sends to the host; the host does every check. Settings come from /vm/env (written by
# xtask/src/vm): see the variables below.
#
#   WVZ_MODE      test | demo | infra (infra: boot, sysfs and tracefs only, no wakeviz)
#   WVZ_PAIRS     "comm:wakercpu:wakeecpu ..." pinned ping-pong pairs, run one after another
#   WVZ_ITER      ping-pong round trips per pair
#   WVZ_FANOUT    "comm:groups:receivers:loops" fan-out group run after the pairs ("" for none)
#   WVZ_BUF_KB    tracefs buffer per CPU
#   WVZ_DURATION  wakeviz --duration (seconds): an upper bound, wakeviz is stopped with SIGINT
#                 once the workloads are done (WVZ_STOP=int) or left to finish (WVZ_STOP=wait)
#   WVZ_READY     text on wakeviz's stderr that says its probes are attached
#   WVZ_DEMO_SECS demo mode: length of the recording
set -u
T=/sys/kernel/tracing
WVZ=/bin/wakeviz
WPID=

log() { echo "wvz-vm: $*"; }
now() { cut -d' ' -f1 /proc/uptime; }
fail() {
    log "FAIL: $*"
    echo "$*" >>/out/guest_errors.txt
}

# A copy of the sysfs files wakeviz's topology reader uses, under /out/sysfs/devices/system.
snapshot_sysfs() {
    src=/sys/devices/system
    dst=/out/sysfs/devices/system
    mkdir -p "$dst/cpu" "$dst/node"
    for f in online present possible; do
        [ -f "$src/cpu/$f" ] && cat "$src/cpu/$f" >"$dst/cpu/$f"
    done
    for c in "$src"/cpu/cpu[0-9]*; do
        n=${c##*/}
        mkdir -p "$dst/cpu/$n/topology"
        for f in "$c"/topology/*; do
            [ -f "$f" ] && cat "$f" >"$dst/cpu/$n/topology/${f##*/}" 2>/dev/null
        done
        for i in "$c"/cache/index*; do
            [ -d "$i" ] || continue
            mkdir -p "$dst/cpu/$n/cache/${i##*/}"
            for f in level type shared_cpu_list id; do
                [ -f "$i/$f" ] && cat "$i/$f" >"$dst/cpu/$n/cache/${i##*/}/$f" 2>/dev/null
            done
        done
    done
    for nd in "$src"/node/node[0-9]*; do
        [ -d "$nd" ] || continue
        n=${nd##*/}
        mkdir -p "$dst/node/$n"
        cat "$nd/cpulist" >"$dst/node/$n/cpulist"
        cat "$nd/distance" >"$dst/node/$n/distance"
    done
    c0=$src/cpu/cpu0
    log "cpu0: siblings $(cat $c0/topology/thread_siblings_list)," \
        "L3 $(cat $c0/cache/index3/shared_cpu_list 2>/dev/null)," \
        "package $(cat $c0/topology/physical_package_id)"
    for nd in "$src"/node/node[0-9]*; do
        [ -d "$nd" ] && log "${nd##*/}: cpus $(cat "$nd/cpulist"), distances $(cat "$nd/distance")"
    done
}

# Kernel tracing as the independent ground truth: the same five tracepoints, filtered on the
# workloads' comm prefix, counted from the trace buffer after the window closes.
trace_setup() {
    echo 0 >$T/tracing_on
    echo nop >$T/current_tracer
    echo "$WVZ_BUF_KB" >$T/buffer_size_kb || fail "tracefs: cannot set buffer_size_kb"
    echo >$T/trace
    for e in sched_waking sched_wakeup sched_wakeup_new sched_migrate_task; do
        echo 'comm ~ "wvz-*"' >$T/events/sched/$e/filter || fail "tracefs: filter on $e"
        echo 1 >$T/events/sched/$e/enable || fail "tracefs: enable $e"
    done
    echo 'prev_comm ~ "wvz-*" || next_comm ~ "wvz-*"' >$T/events/sched/sched_switch/filter ||
        fail "tracefs: filter on sched_switch"
    echo 1 >$T/events/sched/sched_switch/enable || fail "tracefs: enable sched_switch"
}

trace_on() {
    echo 1 >$T/tracing_on
    log "tracefs on at $(now)"
}

# Per (event, comm) counts; sched_switch counts once under prev_comm when that is a workload's,
# else under next_comm (the host counts wakeviz's events the same way).
trace_count() {
    echo 0 >$T/tracing_on
    log "tracefs off at $(now)"
    awk '
    {
        ev = ""
        for (i = 1; i <= NF; i++) if ($i ~ /^sched_[a-z_]+:$/) { ev = substr($i, 1, length($i) - 1); break }
        if (ev == "") next
        c = ""; p = ""; n = ""
        if (ev == "sched_switch") {
            for (j = i + 1; j <= NF; j++) {
                if ($j ~ /^prev_comm=/) p = substr($j, 11)
                if ($j ~ /^next_comm=/) n = substr($j, 11)
            }
            c = (p ~ /^wvz-/) ? p : n
        } else {
            for (j = i + 1; j <= NF; j++) if ($j ~ /^comm=/) { c = substr($j, 6); break }
        }
        cnt[ev " " c]++
    }
    END { for (k in cnt) print k, cnt[k] }' $T/trace >/out/tracefs_counts.txt
    for d in $T/per_cpu/cpu*; do
        o=$(awk -F': *' '$1 == "overrun" { print $2 }' "$d/stats")
        co=$(awk -F': *' '$1 == "commit overrun" { print $2 }' "$d/stats")
        de=$(awk -F': *' '$1 == "dropped events" { print $2 }' "$d/stats")
        echo "${d##*/} ${o:-?} ${co:-?} ${de:-?}"
    done >/out/tracefs_stats.txt
    for e in sched_waking sched_wakeup sched_wakeup_new sched_migrate_task sched_switch; do
        echo 0 >$T/events/sched/$e/enable
    done
}

# wakeviz records in the background; wait until its probe table says the probes are attached.
start_wakeviz() {
    out=$1
    shift
    "$WVZ" --record "$out" --duration "${WVZ_DURATION}s" --headless --report json "$@" \
        >/out/report.json 2>/out/wakeviz.stderr &
    WPID=$!
    log "wakeviz started (pid $WPID) at $(now)"
    t=0
    while ! grep -q "$WVZ_READY" /out/wakeviz.stderr 2>/dev/null; do
        if ! kill -0 "$WPID" 2>/dev/null; then
            wait "$WPID"
            fail "wakeviz exited with $? before it was ready (see wakeviz.stderr)"
            WPID=
            return 1
        fi
        t=$((t + 1))
        if [ $t -gt 240 ]; then
            fail "wakeviz printed no '$WVZ_READY' within 120 s"
            return 1
        fi
        sleep 0.5
    done
    sleep 1
    log "wakeviz ready at $(now)"
}

stop_wakeviz() {
    [ -n "$WPID" ] || return 1
    if ! kill -0 "$WPID" 2>/dev/null; then
        fail "wakeviz had already exited when the workloads ended: the window was too short" \
            "(WVZ_DURATION=$WVZ_DURATION)"
    elif [ "${WVZ_STOP:-int}" = int ]; then
        kill -INT "$WPID"
    fi
    wait "$WPID"
    rc=$?
    echo "$rc" >/out/wakeviz.rc
    log "wakeviz exited with $rc at $(now)"
    WPID=
}

have_workload() {
    [ "$WVZ_MODE" != infra ] && "$WVZ" workload --help >/dev/null 2>&1
}

# Fallback ping-pong with busybox only (used when wakeviz has no `workload` subcommand).
sh_pingpong() {
    comm=$1 a=$2 b=$3 n=$4
    d=/tmp/pp.$comm
    mkdir -p "$d"
    rm -f "$d/a" "$d/b"
    mkfifo "$d/a" "$d/b"
    taskset -c "$b" sh -c "printf %s $comm >/proc/self/comm; while read x; do echo \$x; done" \
        <"$d/a" >"$d/b" &
    taskset -c "$a" sh -c "printf %s $comm >/proc/self/comm; exec 3>$d/a 4<$d/b; i=0;
        while [ \$i -lt $n ]; do echo p >&3; read x <&4; i=\$((i + 1)); done; exec 3>&-"
    wait
}

pingpong() {
    if [ "$WORKLOAD" = wakeviz ]; then
        "$WVZ" workload pingpong --waker-cpu "$2" --wakee-cpu "$3" --iterations "$4" --comm "$1"
    else
        sh_pingpong "$@"
    fi
}

fanout() {
    comm=$1 g=$2 r=$3 l=$4
    if [ "$WORKLOAD" = wakeviz ]; then
        "$WVZ" workload fanout --groups "$g" --receivers "$r" --loops "$l" --comm "$comm"
    else
        # Without wakeviz's workload: unpinned ping-pong pairs stand in for the fan-out.
        k=0
        while [ $k -lt "$g" ]; do
            d=/tmp/fo.$k
            mkdir -p "$d"
            rm -f "$d/a" "$d/b"
            mkfifo "$d/a" "$d/b"
            sh -c "printf %s $comm >/proc/self/comm; while read x; do echo \$x; done" \
                <"$d/a" >"$d/b" &
            sh -c "printf %s $comm >/proc/self/comm; exec 3>$d/a 4<$d/b; i=0;
                while [ \$i -lt $l ]; do echo p >&3; read x <&4; i=\$((i + 1)); done" &
            k=$((k + 1))
        done
        wait
    fi
}

run_workloads() {
    for p in $WVZ_PAIRS; do
        comm=${p%%:*}
        rest=${p#*:}
        a=${rest%%:*}
        b=${rest#*:}
        t0=$(now)
        pingpong "$comm" "$a" "$b" "$WVZ_ITER" || fail "ping-pong $comm ($a -> $b) failed"
        log "ping-pong $comm cpus $a<->$b: $WVZ_ITER round trips, $t0 .. $(now)"
        echo "$comm $a $b $WVZ_ITER $t0 $(now)" >>/out/workloads.txt
    done
    if [ -n "$WVZ_FANOUT" ]; then
        IFS=: read -r comm g r l <<EOF
$WVZ_FANOUT
EOF
        t0=$(now)
        fanout "$comm" "$g" "$r" "$l" || fail "fan-out $comm failed"
        log "fan-out $comm: $g groups x $r receivers x $l loops, $t0 .. $(now)"
        echo "$comm fanout $g $r $l $t0 $(now)" >>/out/workloads.txt
    fi
}

snapshot_sysfs
uname -r >/out/uname.txt
grep -E ' (select_task_rq_fair|select_idle_cpu|select_idle_sibling|select_idle_core)' \
    /proc/kallsyms | awk '{ print $2, $3 }' >/out/kallsyms.txt

WORKLOAD=busybox
if have_workload; then
    WORKLOAD=wakeviz
fi
echo "$WORKLOAD" >/out/workload_impl.txt
log "mode $WVZ_MODE, workloads from $WORKLOAD"

case "$WVZ_MODE" in
infra)
    trace_setup
    trace_on
    run_workloads
    trace_count
    ;;
test)
    trace_setup
    trace_on
    if start_wakeviz /out/trace.wvz; then
        run_workloads
        stop_wakeviz
    fi
    trace_count
    ;;
demo)
    # A mixed ~WVZ_DEMO_SECS recording: ping-pong pairs, a fan-out group, an idle-ish tail.
    if start_wakeviz /out/demo.wvz; then
        s=$WVZ_DEMO_SECS
        phase=$((s * 2 / 5))
        for p in $WVZ_PAIRS; do
            comm=${p%%:*}
            rest=${p#*:}
            timeout "$phase" "$WVZ" workload pingpong --waker-cpu "${rest%%:*}" \
                --wakee-cpu "${rest#*:}" --iterations 100000000 --comm "$comm" &
        done
        wait
        log "demo: ping-pong phase done at $(now)"
        IFS=: read -r comm g r l <<EOF
$WVZ_FANOUT
EOF
        timeout "$phase" "$WVZ" workload fanout --groups "$g" --receivers "$r" --loops "$l" \
            --comm "$comm"
        log "demo: fan-out phase done at $(now)"
        # Idle-ish: a few sleepers waking now and then.
        i=0
        while [ $i -lt $((s - 2 * phase)) ]; do
            sleep 1
            i=$((i + 1))
        done
        log "demo: idle phase done at $(now)"
        stop_wakeviz
    fi
    ;;
*)
    fail "unknown WVZ_MODE $WVZ_MODE"
    ;;
esac
[ ! -s /out/guest_errors.txt ]
