package protocol

// The topics the group coordinator's consumer groups subscribe to, from
// the backend.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/group"
)

// TopicNamer is a backend that lists topic names without reading every
// topic.
type TopicNamer interface {
	TopicNames(ctx context.Context) ([]string, error)
}

// GroupTopics gives consumer groups the topics of b (a TopicNamer lists
// them cheaply; otherwise ListTopics does).
func GroupTopics(b Backend) group.Topics { return groupTopics{b} }

type groupTopics struct{ b Backend }

func (t groupTopics) Names(ctx context.Context) ([]string, error) {
	if n, ok := t.b.(TopicNamer); ok {
		return n.TopicNames(ctx)
	}
	all, err := t.b.ListTopics(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(all))
	for i, ti := range all {
		names[i] = ti.Name
	}
	return names, nil
}

func (t groupTopics) Topic(ctx context.Context, name string) (group.Topic, bool, error) {
	if ValidTopicName(name) != nil {
		return group.Topic{}, false, nil
	}
	info, err := t.b.DescribeTopic(ctx, name)
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return group.Topic{}, false, nil
	}
	if err != nil {
		return group.Topic{}, false, err
	}
	return group.Topic{Name: info.Name, ID: info.ID, Partitions: info.Partitions}, true, nil
}
