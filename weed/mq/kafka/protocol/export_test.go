package protocol

import "github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"

// For the in-process tests of package protocol_test, which run the real
// gateway (it imports this package) over the in-memory backend.

// NewMemFiles returns an in-memory filer for the coordinators.
func NewMemFiles() *filerfstest.Files { return filerfstest.New() }
