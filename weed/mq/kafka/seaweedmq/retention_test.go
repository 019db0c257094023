package seaweedmq

import "testing"

// TestBeyondRetention: the oldest segments go while the others still hold
// at least the limit, as Kafka's size-based retention removes them; the
// newest segment always stays.
func TestBeyondRetention(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sizes []int64
		limit int64
		want  int
	}{
		{"no segment", nil, 0, 0},
		{"the newest stays, however large", []int64{500}, 0, 0},
		{"under the limit", []int64{100, 100, 100}, 300, 0},
		{"one over", []int64{100, 100, 100}, 200, 1},
		{"the others would hold less than the limit", []int64{100, 100, 100}, 201, 0},
		{"all but the newest", []int64{100, 100, 100}, 0, 2},
		{"a large oldest segment", []int64{1000, 10, 10}, 15, 1},
		{"stops at the first that must stay", []int64{10, 1000, 10, 10}, 500, 1},
	} {
		if got := beyondRetention(tc.sizes, tc.limit); got != tc.want {
			t.Errorf("%s: %d segments removed, want %d", tc.name, got, tc.want)
		}
	}
}

// TestRetentionBytes: only topics with the delete policy (the default)
// and a limit of 0 or more have size-based retention.
func TestRetentionBytes(t *testing.T) {
	for _, tc := range []struct {
		configs map[string]string
		want    int64
	}{
		{map[string]string{}, -1},
		{map[string]string{"retention.bytes": "1000"}, 1000},
		{map[string]string{"retention.bytes": "0"}, 0},
		{map[string]string{"retention.bytes": "-5"}, -1},
		{map[string]string{"retention.bytes": "1000", "cleanup.policy": "compact"}, -1},
		{map[string]string{"retention.bytes": "1000", "cleanup.policy": "compact,delete"}, 1000},
		{map[string]string{"retention.bytes": "1000", "cleanup.policy": ""}, -1},
	} {
		if got := retentionBytes(tc.configs); got != tc.want {
			t.Errorf("%v: %d, want %d", tc.configs, got, tc.want)
		}
	}
}
