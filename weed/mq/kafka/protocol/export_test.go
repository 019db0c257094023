package protocol

import "github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"

// For the in-process tests of package protocol_test, which run the real
// gateway (it imports this package) over the in-memory backend.

// MemBackend is the in-memory Backend of the handler tests.
type MemBackend = memBackend

// NewMemBackend returns an empty one.
func NewMemBackend() *MemBackend { return newMemBackend() }

// NewMemFiles returns an in-memory filer for the coordinators.
func NewMemFiles() *filerfstest.Files { return filerfstest.New() }
