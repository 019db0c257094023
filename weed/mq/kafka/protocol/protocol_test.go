package protocol

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/telemetry"
)

// requestFrame encodes a request the way a client does, without the size.
func requestFrame(req kmsg.Request, correlationID int32) []byte {
	var f kmsg.RequestFormatter
	b := f.AppendRequest(nil, req, correlationID)
	return b[4:]
}

// A Metadata v1 request header, annotated: the bytes a client sends.
var goldenMetadataV1 = []byte{
	0x00, 0x03, // api key 3 (Metadata)
	0x00, 0x01, // version 1
	0x00, 0x00, 0x00, 0x07, // correlation id 7
	0x00, 0x02, 'c', 'l', // client id "cl"
	0xff, 0xff, 0xff, 0xff, // topics: null (all topics)
}

func TestDecodeGoldenHeader(t *testing.T) {
	r, err := Decode(goldenMetadataV1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Key != 3 || r.Version != 1 || r.CorrelationID != 7 || r.ClientID != "cl" {
		t.Fatalf("header %+v", r.Header)
	}
	if req := r.Body.(*kmsg.MetadataRequest); req.Topics != nil {
		t.Fatalf("null topic list decoded as %v", req.Topics)
	}
}

func TestApiVersionsIsTheRegistry(t *testing.T) {
	for _, v := range []int16{0, 3, 5} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
		r, err := Decode(requestFrame(req, 1))
		if err != nil {
			t.Fatal(err)
		}
		// PushTelemetry is served where client metrics are kept.
		resp, err := New(Config{ClientMetrics: telemetry.New(telemetry.Options{})}, nil, nil, nil).Handle(context.Background(), r)()
		if err != nil {
			t.Fatal(err)
		}
		av := resp.(*kmsg.ApiVersionsResponse)
		if av.ErrorCode != 0 || av.Version != v {
			t.Fatalf("v%d: error %d version %d", v, av.ErrorCode, av.Version)
		}
		n := 0
		for _, k := range av.ApiKeys {
			min, max, ok := Supported(k.ApiKey)
			if !ok || min != k.MinVersion || max != k.MaxVersion {
				t.Errorf("key %d advertised %d-%d, registry %d-%d %v", k.ApiKey, k.MinVersion, k.MaxVersion, min, max, ok)
			}
			n++
		}
		for k := int16(0); k <= kmsg.MaxKey; k++ {
			if _, _, ok := Supported(k); ok {
				n--
			}
		}
		if n != 0 {
			t.Errorf("v%d: advertised and registered keys differ by %d", v, n)
		}
	}
}

func TestApiVersionsTooNewAnswersV0(t *testing.T) {
	frame := []byte{0, 18, 0, 99, 0, 0, 0, 5, 0xff, 0xff, 0}
	r, err := Decode(frame)
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := New(Config{}, nil, nil, nil).Handle(context.Background(), r)()
	av := resp.(*kmsg.ApiVersionsResponse)
	if av.Version != 0 || av.ErrorCode != kerr.UnsupportedVersion.Code || len(av.ApiKeys) == 0 {
		t.Fatalf("version %d error %d keys %d", av.Version, av.ErrorCode, len(av.ApiKeys))
	}
	out := AppendResponse(nil, 5, resp)
	if binary.BigEndian.Uint32(out) != uint32(len(out)-4) || binary.BigEndian.Uint32(out[4:]) != 5 {
		t.Fatalf("frame %x", out[:8])
	}
	// ApiVersions keeps the v0 response header: no tag byte after the id.
	var back kmsg.ApiVersionsResponse
	if err := back.ReadFrom(out[8:]); err != nil || back.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("re-read: %v %d", err, back.ErrorCode)
	}
}

func TestDecodeRejects(t *testing.T) {
	for name, frame := range map[string][]byte{
		"short":         {0, 3, 0},
		"unknown key":   {0x03, 0xe7, 0, 0, 0, 0, 0, 1, 0xff, 0xff},
		"old version":   {0, 1, 0, 3, 0, 0, 0, 1, 0xff, 0xff}, // Fetch v3
		"new version":   {0, 3, 0, 99, 0, 0, 0, 1, 0xff, 0xff},
		"bad client id": {0, 3, 0, 1, 0, 0, 0, 1, 0x00, 0x09, 'a'},
		"truncated":     goldenMetadataV1[:len(goldenMetadataV1)-2],
	} {
		if _, err := Decode(frame); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

// TestCompatibilityTable keeps the table of API keys and versions in
// docs/compatibility.md equal to what is served.
func TestCompatibilityTable(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	doc, err := os.ReadFile(filepath.Join(filepath.Dir(file), "../../../../docs/compatibility.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^\| (\d+) \| (\w+) \| (\d+)[–-](\d+) \|`)
	documented := map[int16][2]int16{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		k, _ := strconv.Atoi(m[1])
		lo, _ := strconv.Atoi(m[3])
		hi, _ := strconv.Atoi(m[4])
		documented[int16(k)] = [2]int16{int16(lo), int16(hi)}
		if kmsg.NameForKey(int16(k)) != m[2] {
			t.Errorf("docs/compatibility.md names key %d %s, kmsg %s", k, m[2], kmsg.NameForKey(int16(k)))
		}
	}
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		min, max, ok := Supported(k)
		d, inDoc := documented[k]
		switch {
		case ok && !inDoc:
			t.Errorf("docs/compatibility.md does not list %s (%d-%d)", kmsg.NameForKey(k), min, max)
		case !ok && inDoc:
			t.Errorf("docs/compatibility.md lists %s, which is not served", kmsg.NameForKey(k))
		case ok && d != [2]int16{min, max}:
			t.Errorf("docs/compatibility.md says %s %d-%d, served %d-%d", kmsg.NameForKey(k), d[0], d[1], min, max)
		}
	}
}

func TestTopicNames(t *testing.T) {
	long := make([]byte, 250)
	for i := range long {
		long[i] = 'a'
	}
	for name, ok := range map[string]bool{"orders": true, "a.b_c-D9": true, "": false, ".": false, "..": false,
		"has space": false, "slash/no": false, string(long[:249]): true, string(long): false} {
		if got := storage.ValidTopicName(name) == nil; got != ok {
			t.Errorf("%q: valid %v, want %v", name, got, ok)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(goldenMetadataV1)
	for _, req := range []kmsg.Request{kmsg.NewPtrProduceRequest(), kmsg.NewPtrFetchRequest(), kmsg.NewPtrApiVersionsRequest(),
		kmsg.NewPtrCreateTopicsRequest(), kmsg.NewPtrListOffsetsRequest(), kmsg.NewPtrDescribeConfigsRequest(),
		kmsg.NewPtrJoinGroupRequest(), kmsg.NewPtrSyncGroupRequest(), kmsg.NewPtrOffsetCommitRequest(), kmsg.NewPtrOffsetFetchRequest(),
		kmsg.NewPtrLeaveGroupRequest(), kmsg.NewPtrFindCoordinatorRequest(), kmsg.NewPtrInitProducerIDRequest(),
		kmsg.NewPtrAddPartitionsToTxnRequest(), kmsg.NewPtrEndTxnRequest(), kmsg.NewPtrTxnOffsetCommitRequest(),
		kmsg.NewPtrListTransactionsRequest(), kmsg.NewPtrWriteTxnMarkersRequest()} {
		for _, v := range []int16{0, 4, 9, 12, req.MaxVersion()} {
			if v <= req.MaxVersion() {
				req.SetVersion(v)
				f.Add(requestFrame(req, 1))
			}
		}
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		r, err := Decode(frame)
		if err != nil {
			return
		}
		if _, _, ok := Supported(r.Key); !ok {
			t.Fatalf("decoded unsupported key %d", r.Key)
		}
		if r.Body == nil {
			t.Fatal(fmt.Sprintf("no body for key %d", r.Key))
		}
	})
}
