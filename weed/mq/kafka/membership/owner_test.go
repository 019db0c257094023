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

// A key's owner epoch stays the epoch its owner took it, however many views
// have passed: gateways coming and going that never owned it do not move
// it. It once slid forward with every view once more than keptEarlier had
// passed (Kafka clients saw a new leader epoch with the same leader).
func TestOwnerEpochBeyondKeptViews(t *testing.T) {
	stable := []Member{{NodeID: 1}, {NodeID: 2}, {NodeID: 3}}
	views := []View{{Epoch: 1, Members: stable}}
	for i := 0; i < 3*keptEarlier; i++ {
		members := append([]Member(nil), stable...)
		switch i % 3 {
		case 0:
			members = append(members, Member{NodeID: int32(100 + i%7)}) // a gateway comes
		case 1:
			members = members[:2] // one of the three goes for a while
		}
		views = append(views, views[len(views)-1].next(members))
	}
	// The truth, from every view there ever was.
	truth := func(key string) int64 {
		last := len(views) - 1
		o, _ := views[last].owner(key)
		epoch := views[last].Epoch
		for j := last - 1; j >= 0; j-- {
			if p, ok := views[j].owner(key); !ok || p.NodeID != o.NodeID {
				break
			}
			epoch = views[j].Epoch
		}
		return epoch
	}
	v := views[len(views)-1]
	checked := 0
	for p := int32(0); p < 200; p++ {
		key := PartitionKey("orders", p)
		if got, want := v.ownerEpoch(key), truth(key); got != want {
			t.Fatalf("%s: owner epoch %d, want %d", key, got, want)
		}
		checked++
	}
	if len(v.Left) > 8 {
		t.Fatalf("%d departures kept", len(v.Left))
	}
}
