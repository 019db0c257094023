"""A topic with iceberg.mode=value_schema_id_prefix and Protobuf values:
confluent-kafka-python's ProtobufSerializer produces records of the
second message of a file (so the values carry a message index), which
imports a file of its own (a reference) and google.protobuf.Timestamp;
then of a second version of the file that adds a field. pyiceberg reads
the table: the message's fields as columns (a message as a struct, the
enum by name, the timestamp as one, the repeated field as a list), the
added field a column null in the older rows.

Arguments: bootstrap servers, registry URL, catalog URL, S3 endpoint,
topic, table. Prints "ok" when every check passed.
"""
import datetime
import sys

from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf import timestamp_pb2  # noqa: F401 (the pool's well-known type)

import lake

bootstrap, url, uri, s3, topic, table_name = sys.argv[1:7]
F = descriptor_pb2.FieldDescriptorProto


def fail(why):
    print(why)
    sys.exit(1)


def order_class(pool, with_note):
    """shop.Order, the second message of icetrade/order.proto, in a pool
    of its own (each version of the file is another pool)."""
    money = descriptor_pb2.FileDescriptorProto(name="icetrade/money.proto", package="icetrade", syntax="proto3")
    m = money.message_type.add(name="Money")
    m.field.add(name="currency", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    m.field.add(name="units", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    order = descriptor_pb2.FileDescriptorProto(name="icetrade/order.proto", package="icetrade", syntax="proto3")
    order.dependency.extend(["icetrade/money.proto", "google/protobuf/timestamp.proto"])
    order.message_type.add(name="Ping").field.add(name="n", number=1, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    o = order.message_type.add(name="Order")
    st = o.enum_type.add(name="Status")
    st.value.add(name="NEW", number=0)
    st.value.add(name="PAID", number=1)
    o.field.add(name="id", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    o.field.add(name="total", number=2, type=F.TYPE_MESSAGE, type_name=".icetrade.Money", label=F.LABEL_OPTIONAL)
    o.field.add(name="at", number=3, type=F.TYPE_MESSAGE, type_name=".google.protobuf.Timestamp", label=F.LABEL_OPTIONAL)
    o.field.add(name="tags", number=4, type=F.TYPE_STRING, label=F.LABEL_REPEATED)
    o.field.add(name="status", number=5, type=F.TYPE_ENUM, type_name=".icetrade.Order.Status", label=F.LABEL_OPTIONAL)
    if with_note:
        o.field.add(name="note", number=6, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    pool.Add(money)
    pool.Add(order)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("icetrade.Order"))


registry = SchemaRegistryClient({"url": url})
producer = Producer({"bootstrap.servers": bootstrap})
errors = []
ctx = SerializationContext(topic, MessageField.VALUE)
want = []
for version, (lo, hi) in enumerate([(0, 20), (20, 30)]):
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    Order = order_class(pool, version == 1)
    serialize = ProtobufSerializer(Order, registry, {})
    for i in range(lo, hi):
        msg = Order(id="o-%d" % i, tags=["t%d" % i, "x"], status=i % 2)
        msg.total.currency = "EUR"
        msg.total.units = i * 100
        msg.at.seconds = 1700000000 + i
        if version == 1:
            msg.note = "n%d" % i
        producer.produce(topic, value=serialize(msg, ctx), on_delivery=lambda err, msg: err and errors.append(err))
        want.append({"id": "o-%d" % i, "total": {"currency": "EUR", "units": i * 100},
                     "at": datetime.datetime.fromtimestamp(1700000000 + i, datetime.timezone.utc),
                     "tags": ["t%d" % i, "x"], "status": "PAID" if i % 2 else "NEW",
                     "note": "n%d" % i if version == 1 else None})
    if producer.flush(30) != 0 or errors:
        fail("produce: %d left, errors %s" % (len(producer), errors))

why = lake.check_rows(lake.catalog(uri, s3), table_name, want)
if why:
    fail(why)
print("ok")
