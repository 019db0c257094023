"""What the Iceberg scripts share: SeaweedFS's Iceberg REST catalog as
pyiceberg loads it, and a table's rows once it has enough of them."""
import time

from pyiceberg.catalog import load_catalog


def catalog(uri, s3):
    return load_catalog("seaweedfs", **{
        "type": "rest", "uri": uri, "warehouse": "s3://kafka/", "auth": {"type": "noop"},
        "s3.endpoint": s3, "s3.region": "us-east-1", "s3.path-style-access": "true",
        "s3.access-key-id": "any", "s3.secret-access-key": "any",
    })


def rows_of(cat, name, n, wait=40):
    """The table's rows once it has n (or wait seconds have passed)."""
    deadline = time.time() + wait
    while True:
        try:
            t = cat.load_table(name)
            rows = t.scan().to_arrow().to_pylist() if t.current_snapshot() else []
        except Exception:  # the table may not be there yet
            rows = []
        if len(rows) >= n or time.time() > deadline:
            return rows
        time.sleep(0.5)


def check_rows(cat, name, want):
    """Fails unless the table has the rows of want (each a dict of some of
    its columns) at offsets 0, 1, ... once each; returns the reason or None."""
    rows = sorted(rows_of(cat, name, len(want)), key=lambda r: r["kafka"]["offset"])
    if len(rows) != len(want):
        return "the table has %d rows, want %d" % (len(rows), len(want))
    for i, (r, w) in enumerate(zip(rows, want)):
        if {k: r[k] for k in w} != w or r["kafka"]["offset"] != i:
            return "row %d: %s, want %s" % (i, r, w)
    return None
