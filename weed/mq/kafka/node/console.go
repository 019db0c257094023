package node

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/util/version"
	"github.com/twmb/franz-go/pkg/kgo"
	fsasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/cluster"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/console"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/gateway"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/link"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/sasl"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/user"
)

// The console (package console) on -console.listeners: its pages, and the
// links' API under /api/.

// gatewayInfo is what a gateway tells of itself beside its membership
// entry: <node id>.info in membership.Dir, written at start.
type gatewayInfo struct {
	Version string `json:"version"`
	Started int64  `json:"started"` // Unix ms
}

// consoleListener is the Kafka listener the console's clients use: with
// logins a SASL one (they log in as the console's user), else PLAINTEXT,
// else the first.
func consoleListener(listeners []gateway.Listener, logins bool) gateway.Listener {
	order := []string{gateway.Plaintext, gateway.SSL}
	if logins {
		order = []string{gateway.SASLPlaintext, gateway.SASLSSL}
	}
	for _, name := range order {
		for _, l := range listeners {
			if l.Name == name {
				return l
			}
		}
	}
	return listeners[0]
}

// startConsole serves the console on its listeners.
func (n *Node) startConsole(listeners []gateway.Listener) error {
	masks, err := console.ParseMasks(n.cfg.ConsoleMask)
	if err != nil {
		return err
	}
	kafka := consoleListener(listeners, n.logins)
	host, port := n.self.Endpoint(kafka.Name)
	seed := host + ":" + strconv.Itoa(int(port))
	var tlsConfig *tls.Config
	if kafka.TLS() {
		if tlsConfig, err = peerTLS(n.cfg.SSLClientCA); err != nil {
			return err
		}
	}
	mechanisms := splitList(n.cfg.SASLMechanisms, ",")
	links := &link.Store{Files: cluster.InstrumentFiles(n.store), Sealer: n.sealer}
	api := link.HandlerOptions{Changed: n.links.Refresh}
	opts := console.Options{
		Client: func(ctx context.Context, name, password string) ([]kgo.Opt, error) {
			o := []kgo.Opt{kgo.SeedBrokers(seed), kgo.RequestTimeoutOverhead(10 * time.Second)}
			if tlsConfig != nil {
				o = append(o, kgo.DialTLSConfig(tlsConfig.Clone()))
			}
			if name == "" || !kafka.SASL() {
				return o, nil
			}
			m, err := n.consoleMechanism(ctx, name, password, mechanisms)
			if err != nil {
				return nil, err
			}
			return append(o, kgo.SASL(m)), nil
		},
		ReadOnly:     n.cfg.ConsoleReadOnly,
		NoExport:     !n.cfg.ConsoleExport,
		Masks:        masks,
		MaxRecords:   n.cfg.ConsoleMaxRecords,
		MaxBytes:     n.cfg.ConsoleMaxBytes,
		Schemas:      n.schemaState,
		Links:        links,
		LinksChanged: n.links.Refresh,
		Cluster:      n.consoleCluster,
		Audit:        n.audit,
		AdminURL:     n.cfg.ConsoleAdminURL,
		GrafanaURL:   n.cfg.ConsoleGrafanaURL,
	}
	if n.logins {
		opts.Authenticate = n.users.VerifyPassword
		api.Authenticate = n.users.VerifyPassword
	}
	if n.authz != nil {
		opts.Authorize = n.authz.Authorize
		api.Authorize = n.authz.Authorize
	}
	if n.schemaState != nil && len(n.regListeners) > 0 {
		l := n.regListeners[0]
		scheme := "http"
		if l.tls {
			scheme = "https"
			if opts.RegistryTLS, err = peerTLS(n.cfg.SSLClientCA); err != nil {
				return err
			}
		}
		opts.Registry = scheme + "://" + loopback(l.bind)
	}
	opts.API = link.Handler(links, api)
	for _, l := range n.conListeners {
		opts.Secure = opts.Secure || l.tls
	}
	c, err := console.New(opts)
	if err != nil {
		return err
	}
	n.onClose("the console's sessions", c.Close)
	for _, l := range n.conListeners {
		if err := n.serveListener("console", l, c); err != nil {
			return err
		}
	}
	n.goLoop(n.writeGatewayInfo)
	return nil
}

// loopback is addr with an unspecified host as 127.0.0.1: a server of
// this process reached from it.
func loopback(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// consoleMechanism logs the console's client in as the user with the
// strongest mechanism the user has credentials of and the listener
// takes.
func (n *Node) consoleMechanism(ctx context.Context, name, password string, enabled []string) (fsasl.Mechanism, error) {
	info, err := n.users.Describe(ctx, name)
	if err != nil && !errors.Is(err, user.ErrNotFound) {
		return nil, err
	}
	auth := scram.Auth{User: name, Pass: password}
	for _, m := range []string{user.SHA512, user.SHA256} {
		if _, has := info[m]; has && slices.Contains(enabled, m) {
			if m == user.SHA512 {
				return auth.AsSha512Mechanism(), nil
			}
			return auth.AsSha256Mechanism(), nil
		}
	}
	if slices.Contains(enabled, sasl.Plain) {
		return plain.Auth{User: name, Pass: password}.AsMechanism(), nil
	}
	return nil, fmt.Errorf("the user %s has no credentials of a mechanism the gateway takes (%s)", name, strings.Join(enabled, ", "))
}

// consoleCluster is what the console's cluster page shows of the
// gateways and SeaweedFS.
func (n *Node) consoleCluster(ctx context.Context) console.ClusterInfo {
	var info console.ClusterInfo
	infos := map[string]gatewayInfo{}
	if files, err := cluster.InstrumentFiles(n.store).ListFiles(ctx, membership.Dir); err == nil {
		for _, f := range files {
			if id, ok := strings.CutSuffix(f.Name, ".info"); ok {
				var gi gatewayInfo
				if json.Unmarshal(f.Data, &gi) == nil {
					infos[id] = gi
				}
			}
		}
	}
	selfReady := n.ready(ctx) == nil
	for _, m := range n.members.Members() {
		g := console.Gateway{NodeID: m.NodeID, Addr: m.Addr(), Rack: m.Rack, Ready: true, Self: m.NodeID == n.self.NodeID}
		if gi, ok := infos[strconv.Itoa(int(m.NodeID))]; ok {
			g.Version, g.Since = gi.Version, time.UnixMilli(gi.Started)
		}
		if g.Self {
			g.Ready = selfReady
		}
		info.Gateways = append(info.Gateways, g)
	}
	if len(info.Gateways) == 0 { // not in a view yet
		info.Gateways = append(info.Gateways, console.Gateway{NodeID: n.self.NodeID, Addr: n.self.Addr(), Rack: n.self.Rack, Self: true,
			Version: gatewayVersion(), Since: n.started, Ready: selfReady})
	}
	info.Masters = splitList(n.cfg.Masters, ",")
	if n.client != nil {
		info.Filers, _ = n.client.Filers(ctx)
	}
	info.Storage = n.storageName()
	info.WALCommit = histogramLatency(metrics.WALCommitSeconds)
	return info
}

// gatewayVersion is the binary's: the gateway's commit (when built from
// a checkout) and the SeaweedFS version it is built with.
func gatewayVersion() string {
	v := "SeaweedFS " + version.VERSION_NUMBER
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev string
		var dirty bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			if dirty {
				rev += "+"
			}
			return "gateway " + rev + ", " + v
		}
	}
	return v
}

// writeGatewayInfo writes this gateway's version and start time for the
// other gateways' consoles, retrying until the filer takes it.
func (n *Node) writeGatewayInfo() {
	data, _ := json.Marshal(gatewayInfo{Version: gatewayVersion(), Started: n.started.UnixMilli()})
	files := cluster.InstrumentFiles(n.store)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := files.WriteFile(ctx, membership.Dir, strconv.Itoa(int(n.self.NodeID))+".info", data)
		cancel()
		if err == nil {
			return
		}
		glog.V(1).Infof("kafka gateway: writing this gateway's info for the console: %v", err)
		if !n.sleep(5 * time.Second) {
			return
		}
	}
}

// histogramLatency summarizes a histogram of seconds.
func histogramLatency(h prometheus.Histogram) console.Latency {
	var m dto.Metric
	if err := h.Write(&m); err != nil || m.Histogram == nil {
		return console.Latency{}
	}
	hist := m.Histogram
	count := hist.GetSampleCount()
	if count == 0 {
		return console.Latency{}
	}
	l := console.Latency{Count: count, HasSamples: true,
		Mean: time.Duration(hist.GetSampleSum() / float64(count) * float64(time.Second))}
	want := uint64(math.Ceil(float64(count) * 0.99))
	for _, b := range hist.Bucket {
		if b.GetCumulativeCount() >= want {
			l.P99 = time.Duration(b.GetUpperBound() * float64(time.Second))
			break
		}
	}
	return l
}
