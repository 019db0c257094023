package protocol

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// kafkaErr is the Kafka error for a backend error: the *kerr.Error it
// carries, or fallback for an outage.
func kafkaErr(err error, fallback *kerr.Error) *kerr.Error {
	if err == nil {
		return nil
	}
	var e *kerr.Error
	if errors.As(err, &e) {
		return e
	}
	return fallback
}
