# Sourced by scripts/compare.sh and scripts/link-bench.sh: a work folder
# removed at exit with the servers started into it, free ports, Apache
# Kafka 4.4 (KRaft, one node, from the Maven Central artifacts of
# scripts/compare/pom.xml) and the gateway on an embedded SeaweedFS, both
# on 127.0.0.1. Run from the repository's root.

work=$(mktemp -d)
pids=()
cleanup() {
	# TERM: a script's background jobs ignore SIGINT.
	for pid in "${pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

# free_port prints a free 127.0.0.1 port whose port+10000 is free too (the
# embedded SeaweedFS's gRPC ports), both below Linux's ephemeral ports.
free_port() {
	python3 - <<'PY'
import random, socket
while True:
    p = random.randint(10000, 22699)
    try:
        for q in (p, p + 10000):
            s = socket.socket(); s.bind(("127.0.0.1", q)); s.close()
        print(p)
        break
    except OSError:
        pass
PY
}

# build_and_fetch builds weed into the work folder and fetches Kafka's
# jars (kafka_cp is their classpath).
build_and_fetch() {
	echo "== build weed, fetch Apache Kafka 4.4" >&2
	go build -o "$work/weed" ./weed
	mvn -q -B -f scripts/compare/pom.xml dependency:copy-dependencies -DoutputDirectory="$work/kafka-libs" >&2
	kafka_cp="$work/kafka-libs/*"
}

# start_kafka starts Apache Kafka with the server properties given as
# arguments added to its own, and sets kafka to its address.
start_kafka() {
	local kport cport
	kport=$(free_port)
	cport=$(free_port)
	mkdir -p "$work/kafka"
	cat >"$work/kafka/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$kport,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$kport
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$work/kafka/data
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
EOF
	printf '%s\n' "$@" >>"$work/kafka/server.properties"
	java -cp "$kafka_cp" kafka.tools.StorageTool format --standalone -t "$(java -cp "$kafka_cp" kafka.tools.StorageTool random-uuid 2>/dev/null)" \
		-c "$work/kafka/server.properties" >"$work/kafka/format.log" 2>&1
	java -Xms1g -Xmx1g -cp "$kafka_cp" kafka.Kafka "$work/kafka/server.properties" >"$work/kafka/log" 2>&1 &
	pids+=($!)
	kafka_pid=$!
	kafka="127.0.0.1:$kport"
}

# start_gateway starts the run command's gateway with the flags given as
# arguments, and sets gateway and gmetrics to its Kafka address and its
# metrics port.
start_gateway() {
	local gport
	gport=$(free_port)
	gmetrics=$(free_port)
	"$work/weed" mq.kafka.gateway -ip=127.0.0.1 -port="$gport" -metricsPort="$gmetrics" -embedded.dir="$work/gateway" "$@" \
		-embedded.ports="$(free_port),$(free_port),$(free_port),$(free_port)" >"$work/gateway.log" 2>&1 &
	pids+=($!)
	gateway_pid=$!
	gateway="127.0.0.1:$gport"
}

# wait_up waits for both to serve (2 minutes at most).
wait_up() {
	for i in $(seq 120); do
		for pid in "${pids[@]}"; do
			if ! kill -0 "$pid" 2>/dev/null; then
				echo "a server exited at start: see the logs" >&2
				tail -20 "$work/gateway.log" "$work/kafka/log" >&2
				exit 1
			fi
		done
		if curl -sf "127.0.0.1:$gmetrics/ready" >/dev/null 2>&1 &&
			java -cp "$kafka_cp" org.apache.kafka.tools.TopicCommand --bootstrap-server "$kafka" --list >/dev/null 2>&1; then
			return 0
		fi
		sleep 1
	done
	echo "the servers were not ready within 2 minutes" >&2
	exit 1
}

# tree_of prints a process and its descendants (the gateway's embedded
# SeaweedFS processes).
tree_of() {
	echo "$1"
	local c
	for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
		tree_of "$c"
	done
}

# cpu_seconds prints the CPU time, user and system, that a process and its
# descendants have used so far.
cpu_seconds() {
	local p ticks=0
	for p in $(tree_of "$1"); do
		[ -r "/proc/$p/stat" ] || continue
		# After the command's closing parenthesis, utime and stime are
		# the 12th and 13th fields.
		ticks=$((ticks + $(sed 's/.*) //' "/proc/$p/stat" | awk '{print $12 + $13}')))
	done
	awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", t / hz }'
}

# peak_rss prints, to stderr, the peak resident memory (VmHWM) of a process
# and of each of its descendants, and to stdout their sum in MiB.
peak_rss() {
	local p kb total=0
	for p in $(tree_of "$1"); do
		kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$p/status" 2>/dev/null || true)
		[ -n "$kb" ] || continue
		echo "  $p $(tr '\0' ' ' <"/proc/$p/cmdline" | cut -c1-60): $((kb / 1024)) MiB" >&2
		total=$((total + kb))
	done
	echo $((total / 1024))
}
