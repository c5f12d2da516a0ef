"""kafka-python side of Petrel's client-compatibility tests
(integration/compaction_clients_test.go), for kafka-python 2.0.2 (Debian's
python3-kafka).

  python3 client.py dump BROKERS TOPIC
    reads every partition of TOPIC from its beginning to its end offset (the high
    watermark) with assign() and no group (group_id None, nothing committed), and
    prints each record as "partition offset key value", key and value as "x" and
    their bytes in hex, or "-" for null. kafka-python 2.0.2 has no read_committed
    (its fetcher's isolation level is READ_UNCOMMITTED) and returns the records of
    control batches (transaction markers) as data: they are printed like the others.

Every run is bounded: it exits with status 3 after PETREL_SCRIPT_TIMEOUT_MS (60 s).
Client errors go to stderr.
"""

import binascii
import os
import sys
import threading
import time

from kafka import KafkaConsumer, TopicPartition

TIMEOUT_MS = int(os.environ.get("PETREL_SCRIPT_TIMEOUT_MS", "60000"))


def bound():
    def expire():
        sys.stderr.write("kafka-python %s: no result within %d ms\n" % (sys.argv[1], TIMEOUT_MS))
        sys.stderr.flush()
        os._exit(3)

    timer = threading.Timer(TIMEOUT_MS / 1000.0, expire)
    timer.daemon = True
    timer.start()


def out(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def hexed(b):
    return "-" if b is None else "x" + binascii.hexlify(b).decode()


def dump(brokers, topic):
    consumer = KafkaConsumer(
        bootstrap_servers=brokers.split(","),
        client_id="kafka-python-dump",
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        request_timeout_ms=30000,
        fetch_max_wait_ms=200,
    )
    deadline = time.monotonic() + TIMEOUT_MS / 1000.0
    parts = None
    while parts is None:
        parts = consumer.partitions_for_topic(topic)
        if parts is None:
            if time.monotonic() > deadline:
                raise RuntimeError("no metadata for %s" % topic)
            time.sleep(0.1)
    tps = [TopicPartition(topic, p) for p in sorted(parts)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    ends = consumer.end_offsets(tps)
    remaining = {tp for tp in tps if consumer.position(tp) < ends[tp]}
    while remaining:
        batches = consumer.poll(timeout_ms=500)
        for tp, records in sorted(batches.items()):
            for r in records:
                out("%d %d %s %s" % (r.partition, r.offset, hexed(r.key), hexed(r.value)))
        remaining = {tp for tp in remaining if consumer.position(tp) < ends[tp]}
    consumer.close(autocommit=False)


def main():
    bound()
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "dump":
        dump(args[0], args[1])
    else:
        raise SystemExit("unknown mode %s" % mode)


if __name__ == "__main__":
    main()
