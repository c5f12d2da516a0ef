#!/usr/bin/env bash
# Produce throughput over SASL_SSL against PLAINTEXT, same broker, same run:
#   bash docs/bench/tls.sh [records] [rounds]
# Starts one throwaway broker with a PLAINTEXT and a SASL_SSL listener (certificates
# made here with openssl, a SCRAM-SHA-512 user created over PLAINTEXT), then runs
# `petrel perf produce` with 1 KiB records, acks=1, no compression, alternating
# PLAINTEXT and SASL_SSL rounds on one 3-partition topic. Prints a Markdown table and
# the ratio of the mean MB/s.
set -euo pipefail
cd "$(dirname "$0")/../.."
records=${1:-200000}
rounds=${2:-3}
work=$(mktemp -d)
bin=$work/petrel
go build -o "$bin" .

source docs/bench/ports.sh # free_ports

# A CA and a server certificate for 127.0.0.1 (the keystore: key + chain in one PEM).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=bench-ca \
  -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=broker \
  -keyout "$work/broker.key" -out "$work/broker.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >"$work/san.ext"
openssl x509 -req -in "$work/broker.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial \
  -days 1 -extfile "$work/san.ext" -out "$work/broker.crt" 2>/dev/null
cat "$work/broker.key" "$work/broker.crt" >"$work/keystore.pem"

read -r plain secure raft <<<"$(free_ports 3)"
log=$work/broker.log
"$bin" server --node-id 0 --data-dir "$work/data" --raft-listen "127.0.0.1:$raft" --metrics-listen "" \
  --set "listeners=PLAINTEXT://127.0.0.1:$plain,SASL_SSL://127.0.0.1:$secure" \
  --set ssl.keystore.type=PEM --set "ssl.keystore.location=$work/keystore.pem" \
  --set sasl.enabled.mechanisms=SCRAM-SHA-512 --set petrel.raft.security.protocol=PLAINTEXT >"$log" 2>&1 &
broker_pid=$!
trap 'kill $broker_pid 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 1 300); do grep -q "listening on" "$log" && break; sleep 0.1; done

"$bin" users scram set bench --mechanism SCRAM-SHA-512 --iterations 4096 --password bench-secret \
  --bootstrap-server "127.0.0.1:$plain" >/dev/null
cat >"$work/client.properties" <<PROPS
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="bench" password="bench-secret";
ssl.truststore.type=PEM
ssl.truststore.location=$work/ca.pem
PROPS
"$bin" topics create bench --partitions 3 --bootstrap-server "127.0.0.1:$plain" >/dev/null

run() { # $1: label, rest: client flags
  local label=$1; shift
  "$bin" perf produce bench --records "$records" --record-size 1024 --acks 1 --json "$@" 2>/dev/null |
    python3 -c "
import json,sys
d=json.load(sys.stdin); l=d['latency_ms']
print('| $label | %.0f | %.1f | %.1f | %.1f |' % (d['records_per_second'], d['mb_per_second'], l['p50'], l['p99']))"
}
echo "| listener | records/s | MB/s | p50 ms | p99 ms |"
echo "|---|---:|---:|---:|---:|"
out=$work/rows
for _ in $(seq 1 "$rounds"); do
  run PLAINTEXT --bootstrap-server "127.0.0.1:$plain" | tee -a "$out"
  run "SASL_SSL (SCRAM-SHA-512)" --bootstrap-server "127.0.0.1:$secure" --command-config "$work/client.properties" | tee -a "$out"
done
python3 - "$out" <<'PY'
import sys
rows=[l.split('|') for l in open(sys.argv[1])]
mb=lambda name: [float(r[3]) for r in rows if r[1].strip().startswith(name)]
p, s = mb('PLAINTEXT'), mb('SASL_SSL')
print('\nmean MB/s: PLAINTEXT %.1f, SASL_SSL %.1f, ratio %.2f' % (sum(p)/len(p), sum(s)/len(s), (sum(s)/len(s))/(sum(p)/len(p))))
PY
