package node

// What a node puts together besides the servers: its place among the
// cluster's gateways (node, listener for the others, their TLS), the
// cluster id, users from a file, and settings turned into the parts'.

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/cluster"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/gateway"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/group"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/share"
)

// firstClusterID is the id this gateway gives the cluster if none is kept
// yet (cluster.EnsureID): the default cluster's is named after the
// SeaweedFS cluster it serves, as gateways before the kept id named it
// (its -master list as typed), so that the clusters they served keep their
// id; a named cluster's is random, as Kafka's.
func firstClusterID(masters, filerGroup, name string) string {
	if name != "" {
		var b [16]byte
		rand.Read(b[:])
		return base64.RawURLEncoding.EncodeToString(b[:])
	}
	list := strings.Split(masters, ",")
	h := fnv.New64a()
	for _, m := range list {
		h.Write([]byte(strings.TrimSpace(m)))
		h.Write([]byte{0})
	}
	h.Write([]byte(filerGroup))
	return fmt.Sprintf("seaweedfs-%016x", h.Sum64())
}

// selfMember is this gateway as the others and Metadata name it: its
// address for the other gateways is its PLAINTEXT listener's (or its first
// listener's), and it lists every listener.
func selfMember(nodeID int32, listeners []gateway.Listener, authorizer bool) (membership.Member, error) {
	inter := interListener(listeners, authorizer)
	var all []string
	m := membership.Member{NodeID: nodeID}
	for _, l := range listeners {
		addr := l.Advertised
		if addr == "" {
			addr = l.Bind
		}
		host, port, err := net.SplitHostPort(addr)
		p, perr := strconv.Atoi(port)
		if err != nil || perr != nil || p == 0 {
			return m, fmt.Errorf("listener %s: advertised address %q has no port", l.Name, addr)
		}
		if l.Name == inter.Name {
			m.Host, m.Port = host, int32(p)
		}
		all = append(all, l.Name+"://"+addr)
	}
	if len(listeners) > 1 {
		m.Listeners = strings.Join(all, ",")
	}
	return m, nil
}

// interListener is the listener the other gateways reach this one on: with
// the authorizer a SASL one, where they log in as the gateways' own user;
// else PLAINTEXT; else the first.
func interListener(listeners []gateway.Listener, authorizer bool) gateway.Listener {
	order := []string{gateway.Plaintext}
	if authorizer {
		order = []string{gateway.SASLPlaintext, gateway.SASLSSL, gateway.Plaintext}
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

// peerTLS is how a gateway checks another's certificate: against the CAs
// of -ssl.client.ca, or the system's.
func peerTLS(caFile string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		var err error
		if c.RootCAs, err = gateway.ReadCAs(caFile); err != nil {
			return nil, fmt.Errorf("-ssl.client.ca: %w", err)
		}
	}
	return c, nil
}

// splitList splits a flag's list at sep, leaving out blank entries
// (-sasl.enabled.mechanisms with ",", -super.users with ";").
func splitList(s, sep string) []string {
	var out []string
	for _, e := range strings.Split(s, sep) {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// readUsersFile reads -sasl.users: user:password lines; blank lines and
// lines starting with # are skipped.
func readUsersFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		name, pass, ok := strings.Cut(line, ":")
		if !ok || name == "" || pass == "" {
			return nil, fmt.Errorf("line %d is not user:password", i+1)
		}
		out[name] = pass
	}
	return out, nil
}

// retention is a Kafka retention flag's duration: n units, negative for
// never (0 would mean the default to the packages, so it is taken as one
// millisecond: expire at once).
func retention(n int, unit time.Duration) time.Duration {
	switch {
	case n < 0:
		return -1
	case n == 0:
		return time.Millisecond
	}
	return time.Duration(n) * unit
}

// orNone turns a size flag into protocol.Config's: 0 there is the
// default, so a flag's 0 (none) is -1.
func orNone(n int64) int64 {
	if n <= 0 {
		return -1
	}
	return n
}

// shareStarts reads a share group's share-partitions for the group
// metrics (nil without share groups).
func shareStarts(shares *share.Store) group.ShareOffsets {
	if shares == nil {
		return nil
	}
	return func(ctx context.Context, name string) (map[string]map[int32]group.ShareStart, error) {
		topics, err := shares.GroupTopics(ctx, name)
		if err != nil {
			return nil, err
		}
		out := map[string]map[int32]group.ShareStart{}
		for _, t := range topics {
			offs, err := shares.TopicOffsets(ctx, name, t)
			if err != nil {
				return nil, err
			}
			out[t] = map[int32]group.ShareStart{}
			for _, o := range offs {
				out[t][o.Partition] = group.ShareStart{Start: o.StartOffset, Done: o.DeliveryComplete}
			}
		}
		return out, nil
	}
}

// replicas is what reads other gateways' partitions for the consumers of
// this gateway's rack (KIP-392), or nil where a leader would not take this
// gateway's follower fetches: with ACLs on, the gateways' fetches need
// ClusterAction, which only their own SASL login is sure to have.
func (n *Node) replicas(cfg Config, members *membership.Membership, peers *cluster.Peers) protocol.ReplicaReader {
	if cfg.Authorizer && n.peerOpts.Identity == nil {
		glog.Warningf("kafka gateway: -authorizer.enabled without a SASL listener: consumers read from partitions' leaders only, not from a gateway of their rack")
		return nil
	}
	return &cluster.Replica{Stored: n.store, Members: members, Peers: peers}
}
