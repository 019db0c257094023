package protocol

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchResponse is a Fetch response of version v whose partitions carry
// record batches of the given sizes (-1: none).
func fetchResponse(v int16, sizes ...int) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(v)
	for i := 0; i < 2; i++ {
		t := kmsg.NewFetchResponseTopic()
		t.Topic = "topic-" + string(rune('a'+i))
		for p, n := range sizes {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition, sp.HighWatermark = int32(p), int64(1000*p)
			if n >= 0 {
				sp.RecordBatches = bytes.Repeat([]byte{byte(p + 1)}, n)
			}
			t.Partitions = append(t.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

// A Fetch response written in pieces, its large batches uncopied, is the
// same frame byte for byte as one encoded whole, at every version.
func TestResponseFrameIsAppendResponse(t *testing.T) {
	for v := int16(4); v <= 18; v++ {
		for _, sizes := range [][]int{{-1, 10}, {1 << 20, -1, 100, 200 << 10}, {minUncopiedBatches}, {3 << 20, 3 << 20}} {
			resp := fetchResponse(v, sizes...)
			want := AppendResponse([]byte("prefix"), 42, resp)
			pieces := ResponseFrame([]byte("prefix"), 42, resp)
			if got := bytes.Join(pieces, nil); !bytes.Equal(got, want) {
				t.Fatalf("v%d, batches %v: %d bytes in %d pieces, want %d", v, sizes, len(got), len(pieces), len(want))
			}
			// The response itself is as it was.
			if again := AppendResponse([]byte("prefix"), 42, resp); !bytes.Equal(again, want) {
				t.Fatalf("v%d: the response changed", v)
			}
			large := 0
			for _, n := range sizes {
				if n >= minUncopiedBatches {
					large++
				}
			}
			if large > 0 && len(pieces) < 2*large+1 {
				t.Fatalf("v%d, batches %v: %d pieces, the large batches were copied", v, sizes, len(pieces))
			}
		}
	}
	md := kmsg.NewPtrMetadataResponse()
	if pieces := ResponseFrame(nil, 1, md); len(pieces) != 1 || !bytes.Equal(pieces[0], AppendResponse(nil, 1, md)) {
		t.Fatal("another response is not one piece")
	}
}

// BenchmarkFetchFrame encodes a Fetch response of 20 partitions with 1 MiB
// of record batches each: whole (copied into the frame) or in pieces.
func BenchmarkFetchFrame(b *testing.B) {
	sizes := make([]int, 10)
	for i := range sizes {
		sizes[i] = 1 << 20
	}
	resp := fetchResponse(16, sizes...)
	b.Run("whole", func(b *testing.B) {
		b.SetBytes(20 << 20)
		var buf []byte
		for b.Loop() {
			buf = AppendResponse(buf[:0], 1, resp)
		}
	})
	b.Run("pieces", func(b *testing.B) {
		b.SetBytes(20 << 20)
		var buf []byte
		for b.Loop() {
			buf = ResponseFrame(buf[:0], 1, resp)[0]
		}
	})
}
