# The experiment features on a real kernel (schedstat, --sched-feature, `wakeviz experiment`),
# sourced by scenario.sh (test mode) after its other runs; results under /out/exp, checked by
# the host (xtask/src/vm/experiment.rs).
#
#   1. schedstat: kernel.sched_schedstats once the main run is over (wakeviz switched it on
#      for that run; it must be back to its boot value);
#   2. --sched-feature NO_SIS_UTIL: the features file before, during (read by CMD itself) and
#      after; a bad feature name;
#   3. wakeviz experiment, default vs WVZ_EXP_SETTING (NO_SIS_UTIL unless set), 3 runs each
#      (or as the spec says), on a loaded fan-out; each run's CMD notes which setting of that
#      feature the kernel had while it ran;
#   4. signals on the real debugfs: a --sched-feature run stopped by USR1, ALRM, QUIT, XFSZ
#      and TERM (the features file after, CMD alive or not, the recording's replay status),
#      then one killed by KILL (left changed; the next run refuses with 5;
#      --restore-leftovers puts it back).
# Settings: WVZ_EXP_FANOUT "groups:receivers:loops[:hogs[:ack[:runs]]]" of the experiment's
# workload (hogs: CPU-bound tasks the run's CMD starts beside the fan-out and stops after it;
# ack: every message answered; runs: of each setting, 3 unless given); WVZ_EXP_SETTING the
# experiment's `NO_X`.
EXP=/out/exp
FEAT=/sys/kernel/debug/sched/features
SSCTL=/proc/sys/kernel/sched_schedstats

exp_features() {
    cat $FEAT >$EXP/features_before.txt
    # CMD reads the features file while wakeviz runs it, then makes some wakeups.
    cat >/tmp/wvz-feat.sh <<EOF
cat $FEAT >$EXP/features_during.txt
exec /tmp/wvz-feat workload fanout --groups 2 --receivers 3 --loops 40 --comm wvz-feat
EOF
    link_comm wvz-feat
    "$WVZ" --record $EXP/feature.wvz --headless --report json --sched-feature NO_SIS_UTIL -- \
        sh /tmp/wvz-feat.sh >$EXP/feature_report.json 2>$EXP/feature.stderr
    echo $? >$EXP/feature.rc
    cat $FEAT >$EXP/features_after.txt
    log "feature run done at $(now)"
    "$WVZ" --record $EXP/bad.wvz --headless --sched-feature NO_SUCH_FEATURE -- true \
        >$EXP/bad.stdout 2>$EXP/bad.stderr
    echo $? >$EXP/bad.rc
    cat $FEAT >$EXP/features_after_bad.txt
    if [ -e $EXP/bad.wvz ]; then echo present >$EXP/bad_recording.txt; fi
    log "bad-feature run done at $(now)"
}

exp_experiment() {
    IFS=: read -r g r l h mode runs <<EOF
$WVZ_EXP_FANOUT
EOF
    ack=
    [ "$mode" != ack ] || ack=--ack
    runs=${runs:-3}
    setting=${WVZ_EXP_SETTING:-NO_SIS_UTIL}
    feat=${setting#NO_}
    cat >/tmp/wvz-exp.sh <<EOF
echo "\$(tr ' ' '\n' <$FEAT | grep -x -e $feat -e NO_$feat)" >>$EXP/during_runs.txt
hogs=
k=0
while [ \$k -lt ${h:-0} ]; do
    sh -c 'printf wvz-hog >/proc/self/comm; while :; do :; done' &
    hogs="\$hogs \$!"
    k=\$((k + 1))
done
/tmp/wvz-exp workload fanout --groups $g --receivers $r --loops $l --comm wvz-exp $ack
rc=\$?
[ -z "\$hogs" ] || kill \$hogs
exit \$rc
EOF
    link_comm wvz-exp
    t0=$(now)
    set --
    if [ -f /vm/scan_points.json ]; then
        set -- --scan-points /vm/scan_points.json
    fi
    "$WVZ" experiment --setting default --setting "$setting" --runs $runs --out $EXP/runs \
        --report json "$@" -- sh /tmp/wvz-exp.sh >$EXP/experiment.stdout 2>$EXP/experiment.stderr
    echo $? >$EXP/experiment.rc
    cat $FEAT >$EXP/features_after_experiment.txt
    log "experiment (default vs $setting, $g groups x $r receivers x $l loops $mode, $runs runs each): $t0 .. $(now)"
}

# Starts `--sched-feature NO_SIS_UTIL -- CMD` in the background (CMD writes its pid to $1.cmd
# and sleeps) and waits until CMD runs; sets WPID.
exp_sig_start() {
    rm -f "$1.cmd"
    "$WVZ" --record "$1.wvz" --headless --sched-feature NO_SIS_UTIL -- \
        sh -c "echo \$\$ >$1.cmd.tmp; mv $1.cmd.tmp $1.cmd; while :; do sleep 0.1; done" \
        >/dev/null 2>"$1.stderr" &
    WPID=$!
    i=0
    while [ ! -s "$1.cmd" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
    cat $FEAT >"$1.during"
}

# Whether pid $1 is alive (not a zombie), after up to 3 s.
exp_alive() {
    i=0
    while [ $i -lt 30 ]; do
        st=$(sed 's/.*) //' /proc/$1/stat 2>/dev/null | cut -c1)
        case "$st" in "" | Z | X) echo dead; return ;; esac
        sleep 0.1
        i=$((i + 1))
    done
    echo alive
}

exp_signals() {
    S=$EXP/sig
    mkdir -p $S
    for sig in USR1 ALRM QUIT XFSZ TERM; do
        exp_sig_start $S/$sig
        kill -$sig $WPID
        wait $WPID
        echo $? >$S/$sig.rc
        cat $FEAT >$S/$sig.after
        exp_alive "$(cat $S/$sig.cmd 2>/dev/null || echo 0)" >$S/$sig.cmd_state
        "$WVZ" --replay $S/$sig.wvz --report json >/dev/null 2>$S/$sig.replay.stderr
        echo $? >$S/$sig.replay.rc
    done
    exp_sig_start $S/KILL
    kill -KILL $WPID
    wait $WPID
    echo $? >$S/KILL.rc
    cat $FEAT >$S/KILL.after
    exp_alive "$(cat $S/KILL.cmd 2>/dev/null || echo 0)" >$S/KILL.cmd_state
    "$WVZ" --record $S/next.wvz --headless --sched-feature NO_WA_BIAS -- true \
        >/dev/null 2>$S/next.stderr
    echo $? >$S/next.rc
    cat $FEAT >$S/next.after
    "$WVZ" --restore-leftovers >/dev/null 2>$S/restore.stderr
    echo $? >$S/restore.rc
    cat $FEAT >$S/restore.after
    log "signal runs done at $(now)"
}

mkdir -p $EXP
cat $SSCTL >$EXP/schedstats_after_main.txt 2>/dev/null || echo missing >$EXP/schedstats_after_main.txt
if [ ! -r $FEAT ]; then
    echo "no $FEAT (debugfs)" >$EXP/skipped.txt
elif ! "$WVZ" --help 2>/dev/null | grep -q -- --sched-feature; then
    echo "wakeviz has no --sched-feature" >$EXP/skipped.txt
else
    exp_features
    exp_experiment
    exp_signals
fi
