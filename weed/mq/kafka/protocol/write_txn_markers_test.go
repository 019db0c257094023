package protocol_test

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/cluster"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

func markers(pid int64, epoch int16, commit bool, topics map[string][]int32) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed = pid, epoch, commit
	for _, name := range slices.Sorted(maps.Keys(topics)) {
		m.Topics = append(m.Topics, kmsg.WriteTxnMarkersRequestMarkerTopic{Topic: name, Partitions: topics[name]})
	}
	req.Markers = append(req.Markers, m)
	return req
}

func markerCodes(resp *kmsg.WriteTxnMarkersResponse) map[string]int16 {
	out := map[string]int16{}
	for _, m := range resp.Markers {
		for _, rt := range m.Topics {
			for _, p := range rt.Partitions {
				out[rt.Topic+"/"+strconv.Itoa(int(p.Partition))] = p.ErrorCode
			}
		}
	}
	return out
}

// WriteTxnMarkers v0-2 (between gateways): a partition gets the commit or
// abort marker of the producer, which ends its transaction there (an abort
// is listed for read_committed readers); a group, named as
// GroupMarkerTopic(group), commits or drops the producer's pending offsets.
// v3 is refused.
func TestWriteTxnMarkersVersions(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	servesVersions(t, g.addr, kmsg.NewPtrWriteTxnMarkersRequest(), 0, 2)
	g.topic(t, "wtm", 2, nil)
	ctx := context.Background()
	for _, v := range []int16{0, 1} {
		pid := int64(100 + v)
		mark := &record.TxnMark{ProducerID: pid, Epoch: 2, Control: record.NotControl}
		for p := int32(0); p < 2; p++ {
			<-g.backend.Append(ctx, "wtm", p, []record.Record{{Value: []byte("t"), Txn: mark}}, true).Done
		}
		resp := roundTrip(t, g.addr, markers(pid, 2, v == 0, map[string][]int32{"wtm": {0, 1}}), v).(*kmsg.WriteTxnMarkersResponse)
		if len(resp.Markers) != 1 || resp.Markers[0].ProducerID != pid {
			t.Fatalf("v%d: %+v", v, resp.Markers)
		}
		for k, c := range markerCodes(resp) {
			code(t, k, c, nil)
		}
		want := int8(record.ControlCommit)
		if v == 1 {
			want = record.ControlAbort
		}
		for p := int32(0); p < 2; p++ {
			if m := lastMarker(t, g, "wtm", p); m == nil || m.Control != want || m.ProducerID != pid || m.Epoch != 2 {
				t.Errorf("v%d: partition %d ends with %+v", v, p, m)
			}
			txns, _ := g.backend.Transactions(ctx, "wtm", p, 0, 100)
			if txns.FirstUnstable != -1 || (v == 1) != (len(txns.Aborted) == 1) {
				t.Errorf("v%d: partition %d after the marker: %+v", v, p, txns)
			}
		}
	}

	// A group's marker: the transaction's pending offsets commit.
	g.topic(t, "wtm-o", 1, nil)
	p := initTxn(t, g.addr, "wtm-txn")
	p.addOffsets(t, g.addr, "wtm-g")
	roundTrip(t, g.addr, txnOffsetCommit(p, "wtm-g", "wtm-o", map[int32]int64{0: 33}), 3)
	resp := roundTrip(t, g.addr, markers(p.pid, p.epoch, true, map[string][]int32{protocol.GroupMarkerTopic("wtm-g"): {0}}), 1).(*kmsg.WriteTxnMarkersResponse)
	for k, c := range markerCodes(resp) {
		code(t, k, c, nil)
	}
	if got := committed(t, g.addr, "wtm-g", "wtm-o", 0); !slices.Equal(got, []int64{33}) {
		t.Errorf("the group's offsets after its commit marker: %v", got)
	}
}

// v2's transaction version 2 says the marker's end raised the producer's
// epoch (KIP-890): a marker of the epoch of the producer's batches in the
// partition is then late, the batches being its next transaction's, and
// is refused with INVALID_PRODUCER_EPOCH; of version 1 (the epoch kept
// from the transaction's batches) it ends their transaction.
func TestWriteTxnMarkersTransactionVersion(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	g.topic(t, "wtm-v", 1, nil)
	ctx := context.Background()
	produce := func(pid int64, epoch int16) {
		t.Helper()
		mark := &record.TxnMark{ProducerID: pid, Epoch: epoch, Control: record.NotControl}
		r := record.Record{Value: []byte("t"), Producer: &record.ProducerBatch{ID: pid, Epoch: epoch}, Txn: mark}
		app := g.backend.Append(ctx, "wtm-v", 0, []record.Record{r}, true)
		if <-app.Done; app.Err != nil {
			t.Fatal(app.Err)
		}
	}
	// As another gateway's coordinator sends them (cluster.Forwarder).
	send := func(pid int64, epoch int16, bumped bool) int16 {
		t.Helper()
		req := cluster.MarkerRequest("wtm-v", 0, storage.Marker{ProducerID: pid, Epoch: epoch, Commit: true, Bumped: bumped})
		return markerCodes(roundTrip(t, g.addr, req, 2).(*kmsg.WriteTxnMarkersResponse))["wtm-v/0"]
	}
	produce(7, 3)
	code(t, "a version 2 marker of the batches' epoch", send(7, 3, true), kerr.InvalidProducerEpoch)
	if m := lastMarker(t, g, "wtm-v", 0); m != nil {
		t.Fatalf("a refused marker was written: %+v", m)
	}
	code(t, "a version 2 marker of the next epoch", send(7, 4, true), nil)
	produce(8, 3)
	code(t, "a version 1 marker of the batches' epoch", send(8, 3, false), nil)
	if m := lastMarker(t, g, "wtm-v", 0); m == nil || m.ProducerID != 8 || m.Epoch != 3 || m.Control != record.ControlCommit {
		t.Fatalf("the partition ends with %+v, want producer 8's commit of epoch 3", m)
	}
	code(t, "a marker of an epoch below the batches'", send(8, 2, false), kerr.InvalidProducerEpoch)
}

// Errors per partition: an unknown topic or partition (or a name no topic
// can have) UNKNOWN_TOPIC_OR_PARTITION; with an authorizer, markers need
// ClusterAction on the cluster (CLUSTER_AUTHORIZATION_FAILED) and nothing
// is written.
func TestWriteTxnMarkersErrors(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	g.topic(t, "wtme", 1, nil)
	codes := markerCodes(roundTrip(t, g.addr, markers(5, 0, true, map[string][]int32{"wtme": {0, 4}, "wtme-none": {0}, "bad name": {0}}), 1).(*kmsg.WriteTxnMarkersResponse))
	code(t, "wtme/0", codes["wtme/0"], nil)
	code(t, "partition 4 of 1", codes["wtme/4"], kerr.UnknownTopicOrPartition)
	code(t, "an unknown topic", codes["wtme-none/0"], kerr.UnknownTopicOrPartition)
	code(t, "a bad name", codes["bad name/0"], kerr.UnknownTopicOrPartition)

	s := startGateway(t, gatewayOptions{authorizer: true, acls: []acl.Binding{binding(anonymous, kmsg.ACLOperationAll, kmsg.ACLResourceTypeTopic, "wtma")}})
	s.topic(t, "wtma", 1, nil)
	codes = markerCodes(roundTrip(t, s.addr, markers(5, 0, true, map[string][]int32{"wtma": {0}}), 1).(*kmsg.WriteTxnMarkersResponse))
	code(t, "without ClusterAction", codes["wtma/0"], kerr.ClusterAuthorizationFailed)
	if res, _ := s.backend.Read(context.Background(), "wtma", 0, 0, 100); len(res.Records) != 0 {
		t.Errorf("a refused marker was written: %d records", len(res.Records))
	}
	s.allow(t, binding(anonymous, kmsg.ACLOperationClusterAction, kmsg.ACLResourceTypeCluster, acl.ClusterName))
	codes = markerCodes(roundTrip(t, s.addr, markers(5, 0, true, map[string][]int32{"wtma": {0}}), 1).(*kmsg.WriteTxnMarkersResponse))
	code(t, "with ClusterAction", codes["wtma/0"], nil)
}

// A marker carries its coordinator's epoch to the partition and the group:
// one from an epoch below the last the producer's markers came from (a
// deposed coordinator's, late) is refused with
// TRANSACTION_COORDINATOR_FENCED and writes nothing.
func TestWriteTxnMarkersFenceDeposedCoordinators(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	g.topic(t, "wtmf", 1, nil)
	send := func(pid int64, epoch int16, coordinatorEpoch int32, topic string) int16 {
		req := markers(pid, epoch, true, map[string][]int32{topic: {0}})
		req.Markers[0].CoordinatorEpoch = coordinatorEpoch
		return markerCodes(roundTrip(t, g.addr, req, 1).(*kmsg.WriteTxnMarkersResponse))[topic+"/0"]
	}
	code(t, "epoch 3", send(7, 0, 3, "wtmf"), nil)
	code(t, "epoch 3 again", send(7, 0, 3, "wtmf"), nil)
	code(t, "epoch 2 after 3", send(7, 0, 2, "wtmf"), kerr.TransactionCoordinatorFenced)
	if res, _ := g.backend.Read(context.Background(), "wtmf", 0, 0, 100); len(res.Records) != 2 || record.ControlCoordinatorEpoch(res.Records[1].Record.Value) != 3 {
		t.Errorf("the partition's markers: %+v, want two from epoch 3", res.Records)
	}
	// A group with a transaction's offsets pending.
	p := initTxn(t, g.addr, "wtmf-txn")
	p.addOffsets(t, g.addr, "wtmf-g")
	roundTrip(t, g.addr, txnOffsetCommit(p, "wtmf-g", "wtmf", map[int32]int64{0: 1}), 3)
	group := protocol.GroupMarkerTopic("wtmf-g")
	code(t, "a group, epoch 4", send(p.pid, p.epoch, 4, group), nil)
	roundTrip(t, g.addr, txnOffsetCommit(p, "wtmf-g", "wtmf", map[int32]int64{0: 2}), 3)
	code(t, "a group, epoch 3 after 4", send(p.pid, p.epoch, 3, group), kerr.TransactionCoordinatorFenced)
	if got := committed(t, g.addr, "wtmf-g", "wtmf", 0); !slices.Equal(got, []int64{1}) {
		t.Errorf("the group's offsets after the refused marker: %v, want 1 (2 pending)", got)
	}
}
