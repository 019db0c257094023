package command

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// The run command's defaults take distinct ports: the gateway's console
// once took the embedded volume server's 8080, whose process then exited,
// and the gateway served topics that could hold no record.
func TestRunCommandPortsDistinct(t *testing.T) {
	f := &MqKafkaGateway.Flag
	def := func(name string) string {
		fl := f.Lookup(name)
		if fl == nil {
			t.Fatalf("no flag -%s", name)
		}
		return fl.DefValue
	}
	taken := map[int]string{}
	take := func(port int, what string) {
		if port == 0 {
			return
		}
		if other, ok := taken[port]; ok {
			t.Errorf("port %d is both %s's and %s's", port, other, what)
		}
		taken[port] = what
	}
	num := func(s, what string) int {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("%s: %q is not a port", what, s)
		}
		return n
	}
	take(num(def("port"), "kafka"), "the Kafka listener")
	take(num(def("metricsPort"), "metrics"), "-metricsPort")
	take(num(def("port.pprof"), "pprof"), "-port.pprof")
	for i, p := range strings.Split(def("embedded.ports"), ",") {
		role := EmbeddedRoles[i]
		n := num(p, role)
		take(n, "the embedded "+role)
		if role != "broker" {
			take(n+10000, "the embedded "+role+"'s gRPC")
		}
	}
	s3 := num(def("embedded.s3.port"), "s3")
	take(s3, "the embedded S3 API")
	take(s3+10000, "the embedded S3 API's gRPC")
	take(num(def("embedded.iceberg.port"), "iceberg"), "the embedded Iceberg catalog")
	for what, listener := range map[string]string{"the schema registry": defaultEmbeddedRegistry, "the console": defaultEmbeddedConsole} {
		u, err := url.Parse(listener)
		if err != nil {
			t.Fatal(err)
		}
		take(num(u.Port(), what), what)
	}
}
