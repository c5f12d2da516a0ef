"""confluent-kafka-python side of Petrel's client-compatibility tests
(integration/clients_python_test.go).

  python3 client.py produce BROKERS TOPIC PARTITIONS N PREFIX
    an idempotent producer (enable.idempotence=True) sends N records valued
    PREFIX-%05d, record i to partition i % PARTITIONS; flushes; prints "produced N".
  python3 client.py consume BROKERS TOPIC GROUP COUNT
    a group member (enable.auto.commit=False) prints COUNT records as
    "partition offset value", commits synchronously the offset after the last one
    printed of each partition, and closes (leaving the group).
  python3 client.py member BROKERS TOPIC GROUP CLIENT_ID
    a group member printing every record as "partition offset value" until SIGTERM,
    when it closes (committing and leaving, as the client does by default).
  python3 client.py txn BROKERS TOPIC PARTITIONS TXNID N
    a transactional producer (transactional.id TXNID) sends N records valued
    committed-%05d (record i to partition i % PARTITIONS) in one transaction and
    commits it, then N records valued aborted-%05d in another and aborts it; prints
    "committed N aborted N".
  python3 client.py dump BROKERS TOPIC
    reads every partition of TOPIC from its beginning to its end (the high
    watermark, or the last stable offset: read_committed is librdkafka's default)
    with assign() and no group membership (group.id is set only because the client
    requires one; nothing is committed), and prints each record as
    "partition offset key value", key and value as "x" and their bytes in hex, or
    "-" for null. Any consumer error fails the run.

Every run is bounded: it exits with status 3 after PETREL_SCRIPT_TIMEOUT_MS (60 s).
Client errors go to stderr.
"""

import binascii
import os
import signal
import sys
import threading
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition

TIMEOUT_MS = int(os.environ.get("PETREL_SCRIPT_TIMEOUT_MS", "60000"))
# The group timeouts: the client's defaults unless these are set.
GROUP_TIMEOUTS = {
    prop: os.environ[env]
    for prop, env in (("session.timeout.ms", "PETREL_SESSION_TIMEOUT_MS"),
                      ("heartbeat.interval.ms", "PETREL_HEARTBEAT_INTERVAL_MS"))
    if env in os.environ
}


def bound():
    def expire():
        sys.stderr.write("confluent-kafka %s: no result within %d ms\n" % (sys.argv[1], TIMEOUT_MS))
        sys.stderr.flush()
        os._exit(3)

    timer = threading.Timer(TIMEOUT_MS / 1000.0, expire)
    timer.daemon = True
    timer.start()


def out(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def produce(brokers, topic, partitions, n, prefix):
    errors = []

    def delivered(err, msg):
        if err is not None:
            errors.append(err)

    producer = Producer({
        "bootstrap.servers": brokers,
        "client.id": "confluent-producer",
        "enable.idempotence": True,
    })
    for i in range(n):
        value = "%s-%05d" % (prefix, i)
        while True:
            try:
                producer.produce(topic, value=value, partition=i % partitions, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    remaining = producer.flush(TIMEOUT_MS / 1000.0)
    if remaining:
        raise RuntimeError("%d records not delivered" % remaining)
    if errors:
        raise RuntimeError("%d delivery errors, the first: %s" % (len(errors), errors[0]))
    out("produced %d" % n)


def group_consumer(brokers, group, client_id, auto_commit):
    conf = {
        "bootstrap.servers": brokers,
        "group.id": group,
        "client.id": client_id,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": auto_commit,
    }
    conf.update(GROUP_TIMEOUTS)
    return Consumer(conf)


def consume(brokers, topic, group, count):
    start = time.monotonic()

    def log(what):
        sys.stderr.write("consume: %s after %d ms\n" % (what, (time.monotonic() - start) * 1000))

    consumer = group_consumer(brokers, group, "confluent-consume", False)
    consumer.subscribe([topic])
    nxt = {}
    printed = 0
    while printed < count:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            raise KafkaException(msg.error())
        if printed == 0:
            log("first record")
        out("%d %d %s" % (msg.partition(), msg.offset(), msg.value().decode()))
        nxt[msg.partition()] = msg.offset() + 1
        printed += 1
    log("%d records" % count)
    consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in sorted(nxt.items())], asynchronous=False)
    log("committed")
    consumer.close()
    log("closed")


def txn(brokers, topic, partitions, txn_id, n):
    producer = Producer({
        "bootstrap.servers": brokers,
        "client.id": "confluent-txn",
        "transactional.id": txn_id,
    })
    timeout = TIMEOUT_MS / 1000.0
    producer.init_transactions(timeout)
    for prefix, commit in (("committed", True), ("aborted", False)):
        producer.begin_transaction()
        for i in range(n):
            value = "%s-%05d" % (prefix, i)
            while True:
                try:
                    producer.produce(topic, value=value, partition=i % partitions)
                    break
                except BufferError:
                    producer.poll(0.1)
            producer.poll(0)
        if commit:
            producer.commit_transaction(timeout)
        else:
            producer.flush(timeout)
            producer.abort_transaction(timeout)
    out("committed %d aborted %d" % (n, n))


def member(brokers, topic, group, client_id):
    consumer = group_consumer(brokers, group, client_id, True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    consumer.subscribe([topic])
    while not stop.is_set():
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        if msg.error():
            sys.stderr.write("consumer error: %s\n" % msg.error())
            continue
        out("%d %d %s" % (msg.partition(), msg.offset(), msg.value().decode()))
    consumer.close()


def hexed(b):
    return "-" if b is None else "x" + binascii.hexlify(b).decode()


def dump(brokers, topic):
    consumer = Consumer({
        "bootstrap.servers": brokers,
        "client.id": "confluent-dump",
        "group.id": "confluent-dump-unused",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
    })
    timeout = TIMEOUT_MS / 1000.0
    md = consumer.list_topics(topic, timeout=timeout)
    parts = sorted(md.topics[topic].partitions)
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
    ends = {}
    for p in parts:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout, cached=False)
        ends[p] = high
    position = {p: -1 for p in parts}
    at_eof = set()
    while len(at_eof) < len(parts):
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                position[msg.partition()] = max(position[msg.partition()], msg.offset())
                at_eof.add(msg.partition())
                continue
            raise KafkaException(msg.error())
        out("%d %d %s %s" % (msg.partition(), msg.offset(), hexed(msg.key()), hexed(msg.value())))
        position[msg.partition()] = msg.offset() + 1
    for p in parts:
        if position[p] < ends[p]:
            raise RuntimeError("partition %d: read up to %d, the end offset is %d" % (p, position[p], ends[p]))
    consumer.close()


def main():
    bound()
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "produce":
        produce(args[0], args[1], int(args[2]), int(args[3]), args[4])
    elif mode == "consume":
        consume(args[0], args[1], args[2], int(args[3]))
    elif mode == "txn":
        txn(args[0], args[1], int(args[2]), args[3], int(args[4]))
    elif mode == "member":
        member(args[0], args[1], args[2], args[3])
    elif mode == "dump":
        dump(args[0], args[1])
    else:
        raise SystemExit("unknown mode %s" % mode)


if __name__ == "__main__":
    main()
