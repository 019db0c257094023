package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The request and response headers are the only bytes this project reads and
// writes by hand: kmsg owns request and response bodies, not the envelope
// around them.
//
// Request header v1:  api_key int16, api_version int16, correlation_id int32,
//                     client_id nullable string (int16 length)
// Request header v2:  v1 followed by tagged fields (flexible requests)
// Response header v0: correlation_id int32
// Response header v1: v0 followed by tagged fields (flexible responses,
//                     except ApiVersions, which always answers with v0)

// Header is a parsed Kafka request header.
type Header struct {
	Key           int16
	Version       int16
	CorrelationID int32
	ClientID      string
}

var errShortHeader = errors.New("request header truncated")

// ParseHeader reads the fixed part of a request header (everything up to and
// including the client id) and returns the header and the rest of the frame.
// Tagged fields of a flexible header are skipped by SkipHeaderTags once the
// request's flexibility is known.
func ParseHeader(frame []byte) (Header, []byte, error) {
	var h Header
	if len(frame) < 10 {
		return h, nil, errShortHeader
	}
	h.Key = int16(binary.BigEndian.Uint16(frame[0:]))
	h.Version = int16(binary.BigEndian.Uint16(frame[2:]))
	h.CorrelationID = int32(binary.BigEndian.Uint32(frame[4:]))
	n := int16(binary.BigEndian.Uint16(frame[8:]))
	rest := frame[10:]
	if n >= 0 {
		if int(n) > len(rest) {
			return h, nil, errShortHeader
		}
		h.ClientID = string(rest[:n])
		rest = rest[n:]
	} else if n != -1 {
		return h, nil, fmt.Errorf("invalid client id length %d", n)
	}
	return h, rest, nil
}

// SkipHeaderTags skips the tagged fields that close a flexible request
// header. It reads the count and each tag with kmsg's uvarint rules.
func SkipHeaderTags(b []byte) ([]byte, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, errShortHeader
	}
	if count > MaxTaggedFields {
		return nil, fmt.Errorf("%d tagged fields in the request header, over the limit of %d", count, MaxTaggedFields)
	}
	b = b[n:]
	for i := uint64(0); i < count; i++ {
		if _, n = binary.Uvarint(b); n <= 0 { // tag
			return nil, errShortHeader
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || size > uint64(len(b)-n) {
			return nil, errShortHeader
		}
		b = b[n+int(size):]
	}
	return b, nil
}

// AppendResponse appends a whole response frame (size, header, body) to dst.
func AppendResponse(dst []byte, correlationID int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		dst = append(dst, 0) // no tagged fields in the response header
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// minUncopiedBatches is the size from which a Fetch partition's record
// batches are written as they are rather than copied into the frame.
const minUncopiedBatches = 16 << 10

// batchesSentinel stands in for a partition's record batches while the rest
// of a Fetch response is encoded: 16 bytes no topic name, number or error
// message of a response holds.
var batchesSentinel = []byte{0xfe, 0xcb, 0x8f, 0xd1, 0x00, 0xff, 0x8e, 0x02, 0xb7, 0xe3, 0x00, 0x9d, 0xc4, 0xfa, 0x01, 0xee}

// ResponseFrame encodes a whole response frame as pieces to write in
// order, the first of them appended to dst. A Fetch response's large record
// batches are pieces of their own, not copied: a response of up to
// fetch.max.bytes is not built twice in memory. Any other response is one
// piece, as AppendResponse makes it.
func ResponseFrame(dst []byte, correlationID int32, resp kmsg.Response) [][]byte {
	fetch, ok := resp.(*kmsg.FetchResponse)
	if !ok {
		return [][]byte{AppendResponse(dst, correlationID, resp)}
	}
	var batches [][]byte
	for i := range fetch.Topics {
		for j := range fetch.Topics[i].Partitions {
			p := &fetch.Topics[i].Partitions[j]
			if len(p.RecordBatches) >= minUncopiedBatches {
				batches = append(batches, p.RecordBatches)
				p.RecordBatches = batchesSentinel
			}
		}
	}
	if len(batches) == 0 {
		return [][]byte{AppendResponse(dst, correlationID, resp)}
	}
	start := len(dst)
	frame := AppendResponse(dst, correlationID, resp)
	k := 0
	for i := range fetch.Topics {
		for j := range fetch.Topics[i].Partitions {
			if p := &fetch.Topics[i].Partitions[j]; len(p.RecordBatches) > 0 && &p.RecordBatches[0] == &batchesSentinel[0] {
				p.RecordBatches = batches[k]
				k++
			}
		}
	}
	pieces := make([][]byte, 0, 2*len(batches)+1)
	// from: where the next piece of the frame begins (dst's bytes go
	// with the first).
	from, total := 0, len(frame)-start
	for _, b := range batches {
		at := bytes.Index(frame[max(from, start):], batchesSentinel) + max(from, start)
		if at < max(from, start) || !sentinelLength(frame[from:at], fetch.IsFlexible()) {
			return [][]byte{AppendResponse(frame[:start], correlationID, resp)} // cannot happen; encode it whole
		}
		if fetch.IsFlexible() {
			// A compact length: 16+1 in one byte, the batches' length
			// in up to five.
			pieces = append(pieces, frame[from:at-1], binary.AppendUvarint(nil, uint64(len(b))+1), b)
			total += len(pieces[len(pieces)-2]) - 1
		} else {
			binary.BigEndian.PutUint32(frame[at-4:], uint32(len(b)))
			pieces = append(pieces, frame[from:at], b)
		}
		total += len(b) - len(batchesSentinel)
		from = at + len(batchesSentinel)
	}
	pieces = append(pieces, frame[from:])
	binary.BigEndian.PutUint32(frame[start:], uint32(total-4))
	return pieces
}

// sentinelLength says whether before ends with the length of a
// batchesSentinel, as a compact (flexible) or an int32 length.
func sentinelLength(before []byte, flexible bool) bool {
	if flexible {
		return len(before) >= 1 && before[len(before)-1] == byte(len(batchesSentinel)+1)
	}
	return len(before) >= 4 && binary.BigEndian.Uint32(before[len(before)-4:]) == uint32(len(batchesSentinel))
}
