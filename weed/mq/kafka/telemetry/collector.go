package telemetry

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// Describe sends nothing: the pushed families are known only at a scrape
// (an unchecked collector).
func (m *Manager) Describe(chan<- *prometheus.Desc) {}

// Collect sends the pushed series, one family per name with the union of
// its series' label names (a label a series lacks is empty); a series of
// another kind than its family's first, or one whose labels repeat
// another's, is left out.
func (m *Manager) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	families := map[string][]*point{}
	for _, in := range m.inst {
		for _, p := range in.series {
			families[p.name] = append(families[p.name], p)
		}
	}
	m.mu.Unlock()
	for name, pts := range families {
		var names []string
		for _, p := range pts {
			for i := 0; i < len(p.labels); i += 2 {
				if !slices.Contains(names, p.labels[i]) {
					names = append(names, p.labels[i])
				}
			}
		}
		slices.Sort(names)
		help := pts[0].help
		if help == "" {
			help = "Pushed by Kafka clients (KIP-714)."
		}
		desc := prometheus.NewDesc(name, help, names, nil)
		typ := prometheus.GaugeValue
		if pts[0].counter {
			typ = prometheus.CounterValue
		}
		seen := map[string]bool{}
		for _, p := range pts {
			if p.counter != pts[0].counter {
				continue
			}
			values := make([]string, len(names))
			for i := 0; i < len(p.labels); i += 2 {
				j, _ := slices.BinarySearch(names, p.labels[i])
				values[j] = p.labels[i+1]
			}
			key := (&point{name: name, labels: values}).key()
			if seen[key] {
				continue
			}
			seen[key] = true
			if metric, err := prometheus.NewConstMetric(desc, typ, p.value, values...); err == nil {
				ch <- metric
			}
		}
	}
}
