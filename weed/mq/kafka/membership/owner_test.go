package membership

import "testing"

// BenchmarkOwnerEpoch is what Metadata does for a partition with three
// gateways and a full history of earlier views (no allocation; well under
// a microsecond here).
func BenchmarkOwnerEpoch(b *testing.B) {
	v := View{Members: []Member{{NodeID: 1}, {NodeID: 2}, {NodeID: 3}}}
	for i := 0; i < keptEarlier+1; i++ {
		v = v.next(v.Members)
	}
	key := PartitionKey("orders", 7)
	b.ReportAllocs()
	for b.Loop() {
		v.ownerEpoch(key)
	}
}
