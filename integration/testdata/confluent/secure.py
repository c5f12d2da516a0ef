"""confluent-kafka-python over a secured listener (integration/security_clients_test.go).

  python3 secure.py BROKERS TOPIC N
    produces N records valued secure-%05d, then consumes them back from the start
    with a group consumer and prints "consumed N". The client's security settings
    (security.protocol, sasl.*, ssl.*) come as JSON in PETREL_CLIENT_CONFIG.

Every run is bounded: it exits with status 3 after PETREL_SCRIPT_TIMEOUT_MS (60 s).
"""

import json
import os
import sys
import threading
import time

from confluent_kafka import Consumer, Producer

TIMEOUT_MS = int(os.environ.get("PETREL_SCRIPT_TIMEOUT_MS", "60000"))


def expire():
    sys.stderr.write("confluent-kafka secure: no result within %d ms\n" % TIMEOUT_MS)
    sys.stderr.flush()
    os._exit(3)


def main():
    timer = threading.Timer(TIMEOUT_MS / 1000.0, expire)
    timer.daemon = True
    timer.start()
    brokers, topic, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    security = json.loads(os.environ.get("PETREL_CLIENT_CONFIG", "{}"))
    errors = []

    def report(err, _msg):
        if err is not None:
            errors.append(err)

    p = Producer(dict(security, **{"bootstrap.servers": brokers}))
    for i in range(n):
        p.produce(topic, value=("secure-%05d" % i).encode(), on_delivery=report)
    p.flush(TIMEOUT_MS / 1000.0)
    if errors:
        sys.stderr.write("produce: %s\n" % errors[0])
        sys.exit(1)
    c = Consumer(dict(security, **{"bootstrap.servers": brokers, "group.id": "secure-" + topic,
                                   "auto.offset.reset": "earliest"}))
    c.subscribe([topic])
    seen = set()
    deadline = time.time() + TIMEOUT_MS / 1000.0
    while len(seen) < n and time.time() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        if m.error():
            sys.stderr.write("consume: %s\n" % m.error())
            continue
        seen.add(m.value())
    c.close()
    print("consumed %d" % len(seen))
    sys.exit(0 if len(seen) == n else 1)


if __name__ == "__main__":
    main()
