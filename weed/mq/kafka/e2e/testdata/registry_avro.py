"""confluent-kafka-python (librdkafka) with its Schema Registry client,
AvroSerializer and AvroDeserializer, against the gateway's registry.

Arguments: bootstrap servers, registry URL, topic. Prints "ok" when every
check passed; exits non-zero with the reason otherwise.
"""
import sys

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

bootstrap, url, topic = sys.argv[1:4]
subject = topic + "-value"
V1 = '{"type":"record","name":"Payment","namespace":"py","fields":[{"name":"id","type":"string"},{"name":"amount","type":"double"}]}'
V2 = '{"type":"record","name":"Payment","namespace":"py","fields":[{"name":"id","type":"string"},{"name":"amount","type":"double"},{"name":"currency","type":"string","default":"EUR"}]}'
BAD = '{"type":"record","name":"Payment","namespace":"py","fields":[{"name":"id","type":"long"},{"name":"amount","type":"double"}]}'
N = 20


def fail(why):
    print(why)
    sys.exit(1)


registry = SchemaRegistryClient({"url": url})
# The serializer registers the schema (auto.register.schemas) on its first record.
serialize = AvroSerializer(registry, V1)
producer = Producer({"bootstrap.servers": bootstrap})
errors = []
for i in range(N):
    value = serialize({"id": "p-%d" % i, "amount": i * 1.5}, SerializationContext(topic, MessageField.VALUE))
    producer.produce(topic, value=value, on_delivery=lambda err, msg: err and errors.append(err))
if producer.flush(30) != 0 or errors:
    fail("produce: %d left, errors %s" % (len(producer), errors))

latest = registry.get_latest_version(subject)
if latest.version != 1:
    fail("latest version of %s: %d" % (subject, latest.version))

# The deserializer has no schema: it asks the registry for each id.
deserialize = AvroDeserializer(registry)
consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic + "-py", "auto.offset.reset": "earliest"})
consumer.subscribe([topic])
got = []
for _ in range(120):
    if len(got) == N:
        break
    msg = consumer.poll(1.0)
    if msg is None:
        continue
    if msg.error():
        fail("consume: %s" % msg.error())
    got.append(deserialize(msg.value(), SerializationContext(topic, MessageField.VALUE)))
consumer.close()
# Three partitions: each record once, in any order across them.
want = [{"id": "p-%d" % i, "amount": i * 1.5} for i in range(N)]
if sorted(got, key=lambda r: int(r["id"][2:])) != want:
    fail("consumed %s" % got[:3])

# Evolution at the default BACKWARD level: a field with a default is
# accepted, a changed type refused with 409.
v2 = registry.register_schema(subject, Schema(V2, "AVRO"))
if v2 == latest.schema_id:
    fail("the second version got the first's id")
try:
    registry.register_schema(subject, Schema(BAD, "AVRO"))
    fail("an incompatible schema was registered")
except SchemaRegistryError as e:
    if e.http_status_code != 409:
        fail("an incompatible schema: %s" % e)
if registry.test_compatibility(subject, Schema(BAD, "AVRO")):
    fail("test_compatibility says the incompatible schema is compatible")
if sorted(registry.get_versions(subject)) != [1, 2]:
    fail("versions %s" % registry.get_versions(subject))
print("ok")
