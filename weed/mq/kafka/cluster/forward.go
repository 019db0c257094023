package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/group"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/protocol"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/txn"
)

// Peers sends requests to the other gateways of the cluster, as their Kafka
// client: one franz-go client per gateway, made when first needed.
type Peers struct {
	opts    PeerOptions
	mu      sync.Mutex
	clients map[string]*kgo.Client
	closed  bool
}

// PeerOptions say how a gateway reaches the others: on their listener for
// gateways (membership.Member.Addr), with TLS and SASL when it has them.
type PeerOptions struct {
	TLS *tls.Config // nil: no TLS
	// Identity, when set, logs in as the gateways' own user with
	// SCRAM-SHA-512.
	Identity *Identity
}

// ClientOpts are how a Kafka client of the gateways' own logs in to them:
// TLS and SASL as the options say.
func (o PeerOptions) ClientOpts() []kgo.Opt {
	var opts []kgo.Opt
	if o.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(o.TLS.Clone()))
	}
	if id := o.Identity; id != nil {
		opts = append(opts, kgo.SASL(scram.Sha512(func(context.Context) (scram.Auth, error) {
			pw := id.Password()
			if pw == "" {
				return scram.Auth{}, errors.New("the gateways' password is not read yet")
			}
			return scram.Auth{User: protocol.GatewayUser, Pass: pw}, nil
		})))
	}
	return opts
}

// NewPeers returns a Peers with no connection yet.
func NewPeers(opts PeerOptions) *Peers { return &Peers{opts: opts, clients: map[string]*kgo.Client{}} }

// Request sends req to the gateway at addr and returns its answer.
func (p *Peers) Request(ctx context.Context, addr string, req kmsg.Request) (kmsg.Response, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, kerr.CoordinatorNotAvailable
	}
	cl := p.clients[addr]
	if cl == nil {
		var err error
		opts := append(p.opts.ClientOpts(), kgo.SeedBrokers(addr), kgo.ClientID("kafka-gateway"))
		if cl, err = kgo.NewClient(opts...); err != nil {
			p.mu.Unlock()
			return nil, err
		}
		p.clients[addr] = cl
	}
	p.mu.Unlock()
	return cl.SeedBrokers()[0].Request(ctx, req)
}

// Close closes the connections.
func (p *Peers) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, cl := range p.clients {
		cl.Close()
	}
	p.clients = nil
}

// Forwarder is every request one gateway's coordinators and handlers make
// of the others, the way Kafka's brokers reach one another: a
// transaction's markers (txn.Log and txn.Groups) go to this gateway's
// partitions and groups directly, to another gateway's as WriteTxnMarkers;
// a transactional produce is checked with the transactional id's
// coordinator (protocol.TxnVerifier) here, or on its gateway with
// AddPartitionsToTxn VerifyOnly (KIP-890).
type Forwarder struct {
	Log storage.Backend // this gateway's, leading-checked
	// Known is a partition's log start and high watermark as this
	// gateway knows them without leading it (what the segments hold).
	Known   func(ctx context.Context, topic string, partition int32) (storage.Offsets, error)
	Groups  *group.Coordinator
	Txns    *txn.Coordinator // set once made (it uses the Forwarder)
	Members *membership.Membership
	Peers   *Peers
}

// NewProducerID implements txn.Log.
func (m *Forwarder) NewProducerID(ctx context.Context) (int64, error) {
	return m.Log.NewProducerID(ctx)
}

// WriteMarker implements txn.Log.
func (m *Forwarder) WriteMarker(ctx context.Context, topic string, partition int32, mk storage.Marker) error {
	if _, ok := m.Members.Serving(membership.PartitionKey(topic, partition)); ok {
		return m.Log.WriteMarker(ctx, topic, partition, mk)
	}
	return m.send(ctx, membership.PartitionKey(topic, partition), topic, partition, mk, kerr.NotLeaderForPartition)
}

// HighWatermark is a partition's high watermark, as Offsets.
func (m *Forwarder) HighWatermark(ctx context.Context, topic string, partition int32) (int64, error) {
	offs, err := m.Offsets(ctx, topic, partition)
	return offs.HighWatermark, err
}

// LogOffsets is Offsets' log start and high watermark (group.Offsets).
func (m *Forwarder) LogOffsets(ctx context.Context, topic string, partition int32) (int64, int64, error) {
	offs, err := m.Offsets(ctx, topic, partition)
	return offs.LogStart, offs.HighWatermark, err
}

// Offsets is a partition's log start and high watermark, for a group's
// lag: from this gateway's memory where it leads the partition, else
// asked of the gateway that does (a follower's offsets-only Fetch), whose
// tail no segment holds yet; from the segments when that gateway does not
// answer.
func (m *Forwarder) Offsets(ctx context.Context, topic string, partition int32) (storage.Offsets, error) {
	key := membership.PartitionKey(topic, partition)
	if _, ok := m.Members.Serving(key); ok {
		return m.Known(ctx, topic, partition)
	}
	owner, _, ok := m.Members.Owner(key)
	if ok && owner.NodeID != m.Members.Self().NodeID {
		if info, err := m.Log.DescribeTopic(ctx, topic); err == nil {
			// An offset past any end asks for no aborted transactions.
			f := protocol.ReplicaFetch{Topic: topic, TopicID: info.ID, Partition: partition, Offset: math.MaxInt64}
			sp, err := peerFetch(ctx, m.Peers, m.Members.Self().NodeID, owner, f, 0, 0)
			if err == nil && sp.ErrorCode == 0 {
				return storage.Offsets{LogStart: sp.LogStartOffset, HighWatermark: sp.HighWatermark}, nil
			}
		}
	}
	return m.Known(ctx, topic, partition)
}

// EndTxnOffsets implements txn.Groups.
func (m *Forwarder) EndTxnOffsets(ctx context.Context, name string, producerID int64, epoch int16, coordinatorEpoch int32, commit bool) *kerr.Error {
	if _, ok := m.Members.Serving(membership.GroupKey(name)); ok {
		return m.Groups.EndTxnOffsets(ctx, name, producerID, epoch, coordinatorEpoch, commit)
	}
	mk := storage.Marker{ProducerID: producerID, Epoch: epoch, CoordinatorEpoch: coordinatorEpoch, Commit: commit}
	err := m.send(ctx, membership.GroupKey(name), protocol.GroupMarkerTopic(name), 0, mk, kerr.NotCoordinator)
	if err == nil {
		return nil
	}
	var e *kerr.Error
	if errors.As(err, &e) {
		return e
	}
	glog.Warningf("kafka transactions: %v", err)
	return kerr.CoordinatorNotAvailable
}

// send writes one marker through the gateway that owns key; notOwned is
// the error while that is this gateway, not serving it yet.
func (m *Forwarder) send(ctx context.Context, key, topic string, partition int32, marker storage.Marker, notOwned *kerr.Error) error {
	owner, _, ok := m.Members.Owner(key)
	if !ok || owner.NodeID == m.Members.Self().NodeID {
		return notOwned
	}
	resp, err := m.Peers.Request(ctx, owner.Addr(), MarkerRequest(topic, partition, marker))
	if err != nil {
		return fmt.Errorf("marker for %s through %s: %w", topic, owner.Addr(), err)
	}
	r := resp.(*kmsg.WriteTxnMarkersResponse)
	if len(r.Markers) != 1 || len(r.Markers[0].Topics) != 1 || len(r.Markers[0].Topics[0].Partitions) != 1 {
		return fmt.Errorf("marker for %s through %s: malformed answer", topic, owner.Addr())
	}
	if code := r.Markers[0].Topics[0].Partitions[0].ErrorCode; code != 0 {
		return kerr.ErrorForCode(code)
	}
	return nil
}

// MarkerRequest is the WriteTxnMarkers request that writes one marker to
// a partition (or a group, as protocol.GroupMarkerTopic). A marker whose
// end raised the producer's epoch goes as transaction version 2 (v2,
// KIP-1228); to a gateway that takes only v0-1 the version is not said,
// and it checks the marker's epoch as before.
func MarkerRequest(topic string, partition int32, marker storage.Marker) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	mk := kmsg.NewWriteTxnMarkersRequestMarker()
	mk.ProducerID, mk.ProducerEpoch, mk.CoordinatorEpoch, mk.Committed = marker.ProducerID, marker.Epoch, marker.CoordinatorEpoch, marker.Commit
	mk.TransactionVersion = 1
	if marker.Bumped {
		mk.TransactionVersion = 2
	}
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = topic, []int32{partition}
	mk.Topics = append(mk.Topics, mt)
	req.Markers = append(req.Markers, mk)
	return req
}

// Verify implements protocol.TxnVerifier. On another gateway, the check is
// AddPartitionsToTxn VerifyOnly, the implicit add (add) one without it. A
// client ends a transaction only after its writes were answered, but the
// coordinator may end it between its answer and the write (an abort on
// the transaction's timeout, a producer fenced): the partition then
// refuses the write, its abort marker having raised the producer's epoch
// there (seaweedmq's producer fences).
func (m *Forwarder) Verify(ctx context.Context, id *string, producerID int64, epoch int16, topic string, partition int32, add bool, write func()) *kerr.Error {
	owner, _, ok := m.Members.Owner(membership.TxnKey(*id))
	if !ok {
		return kerr.NotEnoughReplicas // retriable: no coordinator known yet
	}
	if owner.NodeID == m.Members.Self().NodeID {
		return m.Txns.Verify(ctx, id, producerID, epoch, topic, partition, add, write)
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 4
	if add {
		req.Version = 5
	}
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = *id, producerID, epoch, !add
	tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	tt.Topic, tt.Partitions = topic, []int32{partition}
	tx.Topics = append(tx.Topics, tt)
	req.Transactions = append(req.Transactions, tx)
	resp, err := m.Peers.Request(ctx, owner.Addr(), req)
	if err != nil {
		return kerr.NotEnoughReplicas
	}
	r := resp.(*kmsg.AddPartitionsToTxnResponse)
	code := r.ErrorCode
	for _, t := range r.Transactions {
		for _, rt := range t.Topics {
			for _, rp := range rt.Partitions {
				if code == 0 {
					code = rp.ErrorCode
				}
			}
		}
	}
	if code == 0 {
		write()
		return nil
	}
	return txn.ImplicitAddErr(kerr.ErrorForCode(code).(*kerr.Error))
}

// AddGroup implements protocol.TxnVerifier: with the transactional id's
// coordinator here, or on its gateway with AddOffsetsToTxn.
func (m *Forwarder) AddGroup(ctx context.Context, id string, producerID int64, epoch int16, group string) *kerr.Error {
	owner, _, ok := m.Members.Owner(membership.TxnKey(id))
	if !ok {
		return kerr.CoordinatorLoadInProgress // retriable: no coordinator known yet
	}
	if owner.NodeID == m.Members.Self().NodeID {
		return m.Txns.AddGroup(ctx, id, producerID, epoch, group)
	}
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, producerID, epoch, group
	resp, err := m.Peers.Request(ctx, owner.Addr(), req)
	if err != nil {
		return kerr.CoordinatorLoadInProgress
	}
	if code := resp.(*kmsg.AddOffsetsToTxnResponse).ErrorCode; code != 0 {
		return kerr.ErrorForCode(code).(*kerr.Error)
	}
	return nil
}
