package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codec is the compression codec of a record batch (attributes bits 0-2).
type Codec int8

const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// ErrTooLarge is returned when decompressed data would exceed the limit the
// caller gave: a guard against decompression bombs.
var ErrTooLarge = errors.New("decompressed records exceed the size limit")

// xerialHeader opens snappy data framed the way Kafka's Java clients (and
// sarama and kafka-go) frame it: magic, then version and compatible version.
var xerialHeader = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// MaxZstdWindow bounds the window a zstd frame may ask its decoder for.
const MaxZstdWindow = 64 << 20

var zstdDecoders = sync.Pool{New: func() any {
	// A frame may ask for a window of up to 512 MiB, zstd's default
	// bound, whatever it holds: Kafka's producers use 8 MiB or less.
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(MaxZstdWindow))
	if err != nil {
		panic(err) // only bad options make this fail
	}
	return d
}}

var zstdEncoder, _ = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))

// Decompress appends the decompressed form of src to dst, refusing to produce
// more than limit bytes.
func Decompress(codec Codec, dst, src []byte, limit int) ([]byte, error) {
	switch codec {
	case CodecNone:
		if len(src) > limit {
			return nil, ErrTooLarge
		}
		return append(dst, src...), nil
	case CodecGzip:
		r, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, err
		}
		return readLimited(dst, r, limit)
	case CodecSnappy:
		if bytes.HasPrefix(src, xerialHeader) {
			return unframeXerial(dst, src, limit)
		}
		return snappyBlock(dst, src, limit)
	case CodecLZ4:
		return readLimited(dst, lz4.NewReader(bytes.NewReader(src)), limit)
	case CodecZstd:
		d := zstdDecoders.Get().(*zstd.Decoder)
		defer zstdDecoders.Put(d)
		if err := d.Reset(bytes.NewReader(src)); err != nil {
			return nil, err
		}
		out, err := readLimited(dst, d, limit)
		d.Reset(nil) //nolint:errcheck // releases src
		return out, err
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}

func snappyBlock(dst, src []byte, limit int) ([]byte, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, ErrTooLarge
	}
	out, err := snappy.Decode(nil, src)
	if err != nil {
		return nil, err
	}
	return append(dst, out...), nil
}

// unframeXerial decodes xerial framing: the 16-byte header, then chunks of a
// big-endian int32 length and a raw snappy block.
func unframeXerial(dst, src []byte, limit int) ([]byte, error) {
	if len(src) < 16 {
		return nil, errors.New("xerial snappy: truncated header")
	}
	src = src[16:]
	total := 0
	for len(src) > 0 {
		if len(src) < 4 {
			return nil, errors.New("xerial snappy: truncated chunk length")
		}
		n := int(binary.BigEndian.Uint32(src))
		src = src[4:]
		if n < 0 || n > len(src) {
			return nil, errors.New("xerial snappy: chunk past end of data")
		}
		before := len(dst)
		var err error
		if dst, err = snappyBlock(dst, src[:n], limit-total); err != nil {
			return nil, err
		}
		total += len(dst) - before
		src = src[n:]
	}
	return dst, nil
}

func readLimited(dst []byte, r io.Reader, limit int) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	n, err := buf.ReadFrom(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if int(n) > limit {
		return nil, ErrTooLarge
	}
	return buf.Bytes(), nil
}

// Compress appends src compressed with codec to dst. Snappy is written as a
// raw block, which every client reads.
func Compress(codec Codec, dst, src []byte) ([]byte, error) {
	switch codec {
	case CodecNone:
		return append(dst, src...), nil
	case CodecGzip:
		buf := bytes.NewBuffer(dst)
		w := gzip.NewWriter(buf)
		if _, err := w.Write(src); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case CodecSnappy:
		return append(dst, snappy.Encode(nil, src)...), nil
	case CodecLZ4:
		buf := bytes.NewBuffer(dst)
		w := lz4.NewWriter(buf)
		if _, err := w.Write(src); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case CodecZstd:
		return zstdEncoder.EncodeAll(src, dst), nil
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}
