# A recorded workload run again from its extracted shape, for two workloads (a fan-out with
# answers, a pipe ping-pong): each is recorded, `wakeviz workload extract` turns the recording
# into an rt-app file, rt-app (Debian's, packed by the host) runs it under a second recording,
# and `wakeviz diff` compares the two. Sourced by scenario.sh (test mode) when WVZ_REPLAY is 1;
# results under /out/replay/NAME, judged by the host (xtask/src/vm/replay.rs). Each step leaves its exit status in STEP.rc, its messages in
# STEP.log (its JSON report, if it prints one, in STEP.json) and its uptimes in times.txt; a
# step that fails ends the sequence (what follows would only fail for that reason).

# Runs STEP's command line: its stdout to OUT ("log": with its stderr in STEP.log), its stderr
# to STEP.log, its exit status to STEP.rc, and its start and end (uptime) to times.txt.
rp_step() {
    step=$1 out=$2
    shift 2
    t0=$(now)
    if [ "$out" = log ]; then
        "$@" >"$RP/$step.log" 2>&1
    else
        "$@" >"$out" 2>"$RP/$step.log"
    fi
    rc=$?
    echo "$rc" >"$RP/$step.rc"
    echo "$step $t0 $(now)" >>$RP/times.txt
    log "replay: $step exited with $rc at $(now)"
    return $rc
}

# rt-app under a recording, stopped with SIGINT (wakeviz then ends rt-app and keeps the
# recording) when it runs past 120 s. Not with busybox `timeout`: its watchdog is a task of the
# command's tree that wakes every second, so it would be counted among the replay's wakeups, and
# its SIGTERM does not end rt-app, which then waits for threads that may never leave their wait.
rp_rtapp() {
    "$WVZ" --record $RT/replay.wvz --headless --label replay -- rt-app $RT/w.rtapp.json &
    pid=$!
    (sleep 120 && kill -INT "$pid" 2>/dev/null && echo "rt-app still ran after 120 s" \
        >$RP/timed_out.txt) &
    dog=$!
    wait "$pid"
    rc=$?
    kill "$dog" 2>/dev/null
    return $rc
}

# rp_run NAME COMM ARGS...: the loop for `wakeviz workload ARGS` run under the name COMM.
rp_run() {
    name=$1 comm=$2
    shift 2
    RP=/out/replay/$name
    RT=/tmp/replay/$name
    mkdir -p $RP $RT
    if ! command -v rt-app >$RP/rt-app.path; then
        log "replay: no rt-app in the guest"
        return 1
    fi
    link_comm "$comm"
    rp_step orig log "$WVZ" --record $RT/orig.wvz --headless --label orig -- \
        /tmp/"$comm" workload "$@" --comm "$comm" || return 1
    rp_step extract log "$WVZ" workload extract $RT/orig.wvz --rt-app $RT/w.rtapp.json \
        --json $RT/shape.json
    cp $RT/w.rtapp.json $RT/shape.json $RP/ 2>/dev/null
    [ "$rc" = 0 ] || return 1
    rp_step replay log rp_rtapp || return 1
    rp_step diff $RP/diff.json "$WVZ" diff --base $RT/orig.wvz --new $RT/replay.wvz \
        --report json || return 1
    for r in orig replay; do
        rp_step "${r}_report" "$RP/${r}_report.json" "$WVZ" --replay $RT/$r.wvz --report json ||
            return 1
    done
}

for w in "fanout wvz-rfan fanout --ack --groups 2 --receivers 3 --loops 3000" \
    "pingpong wvz-rpp pingpong --iterations 20000"; do
    # shellcheck disable=SC2086
    rp_run $w
    # The recordings stay with the results for a look at what the host's table summarises.
    cp $RT/orig.wvz $RT/replay.wvz $RP/ 2>/dev/null
done
log "replay: done at $(now)"
