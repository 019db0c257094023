"""A topic with iceberg.mode=value_schema_id_prefix: confluent-kafka-python's
AvroSerializer produces records of two versions of a schema (the second
adds two fields, one a union of several types) and two records without a
schema id; pyiceberg reads the table (the values' fields as columns, the
union as a struct of one field per type, the record's metadata in the
struct kafka) and the dead-letter table.

Then a topic with iceberg.mode=value_schema_latest: values in Avro's
binary alone (fastavro), decoded by the latest schema of <topic>-value.

Arguments: bootstrap servers, registry URL, catalog URL, S3 endpoint,
topic, table, dead-letter table, the latest-mode topic and its table.
Prints "ok" when every check passed.
"""
import io
import json
import sys

import fastavro

from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

import lake

bootstrap, url, uri, s3, topic, table_name, dlq_name, latest_topic, latest_table = sys.argv[1:10]
V1 = ('{"type":"record","name":"Trade","namespace":"ice","fields":[{"name":"symbol","type":"string"},{"name":"qty","type":"int"},'
      '{"name":"venue","type":["null",{"type":"record","name":"Venue","fields":[{"name":"mic","type":"string"}]}],"default":null}]}')
V2 = V1[:-2] + (',{"name":"price","type":["null","double"],"default":null},'
                '{"name":"note","type":["null","string","long"],"default":null}]}')


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
    want.append({"symbol": value["symbol"], "qty": i, "venue": value["venue"], "price": None, "note": None})
v2 = AvroSerializer(registry, V2)
for i in range(20, 30):
    value = {"symbol": "S%d" % i, "qty": i, "venue": None, "price": i * 1.5, "note": "n%d" % i if i % 2 else i}
    producer.produce(topic, value=v2(value, ctx), on_delivery=lambda err, msg: err and errors.append(err))
    # the union's column: member0 the string, member1 the long
    note = {"member0": value["note"], "member1": None} if i % 2 else {"member0": None, "member1": i}
    want.append(dict(value, note=note))
for raw in (b"not avro", b"\x00\x00"):
    producer.produce(topic, value=raw, on_delivery=lambda err, msg: err and errors.append(err))
if producer.flush(30) != 0 or errors:
    fail("produce: %d left, errors %s" % (len(producer), errors))

catalog = lake.catalog(uri, s3)


def rows_of(name, n):
    return lake.rows_of(catalog, name, n)


rows = sorted(rows_of(table_name, 30), key=lambda r: r["kafka"]["offset"])
if len(rows) != 30:
    fail("the table has %d rows, want 30" % len(rows))
for i, (r, w) in enumerate(zip(rows, want)):
    got = {"symbol": r["symbol"], "qty": r["qty"], "venue": r["venue"], "price": r["price"], "note": r["note"]}
    if got != w or r["kafka"]["offset"] != i or r["kafka"]["partition"] != 0:
        fail("row %d: %s, want %s at offset %d" % (i, r, w, i))
dead = sorted(rows_of(dlq_name, 2), key=lambda r: r["offset"])
if [(r["offset"], r["value"]) for r in dead] != [(30, b"not avro"), (31, b"\x00\x00")]:
    fail("dead letters %s" % dead)
if not all("no schema id" in r["reason"] for r in dead):
    fail("dead letters' reasons %s" % [r["reason"] for r in dead])

# value_schema_latest: the subject's latest schema decodes plain Avro.
from confluent_kafka.schema_registry import Schema  # noqa: E402
registry.register_schema(latest_topic + "-value", Schema(V2, "AVRO"))
parsed = fastavro.parse_schema(json.loads(V2))
for i in range(5):
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, parsed, {"symbol": "L%d" % i, "qty": i, "venue": None, "price": 0.5, "note": None})
    producer.produce(latest_topic, value=buf.getvalue(), on_delivery=lambda err, msg: err and errors.append(err))
if producer.flush(30) != 0 or errors:
    fail("produce to %s: errors %s" % (latest_topic, errors))
latest_rows = sorted(rows_of(latest_table, 5), key=lambda r: r["kafka"]["offset"])
if [(r["symbol"], r["qty"], r["price"]) for r in latest_rows] != [("L%d" % i, i, 0.5) for i in range(5)]:
    fail("value_schema_latest rows %s" % latest_rows)
print("ok")
