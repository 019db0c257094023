package protocol_test

import (
	"encoding/binary"
	"fmt"
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
)

// ApiVersions v0 and v5 over the wire: the table of every served API in key
// order, each once with the registry's versions; the response header is
// v0's even for the flexible versions (a client reads the correlation id
// and then the body).
func TestApiVersionsVersions(t *testing.T) {
	addr := inProcessGateway(t)
	for _, v := range []int16{0, 1, 2, 3, 4, 5} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "franz-go", "1.22.3"
		resp := roundTrip(t, addr, req, v).(*kmsg.ApiVersionsResponse)
		code(t, "ApiVersions", resp.ErrorCode, nil)
		if resp.ThrottleMillis != 0 {
			t.Errorf("v%d: throttled %d ms", v, resp.ThrottleMillis)
		}
		last := int16(-1)
		for _, k := range resp.ApiKeys {
			if k.ApiKey <= last {
				t.Fatalf("v%d: key %d after %d", v, k.ApiKey, last)
			}
			last = k.ApiKey
			min, max, ok := protocol.Supported(k.ApiKey)
			if !ok || k.MinVersion != min || k.MaxVersion != max || k.MinVersion > k.MaxVersion {
				t.Errorf("v%d: %s advertised %d-%d, served %d-%d %v", v, kmsg.NameForKey(k.ApiKey), k.MinVersion, k.MaxVersion, min, max, ok)
			}
			if k.MaxVersion > kmsg.RequestForKey(k.ApiKey).MaxVersion() {
				t.Errorf("v%d: %s advertised up to v%d, past what clients know", v, kmsg.NameForKey(k.ApiKey), k.MaxVersion)
			}
		}
		// The APIs every client needs before anything else, at the
		// versions the handlers' comments give.
		want := map[kmsg.Key][2]int16{kmsg.ApiVersions: {0, 5}, kmsg.Metadata: {0, 13}, kmsg.Produce: {0, 13}, kmsg.Fetch: {4, 18},
			kmsg.SASLHandshake: {0, 1}, kmsg.SASLAuthenticate: {0, 2}, kmsg.FindCoordinator: {0, 6}}
		for _, k := range resp.ApiKeys {
			if w, ok := want[kmsg.Key(k.ApiKey)]; ok {
				if w != [2]int16{k.MinVersion, k.MaxVersion} {
					t.Errorf("v%d: %s %d-%d, want %d-%d", v, kmsg.NameForKey(k.ApiKey), k.MinVersion, k.MaxVersion, w[0], w[1])
				}
				delete(want, kmsg.Key(k.ApiKey))
			}
		}
		for k := range want {
			t.Errorf("v%d: %s not advertised", v, k.Name())
		}
		if v >= 3 {
			checkTxnFeature(t, fmt.Sprintf("v%d", v), resp, 2)
		}
	}
	// Classic transactions: supported, not finalized.
	classic := startGateway(t, gatewayOptions{classicTxns: true})
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "franz-go", "1.22.3"
	resp := roundTrip(t, classic.addr, req, 3).(*kmsg.ApiVersionsResponse)
	checkTxnFeature(t, "classic", resp, 0)
}

// checkTxnFeature checks ApiVersions v3+'s features: group.version,
// share.version and streams.version supported 0-1 and finalized at 1
// (KIP-848's consumer groups, KIP-932's share groups, KIP-1071's streams
// groups), transaction.version supported 0-2 and finalized at level (not
// finalized for 0), from a finalized features epoch clients take (0 or
// more: Java's ApiVersions ignores -1).
func checkTxnFeature(t *testing.T, what string, resp *kmsg.ApiVersionsResponse, level int16) {
	t.Helper()
	supported := map[string][2]int16{}
	for _, f := range resp.SupportedFeatures {
		supported[f.Name] = [2]int16{f.MinVersion, f.MaxVersion}
	}
	if len(supported) != 4 || supported["group.version"] != [2]int16{0, 1} || supported["share.version"] != [2]int16{0, 1} ||
		supported["transaction.version"] != [2]int16{0, 2} || supported["streams.version"] != [2]int16{0, 1} {
		t.Errorf("%s: supported features %+v", what, resp.SupportedFeatures)
	}
	if resp.FinalizedFeaturesEpoch < 0 {
		t.Errorf("%s: finalized features epoch %d", what, resp.FinalizedFeaturesEpoch)
	}
	finalized := map[string][2]int16{}
	for _, f := range resp.FinalizedFeatures {
		finalized[f.Name] = [2]int16{f.MinVersionLevel, f.MaxVersionLevel}
	}
	want := map[string][2]int16{"group.version": {1, 1}, "share.version": {1, 1}, "streams.version": {1, 1}}
	if level > 0 {
		want["transaction.version"] = [2]int16{level, level}
	}
	if !maps.Equal(finalized, want) {
		t.Errorf("%s: finalized %+v, want %v", what, resp.FinalizedFeatures, want)
	}
}

// A request newer than served (v6, v127) is answered, not refused: in v0
// format with UNSUPPORTED_VERSION and the whole table, so that the client
// retries with a version it finds there.
func TestApiVersionsTooNew(t *testing.T) {
	addr := inProcessGateway(t)
	for _, v := range []int16{6, 127} {
		c := dial(t, addr)
		// A v5 body in a header saying v: what a newer client sends
		// looks like a v5 one to an older server.
		if err := c.sendFrame(kmsg.NewPtrApiVersionsRequest(), 5, v); err != nil {
			t.Fatal(err)
		}
		body, err := c.readFrame()
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		// v0: error code, then the key array with a 4-byte length.
		if len(body) < 6 || int16(binary.BigEndian.Uint16(body)) != kerr.UnsupportedVersion.Code {
			t.Fatalf("v%d: answer begins %x, want UNSUPPORTED_VERSION in v0 format", v, body[:min(len(body), 8)])
		}
		var resp kmsg.ApiVersionsResponse
		resp.SetVersion(0)
		if err := resp.ReadFrom(body); err != nil {
			t.Fatalf("v%d: not a v0 answer: %v", v, err)
		}
		if again := resp.AppendTo(nil); len(again) != len(body) {
			t.Fatalf("v%d: %d bytes, a v0 answer is %d", v, len(body), len(again))
		}
		found := false
		for _, k := range resp.ApiKeys {
			if k.ApiKey == int16(kmsg.ApiVersions) {
				found = k.MinVersion == 0 && k.MaxVersion == 5
			}
		}
		if !found {
			t.Fatalf("v%d: the v0 answer does not offer ApiVersions 0-5: %+v", v, resp.ApiKeys)
		}
		// The connection goes on: the retry at v3 is answered.
		retry := kmsg.NewPtrApiVersionsRequest()
		retry.ClientSoftwareName, retry.ClientSoftwareVersion = "protocol-test", "1"
		if again := c.do(retry, 3).(*kmsg.ApiVersionsResponse); again.ErrorCode != 0 {
			t.Fatalf("the retry after v%d: %s", v, errName(again.ErrorCode))
		}
	}
}

// v3+ names the client's software: a name or version outside Kafka's
// pattern (KIP-511) is INVALID_REQUEST with no keys, as Kafka answers;
// the names clients send are accepted.
func TestApiVersionsSoftwareName(t *testing.T) {
	addr := inProcessGateway(t)
	for _, c := range []struct{ name, version string }{{"bad name!", "-1"}, {"", "1.0"}, {"kgo", ""}, {"-kgo", "1"}, {"kgo", "1.0-"}} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = c.name, c.version
		resp := roundTrip(t, addr, req, 3).(*kmsg.ApiVersionsResponse)
		code(t, c.name+" "+c.version, resp.ErrorCode, kerr.InvalidRequest)
		if len(resp.ApiKeys) != 0 {
			t.Errorf("%q %q: %d keys with the error", c.name, c.version, len(resp.ApiKeys))
		}
	}
	for _, c := range []struct{ name, version string }{{"apache-kafka-java", "4.4.0"}, {"librdkafka", "2.11.0-RC1"}, {"kgo", "v1.22.3"}, {"a", "1"}} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = c.name, c.version
		resp := roundTrip(t, addr, req, 4).(*kmsg.ApiVersionsResponse)
		code(t, c.name+" "+c.version, resp.ErrorCode, nil)
	}
}
