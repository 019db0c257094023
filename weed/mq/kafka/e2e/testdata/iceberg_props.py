"""pyiceberg setting a topic's table's properties, or printing its
properties and snapshot count.

Arguments: catalog URL, S3 endpoint, table, then name=value pairs to set
(none: only print). Prints {"properties": {...}, "snapshots": n,
"spec": [[field, transform], ...]}.
"""
import json
import sys

import lake

uri, s3, name = sys.argv[1:4]
catalog = lake.catalog(uri, s3)
table = catalog.load_table(name)
props = dict(kv.split("=", 1) for kv in sys.argv[4:])
if props:
    with table.transaction() as tx:
        tx.set_properties(**props)
    table = catalog.load_table(name)
spec = [[f.name, str(f.transform)] for f in table.spec().fields]
print(json.dumps({"properties": table.properties, "snapshots": len(table.metadata.snapshots), "spec": spec}))
