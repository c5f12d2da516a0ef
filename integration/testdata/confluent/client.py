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
  python3 client.py sendoffsets BROKERS IN OUT GROUP TXNID OFFSET
    a transactional producer (transactional.id TXNID) sends one record valued
    transformed to partition 0 of OUT and, in the same transaction,
    send_offsets_to_transaction() commits OFFSET for partition 0 of IN in GROUP;
    commits the transaction and prints "committed offset OFFSET". The group metadata
    is that of a consumer of GROUP that never reaches the cluster (no
    bootstrap.servers): generation -1 and no member id, the pre-KIP-447 form, and no
    FindCoordinator for the group before the producer's AddOffsetsToTxn.
  python3 client.py dump BROKERS TOPIC
    reads every partition of TOPIC from its beginning to its end (the high
    watermark, or the last stable offset: read_committed is librdkafka's default)
    with assign() and no group membership (group.id is set only because the client
    requires one; nothing is committed), and prints each record as
    "partition offset key value", key and value as "x" and their bytes in hex, or
    "-" for null. Any consumer error fails the run.
  python3 client.py appendtime BROKERS TOPIC BATCHES CREATETIME
    an idempotent producer sends BATCHES batches of 3 records (one produce and flush
    each) to partition 0, every record with the timestamp CREATETIME; before each
    batch it waits until the clock has passed the last batch's append time, so the
    batches' append times differ. It prints each delivery report as "delivered
    OFFSET TYPE TS" (TYPE 1 CreateTime, 2 LogAppendTime), then reads the partition
    from its beginning and prints each record as "consumed OFFSET TYPE TS", then asks
    offsets_for_times for CREATETIME, for each batch's delivered timestamp and for the
    last one plus 1, printing "lookup TS OFFSET" (-1: none).
  python3 client.py codec BROKERS TOPIC N PREFIX CODEC
    an idempotent producer with compression.codec CODEC sends N records keyed
    key-%05d and valued PREFIX-%05d to partition 0, batched (linger.ms 100), and
    prints "produced N".

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


def send_offsets(brokers, topic_in, topic_out, group, txn_id, offset):
    # Only the group metadata is taken from this consumer: it has no brokers to
    # connect to, so it looks nothing up.
    meta_consumer = Consumer({"group.id": group, "client.id": "confluent-group-metadata"})
    metadata = meta_consumer.consumer_group_metadata()
    meta_consumer.close()
    producer = Producer({
        "bootstrap.servers": brokers,
        "client.id": "confluent-send-offsets",
        "transactional.id": txn_id,
    })
    timeout = TIMEOUT_MS / 1000.0
    producer.init_transactions(timeout)
    producer.begin_transaction()
    producer.produce(topic_out, value="transformed", partition=0)
    # Within the script's bound, so that librdkafka's own error is what a failure shows.
    producer.send_offsets_to_transaction([TopicPartition(topic_in, 0, offset)], metadata, timeout * 0.8)
    producer.commit_transaction(timeout)
    out("committed offset %d" % offset)


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


def append_time(brokers, topic, batches, create_time):
    timeout = TIMEOUT_MS / 1000.0
    delivered = []
    errors = []

    def report(err, msg):
        if err is not None:
            errors.append(err)
            return
        tstype, ts = msg.timestamp()
        delivered.append((msg.offset(), tstype, ts))

    producer = Producer({
        "bootstrap.servers": brokers,
        "client.id": "confluent-appendtime",
        "enable.idempotence": True,
    })
    batch_times = []
    for b in range(batches):
        if batch_times:
            # Poll the clock (bounded by the script's timeout) past the last append
            # time, so that this batch is stamped later.
            while int(time.time() * 1000) <= batch_times[-1]:
                time.sleep(0.001)
        for i in range(3):
            producer.produce(topic, value="r-%d-%d" % (b, i), partition=0, timestamp=create_time, on_delivery=report)
        if producer.flush(timeout):
            raise RuntimeError("batch %d not delivered" % b)
        if errors:
            raise RuntimeError("delivery error: %s" % errors[0])
        batch_times.append(max(ts for _, _, ts in delivered[-3:]))
    for offset, tstype, ts in delivered:
        out("delivered %d %d %d" % (offset, tstype, ts))

    consumer = Consumer({
        "bootstrap.servers": brokers,
        "client.id": "confluent-appendtime",
        "group.id": "confluent-appendtime-unused",
        "enable.auto.commit": False,
        "enable.partition.eof": True,
    })
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    while True:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                break
            raise KafkaException(msg.error())
        tstype, ts = msg.timestamp()
        out("consumed %d %d %d" % (msg.offset(), tstype, ts))
    for ts in [create_time] + batch_times + [batch_times[-1] + 1]:
        found = consumer.offsets_for_times([TopicPartition(topic, 0, ts)], timeout)
        if found[0].error is not None:
            raise KafkaException(found[0].error)
        out("lookup %d %d" % (ts, found[0].offset))
    consumer.close()


def codec(brokers, topic, n, prefix, codec_name):
    errors = []

    def delivered(err, msg):
        if err is not None:
            errors.append(err)

    producer = Producer({
        "bootstrap.servers": brokers,
        "client.id": "confluent-codec",
        "enable.idempotence": True,
        "compression.codec": codec_name,
        "linger.ms": 100,
    })
    for i in range(n):
        while True:
            try:
                producer.produce(topic, key="key-%05d" % i, value="%s-%05d" % (prefix, i), partition=0, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    if producer.flush(TIMEOUT_MS / 1000.0):
        raise RuntimeError("records not delivered")
    if errors:
        raise RuntimeError("%d delivery errors, the first: %s" % (len(errors), errors[0]))
    out("produced %d" % n)


def main():
    bound()
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "produce":
        produce(args[0], args[1], int(args[2]), int(args[3]), args[4])
    elif mode == "consume":
        consume(args[0], args[1], args[2], int(args[3]))
    elif mode == "txn":
        txn(args[0], args[1], int(args[2]), args[3], int(args[4]))
    elif mode == "sendoffsets":
        send_offsets(args[0], args[1], args[2], args[3], args[4], int(args[5]))
    elif mode == "member":
        member(args[0], args[1], args[2], args[3])
    elif mode == "dump":
        dump(args[0], args[1])
    elif mode == "appendtime":
        append_time(args[0], args[1], int(args[2]), int(args[3]))
    elif mode == "codec":
        codec(args[0], args[1], int(args[2]), args[3], args[4])
    else:
        raise SystemExit("unknown mode %s" % mode)


if __name__ == "__main__":
    main()
