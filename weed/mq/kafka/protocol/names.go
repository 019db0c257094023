package protocol

// Names from requests are checked here, where they enter, before anything
// turns them into filer paths: a topic name outside Kafka's rule cannot
// name a topic, so every API that takes one answers as Kafka does for a
// topic that does not exist (UNKNOWN_TOPIC_OR_PARTITION), and CreateTopics
// and Metadata with INVALID_TOPIC_EXCEPTION. The backend checks again
// (ValidTopicName), so that no path is built from an unchecked name.
// Group ids and transactional ids are escaped by the stores that keep
// them (filerfs.Escape).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// ValidTopicName applies Kafka's rule for topic names: [a-zA-Z0-9._-],
// at most MaxTopicNameLength characters, not "." or "..". It returns
// INVALID_TOPIC_EXCEPTION for a name outside it, and for ReservedTopic,
// whose directory would be SeaweedFS's own.
func ValidTopicName(name string) *kerr.Error {
	if name == "" || name == "." || name == ".." || len(name) > MaxTopicNameLength || name == ReservedTopic {
		return kerr.InvalidTopicException
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return kerr.InvalidTopicException
		}
	}
	return nil
}

func validTopicName(name string) *kerr.Error { return ValidTopicName(name) }

// ReservedTopic is the name a topic cannot have: upstream SeaweedFS's
// Kafka gateway keeps its state in the namespace's directory of that name
// (/topics/kafka/.meta).
const ReservedTopic = ".meta"

// describeTopic is the backend's DescribeTopic behind the name check: a
// name no topic can have is an unknown topic.
func (h *Handler) describeTopic(ctx context.Context, name string) (storage.TopicInfo, error) {
	if validTopicName(name) != nil {
		return storage.TopicInfo{}, kerr.UnknownTopicOrPartition
	}
	return h.backend.DescribeTopic(ctx, name)
}

// knownName returns UNKNOWN_TOPIC_OR_PARTITION for a name no topic can
// have, for the APIs that hand a name to the backend without describing
// the topic first.
func knownName(name string) *kerr.Error {
	if validTopicName(name) != nil {
		return kerr.UnknownTopicOrPartition
	}
	return nil
}
