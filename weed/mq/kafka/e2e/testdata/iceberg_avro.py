"""A topic with iceberg.mode=value_schema_id_prefix: confluent-kafka-python's
AvroSerializer produces records of two versions of a schema (the second
adds a field) and two records without a schema id; pyiceberg reads the
table (the values' fields as columns, the record's metadata in the struct
kafka) and the dead-letter table.

Arguments: bootstrap servers, registry URL, catalog URL, S3 endpoint,
topic, table, dead-letter table. Prints "ok" when every check passed.
"""
import sys
import time

from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from pyiceberg.catalog import load_catalog

bootstrap, url, uri, s3, topic, table_name, dlq_name = sys.argv[1:8]
V1 = ('{"type":"record","name":"Trade","namespace":"ice","fields":[{"name":"symbol","type":"string"},{"name":"qty","type":"int"},'
      '{"name":"venue","type":["null",{"type":"record","name":"Venue","fields":[{"name":"mic","type":"string"}]}],"default":null}]}')
V2 = V1[:-2] + ',{"name":"price","type":["null","double"],"default":null}]}'


def fail(why):
    print(why)
    sys.exit(1)


registry = SchemaRegistryClient({"url": url})
producer = Producer({"bootstrap.servers": bootstrap})
errors = []
ctx = SerializationContext(topic, MessageField.VALUE)
want = []
v1 = AvroSerializer(registry, V1)
for i in range(20):
    value = {"symbol": "S%d" % i, "qty": i, "venue": {"mic": "XNAS"} if i % 2 else None}
    producer.produce(topic, value=v1(value, ctx), on_delivery=lambda err, msg: err and errors.append(err))
    want.append({"symbol": value["symbol"], "qty": i, "venue": value["venue"], "price": None})
v2 = AvroSerializer(registry, V2)
for i in range(20, 30):
    value = {"symbol": "S%d" % i, "qty": i, "venue": None, "price": i * 1.5}
    producer.produce(topic, value=v2(value, ctx), on_delivery=lambda err, msg: err and errors.append(err))
    want.append(value)
for raw in (b"not avro", b"\x00\x00"):
    producer.produce(topic, value=raw, on_delivery=lambda err, msg: err and errors.append(err))
if producer.flush(30) != 0 or errors:
    fail("produce: %d left, errors %s" % (len(producer), errors))

catalog = load_catalog("seaweedfs", **{
    "type": "rest", "uri": uri, "warehouse": "s3://kafka/", "auth": {"type": "noop"},
    "s3.endpoint": s3, "s3.region": "us-east-1", "s3.path-style-access": "true",
    "s3.access-key-id": "any", "s3.secret-access-key": "any",
})


def rows_of(name, n, wait=40):
    deadline = time.time() + wait
    while True:
        try:
            t = catalog.load_table(name)
            rows = t.scan().to_arrow().to_pylist() if t.current_snapshot() else []
        except Exception:
            rows = []
        if len(rows) >= n or time.time() > deadline:
            return rows
        time.sleep(0.5)


rows = sorted(rows_of(table_name, 30), key=lambda r: r["kafka"]["offset"])
if len(rows) != 30:
    fail("the table has %d rows, want 30" % len(rows))
for i, (r, w) in enumerate(zip(rows, want)):
    got = {"symbol": r["symbol"], "qty": r["qty"], "venue": r["venue"], "price": r["price"]}
    if got != w or r["kafka"]["offset"] != i or r["kafka"]["partition"] != 0:
        fail("row %d: %s, want %s at offset %d" % (i, r, w, i))
dead = sorted(rows_of(dlq_name, 2), key=lambda r: r["offset"])
if [(r["offset"], r["value"]) for r in dead] != [(30, b"not avro"), (31, b"\x00\x00")]:
    fail("dead letters %s" % dead)
if not all("no schema id" in r["reason"] for r in dead):
    fail("dead letters' reasons %s" % [r["reason"] for r in dead])
print("ok")
