package console

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// feature is a finalized feature level.
type feature struct {
	Name     string
	Level    int16
	Min, Max int16 // what this gateway supports
}

// clusterPage: the gateways, the finalized features, the write-ahead
// log's commit latency and the SeaweedFS behind them.
func (r *request) clusterPage() error {
	var info ClusterInfo
	if r.c.opts.Cluster != nil {
		info = r.c.opts.Cluster(r.ctx)
	}
	md, err := r.adm.Metadata(r.ctx)
	if err != nil {
		return err
	}
	led := map[int32]int{}
	partitions := 0
	for _, t := range md.Topics {
		for _, p := range t.Partitions {
			led[p.Leader]++
			partitions++
		}
	}
	type row struct {
		Gateway
		Led int
	}
	var rows []row
	seen := map[int32]bool{}
	for _, g := range info.Gateways {
		rows = append(rows, row{g, led[g.NodeID]})
		seen[g.NodeID] = true
	}
	for _, b := range md.Brokers { // a gateway Metadata knows of, not in the view given
		if !seen[b.NodeID] {
			rack := ""
			if b.Rack != nil {
				rack = *b.Rack
			}
			rows = append(rows, row{Gateway{NodeID: b.NodeID, Addr: b.Host + ":" + itoa(b.Port), Rack: rack, Ready: true}, led[b.NodeID]})
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].NodeID < rows[j].NodeID })

	var features []feature
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "kafka-gateway-console", "1"
	if resp, err := req.RequestWith(r.ctx, r.cl); err == nil {
		supported := map[string]kmsg.ApiVersionsResponseSupportedFeature{}
		for _, f := range resp.SupportedFeatures {
			supported[f.Name] = f
		}
		for _, f := range resp.FinalizedFeatures {
			s := supported[f.Name]
			features = append(features, feature{Name: f.Name, Level: f.MaxVersionLevel, Min: s.MinVersion, Max: s.MaxVersion})
		}
		sort.Slice(features, func(i, j int) bool { return features[i].Name < features[j].Name })
	}
	r.data["Gateways"] = rows
	r.data["Features"] = features
	r.data["Info"] = info
	r.data["ClusterID"] = md.Cluster
	r.data["Controller"] = md.Controller
	r.data["Topics"] = len(md.Topics)
	r.data["Partitions"] = partitions
	r.data["AdminURL"] = r.c.opts.AdminURL
	r.data["GrafanaURL"] = r.c.opts.GrafanaURL
	return r.render("cluster", 200)
}
