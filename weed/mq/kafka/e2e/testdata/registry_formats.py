"""confluent-kafka-python (librdkafka) with its Schema Registry client,
ProtobufSerializer/ProtobufDeserializer and JSONSerializer/JSONDeserializer,
against the gateway's registry.

Arguments: bootstrap servers, registry URL, Protobuf topic, JSON topic.
Prints "ok" when every check passed; exits non-zero with the reason
otherwise.
"""
import sys

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf import timestamp_pb2  # noqa: F401 (the pool's well-known type)

bootstrap, url, proto_topic, json_topic = sys.argv[1:5]
N = 20
F = descriptor_pb2.FieldDescriptorProto


def fail(why):
    print(why)
    sys.exit(1)


def produce(topic, serialize, values):
    producer = Producer({"bootstrap.servers": bootstrap})
    errors = []
    for v in values:
        data = serialize(v, SerializationContext(topic, MessageField.VALUE))
        producer.produce(topic, value=data, on_delivery=lambda err, msg: err and errors.append(err))
    if producer.flush(30) != 0 or errors:
        fail("produce to %s: %d left, errors %s" % (topic, len(producer), errors))


def consume(topic, deserialize, n):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic + "-py", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = []
    for _ in range(120):
        if len(got) == n:
            break
        msg = consumer.poll(1.0)
        if msg is None:
            continue
        if msg.error():
            fail("consume %s: %s" % (topic, msg.error()))
        got.append(deserialize(msg.value(), SerializationContext(topic, MessageField.VALUE)))
    consumer.close()
    return got


def refused_409(subject, schema):
    try:
        registry.register_schema(subject, schema)
    except SchemaRegistryError as e:
        if e.http_status_code != 409:
            fail("%s: an incompatible schema: %s" % (subject, e))
        return
    fail("%s: an incompatible schema was registered" % subject)


registry = SchemaRegistryClient({"url": url})

# --- Protobuf: Order imports Money (a file of its own, registered as a
# reference by the serializer) and google.protobuf.Timestamp (well known,
# not registered).
money = descriptor_pb2.FileDescriptorProto(name="pyshop/money.proto", package="pyshop", syntax="proto3")
m = money.message_type.add(name="Money")
m.field.add(name="currency", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
m.field.add(name="units", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
order = descriptor_pb2.FileDescriptorProto(name="pyshop/order.proto", package="pyshop", syntax="proto3")
order.dependency.extend(["pyshop/money.proto", "google/protobuf/timestamp.proto"])
o = order.message_type.add(name="Order")
o.field.add(name="id", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
o.field.add(name="total", number=2, type=F.TYPE_MESSAGE, type_name=".pyshop.Money", label=F.LABEL_OPTIONAL)
o.field.add(name="at", number=3, type=F.TYPE_MESSAGE, type_name=".google.protobuf.Timestamp", label=F.LABEL_OPTIONAL)
o.field.add(name="tags", number=4, type=F.TYPE_STRING, label=F.LABEL_REPEATED)
pool = descriptor_pool.Default()
pool.Add(money)
pool.Add(order)
Order = message_factory.GetMessageClass(pool.FindMessageTypeByName("pyshop.Order"))


def make_order(i):
    msg = Order(id="o-%d" % i, tags=["t%d" % i, "x"])
    msg.total.currency = "EUR"
    msg.total.units = i * 100
    msg.at.seconds = 1700000000 + i
    return msg


serialize = ProtobufSerializer(Order, registry, {})
produce(proto_topic, serialize, [make_order(i) for i in range(N)])
subject = proto_topic + "-value"
latest = registry.get_latest_version(subject)
if latest.version != 1 or latest.schema.schema_type != "PROTOBUF" or "message Order" not in latest.schema.schema_str:
    fail("%s kept as %s %s" % (subject, latest.schema.schema_type, latest.schema.schema_str))
refs = [(r.name, r.subject) for r in latest.schema.references]
if refs != [("pyshop/money.proto", "pyshop/money.proto")]:
    fail("%s references %s" % (subject, refs))
# The deserializer takes the writer's schema from the registry (as a
# serialized descriptor) for each id it meets.
deserialize = ProtobufDeserializer(Order, {}, registry)
got = consume(proto_topic, deserialize, N)
if sorted(m.SerializeToString(deterministic=True) for m in got) != sorted(make_order(i).SerializeToString(deterministic=True) for i in range(N)):
    fail("consumed %s" % got[:2])
# Evolution at BACKWARD: a field added is compatible; a field's type
# changed is refused with 409.
text = latest.schema.schema_str
added = text.replace("repeated string tags = 4;", "repeated string tags = 4;\n  string note = 5;")
if added == text:
    fail("no tags field in the kept text: %s" % text)
v2 = registry.register_schema(subject, Schema(added, "PROTOBUF", latest.schema.references))
if v2 == latest.schema_id:
    fail("the second Protobuf version got the first's id")
refused_409(subject, Schema(added.replace("string id = 1;", "int64 id = 1;"), "PROTOBUF", latest.schema.references))

# --- JSON Schema: a closed object; the serializer validates each record.
J1 = """{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "title": "Reading", "type": "object", "additionalProperties": false,
  "properties": {
    "sensor": {"type": "string"},
    "value": {"type": "number"},
    "unit": {"enum": ["C", "F"]}
  },
  "required": ["sensor", "value"]
}"""
jserialize = JSONSerializer(J1, registry, lambda v, ctx: v)
values = [{"sensor": "s-%d" % i, "value": i / 4, "unit": "C" if i % 2 else "F"} for i in range(N)]
produce(json_topic, jserialize, values)
try:
    jserialize({"sensor": "s", "value": "warm"}, SerializationContext(json_topic, MessageField.VALUE))
    fail("the JSON serializer took a record its schema refuses")
except Exception as e:  # SerializationError: the record is checked against the registered schema
    if "warm" not in str(e) and "number" not in str(e):
        fail("an invalid record refused for another reason: %s" % e)
jdeserialize = JSONDeserializer(None, lambda v, ctx: v, registry)
jgot = consume(json_topic, jdeserialize, N)
if sorted(jgot, key=lambda v: int(v["sensor"][2:])) != values:
    fail("consumed %s" % jgot[:3])
jsubject = json_topic + "-value"
jlatest = registry.get_latest_version(jsubject)
if jlatest.schema.schema_type != "JSON":
    fail("%s kept as %s" % (jsubject, jlatest.schema.schema_type))
# A property added to the closed model: compatible. The value narrowed
# to an integer, or the enum narrowed: 409.
J2 = J1.replace('"unit": {"enum": ["C", "F"]}', '"unit": {"enum": ["C", "F"]}, "note": {"type": "string"}')
j2 = registry.register_schema(jsubject, Schema(J2, "JSON"))
if j2 == jlatest.schema_id:
    fail("the second JSON version got the first's id")
refused_409(jsubject, Schema(J2.replace('"value": {"type": "number"}', '"value": {"type": "integer"}'), "JSON"))
refused_409(jsubject, Schema(J2.replace('["C", "F"]', '["C"]'), "JSON"))
if registry.test_compatibility(jsubject, Schema(J2.replace('["C", "F"]', '["C"]'), "JSON")):
    fail("test_compatibility says the narrowed enum is compatible")
print("ok")
