#!/usr/bin/env bash
# Apache Kafka as the yardstick: starts Apache Kafka 4.4 (KRaft, one node,
# from the Maven Central artifacts, data in a temporary folder) beside a
# gateway on an embedded SeaweedFS on this machine, runs the same loads
# against both in one run, one after the other, and prints each figure for
# both and their ratio (gateway / Kafka; for latencies above 1 is slower,
# for rates below 1 is slower).
#
# Loads: the project's load command (weed mq.kafka.bench: 1 and 8
# partitions idempotent acks=all, latency at 2,000 records/s, a synchronous
# producer, reading a topic from the start) and Kafka's own ProducerPerformance,
# ConsumerPerformance and EndToEndLatency (kafka-tools).
#
# Needs Go, Java 17+ and Maven (Maven fetches Kafka once). Every server
# binds 127.0.0.1 on free ports and is stopped at the end.
#
#   bash scripts/compare.sh            # the loads below, about 5 minutes
#   RECORDS=100000 bash scripts/compare.sh
set -euo pipefail
cd "$(dirname "$0")/.."
records=${RECORDS:-300000}

source scripts/compare/servers.sh
build_and_fetch
echo "== start Apache Kafka (KRaft) and the gateway" >&2
# group.initial.rebalance.delay.ms=0 on both sides (ConsumerPerformance
# joins a new group).
start_kafka num.partitions=1 group.initial.rebalance.delay.ms=0
start_gateway -group.initial.rebalance.delay.ms=0 -console.listeners=none
bench() { "$work/weed" mq.kafka.bench -bootstrap="$1" "${@:2}" 2>&1; }
wait_up

# The figures, as "name|unit|better" lines with each side's value.
results="$work/results"
: >"$results"
record() { echo "$1|$2|$3|$4|$5" >>"$results"; } # name unit better(higher|lower) gateway kafka

# value extracts a number following a label from a line of bench output.
num() { sed -n "s/.*$1 \([0-9.]*\)\(ms\|µs\|s\)\?.*/\1 \2/p" | head -1 | awk '{v=$1; if ($2=="s") v*=1000; if ($2=="µs") v/=1000; print v}'; }

run_bench() { # label, flags...
	local label=$1
	shift
	local g k gc kc
	gc=$(cpu_seconds "$gateway_pid")
	g=$(bench "$gateway" "$@")
	gc=$(awk -v a="$gc" -v b="$(cpu_seconds "$gateway_pid")" 'BEGIN { print b - a }')
	kc=$(cpu_seconds "$kafka_pid")
	k=$(bench "$kafka" "$@")
	kc=$(awk -v a="$kc" -v b="$(cpu_seconds "$kafka_pid")" 'BEGIN { print b - a }')
	echo "-- $label" >&2
	echo "gateway: $g" | grep -E 'produce|consume|backlog' >&2
	echo "kafka:   $k" | grep -E 'produce|consume|backlog' >&2
	local gr kr
	gr=$(echo "$g" | grep '^produce' | sed -n 's/.*: \([0-9]*\) records\/s.*/\1/p')
	kr=$(echo "$k" | grep '^produce' | sed -n 's/.*: \([0-9]*\) records\/s.*/\1/p')
	record "$label: produce" "records/s" higher "$gr" "$kr"
	record "$label: produce p99" "ms" lower "$(echo "$g" | grep '^produce' | num p99)" "$(echo "$k" | grep '^produce' | num p99)"
	# CPU-seconds of the servers' processes per million records produced
	# (and read by the load command as it produces, and again from the
	# start unless -backlog=false).
	local gn kn
	gn=$(echo "$g" | sed -n 's/^produce: *\([0-9]*\) acked.*/\1/p')
	kn=$(echo "$k" | sed -n 's/^produce: *\([0-9]*\) acked.*/\1/p')
	record "$label: CPU-seconds per million records" "s" lower \
		"$(awk -v c="$gc" -v n="$gn" 'BEGIN { if (n > 0) printf "%.1f", c * 1e6 / n }')" \
		"$(awk -v c="$kc" -v n="$kn" 'BEGIN { if (n > 0) printf "%.1f", c * 1e6 / n }')"
	if echo "$g" | grep -q '^consume'; then
		record "$label: end-to-end p99" "ms" lower "$(echo "$g" | grep '^consume' | num p99)" "$(echo "$k" | grep '^consume' | num p99)"
	fi
	if echo "$g" | grep -q '^backlog'; then
		record "$label: read from the start" "records/s" higher \
			"$(echo "$g" | grep '^backlog' | sed -n 's/.*: \([0-9]*\) records\/s.*/\1/p')" \
			"$(echo "$k" | grep '^backlog' | sed -n 's/.*: \([0-9]*\) records\/s.*/\1/p')"
	fi
}

echo "== the project's load command against both" >&2
gateway_cpu0=$(cpu_seconds "$gateway_pid")
kafka_cpu0=$(cpu_seconds "$kafka_pid")
run_bench "1 partition, idempotent" -records="$records" -idempotent
run_bench "8 partitions, idempotent" -records=$((records * 2)) -partitions=8 -idempotent
run_bench "2,000 records/s, linger 0" -records=20000 -rate=2000 -linger=0 -idempotent -backlog=false
run_bench "synchronous producer" -records=3000 -sync -linger=0 -backlog=false
# Latency again after the loads above, on a used system.
run_bench "2,000 records/s, after the loads" -records=20000 -rate=2000 -linger=0 -idempotent -backlog=false

echo "== Kafka's own tools against both" >&2
tool() { java -cp "$kafka_cp" "$@" 2>/dev/null; }
for side in gateway kafka; do
	addr=${!side}
	topic="perf-$side-$RANDOM"
	tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$addr" --create --topic "$topic" --partitions 1 --replication-factor 1 >/dev/null
	out=$(tool org.apache.kafka.tools.ProducerPerformance --topic "$topic" --num-records "$records" --record-size 100 \
		--throughput -1 --producer-props bootstrap.servers="$addr" acks=all | tail -1)
	echo "$side ProducerPerformance: $out" >&2
	eval "pp_rate_$side=\$(echo \"\$out\" | sed -n 's/.*records sent, \([0-9.]*\) records\/sec.*/\1/p')"
	eval "pp_p99_$side=\$(echo \"\$out\" | sed -n 's/.*, \([0-9.]*\) ms 99th.*/\1/p')"
	out=$(tool org.apache.kafka.tools.ConsumerPerformance --bootstrap-server "$addr" --topic "$topic" --messages "$records" \
		--timeout 60000 | tail -1)
	echo "$side ConsumerPerformance: $out" >&2
	eval "cp_rate_$side=\$(echo \"\$out\" | awk -F', *' '{print \$6}')"
	etopic="e2e-$side-$RANDOM"
	tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$addr" --create --topic "$etopic" --partitions 1 --replication-factor 1 >/dev/null
	out=$(tool org.apache.kafka.tools.EndToEndLatency "$addr" "$etopic" 5000 all 100 2>&1 | grep -E 'Avg latency|Percentiles' | tr '\n' ' ')
	echo "$side EndToEndLatency: $out" >&2
	eval "e2e_avg_$side=\$(echo \"\$out\" | sed -n 's/.*Avg latency: \([0-9.]*\) ms.*/\1/p')"
	eval "e2e_p99_$side=\$(echo \"\$out\" | sed -n 's/.*99th = \([0-9.]*\).*/\1/p')"
done
# kafka-topics.sh --alter --partitions, as an operator runs it.
for side in gateway kafka; do
	addr=${!side}
	topic="alter-$side-$RANDOM"
	tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$addr" --create --topic "$topic" --partitions 2 --replication-factor 1 >/dev/null
	tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$addr" --alter --topic "$topic" --partitions 6 >&2 || echo "$side: kafka-topics --alter failed" >&2
	echo "$side kafka-topics --alter --partitions 6: $(tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$addr" --describe --topic "$topic" | head -1)" >&2
done
# The same loads ran on both: the CPU they took in all, and each side's
# peak memory over every one of its processes.
record "every load above: CPU-seconds of the servers" "s" lower \
	"$(awk -v a="$gateway_cpu0" -v b="$(cpu_seconds "$gateway_pid")" 'BEGIN { printf "%.1f", b - a }')" \
	"$(awk -v a="$kafka_cpu0" -v b="$(cpu_seconds "$kafka_pid")" 'BEGIN { printf "%.1f", b - a }')"
echo "peak resident memory, the gateway's processes:" >&2
gateway_rss=$(peak_rss "$gateway_pid")
echo "peak resident memory, Kafka's:" >&2
kafka_rss=$(peak_rss "$kafka_pid")
record "peak RSS, every server process" "MiB" lower "$gateway_rss" "$kafka_rss"
record "ProducerPerformance, 1 partition, acks=all" "records/s" higher "$pp_rate_gateway" "$pp_rate_kafka"
record "ProducerPerformance p99" "ms" lower "$pp_p99_gateway" "$pp_p99_kafka"
record "ConsumerPerformance, from the start" "records/s" higher "$cp_rate_gateway" "$cp_rate_kafka"
record "EndToEndLatency, acks=all, average" "ms" lower "$e2e_avg_gateway" "$e2e_avg_kafka"
record "EndToEndLatency p99" "ms" lower "$e2e_p99_gateway" "$e2e_p99_kafka"

echo
printf '| %-46s | %12s | %12s | %10s |\n' "figure" "gateway" "Kafka 4.4" "gateway/Kafka"
printf '|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..48})" "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..15})"
while IFS='|' read -r name unit better g k; do
	ratio=$(awk -v g="$g" -v k="$k" 'BEGIN { if (k+0 > 0 && g != "") printf "%.2f", g/k; else print "-" }')
	printf '| %-46s | %12s | %12s | %13s |\n' "$name ($unit)" "$g" "$k" "$ratio"
done <"$results"
