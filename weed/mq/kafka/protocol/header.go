package protocol

import (
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
