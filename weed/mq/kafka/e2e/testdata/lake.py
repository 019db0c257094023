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
