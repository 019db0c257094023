package protocol

import "time"

// Limits and defaults, each with the reason for its value.
const (
	// DefaultMaxRequestSize bounds a request frame, like Kafka's
	// socket.request.max.bytes (100 MiB).
	DefaultMaxRequestSize = 100 << 20

	// DefaultMaxQueuedBytes bounds the request bytes the whole gateway holds
	// read and not yet answered, like Kafka's queued.max.request.bytes:
	// readers wait beyond it, so many clients sending large requests at
	// once cannot exhaust memory.
	DefaultMaxQueuedBytes = 512 << 20

	// DefaultFetchResponseBudget bounds the record bytes the whole
	// gateway's fetch responses hold until written: connections times
	// fetch.max.bytes (55 MiB) would be unbounded.
	DefaultFetchResponseBudget = 512 << 20

	// DefaultMaxMessageBytes is the default max.message.bytes of a topic:
	// the largest record batch accepted, as in Kafka (1 MiB + overhead).
	DefaultMaxMessageBytes = 1048588

	// DefaultFetchMaxBytes caps a Fetch response's record bytes whatever
	// the client asks, as Kafka's fetch.max.bytes (55 MiB): a response is
	// built whole in memory.
	DefaultFetchMaxBytes = 55 << 20

	// DefaultDecompressionMaxBytes bounds the bytes the whole gateway
	// holds decompressed from produced batches and not yet handed to the
	// log: a partition's batches wait for room beyond it (up to the
	// request's timeout), so many connections of compressed data cannot
	// together exhaust memory that each one's limit leaves.
	DefaultDecompressionMaxBytes = 512 << 20

	// MaxInFlightPerConn bounds requests read from one connection and not
	// yet answered; the reader waits when it is reached. Clients send up to
	// 5 in flight by default; this leaves room for pipelining clients.
	MaxInFlightPerConn = 64

	// MaxFetchWait caps a fetch long-poll whatever the client asks, so a
	// wrong max wait cannot hold a request for long.
	MaxFetchWait = 30 * time.Second

	// ExternalWriteRecheck is how often a waiting fetch looks at the
	// partition again for records that did not come through this gateway
	// (a SeaweedMQ client writing directly); writes through the gateway
	// wake fetches at once.
	ExternalWriteRecheck = 500 * time.Millisecond

	// ListOffsetsParallelism bounds the partitions one ListOffsets
	// request looks up at once: each may wait on the filer, and a
	// listing of every group's lag asks for thousands.
	ListOffsetsParallelism = 16

	// MaxPartitions bounds a topic's partition count: SeaweedMQ splits a
	// ring of 2520 slots among partitions.
	MaxPartitions = 2520

	// MaxDescribedPartitions caps the partitions of one
	// DescribeTopicPartitions response whatever the client asks, as
	// Kafka's max.request.partition.size.limit (2000): the client pages
	// through the rest with the cursor.
	MaxDescribedPartitions = 2000

	// MaxUnauthenticatedRequestSize bounds a frame read on a SASL listener
	// before the login ends, like Kafka's sasl.server.max.receive.size
	// (512 KiB): a peer that has not logged in cannot make the gateway
	// hold a large request.
	MaxUnauthenticatedRequestSize = 512 << 10

	// FrameProgressTimeout bounds how long a request that has begun may
	// send no byte: a peer that announces a frame and stops is closed,
	// while a slow one that keeps sending is read.
	FrameProgressTimeout = 30 * time.Second

	// MinFrameRate is the slowest a request's bytes may come on average:
	// a request of n bytes has FrameProgressTimeout plus n at this rate
	// to arrive whole (FrameTimeout), however it trickles.
	MinFrameRate = 64 << 10 // bytes a second

	// DefaultMaxIdle is connections.max.idle.ms: a connection that sends
	// no request for this long is closed (Kafka's default, 10 minutes).
	DefaultMaxIdle = 10 * time.Minute

	// TLSHandshakeTimeout bounds a TLS handshake, so a peer that opens a
	// connection and sends nothing does not hold it.
	TLSHandshakeTimeout = 10 * time.Second
)

// FrameTimeout is how long a request of size bytes has to arrive whole.
func FrameTimeout(size int) time.Duration {
	return FrameProgressTimeout + time.Duration(size)*time.Second/MinFrameRate
}
