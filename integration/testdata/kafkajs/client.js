'use strict';
// kafkajs side of Petrel's client-compatibility tests (integration/clients_js_test.go).
//
//   node client.js produce BROKERS TOPIC PARTITIONS N PREFIX
//     an idempotent producer (idempotent: true, maxInFlightRequests: 1) sends N records
//     valued PREFIX-%05d, record i to partition i % PARTITIONS, in batches of 500, each
//     acknowledged before the next; prints "produced N".
//   node client.js consume BROKERS TOPIC GROUP COUNT
//     a group member (autoCommit off) prints COUNT records as "partition offset value",
//     commits the offset after the last one printed of each partition, and leaves.
//   node client.js member BROKERS TOPIC GROUP CLIENT_ID
//     a group member printing every record as "partition offset value" until SIGTERM,
//     when it leaves the group (auto-commit as kafkajs does by default).
//   node client.js txn BROKERS TOPIC PARTITIONS TXNID N
//     a transactional producer (transactionalId TXNID) sends N records valued
//     committed-%05d (record i to partition i % PARTITIONS) in one transaction and
//     commits it, then N records valued aborted-%05d in another and aborts it; prints
//     "committed N aborted N".
//   node client.js dump BROKERS TOPIC
//     reads every partition of TOPIC from its beginning (a consumer of a group of its
//     own: kafkajs has no consumer without one; autoCommit off) until it has read the
//     record just below each partition's end offset (admin.fetchTopicOffsets: the high
//     watermark), which must therefore be a record this consumer returns, and prints
//     each record as "partition offset key value", key and value as "x" and their
//     bytes in hex, or "-" for null. kafkajs reads read_committed by default.
//
// Every run is bounded: it exits with status 3 after PETREL_SCRIPT_TIMEOUT_MS (60 s).
// Logs go to stderr.

const { Kafka, logLevel } = require('kafkajs');

const timeoutMs = Number(process.env.PETREL_SCRIPT_TIMEOUT_MS || 60000);
setTimeout(() => {
  console.error(`kafkajs ${process.argv[2]}: no result within ${timeoutMs} ms`);
  process.exit(3);
}, timeoutMs).unref();

// The group timeouts: kafkajs's defaults (sessionTimeout 30 s, heartbeatInterval 3 s,
// maxWaitTimeInMs 5 s) unless PETREL_SESSION_TIMEOUT_MS and PETREL_HEARTBEAT_INTERVAL_MS
// are set. kafkajs heartbeats from its fetch loop, between fetches: a fetch that waits
// maxWaitTimeInMs for data delays the heartbeat that long, so a session timeout near it
// expires the member. A short session gets short fetch waits.
const groupTimeouts = {};
if (process.env.PETREL_SESSION_TIMEOUT_MS) {
  groupTimeouts.sessionTimeout = Number(process.env.PETREL_SESSION_TIMEOUT_MS);
  groupTimeouts.maxWaitTimeInMs = Math.min(5000, Math.floor(groupTimeouts.sessionTimeout / 6));
}
if (process.env.PETREL_HEARTBEAT_INTERVAL_MS) {
  groupTimeouts.heartbeatInterval = Number(process.env.PETREL_HEARTBEAT_INTERVAL_MS);
}

function kafka(brokers, clientId) {
  return new Kafka({
    clientId,
    brokers: brokers.split(','),
    logLevel: logLevel.WARN,
    logCreator: () => ({ namespace, level, label, log }) => {
      const { message, ...extra } = log;
      console.error(`${label} [${namespace}] ${message} ${JSON.stringify(extra)}`);
    },
  });
}

function out(line) {
  process.stdout.write(line + '\n');
}

async function produce(brokers, topic, partitions, n, prefix) {
  const producer = kafka(brokers, 'kafkajs-producer').producer({
    idempotent: true,
    maxInFlightRequests: 1,
  });
  await producer.connect();
  const batch = 500;
  for (let from = 0; from < n; from += batch) {
    const messages = [];
    for (let i = from; i < Math.min(n, from + batch); i++) {
      messages.push({ partition: i % partitions, value: `${prefix}-${String(i).padStart(5, '0')}` });
    }
    // acks: -1 is what idempotence requires and kafkajs's default.
    await producer.send({ topic, acks: -1, messages });
  }
  await producer.disconnect();
  out(`produced ${n}`);
}

async function txn(brokers, topic, partitions, txnId, n) {
  const producer = kafka(brokers, 'kafkajs-txn').producer({
    transactionalId: txnId,
    idempotent: true,
    maxInFlightRequests: 1,
  });
  await producer.connect();
  for (const [prefix, commit] of [['committed', true], ['aborted', false]]) {
    const transaction = await producer.transaction();
    const messages = [];
    for (let i = 0; i < n; i++) {
      messages.push({ partition: i % partitions, value: `${prefix}-${String(i).padStart(5, '0')}` });
    }
    await transaction.send({ topic, messages });
    if (commit) {
      await transaction.commit();
    } else {
      await transaction.abort();
    }
  }
  await producer.disconnect();
  out(`committed ${n} aborted ${n}`);
}

async function consume(brokers, topic, group, count) {
  const consumer = kafka(brokers, 'kafkajs-consume').consumer({
    groupId: group,
    ...groupTimeouts,
  });
  const start = Date.now();
  const since = () => `${Date.now() - start} ms`;
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  let printed = 0;
  const next = new Map(); // partition -> offset after the last printed record
  let finish;
  const finished = new Promise((resolve) => { finish = resolve; });
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      if (printed >= count) {
        return;
      }
      if (printed === 0) {
        console.error(`consume: first record after ${since()}`);
      }
      out(`${partition} ${message.offset} ${message.value.toString()}`);
      printed++;
      next.set(partition, BigInt(message.offset) + 1n);
      if (printed === count) {
        finish();
      }
    },
  });
  await finished;
  console.error(`consume: ${count} records after ${since()}`);
  const offsets = [...next].map(([partition, offset]) => ({ topic, partition, offset: offset.toString() }));
  await consumer.commitOffsets(offsets);
  console.error(`consume: committed after ${since()}`);
  await consumer.disconnect();
  console.error(`consume: disconnected after ${since()}`);
}

async function member(brokers, topic, group, clientId) {
  const consumer = kafka(brokers, clientId).consumer({
    groupId: group,
    ...groupTimeouts,
  });
  let stopping = false;
  process.on('SIGTERM', async () => {
    if (stopping) return;
    stopping = true;
    try {
      await consumer.disconnect();
    } finally {
      process.exit(0);
    }
  });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      out(`${partition} ${message.offset} ${message.value.toString()}`);
    },
  });
  // Runs until SIGTERM (leave) or SIGKILL; the timeout above bounds it.
}

function hexed(b) {
  return b === null || b === undefined ? '-' : `x${b.toString('hex')}`;
}

async function dump(brokers, topic) {
  const client = kafka(brokers, 'kafkajs-dump');
  const admin = client.admin();
  await admin.connect();
  const offsets = await admin.fetchTopicOffsets(topic);
  await admin.disconnect();
  // partition -> the offset of the last record to read (high watermark - 1)
  const last = new Map();
  for (const { partition, high, low } of offsets) {
    if (BigInt(high) > BigInt(low)) {
      last.set(partition, BigInt(high) - 1n);
    }
  }
  const consumer = client.consumer({
    groupId: `kafkajs-dump-${process.pid}-${Date.now()}`,
    maxWaitTimeInMs: 200,
  });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  let finish;
  const finished = new Promise((resolve) => { finish = resolve; });
  if (last.size === 0) {
    finish();
  }
  const seen = new Map(); // partition -> offset of the last record read
  process.on('exit', (code) => {
    if (code !== 0) {
      const at = [...seen].map(([p, o]) => `${p}@${o}`).join(' ') || 'none';
      console.error(`dump: last records read (partition@offset): ${at}; to read up to: ${[...last].map(([p, o]) => `${p}@${o}`).join(' ')}`);
    }
  });
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      const offset = BigInt(message.offset);
      const prev = seen.get(partition);
      if (prev !== undefined && offset <= prev) {
        return; // already printed (a rebalance makes kafkajs read records again)
      }
      out(`${partition} ${message.offset} ${hexed(message.key)} ${hexed(message.value)}`);
      seen.set(partition, offset);
      if (last.has(partition) && offset >= last.get(partition)) {
        last.delete(partition);
        if (last.size === 0) {
          finish();
        }
      }
    },
  });
  await finished;
  await consumer.disconnect();
  // Writes to a pipe are asynchronous: the exit must not cut the output short.
  await new Promise((resolve) => process.stdout.write('', resolve));
}

async function main() {
  const [mode, ...args] = process.argv.slice(2);
  switch (mode) {
    case 'produce':
      return produce(args[0], args[1], Number(args[2]), Number(args[3]), args[4]);
    case 'txn':
      return txn(args[0], args[1], Number(args[2]), args[3], Number(args[4]));
    case 'consume':
      return consume(args[0], args[1], args[2], Number(args[3]));
    case 'member':
      return member(args[0], args[1], args[2], args[3]);
    case 'dump':
      return dump(args[0], args[1]);
    default:
      throw new Error(`unknown mode ${mode}`);
  }
}

main().then(
  () => { if (process.argv[2] !== 'member') process.exit(0); },
  (err) => {
    console.error(`kafkajs ${process.argv[2]}: ${err && err.stack ? err.stack : err}`);
    process.exit(1);
  },
);
