package protocol

// The topics the group coordinator's consumer groups subscribe to, from
// the backend.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/group"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// TopicNamer is a backend that lists topic names without reading every
// topic.
type TopicNamer interface {
	TopicNames(ctx context.Context) ([]string, error)
}

// GroupTopics gives consumer groups the topics of b and Kafka's internal
// topics, as Kafka's regexes see them (a TopicNamer lists them cheaply;
// otherwise ListTopics does).
func GroupTopics(b storage.Backend) group.Topics { return groupTopics{b} }

type groupTopics struct{ b storage.Backend }

func (t groupTopics) Names(ctx context.Context) ([]string, error) {
	var names []string
	if n, ok := t.b.(TopicNamer); ok {
		var err error
		if names, err = n.TopicNames(ctx); err != nil {
			return nil, err
		}
	} else {
		all, err := t.b.ListTopics(ctx)
		if err != nil {
			return nil, err
		}
		for _, ti := range all {
			names = append(names, ti.Name)
		}
	}
	for _, ti := range internalTopicInfos {
		names = append(names, ti.Name)
	}
	return names, nil
}

func (t groupTopics) Topic(ctx context.Context, name string) (group.Topic, bool, error) {
	if storage.ValidTopicName(name) != nil {
		return group.Topic{}, false, nil
	}
	info, err := internalBackend{t.b}.DescribeTopic(ctx, name)
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return group.Topic{}, false, nil
	}
	if err != nil {
		return group.Topic{}, false, err
	}
	return group.Topic{Name: info.Name, ID: info.ID, Partitions: info.Partitions}, true, nil
}
