package storage

// The topic rules both sides of the Backend contract apply: the handlers,
// where names and records enter, and the backends, which check again
// before a name becomes a path or a batch is decompressed.

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

const (
	// MaxTopicNameLength is Kafka's limit on topic names.
	MaxTopicNameLength = 249

	// ReservedTopic is the name a topic cannot have: upstream SeaweedFS's
	// Kafka gateway keeps its state in the namespace's directory of that
	// name (/topics/kafka/.meta).
	ReservedTopic = ".meta"

	// MaxDecompressedBatch bounds what one partition's compressed batches
	// may expand to, so a small batch cannot exhaust memory (a
	// decompression bomb).
	MaxDecompressedBatch = 128 << 20
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

// Deletes tells whether a topic's settings have the delete policy, under
// which retention removes records (the default).
func Deletes(configs map[string]string) bool {
	v, ok := configs["cleanup.policy"]
	if !ok {
		return true
	}
	for p := range strings.SplitSeq(v, ",") {
		if strings.TrimSpace(p) == "delete" {
			return true
		}
	}
	return false
}

// Compacted tells whether a topic's settings make it a compacted topic.
func Compacted(configs map[string]string) bool {
	for p := range strings.SplitSeq(configs["cleanup.policy"], ",") {
		if strings.TrimSpace(p) == "compact" {
			return true
		}
	}
	return false
}
