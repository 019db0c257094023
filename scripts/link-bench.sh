#!/usr/bin/env bash
# Topic link throughput: starts Apache Kafka 4.4 (KRaft, one node, from the
# Maven Central artifacts) and a gateway on an embedded SeaweedFS on this
# machine, fills a topic of 8 partitions on Kafka with RECORDS records of
# 100 bytes (weed mq.kafka.bench), links it, and measures how long the
# gateway takes to catch up (records/s and MB/s of the copy). Then, with
# the link active, it produces to Kafka at RATE records/s for 30 s and
# samples the link's lag (records behind, from the link's state) every
# second. For comparison it prints the gateway's own produce rate of the
# same load. Every server binds 127.0.0.1 on free ports and is stopped at
# the end.
#
#   bash scripts/link-bench.sh                  # 10 million records
#   RECORDS=1000000 RATE=20000 bash scripts/link-bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
records=${RECORDS:-10000000}
rate=${RATE:-50000}

source scripts/compare/servers.sh
build_and_fetch
echo "== start Apache Kafka (KRaft) and the gateway" >&2
start_kafka
gconsole=$(free_port)
start_gateway -console.listeners="http://127.0.0.1:$gconsole" -schema.registry.listeners=none -link.sync.interval.ms=1000
api="http://127.0.0.1:$gconsole"
wait_up

# lag prints the records the link is behind on topic (all its partitions),
# or "none" before its state has the topic.
lag() {
	curl -sf "$api/api/links/bench" | python3 -c '
import json, sys
st = json.load(sys.stdin).get("status") or {}
t = (st.get("topics") or {}).get(sys.argv[1])
if not t or len(t.get("lag") or {}) < t["partitions"]:
    print("none")
elif len(sys.argv) > 2:
    print(st["updated"], sum(l["sourceEnd"] for l in t["lag"].values()))
else:
    print(sum(max(0, l["sourceEnd"] - l["mirrorEnd"]) for l in t["lag"].values()))
' "$@"
}

echo "== $records records of 100 bytes to Kafka, 8 partitions" >&2
"$work/weed" mq.kafka.bench -bootstrap="$kafka" -topic=link-bench -partitions=8 -records="$records" -size=100 -backlog=false -timeout=20m >&2
echo "== the same load to the gateway (its own produce rate)" >&2
own=$("$work/weed" mq.kafka.bench -bootstrap="$gateway" -topic=own-bench -partitions=8 -records="$records" -size=100 -backlog=false -timeout=20m 2>&1 | tee /dev/stderr | grep -E '^produce' | tail -1)

java -cp "$kafka_cp" org.apache.kafka.tools.TopicCommand --bootstrap-server "$kafka" --create --topic link-live --partitions 8 >/dev/null

echo "== link the topics and wait for the copy" >&2
start=$(date +%s.%N)
"$work/weed" mq.kafka.link create -bootstrap="$api" -name=bench -source="$kafka" -topics='link-bench|link-live' >&2
while [ "$(lag link-bench)" != 0 ] || [ "$(lag link-live)" != 0 ]; do
	sleep 0.2
done
end=$(date +%s.%N)
# From the create on: the topics' creation and the first fetches included.
secs=$(python3 -c "print(round($end - $start, 1))")
rps=$(python3 -c "print(round($records / ($end - $start)))")
mbs=$(python3 -c "print(round($records * 100 / ($end - $start) / 1e6, 1))")

echo "== $rate records/s to Kafka for 30 s with the link active: its lag each second" >&2
"$work/weed" mq.kafka.bench -bootstrap="$kafka" -topic=link-live -partitions=8 -records=$((rate * 30)) -rate="$rate" -size=100 -backlog=false -timeout=2m >"$work/live.log" 2>&1 &
load=$!
samples=()
rounds=()
while kill -0 "$load" 2>/dev/null; do
	l=$(lag link-live)
	if [ "$l" != none ]; then
		samples+=("$l")
		rounds+=("$(lag link-live ends)")
	fi
	sleep 1
done
# Each sample is of a round of the link's controller that measured the
# source's end moving (the load was on).
distinct=$(printf '%s\n' "${rounds[@]:-}" | sort -u | wc -l)
wait "$load" || true
tr '\r' '\n' <"$work/live.log" | grep -E '^(topic|produce)' >&2 || tail -5 "$work/live.log" >&2
caught=$(date +%s.%N)
while [ "$(lag link-live)" != 0 ]; do sleep 0.5; done
tail_secs=$(python3 -c "import time; print(round(time.time() - $caught, 1))")
peak=$(printf '%s\n' "${samples[@]:-0}" | sort -n | tail -1)
median=$(printf '%s\n' "${samples[@]:-0}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')

echo
echo "link copy of $records records (100 B, 8 partitions) from Apache Kafka 4.4: caught up $secs s after create: $rps records/s, $mbs MB/s"
echo "the gateway's own produce of the same load: $own"
echo "lag at $rate records/s for 30 s: median $median records, peak $peak (${#samples[@]} samples of $distinct controller rounds); caught up $tail_secs s after the load ended"
