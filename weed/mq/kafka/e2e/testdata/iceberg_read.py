"""pyiceberg (with pyarrow) reading a topic's Iceberg table through
SeaweedFS's Iceberg REST catalog.

Arguments: catalog URL, S3 endpoint, table (namespace.name), the rows
expected, seconds to wait for them. Waits until the table has at least
that many rows (or the time is up), then prints each row as a JSON line
({"p","o","ts","k","v","h"}: bytes as hex, null as null) and, last, the
summary of its last commit (the current snapshot's, or the latest append's
before a compaction) as {"summary": {...}}. With a sixth argument
"files", prints instead {"location": ..., "files": [...]}: the table's
location and the data files of its current snapshot.
"""
import json
import sys
import time

import lake

uri, s3, name, expected, wait = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
catalog = lake.catalog(uri, s3)


def hexed(b):
    return None if b is None else b.hex()


deadline = time.time() + wait
rows = []
table = None
while True:
    try:
        table = catalog.load_table(name)
        rows = table.scan().to_arrow().to_pylist() if table.current_snapshot() else []
    except Exception as e:  # the table may not be there yet
        rows = []
        last = e
    if len(rows) >= expected or time.time() > deadline:
        break
    time.sleep(0.5)
if sys.argv[6:7] == ["files"]:
    files = [task.file.file_path for task in table.scan().plan_files()] if table and table.current_snapshot() else []
    print(json.dumps({"location": table.location() if table else "", "files": files}))
    sys.exit(0)
for r in rows:
    print(json.dumps({"p": r["partition"], "o": r["offset"], "ts": int(r["timestamp"].timestamp() * 1000),
                      "k": hexed(r["key"]), "v": hexed(r["value"]),
                      "h": [[h["key"], hexed(h["value"])] for h in (r["headers"] or [])]}))
# The summary of the last commit: the current snapshot, or the latest
# append before it when maintenance compacted the table since.
summary = {}
snap = table.current_snapshot() if table is not None else None
while snap is not None and snap.summary is not None and str(snap.summary.operation).lower().endswith("replace"):
    snap = table.snapshot_by_id(snap.parent_snapshot_id) if snap.parent_snapshot_id else None
if snap is not None and snap.summary is not None:
    summary = dict(snap.summary.additional_properties)
    summary["operation"] = str(snap.summary.operation)
print(json.dumps({"summary": summary}))
