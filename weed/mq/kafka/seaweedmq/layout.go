package seaweedmq

// Where a Kafka cluster's files are. One filer can hold several Kafka
// clusters, each its own (Options.Cluster, -cluster.name): the default
// cluster (name "") keeps its topics in SeaweedMQ's namespace "kafka"
// (/topics/kafka) and its state under StateDir; a named one N in namespace
// kafka_N (/topics/kafka_N) and under StateDir/clusters/N, and its locks
// and key-value entries are named apart. Two clusters share nothing:
// topics, users, ACLs, groups, the write-ahead logs, the gateways'
// membership and the cluster's secret are each their own.
//
// The other packages name their files under StateDir, as the default
// cluster has them (offset.Dir, acl.Dir, ...); the client puts every path
// it is given under its cluster's state root where it reaches the filer
// (at), and names its cluster's locks and secrets apart (named). Topic
// directories are its cluster's own already (c.ns).

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/seaweedfs/seaweedfs/weed/filer"
)

// StateDir is where the default cluster keeps its state: topics' settings,
// groups, users, ACLs, the write-ahead logs.
const StateDir = "/etc/kafka-gateway"

// DefaultNamespace is the SeaweedMQ namespace of the default cluster's
// topics.
const DefaultNamespace = "kafka"

var clusterName = regexp.MustCompile(`^[a-z0-9_]{1,40}$`)

// ValidClusterName checks a -cluster.name: "" (the default cluster), or up
// to 40 of a-z, 0-9 and _, so that it is a SeaweedMQ namespace, an Iceberg
// namespace and a directory name as it is.
func ValidClusterName(name string) error {
	if name != "" && !clusterName.MatchString(name) {
		return fmt.Errorf("-cluster.name: %q is not up to 40 of a-z, 0-9 and _", name)
	}
	return nil
}

// ClusterNamespace is the SeaweedMQ (and Iceberg) namespace of a cluster's
// topics.
func ClusterNamespace(name string) string {
	if name == "" {
		return DefaultNamespace
	}
	return DefaultNamespace + "_" + name
}

// layout is the client's cluster's place in the filer.
type layout struct {
	cluster string
	ns      string // SeaweedMQ namespace of its topics
	root    string // its state directory, StateDir's place
}

func newLayout(cluster string) layout {
	l := layout{cluster: cluster, ns: ClusterNamespace(cluster), root: StateDir}
	if cluster != "" {
		l.root = StateDir + "/clusters/" + cluster
	}
	return l
}

// at is the filer path of dir: a path under StateDir is put under the
// cluster's state root; any other (a topic's, or one at the root already)
// is as it is.
func (l layout) at(dir string) string {
	if l.root == StateDir || dir == l.root || strings.HasPrefix(dir, l.root+"/") {
		return dir
	}
	if dir == StateDir || strings.HasPrefix(dir, StateDir+"/") {
		return l.root + dir[len(StateDir):]
	}
	return dir
}

// named is a lock's or a key-value entry's name in the cluster.
func (l layout) named(name string) string {
	if l.cluster == "" {
		return name
	}
	return "kafka-gateway@" + l.cluster + ":" + name
}

// topicsDir is the directory of the cluster's topics.
func (l layout) topicsDir() string { return filer.TopicsDir + "/" + l.ns }

// topicOf is the name of the topic a partition directory is of ("" if it
// is not one of the cluster's).
func (l layout) topicOf(dir string) string {
	rest, ok := strings.CutPrefix(dir, l.topicsDir()+"/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	return name
}
