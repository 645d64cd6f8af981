#!/bin/sh
# The vm-test scenario, run by /init inside the guest. Everything it produces goes to /out, which
# /init sends to the host; the host does every check. Settings come from /vm/env (written by
# xtask/src/vm): see the variables below.
#
#   WVZ_MODE      test | demo | infra (infra: boot, sysfs and tracefs only, no wakeviz)
#   WVZ_PAIRS     "comm:wakercpu:wakeecpu ..." pinned ping-pong pairs, run one after another
#                 (demo: run together; a CPU of "-" leaves that thread unpinned)
#   WVZ_ITER      ping-pong round trips per pair
#   WVZ_FANOUT    "comm:groups:receivers:loops" fan-out group run after the pairs ("" for none)
#   WVZ_BUF_KB    tracefs buffer per CPU
#   WVZ_DURATION  wakeviz --duration (seconds): an upper bound, wakeviz is stopped with SIGINT
#                 once the workloads are done (WVZ_STOP=int) or left to finish (WVZ_STOP=wait)
#   WVZ_READY     text on wakeviz's stderr that says its probes are attached
#   WVZ_DEMO_SECS demo mode: length of the recording
#   WVZ_REPLAY    1: record a fan-out and a ping-pong, extract each, replay it with rt-app
#                 (vm/replay.sh)
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

# Waits for PID and returns its status; if it has not exited within SECS it is killed and MSG
# goes to guest_errors.txt, so a hung step is reported by name while the results still reach
# the host.
wait_within() {
    (sleep "$2" && kill -KILL "$1" 2>/dev/null && echo "$3" >>/out/guest_errors.txt) &
    dog=$!
    wait "$1"
    rc=$?
    kill "$dog" 2>/dev/null
    return $rc
}

# A copy of the sysfs files wakeviz's topology reader uses, under /out/sysfs/devices/system.
# Few processes: a fork+exec costs tens of ms under TCG.
snapshot_sysfs() {
    src=/sys/devices/system
    dst=/out/sysfs/devices/system
    dirs="$dst/cpu $dst/node"
    for c in "$src"/cpu/cpu[0-9]*; do
        dirs="$dirs $dst/cpu/${c##*/}/topology"
        for i in "$c"/cache/index*; do
            [ -d "$i" ] && dirs="$dirs $dst/cpu/${c##*/}/cache/${i##*/}"
        done
    done
    for nd in "$src"/node/node[0-9]*; do
        [ -d "$nd" ] && dirs="$dirs $dst/node/${nd##*/}"
    done
    mkdir -p $dirs
    log "sysfs copy starts at $(now)"
    # One awk for every file: few processes, and large reads (the cpulist-style files are
    # binary attributes that return nothing to the shell's byte-by-byte `read`).
    awk -v src="$src" -v dst="$dst" 'FNR == 1 { f = FILENAME; sub("^" src, dst, f); print >f; close(f) }' \
        "$src"/cpu/online "$src"/cpu/present "$src"/cpu/possible \
        "$src"/cpu/cpu[0-9]*/topology/physical_package_id "$src"/cpu/cpu[0-9]*/topology/die_id \
        "$src"/cpu/cpu[0-9]*/topology/core_id "$src"/cpu/cpu[0-9]*/topology/thread_siblings_list \
        "$src"/cpu/cpu[0-9]*/cache/index*/level "$src"/cpu/cpu[0-9]*/cache/index*/type \
        "$src"/cpu/cpu[0-9]*/cache/index*/shared_cpu_list "$src"/cpu/cpu[0-9]*/cache/index*/id \
        "$src"/node/node[0-9]*/cpulist "$src"/node/node[0-9]*/distance 2>/dev/null
    log "sysfs copy done at $(now)"
    src=$dst
    read -r sib <$src/cpu/cpu0/topology/thread_siblings_list
    read -r l3 <$src/cpu/cpu0/cache/index3/shared_cpu_list
    read -r pk <$src/cpu/cpu0/topology/physical_package_id
    log "cpu0: siblings $sib, L3 $l3, package $pk"
    for nd in "$src"/node/node[0-9]*; do
        [ -d "$nd" ] || continue
        read -r cl <"$nd/cpulist"
        read -r di <"$nd/distance"
        log "${nd##*/}: cpus $cl, distances $di"
    done
}

# Kernel tracing as the independent ground truth: the same five tracepoints, filtered on the
# workloads' comm prefix plus the names a workload task has before its own: "sh" (a workload
# process is forked by this shell and only takes its wvz-* name at exec, so its first events say
# comm=sh) and "exe" (busybox runs an applet such as a hog's `sh -c` by re-executing
# /proc/self/exe, so a hog is "exe" until it names itself). The host attributes every event to
# its pid's final name, as wakeviz's task table does.
trace_setup() {
    echo 0 >$T/tracing_on
    echo nop >$T/current_tracer
    echo "$WVZ_BUF_KB" >$T/buffer_size_kb || fail "tracefs: cannot set buffer_size_kb"
    echo >$T/trace
    # Each line then names the running task's process too (`task-pid (tgid)`): the kernel's
    # word on task identity, compared with the recording's tgids.
    echo 1 >$T/options/record-tgid || fail "tracefs: cannot set record-tgid"
    for e in sched_waking sched_wakeup sched_wakeup_new sched_migrate_task; do
        echo 'comm ~ "wvz-*" || comm == "sh" || comm == "exe"' >$T/events/sched/$e/filter ||
            fail "tracefs: filter on $e"
        echo 1 >$T/events/sched/$e/enable || fail "tracefs: enable $e"
    done
    sw='prev_comm ~ "wvz-*" || next_comm ~ "wvz-*" || prev_comm == "sh" || next_comm == "sh"'
    echo "$sw"' || prev_comm == "exe" || next_comm == "exe"' \
        >$T/events/sched/sched_switch/filter || fail "tracefs: filter on sched_switch"
    echo 1 >$T/events/sched/sched_switch/enable || fail "tracefs: enable sched_switch"
    scan_kprobes
}

# The kernel's own count of the idle scan: a kprobe event at each scan entry and idle test (a
# CPU's, or a core's by select_idle_core) the host found in the debug info (the addresses wakeviz probes), counted while a workload task is
# the waker (select_task_rq_fair runs in the waker's context).
scan_kprobes() {
    [ -f /vm/scan_points.txt ] || return 0
    i=0
    while read -r role sym off; do
        case $role in scan_entry | idle_test | idle_core) ;; *) continue ;; esac
        ev=${role}_$i
        i=$((i + 1))
        echo "p:wvzscan/$ev $sym+$off" >>$T/kprobe_events ||
            { fail "tracefs: kprobe event at $sym+$off"; continue; }
        echo 'comm ~ "wvz-*"' >$T/events/wvzscan/$ev/filter || fail "tracefs: filter on $ev"
        echo 1 >$T/events/wvzscan/$ev/enable || fail "tracefs: enable $ev"
    done </vm/scan_points.txt
    log "scan kprobe events: $i"
}

trace_on() {
    echo 1 >$T/tracing_on
    log "tracefs on at $(now)"
}

# The filtered trace goes to the host as is (it parses and counts it); per-CPU losses too.
trace_count() {
    echo 0 >$T/tracing_on
    log "tracefs off at $(now)"
    cat $T/trace >/out/tracefs_trace.txt
    awk -F': *' '
        FNR == 1 {
            if (cpu != "") print cpu, o, co, de
            cpu = FILENAME; sub(/.*per_cpu\//, "", cpu); sub(/\/stats$/, "", cpu)
            o = "?"; co = "?"; de = "?"
        }
        $1 == "overrun" { o = $2 }
        $1 == "commit overrun" { co = $2 }
        $1 == "dropped events" { de = $2 }
        END { if (cpu != "") print cpu, o, co, de }' $T/per_cpu/cpu*/stats >/out/tracefs_stats.txt
    log "tracefs copied at $(now)"
    for e in sched_waking sched_wakeup sched_wakeup_new sched_migrate_task sched_switch; do
        echo 0 >$T/events/sched/$e/enable
    done
    if [ -d $T/events/wvzscan ]; then
        echo 0 >$T/events/wvzscan/enable
    fi
}

# wakeviz records in the background; wait until its probe table says the probes are attached.
start_wakeviz() {
    out=$1
    shift
    if [ -f /vm/scan_points.json ]; then
        set -- "$@" --scan-points /vm/scan_points.json
    fi
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
    # A wakeviz that does not finish within 60 s of the stop is killed (and reported).
    wait_within "$WPID" 60 "wakeviz did not exit within 60 s of SIGINT; killed"
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
    peer=$!
    taskset -c "$a" sh -c "printf %s $comm >/proc/self/comm; exec 3>$d/a 4<$d/b; i=0;
        while [ \$i -lt $n ]; do echo p >&3; read x <&4; i=\$((i + 1)); done; exec 3>&-"
    wait $peer
}

# Runs wakeviz through a symlink named COMM, so the process has its final name from exec on
# (threads then inherit it at creation: no event of theirs carries another name).
link_comm() {
    [ -e "/tmp/$1" ] || ln -s "$WVZ" "/tmp/$1"
}

# A workload that hangs is killed after WVZ_WORKLOAD_TIMEOUT s and reported, so the results
# still reach the host. (Not with busybox `timeout`: it would exec the workload from a process
# named "timeout", an early name the tracefs filter does not catch.)
as_comm() {
    comm=$1
    shift
    link_comm "$comm"
    "/tmp/$comm" "$@" &
    wait_within $! "${WVZ_WORKLOAD_TIMEOUT:-120}" \
        "workload $comm hung: killed after ${WVZ_WORKLOAD_TIMEOUT:-120} s"
}

pingpong() {
    if [ "$WORKLOAD" = wakeviz ]; then
        as_comm "$1" workload pingpong --waker-cpu "$2" --wakee-cpu "$3" --iterations "$4" \
            --comm "$1"
    else
        sh_pingpong "$@"
    fi
}

fanout() {
    comm=$1 g=$2 r=$3 l=$4
    if [ "$WORKLOAD" = wakeviz ]; then
        as_comm "$comm" workload fanout --groups "$g" --receivers "$r" --loops "$l" --comm "$comm"
    else
        # Without wakeviz's workload: unpinned ping-pong pairs stand in for the fan-out.
        k=0
        pids=
        while [ $k -lt "$g" ]; do
            d=/tmp/fo.$k
            mkdir -p "$d"
            rm -f "$d/a" "$d/b"
            mkfifo "$d/a" "$d/b"
            sh -c "printf %s $comm >/proc/self/comm; while read x; do echo \$x; done" \
                <"$d/a" >"$d/b" &
            pids="$pids $!"
            sh -c "printf %s $comm >/proc/self/comm; exec 3>$d/a 4<$d/b; i=0;
                while [ \$i -lt $l ]; do echo p >&3; read x <&4; i=\$((i + 1)); done" &
            pids="$pids $!"
            k=$((k + 1))
        done
        wait $pids
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
    scan_load
}

# With scan points, a load that makes the kernel scan (targets and prev CPUs busy): four
# ping-pong pairs unpinned within CPUs 0-7 beside six CPU hogs, so the host can compare the
# scans wakeviz measured with the kernel's own kprobe events on many of them.
scan_load() {
    [ -f /vm/scan_points.json ] && [ "$WORKLOAD" = wakeviz ] || return 0
    link_comm wvz-scan
    t0=$(now)
    # One pinned shell forks everything, so no workload task is ever migrated under another
    # name (`taskset` would move itself under its own name, which the tracefs filter drops).
    taskset -c 0-7 sh -c "
        hogs=
        for k in 1 2 3 4 5 6; do
            sh -c 'printf wvz-hog >/proc/self/comm; while :; do :; done' &
            hogs=\"\$hogs \$!\"
        done
        pairs=
        for i in 1 2 3 4; do
            /tmp/wvz-scan workload pingpong --iterations $((WVZ_ITER / 2)) --comm wvz-scan &
            pairs=\"\$pairs \$!\"
        done
        wait \$pairs
        rc=\$?
        kill \$hogs
        wait \$hogs 2>/dev/null
        exit \$rc" || fail "scan load failed"
    log "scan load: 4 unpinned pairs beside 6 hogs on CPUs 0-7, $t0 .. $(now)"
}

# Sets smt and xpkg to the CPUs ("A:B") of the layout's SMT and cross-package pairs; fails
# where the layout has not both.
smt_xpkg_pairs() {
    smt= xpkg=
    for p in $WVZ_PAIRS; do
        case ${p%%:*} in
        wvz-smt) smt=${p#*:} ;;
        wvz-xpkg) xpkg=${p#*:} ;;
        esac
    done
    [ -n "$smt" ] && [ -n "$xpkg" ]
}

# `wakeviz diff` on a real kernel: the same ping-pong recorded twice on the SMT pair and once
# on the cross-package pair, each `wakeviz --record F -- CMD` (the host diffs them).
diff_runs() {
    smt_xpkg_pairs || return 0
    link_comm wvz-diff
    for run in smt-1:$smt smt-2:$smt xpkg-1:$xpkg; do
        name=${run%%:*}
        cpus=${run#*:}
        "$WVZ" --record "/out/diff-$name.wvz" --headless --label "$name" -- \
            /tmp/wvz-diff workload pingpong --waker-cpu "${cpus%%:*}" --wakee-cpu "${cpus#*:}" \
            --iterations "$WVZ_ITER" --comm wvz-diff >"/out/diff-$name.log" 2>&1 ||
            fail "diff run $name (cpus $cpus) failed: see diff-$name.log"
        log "diff run $name on cpus $cpus done at $(now)"
    done
}

# A noisy neighbour: the SMT ping-pong recorded four times alone (quiet-I) and four times
# beside an unrelated ping-pong on the cross-package pair (noisy-I), alternated, each
# `wakeviz --record F -- CMD`. The neighbour pauses 1 ms after each round trip, so it adds
# cross-package wakeups while taking little of the host's few CPUs from the benchmark. The
# host diffs them with and without the recorded scope (the command's tree).
noisy_runs() {
    smt_xpkg_pairs || return 0
    link_comm wvz-diff
    link_comm wvz-noisy
    for i in 1 2 3 4; do
        for kind in quiet noisy; do
            nb=
            if [ $kind = noisy ]; then
                /tmp/wvz-noisy workload pingpong --waker-cpu "${xpkg%%:*}" \
                    --wakee-cpu "${xpkg#*:}" --iterations 100000000 --pause-us 1000 \
                    --comm wvz-noisy >/dev/null &
                nb=$!
                sleep 0.2
            fi
            "$WVZ" --record "/out/$kind-$i.wvz" --headless --label "$kind" -- \
                /tmp/wvz-diff workload pingpong --waker-cpu "${smt%%:*}" --wakee-cpu "${smt#*:}" \
                --iterations "$WVZ_ITER" --comm wvz-diff >"/out/$kind-$i.log" 2>&1 ||
                fail "noisy-neighbour run $kind-$i failed: see $kind-$i.log"
            if [ -n "$nb" ]; then
                kill "$nb" 2>/dev/null
                wait "$nb" 2>/dev/null
            fi
            log "noisy-neighbour run $kind-$i done at $(now)"
        done
    done
}

# Where the shadow's select inputs decide. `busy`: more runnable tasks than CPUs on
# CPUs 0-7 (two LLCs; the rest stay free because the host behind these vCPUs is small): four
# ping-pong pairs unpinned within them plus six CPU hogs, so wakers and prev CPUs are loaded
# and WA_WEIGHT decides; `aff`: unpinned pairs under `taskset -c 1,6` (two LLCs), so every choice
# must stay on CPUs 1 and 6. Each its own recording, replayed on the host. What the reads cost
# is measured with the function probes' cost (vm/fentry.sh, the nosmt guest).
inputs_runs() {
    [ "$WORKLOAD" = wakeviz ] && [ "${WVZ_INPUTS:-0}" = 1 ] || return 0
    link_comm wvz-busy
    link_comm wvz-aff
    hogs=
    k=0
    while [ $k -lt 6 ]; do
        taskset -c 0-7 sh -c 'printf wvz-hog >/proc/self/comm; while :; do :; done' &
        hogs="$hogs $!"
        k=$((k + 1))
    done
    # The hogs spin only while a run's command runs: it continues them, gives the CPUs' load a
    # second to build, and stops them again. Under TCG every spinning vCPU slows the others,
    # so wakeviz's start-up and ending would otherwise take several times as long. Outside the
    # command's process tree, the hogs stay out of the run's scope.
    kill -STOP $hogs
    busy="kill -CONT $hogs; sleep 1
        for i in 1 2 3 4; do
            /tmp/wvz-busy workload pingpong --iterations $((WVZ_ITER / 2)) --comm wvz-busy & done
        wait; kill -STOP $hogs"
    "$WVZ" --record /out/busy.wvz --headless --label busy -- taskset -c 0-7 sh -c "$busy" \
        >/out/busy.log 2>&1 || fail "busy run failed: see busy.log"
    log "busy run with the function probes done at $(now)"
    # The same run by the tracepoints alone: the shadow's fidelity without the select record.
    "$WVZ" --record /out/busy_tp.wvz --headless --label busy-tp --no-function-probes \
        -- taskset -c 0-7 sh -c "$busy" \
        >/out/busy_tp.log 2>&1 || fail "busy tracepoint-only run failed: see busy_tp.log"
    kill -KILL $hogs 2>/dev/null
    wait $hogs 2>/dev/null
    log "busy run done at $(now)"
    "$WVZ" --record /out/aff.wvz --headless --label aff -- taskset -c 1,6 sh -c "
        for i in 1 2 3; do
            /tmp/wvz-aff workload pingpong --iterations $WVZ_ITER --comm wvz-aff & done; wait" \
        >/out/aff.log 2>&1 || fail "affinity run failed: see aff.log"
    log "affinity run done at $(now)"
    # `cache`: the cache-placement questions on several multi-threaded processes waking each
    # other all over the machine: three fan-out processes (2 groups of a sender and 3
    # receivers: 8 threads each) and two ping-pong processes, none pinned, fewer runnable
    # threads than CPUs most of the time. `--bpf-stats` prints what loading each probe cost the
    # verifier (the host checks it: the function probes load only here).
    link_comm wvz-cache
    "$WVZ" --record /out/cache.wvz --headless --label cache --bpf-stats -- sh -c "
        for i in 1 2 3; do
            /tmp/wvz-cache workload fanout --groups 2 --receivers 3 --loops 200 \
                --comm wvz-cache & done
        for i in 1 2; do
            /tmp/wvz-cache workload pingpong --iterations $WVZ_ITER --comm wvz-cache & done
        wait" \
        >/out/cache.log 2>&1 || fail "cache run failed: see cache.log"
    log "cache run done at $(now)"
    # `msg`: a load like `perf bench sched messaging` (fan-out groups of a sender and its
    # receivers, unpinned; no perf in the guest), recorded with the function probes and by the
    # tracepoints alone, whose sched_waking probe reads the select inputs and WF_SYNC: the gap
    # between the two fidelities. Every message is answered (`--ack`): without it the sender
    # runs ahead through the pipe buffer and a run places only about a hundred wakeups, too few
    # to tell a 2-point gap from chance.
    link_comm wvz-msg
    for m in msg msg_tp; do
        extra=
        [ $m = msg_tp ] && extra=--no-function-probes && sync_count_on
        "$WVZ" --record /out/$m.wvz --headless --label $m $extra -- sh -c "
            for i in 1 2 3 4; do
                /tmp/wvz-msg workload fanout --groups 2 --receivers 3 --loops 400 --ack \
                    --comm wvz-msg & done
            wait" \
            >/out/$m.log 2>&1 || fail "$m run failed: see $m.log"
        [ $m = msg_tp ] && sync_count_off /out/msg_tp_sync.txt
        log "$m run done at $(now)"
    done
}

# The kernel's own wake flags for the tracepoint-only run, which reads WF_SYNC from the waker's
# stack: a kprobe event at select_task_rq_fair's entry (wake_flags is its third argument, %dx
# on x86-64) counted by value in a histogram while a workload task is the waker, so no trace
# buffer can overflow.
sync_count_on() {
    echo 'p:wvzsync/strf select_task_rq_fair wake_flags=%dx:x32' >>$T/kprobe_events ||
        { fail "tracefs: kprobe event at select_task_rq_fair"; return 0; }
    echo 'hist:keys=wake_flags:vals=hitcount if comm ~ "wvz-*"' \
        >$T/events/wvzsync/strf/trigger || fail "tracefs: hist trigger on select_task_rq_fair"
    echo 1 >$T/events/wvzsync/strf/enable || fail "tracefs: enable the select_task_rq_fair kprobe"
}

sync_count_off() {
    [ -d $T/events/wvzsync ] || return 0
    echo 0 >$T/events/wvzsync/strf/enable
    cat $T/events/wvzsync/strf/hist >"$1"
    echo '!hist:keys=wake_flags:vals=hitcount if comm ~ "wvz-*"' >$T/events/wvzsync/strf/trigger
    echo '-:wvzsync/strf' >>$T/kprobe_events
}

snapshot_sysfs
uname -r >/out/uname.txt

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
    diff_runs
    noisy_runs
    inputs_runs
    if [ -n "${WVZ_EXP_FANOUT:-}" ]; then . /vm/experiment.sh; fi
    if [ -n "${WVZ_FENTRY_COST:-}" ]; then . /vm/fentry.sh; fi
    if [ "${WVZ_REPLAY:-0}" = 1 ]; then . /vm/replay.sh; fi
    ;;
demo)
    # A mixed ~WVZ_DEMO_SECS recording: ping-pong pairs, a fan-out group, an idle-ish tail.
    if start_wakeviz /out/demo.wvz; then
        s=$WVZ_DEMO_SECS
        phase=$((s * 2 / 5))
        pids=
        for p in $WVZ_PAIRS; do
            comm=${p%%:*}
            rest=${p#*:}
            a=${rest%%:*}
            b=${rest#*:}
            # "-" leaves that thread unpinned: the scheduler places it (select_task_rq_fair).
            pin=
            [ "$a" = - ] || pin="--waker-cpu $a"
            [ "$b" = - ] || pin="$pin --wakee-cpu $b"
            link_comm "$comm"
            timeout "$phase" "/tmp/$comm" workload pingpong $pin --iterations 100000000 \
                --comm "$comm" &
            pids="$pids $!"
        done
        wait $pids
        log "demo: ping-pong phase done at $(now)"
        IFS=: read -r comm g r l <<EOF
$WVZ_FANOUT
EOF
        link_comm "$comm"
        timeout "$phase" "/tmp/$comm" workload fanout --groups "$g" --receivers "$r" --loops "$l" \
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
