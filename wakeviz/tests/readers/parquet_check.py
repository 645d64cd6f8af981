"""Checks `wakeviz export --parquet DIR` with DuckDB, an independent Parquet reader.

Usage: parquet_check.py DIR RECORDING=REPORT.json ...

For each recording (found by metadata.source_file), SQL over the union of every export in DIR
must give the counts of `wakeviz --replay RECORDING --report json`: placements by level vs the
waker and vs the previous CPU, new tasks, unclassified, events per kind, wakeup-to-run latency
samples per level, and each shadow policy's evaluated count and agreement. Then it prints the
README's "placement shares by host and kernel" query and its result. Exit status 1 on any
mismatch, naming it.
"""

import json
import sys

import duckdb

LEVELS = ["same_cpu", "smt_sibling", "same_llc", "same_node", "same_package", "cross_package"]

SHARES = """
SELECT m.host, m.kernel, p.level_vs_waker AS level, count(*) AS wakeups,
       round(100 * count(*) / sum(count(*)) OVER (PARTITION BY m.host, m.kernel), 1) AS share_pct
FROM read_parquet('{dir}/*/placements.parquet') p
JOIN read_parquet('{dir}/*/metadata.parquet') m USING (recording_id)
WHERE NOT p.new_task
GROUP BY m.host, m.kernel, level
ORDER BY m.host, m.kernel, wakeups DESC
"""

failures = []


def check(what, got, want):
    if got != want:
        failures.append(f"{what}: parquet {got!r} != report {want!r}")


def main():
    d = sys.argv[1]
    pl = f"read_parquet('{d}/*/placements.parquet', union_by_name = true)"
    ev = f"read_parquet('{d}/*/events.parquet')"
    md = f"read_parquet('{d}/*/metadata.parquet')"
    db = duckdb.connect()
    ids = []
    for arg in sys.argv[2:]:
        rec, report = arg.split("=", 1)
        rep = json.load(open(report))
        rows = db.execute(
            f"SELECT recording_id, schema_version FROM {md} WHERE source_file = ?", [rec]
        ).fetchall()
        if len(rows) != 1:
            failures.append(f"{rec}: {len(rows)} metadata rows")
            continue
        rid, version = rows[0]
        check(f"{rec} schema_version", version, 2)
        ids.append(rid)
        w = rep["placement"]["wakeups"]
        for rel in ["vs_waker", "vs_prev"]:
            got = dict(
                db.execute(
                    f"SELECT level_{rel}, count(*) FROM {pl} WHERE recording_id = ? "
                    f"AND NOT new_task AND level_{rel} IS NOT NULL GROUP BY 1",
                    [rid],
                ).fetchall()
            )
            want = {k: v for k, v in w[rel].items() if v}
            check(f"{rec} placements by level {rel}", got, want)
        one = lambda q: db.execute(q, [rid]).fetchone()[0]
        check(
            f"{rec} wakeups",
            one(f"SELECT count(*) FROM {pl} WHERE recording_id = ? AND NOT new_task"),
            w["count"],
        )
        check(
            f"{rec} unclassified",
            one(
                f"SELECT count(*) FROM {pl} WHERE recording_id = ? AND NOT new_task "
                "AND (level_vs_waker IS NULL OR level_vs_prev IS NULL)"
            ),
            w["unclassified"],
        )
        check(
            f"{rec} new tasks",
            one(f"SELECT count(*) FROM {pl} WHERE recording_id = ? AND new_task"),
            rep["placement"]["new_tasks"]["count"],
        )
        got = dict(
            db.execute(
                f"SELECT kind, count(*) FROM {ev} WHERE recording_id = ? GROUP BY 1", [rid]
            ).fetchall()
        )
        want = {k: v for k, v in rep["events"].items() if k != "total" and v}
        check(f"{rec} events by kind", got, want)
        lat = rep["wakeup_latency"]
        got = dict(
            db.execute(
                f"SELECT level_vs_waker, count(wakeup_to_run_ns) FROM {pl} "
                "WHERE recording_id = ? AND NOT new_task AND level_vs_waker IS NOT NULL GROUP BY 1",
                [rid],
            ).fetchall()
        )
        # A level the topology cannot have is null in the report (schema 4).
        want = {
            l: lat["by_level"][l]["count"]
            for l in LEVELS
            if lat["by_level"][l] and lat["by_level"][l]["count"]
        }
        check(f"{rec} wakeup-to-run samples by level", {k: v for k, v in got.items() if v}, want)
        check(
            f"{rec} new-task wakeup-to-run samples",
            one(f"SELECT count(wakeup_to_run_ns) FROM {pl} WHERE recording_id = ? AND new_task"),
            lat["new_task"]["count"],
        )
        sh = rep.get("shadow")
        if sh:
            check(
                f"{rec} shadow evaluated",
                one(f"SELECT count(shadow_observed_cpu) FROM {pl} WHERE recording_id = ?"),
                sh["evaluated"],
            )
            for name, row in sh["policies"].items():
                n, agree = db.execute(
                    f"SELECT count(shadow_{name}_cpu), "
                    f"count(*) FILTER (WHERE shadow_{name}_cpu = shadow_observed_cpu) "
                    f"FROM {pl} WHERE recording_id = ?",
                    [rid],
                ).fetchone()
                check(f"{rec} shadow {name} evaluated", n, row["evaluated"])
                if row.get("agreement") is not None and n:
                    if abs(agree / n - row["agreement"]) > 1e-9:
                        failures.append(
                            f"{rec} shadow {name} agreement: parquet {agree / n} "
                            f"!= report {row['agreement']}"
                        )
    # Every export in DIR answers one query.
    got = sorted(r[0] for r in db.execute(f"SELECT DISTINCT recording_id FROM {pl}").fetchall())
    check("recordings in the union", got, sorted(ids))
    q = SHARES.format(dir=d).strip()
    print(q + ";")
    print(db.sql(q))
    if failures:
        print("\n".join(failures), file=sys.stderr)
        sys.exit(1)
    print(f"ok: {len(ids)} recording(s) agree with their reports")


main()
