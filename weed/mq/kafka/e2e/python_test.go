package e2e

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// pythonE2E is the Python with confluent-kafka (and fastavro) that the test
// command installs in a virtual environment and names in PYTHON_E2E.
func pythonE2E(t *testing.T) string {
	t.Helper()
	py := os.Getenv("PYTHON_E2E")
	if py == "" {
		py = "python3"
	}
	if out, err := exec.Command(py, "-c", "import confluent_kafka, fastavro").CombinedOutput(); err != nil {
		t.Fatalf("%s has no confluent-kafka with Avro (scripts/test.sh installs it and sets PYTHON_E2E): %v\n%s", py, err, out)
	}
	return py
}

// TestPythonSchemaRegistry: confluent-kafka-python (librdkafka) with its
// SchemaRegistryClient and its Avro, Protobuf and JSON Schema serializers
// and deserializers produces and consumes through the gateway and its
// registry; evolutions are checked at the default BACKWARD level (see
// testdata/registry_avro.py and testdata/registry_formats.py).
func TestPythonSchemaRegistry(t *testing.T) {
	t.Parallel() // light and alone in what it touches: beside the others of its kind, at the end
	py := pythonE2E(t)
	topic := newTopic(t)
	createTopic(t, topic, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, "testdata/registry_avro.py", gw.addr, gw.registry, topic).CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "ok") {
		t.Fatalf("registry_avro.py: %v\n%s", err, out)
	}
	protoTopic, jsonTopic := newTopic(t), newTopic(t)
	createTopic(t, protoTopic, 2, nil)
	createTopic(t, jsonTopic, 2, nil)
	out, err = exec.CommandContext(ctx, py, "testdata/registry_formats.py", gw.addr, gw.registry, protoTopic, jsonTopic).CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "ok") {
		t.Fatalf("registry_formats.py: %v\n%s", err, out)
	}
}
