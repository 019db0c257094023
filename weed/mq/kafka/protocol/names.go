package protocol

// Names from requests are checked here, where they enter, before anything
// turns them into filer paths: a topic name outside Kafka's rule cannot
// name a topic, so every API that takes one answers as Kafka does for a
// topic that does not exist (UNKNOWN_TOPIC_OR_PARTITION), and CreateTopics
// and Metadata with INVALID_TOPIC_EXCEPTION. The backend checks again
// (storage.ValidTopicName), so that no path is built from an unchecked name.
// Group ids and transactional ids are escaped by the stores that keep
// them (filerfs.Escape).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// describeTopic is the backend's DescribeTopic behind the name check: a
// name no topic can have is an unknown topic.
func (h *Handler) describeTopic(ctx context.Context, name string) (storage.TopicInfo, error) {
	if storage.ValidTopicName(name) != nil {
		return storage.TopicInfo{}, kerr.UnknownTopicOrPartition
	}
	return h.backend.DescribeTopic(ctx, name)
}

// knownName returns UNKNOWN_TOPIC_OR_PARTITION for a name no topic can
// have, for the APIs that hand a name to the backend without describing
// the topic first.
func knownName(name string) *kerr.Error {
	if storage.ValidTopicName(name) != nil {
		return kerr.UnknownTopicOrPartition
	}
	return nil
}
