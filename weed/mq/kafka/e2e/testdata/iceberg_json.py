"""A topic with iceberg.mode=value_schema_id_prefix and JSON Schema values:
confluent-kafka-python's JSONSerializer produces 20 readings; pyiceberg
reads the table: the object's properties as columns (a date-time as a
timestamp, a nested object as a struct, an array as a list, a property
named first-name as the column first_name).

Arguments: bootstrap servers, registry URL, catalog URL, S3 endpoint,
topic, table. Prints "ok" when every check passed.
"""
import datetime
import sys

from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

import lake

bootstrap, url, uri, s3, topic, table_name = sys.argv[1:7]
SCHEMA = """{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "title": "Reading", "type": "object",
  "properties": {
    "sensor": {"type": "string"},
    "value": {"type": "number"},
    "count": {"type": "integer"},
    "at": {"type": "string", "format": "date-time"},
    "where": {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}}},
    "tags": {"type": "array", "items": {"type": "string"}},
    "first-name": {"type": ["null", "string"]}
  },
  "required": ["sensor"]
}"""


def fail(why):
    print(why)
    sys.exit(1)


registry = SchemaRegistryClient({"url": url})
producer = Producer({"bootstrap.servers": bootstrap})
serialize = JSONSerializer(SCHEMA, registry)
ctx = SerializationContext(topic, MessageField.VALUE)
errors = []
want = []
for i in range(20):
    at = datetime.datetime(2024, 1, 2, 3, 4, i, tzinfo=datetime.timezone.utc)
    v = {"sensor": "s%d" % i, "value": i + 0.5, "count": i, "at": at.isoformat(),
         "where": {"lat": 1.5, "lon": -2.25}, "tags": ["t%d" % i], "first-name": None if i % 2 else "n%d" % i}
    producer.produce(topic, value=serialize(v, ctx), on_delivery=lambda err, msg: err and errors.append(err))
    want.append({"sensor": v["sensor"], "value": v["value"], "count": i, "at": at, "where": v["where"], "tags": v["tags"],
                 "first_name": v["first-name"]})
if producer.flush(30) != 0 or errors:
    fail("produce: %d left, errors %s" % (len(producer), errors))

why = lake.check_rows(lake.catalog(uri, s3), table_name, want)
if why:
    fail(why)
print("ok")
