#!/usr/bin/env bash
# The test command: installs what the tests need and runs them all.
#
# Needs Go (the version in go.mod), a C compiler (confluent-kafka-go links
# librdkafka through cgo), kcat, Chromium (the console's browser tests), and
# Java 17+ with Maven, installed with apt-get when missing; everything else comes from the Go module proxy and
# Maven Central.
# The end-to-end tests build the weed binary once, start a real single-node
# SeaweedFS and a gateway from it on free 127.0.0.1 ports, and stop them.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v gcc >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		apt-get update -qq && apt-get install -y -qq gcc libc6-dev >/dev/null
	else
		echo "a C compiler (gcc) is needed for the librdkafka tests" >&2
		exit 1
	fi
fi

# kcat, the command-line Kafka client operators use, is driven by the
# end-to-end tests.
if ! command -v kcat >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		(apt-get install -y -qq kcat >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq kcat >/dev/null))
	else
		echo "kcat is needed for the end-to-end tests (Debian/Ubuntu: apt-get install kcat)" >&2
		exit 1
	fi
fi

# Chromium, headless, drives the gateway's web console in the end-to-end
# tests (chromedp).
if ! command -v chromium >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		(apt-get install -y -qq chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null))
	else
		echo "Chromium is needed for the console tests (Debian/Ubuntu: apt-get install chromium)" >&2
		exit 1
	fi
fi

# Java 17+ and Maven run Apache Kafka's own Java clients against the gateway
# (java/, java/mirrormaker/ and java/link/, started by the end-to-end suite; Maven fetches kafka-clients and
# kafka-tools once).
if ! command -v mvn >/dev/null 2>&1 || ! command -v java >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		(apt-get install -y -qq maven default-jdk-headless >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq maven default-jdk-headless >/dev/null))
	else
		echo "Java 17+ and Maven are needed for the Java client tests (Debian/Ubuntu: apt-get install maven default-jdk-headless)" >&2
		exit 1
	fi
fi

# Each Maven module's dependencies and plugins, fetched one module at a
# time: the end-to-end suite then runs the modules side by side.
for module in java java/mirrormaker java/link; do
	mvn -q -B -f "$module/pom.xml" dependency:resolve dependency:resolve-plugins >/dev/null
done

# The fault tests put each process of a cluster in a network namespace of
# its own and cut them apart (iproute2's ip, run as root).
if ! command -v ip >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		(apt-get install -y -qq iproute2 >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq iproute2 >/dev/null))
	else
		echo "iproute2 (ip) and root are needed for the fault tests (Debian/Ubuntu: apt-get install iproute2)" >&2
		exit 1
	fi
fi

# Python with confluent-kafka (librdkafka), its Schema Registry client and
# Avro, Protobuf and JSON Schema serializers, and pyiceberg with pyarrow
# (reading topics' Iceberg tables), in a virtual environment of the tests'
# own (PyPI).
venv="${XDG_CACHE_HOME:-$HOME/.cache}/seaweedfs-kafka-gateway/venv"
if ! "$venv/bin/python" -c "import confluent_kafka, fastavro, google.protobuf, jsonschema, pyiceberg, pyarrow" >/dev/null 2>&1; then
	if ! python3 -m venv --clear "$venv" >/dev/null 2>&1; then
		if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
			(apt-get install -y -qq python3 python3-venv >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq python3 python3-venv >/dev/null))
			python3 -m venv --clear "$venv"
		else
			echo "Python 3 with venv is needed for the Python client tests (Debian/Ubuntu: apt-get install python3-venv)" >&2
			exit 1
		fi
	fi
	"$venv/bin/pip" install -q "confluent-kafka[avro,schemaregistry,protobuf,json]==2.16.1" "pyiceberg[pyarrow]==0.12.0"
fi
export PYTHON_E2E="$venv/bin/python"

echo "== go mod download"
go mod download

echo "== gofmt, go vet"
unformatted=$(gofmt -l weed scripts docker k8s 2>/dev/null || true)
if [ -n "$unformatted" ]; then
	echo "gofmt would change: $unformatted" >&2
	exit 1
fi
go vet ./...

echo "== build weed"
bin_dir=$(mktemp -d)
trap 'rm -rf "$bin_dir"' EXIT
go build -o "$bin_dir/weed" ./weed

# The previous release, built from its commit for the rolling upgrade test
# (TestRollingUpgrade: its gateways are replaced one by one by this build's
# under load). RELEASES lists the releases with their commits, since a clone
# of a pushed branch carries no tags; the last one that is an ancestor of
# this commit (and not this commit itself) is the previous release.
previous=""
if [ "$(git rev-parse --is-shallow-repository)" = true ]; then
	git fetch -q --unshallow origin </dev/null 2>/dev/null || true
fi
while read -r version commit _; do
	case "$version" in ''|'#'*) continue ;; esac
	if ! git cat-file -e "$commit^{commit}" 2>/dev/null; then
		git fetch -q origin "$commit" </dev/null 2>/dev/null || true
	fi
	if ! git cat-file -e "$commit^{commit}" 2>/dev/null; then
		echo "release $version: commit $commit is not in this clone (a shallow clone?), and fetching it failed" >&2
		exit 1
	fi
	if [ "$(git rev-parse HEAD)" != "$(git rev-parse "$commit^{commit}")" ] &&
		git merge-base --is-ancestor "$commit" HEAD; then
		previous="$commit"
		previous_version="$version"
	fi
done < RELEASES
if [ -z "$previous" ]; then
	echo "RELEASES names no release before this commit: the rolling upgrade test needs one" >&2
	exit 1
fi
echo "== build weed of the previous release, $previous_version ($previous)"
mkdir "$bin_dir/previous-src"
git archive "$previous" | tar -x -C "$bin_dir/previous-src"
(cd "$bin_dir/previous-src" && go build -o "$bin_dir/weed-previous" ./weed)
export WEED_PREVIOUS_BINARY="$bin_dir/weed-previous"

echo "== go test -race (the in-process packages, among them the write path with the log answering in any order and refusing some)"
go test -race -count=1 -timeout 10m \
	./weed/mq/kafka/seaweedmq ./weed/mq/kafka/protocol ./weed/mq/kafka/group ./weed/mq/kafka/offset \
	./weed/mq/kafka/txn ./weed/mq/kafka/record ./weed/mq/kafka/gateway ./weed/mq/kafka/cluster ./weed/mq/kafka/acl \
	./weed/mq/kafka/sasl ./weed/mq/kafka/membership ./weed/mq/kafka/metrics ./weed/mq/kafka/share ./weed/mq/kafka/user \
	./weed/mq/kafka/quota ./weed/mq/kafka/feature ./weed/mq/kafka/node ./weed/mq/kafka/iceberg ./docker \
	./weed/mq/kafka/console ./weed/mq/kafka/audit

# The Helm chart (k8s/kafka-gateway), rendered by Helm's own engine and
# every manifest read strictly into Kubernetes' API types (a module of its
# own: Helm's and Kubernetes' packages stay out of weed).
echo "== the Helm chart"
(cd k8s/chartcheck && go vet ./... && go test -count=1 ./...)

# The end-to-end tests that touch only what is theirs (a cluster of their
# own, or their own topics on the shared gateway) run four at a time at the
# end of the suite: most of their time is waiting.
echo "== go test"
WEED_BINARY="$bin_dir/weed" go test -count=1 -timeout 40m -parallel 4 ./...
