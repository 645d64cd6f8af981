"""Checks `events.parquet` against `--dump jsonl` of the same recording, read by DuckDB.

Usage: events_check.py EVENTS.parquet DUMP.jsonl

Both outputs take an event's fields from one definition, so row i of the table must hold line
i's values under the same names, and every column the line lacks (another kind's field) must be
null. `inputs` is the dump's alone. Exit status 1 on the first mismatches, naming them.
"""

import json
import sys

import duckdb


def main():
    table, dump = sys.argv[1], sys.argv[2]
    db = duckdb.connect()
    cur = db.execute(f"SELECT * EXCLUDE (recording_id) FROM read_parquet('{table}')")
    columns = [c[0] for c in cur.description]
    failures = []
    kinds = {}
    n = 0
    with open(dump) as lines:
        for i, line in enumerate(lines):
            row = cur.fetchone()
            if row is None:
                failures.append(f"the table ends at row {i}, the dump goes on")
                break
            event = json.loads(line)
            event.pop("inputs", None)
            got = dict(zip(columns, row))
            for key, want in event.items():
                if key not in got:
                    failures.append(f"line {i}: no column {key}")
                elif got[key] != want:
                    failures.append(f"line {i} ({event['kind']}) {key}: table {got[key]!r}, dump {want!r}")
            for key, value in got.items():
                if key not in event and value is not None:
                    failures.append(f"row {i} ({event['kind']}): {key} = {value!r}, not a field of its kind")
            kinds[event["kind"]] = kinds.get(event["kind"], 0) + 1
            n += 1
            if len(failures) > 20:
                break
    if not failures and cur.fetchone() is not None:
        failures.append(f"the table has rows past the dump's {n}")
    for f in failures[:20]:
        print(f)
    if failures:
        sys.exit(1)
    print(f"ok: {n} events agree ({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))})")


main()
