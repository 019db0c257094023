package kafka

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/seaweedfs-kafka/gateway/"

// layers gives each of the module's packages its layer (see doc.go, layer
// n here is n/10 there); the test-only stand-ins sit just above what they
// stand in for, below what their tests test.
var layers = map[string]int{
	"weed/mq/kafka/record":                    0,
	"weed/mq/kafka/clock":                     0,
	"weed/mq/kafka/metrics":                   0,
	"weed/mq/kafka/waitfor":                   0,
	"weed/mq/kafka/guard":                     5,
	"weed/mq/kafka/audit":                     5,
	"weed/mq/kafka/storage":                   5,
	"weed/mq/kafka/filerfs":                   0,
	"weed/mq/kafka/membership/membershiptest": 5,
	"weed/mq/kafka/filerfs/filerfstest":       5,
	"weed/mq/kafka/storage/storagetest":       7,
	"weed/mq/kafka/offset":                    10,
	"weed/mq/kafka/seaweedmq/logentry":        10,
	"weed/mq/kafka/seaweedmq/wal":             20,
	"weed/mq/kafka/seaweedmq/compaction":      20,
	"weed/mq/kafka/membership":                10,
	"weed/mq/kafka/acl":                       10,
	"weed/mq/kafka/user":                      10,
	"weed/mq/kafka/quota":                     10,
	"weed/mq/kafka/feature":                   10,
	"weed/mq/kafka/brokerconfig":              10,
	"weed/mq/kafka/telemetry":                 10,
	"weed/mq/kafka/registry":                  10,
	"weed/mq/kafka/iceberg":                   10,
	"weed/mq/kafka/txn":                       10,
	"weed/mq/kafka/share":                     10,
	"weed/mq/kafka/group":                     20,
	"weed/mq/kafka/sasl":                      20,
	"weed/mq/kafka/link":                      20,
	"weed/mq/kafka/protocol":                  30,
	"weed/mq/kafka/console":                   30,
	"weed/mq/kafka/seaweedmq":                 25,
	"weed/mq/kafka/gateway":                   40,
	"weed/mq/kafka/cluster":                   40,
	"weed/mq/kafka/node":                      45,
	"weed/command":                            50,
	"weed":                                    60,
	// Tests and tools only, above everything.
	"weed/mq/kafka":     70,
	"weed/mq/kafka/e2e": 70,
	// The queue workload's history and checker, below the e2e tests
	// that record it.
	"weed/mq/kafka/e2e/history": 65,
	"docker":                    70,
	"scripts/registrycompat":    70,
}

// The packages' imports form layers: none imports a package of its own
// layer or one above (package tests included, external test packages
// not: they may drive the real gateway).
func TestImportsFormLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \",\"}} {{join .TestImports \",\"}}", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		seen[pkg] = true
		layer, ok := layers[pkg]
		if !ok {
			t.Errorf("package %s has no layer: give it one here and in doc.go", pkg)
			continue
		}
		for _, list := range fields[1:] {
			for _, imp := range strings.Split(list, ",") {
				dep, ours := strings.CutPrefix(imp, module)
				if !ours || dep == pkg {
					continue
				}
				if l, ok := layers[dep]; ok && l >= layer {
					t.Errorf("%s (layer %d) imports %s (layer %d)", pkg, layer, dep, l)
				}
			}
		}
	}
	for pkg := range layers {
		if !seen[pkg] {
			t.Errorf("layer given to %s, which go list does not know", pkg)
		}
	}
}

// The test-only stand-ins (membershiptest, filerfstest, storagetest) are
// imported by tests only: what the gateway runs on is SeaweedFS, never an
// in-memory stand-in.
func TestStandInsOnlyInTests(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \",\"}}", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	standIns := 0
	for pkg := range layers {
		if strings.HasSuffix(pkg, "test") {
			standIns++
		}
	}
	if standIns < 3 {
		t.Fatalf("%d stand-in packages in the layers, want the 3 at least", standIns)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, "|")
		pkg = strings.TrimPrefix(pkg, module)
		if strings.HasSuffix(pkg, "test") {
			continue // a stand-in may build on another
		}
		for _, imp := range strings.Split(imports, ",") {
			if dep, ours := strings.CutPrefix(imp, module); ours && strings.HasSuffix(dep, "test") {
				t.Errorf("%s imports the test stand-in %s outside its tests", pkg, dep)
			}
		}
	}
}

// docs/layout.md names each package (those of the layers, besides the
// test-only ones) with its job.
func TestLayoutNamesEveryPackage(t *testing.T) {
	data, err := os.ReadFile("../../../docs/layout.md")
	if err != nil {
		t.Fatal(err)
	}
	_, layout, ok := strings.Cut(string(data), "# Layout\n")
	if !ok {
		t.Fatal("docs/layout.md has no Layout heading")
	}
	layout, _, _ = strings.Cut(layout, "\n## ")
	for pkg := range layers {
		if pkg == "weed" || pkg == "weed/mq/kafka" || pkg == "docker" {
			continue
		}
		if !strings.Contains(layout, " "+pkg+"/ ") {
			t.Errorf("docs/layout.md does not name %s/", pkg)
		}
	}
}
