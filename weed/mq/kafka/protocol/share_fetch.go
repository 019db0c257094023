package protocol

// ShareFetch, versions 1-2 (KIP-932; v0, Kafka 4.0's early access, is not
// served, as Kafka 4.2 does not): a share group member's fetch, in a share
// session (share_session.go), acquiring records for the member with a
// lock of the group's share.record.lock.duration.ms and carrying
// acknowledgements of earlier ones, applied (and saved) before the fetch.
// As Kafka: MaxRecords is the most records acquired (v2's record_limit
// mode the same), in ranges of at most BatchSize; MaxRecords or MaxBytes 0
// acquire nothing (acknowledgement-only fetches); a renewal (v2,
// IsRenewAck) only renews; an acknowledged partition is always in the
// answer; Records is never null. A fetch with nothing to acquire waits up
// to MaxWaitMillis for records produced, released or expired. Partitions
// this gateway does not lead get NOT_LEADER_OR_FOLLOWER with the leader.
// Needs Read on the group and on each topic.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/clock"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/share"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

func init() { register(kmsg.ShareFetch, 1, 2, (*Handler).handleShareFetch) }

// shareLookupTimeout bounds what a share session's end does.
const shareLookupTimeout = 10 * time.Second

// checkShareRequest checks what ShareFetch and ShareAcknowledge check
// first: share groups are served, Read on the group, a member id as Kafka
// takes them. It returns the group.
func (h *Handler) checkShareRequest(r *Request, groupID, memberID *string) (string, *kerr.Error, string) {
	group := ""
	if groupID != nil {
		group = *groupID
	}
	switch {
	case h.shares == nil:
		return group, kerr.UnsupportedVersion, ""
	case !h.allowedGroup(r, kmsg.ACLOperationRead, group):
		return group, kerr.GroupAuthorizationFailed, ""
	case memberID == nil || *memberID == "" || len(*memberID) > 36:
		return group, kerr.InvalidRequest, "Invalid member id in the request."
	}
	return group, nil, ""
}

func (h *Handler) handleShareFetch(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.ShareFetchRequest)
	fail := func(e *kerr.Error, msg string) Reply {
		resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
		resp.ErrorCode = e.Code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return now(resp)
	}
	group, e, msg := h.checkShareRequest(r, req.GroupID, req.MemberID)
	switch {
	case e != nil:
		return fail(e, msg)
	case r.Version >= 2 && req.IsRenewAck && (req.MaxBytes != 0 || req.MinBytes != 0 || req.MaxRecords != 0 || req.MaxWaitMillis != 0):
		return fail(kerr.InvalidRequest, "MaxBytes, MinBytes, MaxRecords and MaxWaitMs must be set to 0 if isRenewAck is true.")
	case req.ShareAcquireMode != 0 && req.ShareAcquireMode != 1:
		return fail(kerr.InvalidRequest, "ShareAcquireMode is invalid.")
	}
	key := shareSessionKey{group, *req.MemberID}
	acking := false
	var named []sharePart
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			named = append(named, sharePart{topicID: rt.TopicID, partition: rp.Partition})
			acking = acking || len(rp.AcknowledgementBatches) > 0
		}
	}
	var sess *shareSession
	var fetchParts []sharePart // what this request fetches
	switch req.ShareSessionEpoch {
	case 0:
		if acking {
			return fail(kerr.InvalidRequest, "Acknowledge data present on initial share fetch request.")
		}
		sess, e = h.shareSessions.open(ctx, key, named) // the session copies named
		fetchParts = named
	case -1:
		sess, e = h.shareSessions.closing(key)
	default:
		sess, e = h.shareSessions.step(key, req.ShareSessionEpoch, func(s *shareSession) {
			s.add(named)
			gone := map[sharePart]bool{}
			for _, ft := range req.ForgottenTopicsData {
				for _, p := range ft.Partitions {
					gone[sharePart{ft.TopicID, p}] = true
				}
			}
			s.forget(gone)
			fetchParts = append([]sharePart(nil), s.parts...)
		})
	}
	if e != nil {
		if e != kerr.ShareSessionLimitReached {
			return fail(e, "")
		}
		// The answer waits out the fetch's wait, as Kafka's does, on
		// the connection's writer: the reader goes on taking requests.
		answer := fail(e, "")
		return func() (kmsg.Response, error) {
			waitStart := time.Now()
			t := time.NewTimer(min(time.Duration(req.MaxWaitMillis)*time.Millisecond, MaxFetchWait))
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
			}
			r.waitedSince(waitStart)
			return answer()
		}
	}
	metrics.ShareSessions.Set(float64(h.shareSessions.count()))
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
		settings, err := h.shares.Configs().Settings(ctx, group, false)
		if err != nil {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp, nil
		}
		resp.AcquisitionLockTimeoutMillis = int32(settings.LockDuration.Milliseconds())
		answers := newShareAnswers(h, r)
		// The acknowledgements first.
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				if len(rp.AcknowledgementBatches) == 0 {
					continue
				}
				acks := make([]share.Ack, len(rp.AcknowledgementBatches))
				for i, b := range rp.AcknowledgementBatches {
					acks[i] = share.Ack{First: b.FirstOffset, Last: b.LastOffset, Types: b.AcknowledgeTypes}
				}
				sp := answers.partition(rt.TopicID, rp.Partition)
				if ae, leader := h.acknowledge(ctx, r, group, key.member, rt.TopicID, rp.Partition, acks, r.Version, req.IsRenewAck); ae != nil {
					sp.AcknowledgeErrorCode = ae.Code
					answers.hint(sp, ae, leader)
				}
			}
		}
		fetch := req.ShareSessionEpoch != -1 && !req.IsRenewAck && req.MaxRecords > 0 && req.MaxBytes > 0
		if fetch && len(fetchParts) > 0 {
			h.shareFetch(ctx, r, req, key, sess, fetchParts, answers)
		}
		if req.ShareSessionEpoch == -1 {
			h.shareSessions.end(sess)
			metrics.ShareSessions.Set(float64(h.shareSessions.count()))
		}
		resp.Topics, resp.NodeEndpoints = answers.topics(), answers.nodeEndpoints()
		return resp, nil
	}
}

// shareFetch acquires records of parts for the member, waiting up to the
// request's MaxWaitMillis for some.
func (h *Handler) shareFetch(ctx context.Context, r *Request, req *kmsg.ShareFetchRequest, key shareSessionKey, sess *shareSession, parts []sharePart, answers *shareAnswers) {
	wait := min(time.Duration(req.MaxWaitMillis)*time.Millisecond, MaxFetchWait)
	deadline := time.Now().Add(wait)
	// Partitions take turns at being first, as the session moves on.
	if n := len(parts); n > 1 {
		k := int(sess.epoch) % n
		parts = append(append([]sharePart(nil), parts[k:]...), parts[:k]...)
	}
	budget := min(int(req.MaxBytes), h.cfg.FetchMaxBytes)
	perPart := max(budget/len(parts), 1)
	batch := int(req.BatchSize)
	if req.ShareAcquireMode == 1 {
		batch = 0 // record_limit: one range per partition, at most MaxRecords
	}
	var b record.Builder
	for {
		left := int(req.MaxRecords)
		var watch []<-chan struct{}
		acquired := false
		for _, sp := range parts {
			if left <= 0 {
				break
			}
			info, te := h.lookupTopic(ctx, r, kmsg.ACLOperationRead, true, "", sp.topicID)
			if te != nil {
				answers.fetchError(sp, te, -1, -1)
				continue
			}
			p, leader, epoch, pe := h.sharePartition(ctx, key.group, info, sp.partition)
			if pe != nil {
				answers.fetchError(sp, pe, leader, epoch)
				continue
			}
			recs, ranges, w, fe := h.acquire(ctx, p, info, sp.partition, key.member, perPart, left, batch, &b)
			if fe != nil {
				answers.fetchError(sp, fe, -1, -1)
				continue
			}
			if w != nil {
				watch = append(watch, w...)
			}
			if len(ranges) == 0 {
				answers.touch(sp)
				continue
			}
			acquired = true
			out := answers.partition(sp.topicID, sp.partition)
			out.Records = append(out.Records, recs...)
			for _, rg := range ranges {
				ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
				ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = rg.First, rg.Last, rg.Count
				out.AcquiredRecords = append(out.AcquiredRecords, ar)
				left -= int(rg.Last - rg.First + 1)
			}
			topicLabel := metrics.Topic(info.Name)
			metrics.BytesOut.WithLabelValues(topicLabel).Add(float64(len(recs)))
		}
		if acquired || time.Until(deadline) <= 0 || len(watch) == 0 || h.draining() {
			break
		}
		waitStart := time.Now()
		woken := waitAny(ctx, append(watch, h.drain), min(time.Until(deadline), ExternalWriteRecheck))
		r.waitedSince(waitStart)
		if !woken && ctx.Err() != nil {
			return
		}
	}
	answers.reportNew(sess, req.ShareSessionEpoch == 0)
}

// sharePartition is the group's share-partition of a topic partition,
// held here if this gateway leads the partition; otherwise
// NOT_LEADER_OR_FOLLOWER with the leader and its epoch.
func (h *Handler) sharePartition(ctx context.Context, group string, info storage.TopicInfo, partition int32) (*share.Partition, int32, int32, *kerr.Error) {
	if partition < 0 || partition >= info.Partitions {
		return nil, -1, -1, kerr.UnknownTopicOrPartition
	}
	owner, term, ok := h.cluster.Owner(membership.PartitionKey(info.Name, partition))
	if !ok {
		return nil, -1, -1, kerr.NotLeaderForPartition
	}
	if owner.NodeID != h.cfg.NodeID {
		return nil, owner.NodeID, int32(term), kerr.NotLeaderForPartition
	}
	key := share.Key{Group: group, Topic: info.Name, Partition: partition}
	p, err := h.shares.Partition(ctx, key, info.ID, term, func(ctx context.Context, reset share.Reset) (int64, error) {
		return h.shareStart(ctx, info.Name, partition, reset)
	})
	if err != nil {
		var ke *kerr.Error
		if errors.As(err, &ke) {
			return nil, -1, -1, ke
		}
		return nil, -1, -1, kerr.CoordinatorNotAvailable
	}
	return p, -1, -1, nil
}

// shareStart is where a new share-partition starts
// (share.auto.offset.reset): the log's end (latest), its start
// (earliest), or its first record of a time ago (by_duration).
func (h *Handler) shareStart(ctx context.Context, topic string, partition int32, reset share.Reset) (int64, error) {
	offs, err := h.backend.Offsets(ctx, topic, partition)
	if err != nil {
		return 0, err
	}
	switch {
	case reset.Earliest:
		return offs.LogStart, nil
	case reset.Before > 0:
		o, _, err := h.backend.OffsetForTime(ctx, topic, partition, clock.Now().Add(-reset.Before).UnixMilli())
		if err != nil {
			return 0, err
		}
		if o < 0 {
			return 0, kerr.OffsetNotAvailable
		}
		return o, nil
	}
	return offs.HighWatermark, nil
}

// acquire reads a partition from its share-partition's next offset and
// acquires up to limit records for member; it returns their batches, the
// ranges acquired, and, when none were, what signals that some may be.
func (h *Handler) acquire(ctx context.Context, p *share.Partition, info storage.TopicInfo, partition int32, member string, maxBytes, limit, batch int, b *record.Builder) ([]byte, []share.Range, []<-chan struct{}, *kerr.Error) {
	topic := info.Name
	idle := func(hw int64) []<-chan struct{} {
		return []<-chan struct{}{h.backend.Changed(topic, partition, hw), p.Changed()}
	}
	var from int64
	var res storage.ReadResult
	// One read, as a fetch's; the offsets are asked for only when the
	// share-partition's next offset is outside the log: before its start
	// (the records are gone: the start moves there, and the read is made
	// again) or past its end (a start set ahead of it).
	for moved := false; ; moved = true {
		var ok bool
		if from, ok = p.NextOffset(); !ok {
			return nil, nil, []<-chan struct{}{p.Changed()}, nil // the most records in flight: wait for acknowledgements
		}
		var err error
		res, err = h.backend.Read(ctx, topic, partition, from, maxBytes)
		if err == nil {
			break
		}
		if !errors.Is(err, kerr.OffsetOutOfRange) {
			return nil, nil, nil, kafkaErr(err, kerr.KafkaStorageError)
		}
		offs, err := h.backend.Offsets(ctx, topic, partition)
		if err != nil {
			return nil, nil, nil, kafkaErr(err, kerr.KafkaStorageError)
		}
		if from >= offs.LogStart || moved {
			return nil, nil, idle(offs.HighWatermark), nil
		}
		p.MoveStart(offs.LogStart)
	}
	recs := res.Records
	var aborted func(int64) bool
	if p.Settings().ReadCommitted && len(recs) > 0 {
		txns, err := h.backend.Transactions(ctx, topic, partition, recs[0].Offset, recs[len(recs)-1].Offset)
		if err != nil {
			return nil, nil, nil, kafkaErr(err, kerr.KafkaStorageError)
		}
		n := len(recs)
		if lso := txns.FirstUnstable; lso >= 0 {
			for n > 0 && recs[n-1].Offset >= lso {
				n--
			}
		}
		recs = recs[:n]
		aborted = abortedIn(recs, txns.Aborted)
	}
	if len(recs) == 0 {
		return nil, nil, idle(res.HighWatermark), nil
	}
	ranges := p.Acquire(member, from, recs[len(recs)-1].Offset+1, limit, batch, aborted)
	if len(ranges) == 0 {
		return nil, nil, idle(res.HighWatermark), nil
	}
	// The batches of the records acquired (offsets without a record are
	// acknowledged by the member as gaps).
	codec := h.batches.codecFor(info)
	var out []byte
	i := 0
	for _, rg := range ranges {
		for i < len(recs) && recs[i].Offset < rg.First {
			i++
		}
		j := i
		for j < len(recs) && recs[j].Offset <= rg.Last {
			j++
		}
		out = h.appendBatches(b, out, info.ID, partition, recs[i:j], codec)
		i = j
	}
	metrics.MessagesOut.WithLabelValues(metrics.Topic(topic)).Add(float64(countRanges(ranges)))
	return out, ranges, nil, nil
}

func countRanges(rs []share.Range) int64 {
	var n int64
	for _, r := range rs {
		n += r.Last - r.First + 1
	}
	return n
}

// abortedIn says which of recs belong to aborted transactions.
func abortedIn(recs []storage.StoredRecord, aborted []storage.AbortedTxn) func(int64) bool {
	if len(aborted) == 0 {
		return nil
	}
	set := map[int64]bool{}
	for _, r := range recs {
		if r.Txn == nil || r.Txn.Control != record.NotControl {
			continue
		}
		for _, a := range aborted {
			if a.ProducerID == r.Txn.ProducerID && r.Offset >= a.FirstOffset && r.Offset < a.LastOffset {
				set[r.Offset] = true
			}
		}
	}
	return func(o int64) bool { return set[o] }
}

// acknowledge applies a member's acknowledgements of a partition; it
// returns the partition's error, with the leader for
// NOT_LEADER_OR_FOLLOWER.
func (h *Handler) acknowledge(ctx context.Context, r *Request, group, member string, topicID [16]byte, partition int32, acks []share.Ack, version int16, renew bool) (*kerr.Error, [2]int32) {
	none := [2]int32{-1, -1}
	if !share.CheckAcks(acks, version, renew) {
		return kerr.InvalidRequest, none
	}
	info, te := h.lookupTopic(ctx, r, kmsg.ACLOperationRead, true, "", topicID)
	if te != nil {
		return te, none
	}
	p, leader, epoch, pe := h.sharePartition(ctx, group, info, partition)
	if pe != nil {
		return pe, [2]int32{leader, epoch}
	}
	e := p.Acknowledge(ctx, member, acks)
	metrics.ShareAcks.WithLabelValues(outcomeOf(e)).Inc()
	return e, none
}

func outcomeOf(e *kerr.Error) string {
	if e == nil {
		return "ok"
	}
	return e.Message
}

// shareAnswers builds a ShareFetch's answer: the partitions with records,
// an error or an acknowledgement's outcome, and in an incremental session
// those not named to the member yet.
type shareAnswers struct {
	h       *Handler
	r       *Request
	order   []sharePart
	parts   map[sharePart]*kmsg.ShareFetchResponseTopicPartition
	touched []sharePart
	leaders map[int32]bool
}

func newShareAnswers(h *Handler, r *Request) *shareAnswers {
	return &shareAnswers{h: h, r: r, parts: map[sharePart]*kmsg.ShareFetchResponseTopicPartition{}, leaders: map[int32]bool{}}
}

// partition is a partition's answer, made on first use.
func (a *shareAnswers) partition(id [16]byte, p int32) *kmsg.ShareFetchResponseTopicPartition {
	k := sharePart{id, p}
	if sp := a.parts[k]; sp != nil {
		return sp
	}
	sp := kmsg.NewShareFetchResponseTopicPartition()
	sp.Partition = p
	sp.Records = []byte{} // never null from v1 on
	a.parts[k] = &sp
	a.order = append(a.order, k)
	return &sp
}

// hint names the leader of a partition another gateway leads.
func (a *shareAnswers) hint(sp *kmsg.ShareFetchResponseTopicPartition, e *kerr.Error, leader [2]int32) {
	if e == kerr.NotLeaderForPartition && leader[0] >= 0 {
		sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = leader[0], leader[1]
		a.leaders[leader[0]] = true
	}
}

func (a *shareAnswers) fetchError(sp sharePart, e *kerr.Error, leader, epoch int32) {
	out := a.partition(sp.topicID, sp.partition)
	out.ErrorCode = e.Code
	a.hint(out, e, [2]int32{leader, epoch})
}

// touch notes a partition fetched without records.
func (a *shareAnswers) touch(sp sharePart) {
	a.touched = append(a.touched, sp)
}

// reportNew adds the partitions fetched without records that the member
// has not been told of yet (all of them for a full fetch), and marks what
// the answer names as told.
func (a *shareAnswers) reportNew(sess *shareSession, full bool) {
	a.h.shareSessions.mu.Lock()
	defer a.h.shareSessions.mu.Unlock()
	for _, k := range a.touched {
		if reported, in := sess.reported[k]; full || (in && !reported) {
			a.partition(k.topicID, k.partition)
		}
	}
	for _, k := range a.order {
		if _, in := sess.reported[k]; in {
			sess.reported[k] = true
		}
	}
}

func (a *shareAnswers) topics() []kmsg.ShareFetchResponseTopic {
	var out []kmsg.ShareFetchResponseTopic
	at := map[[16]byte]int{}
	for _, k := range a.order {
		i, ok := at[k.topicID]
		if !ok {
			t := kmsg.NewShareFetchResponseTopic()
			t.TopicID = k.topicID
			i = len(out)
			at[k.topicID] = i
			out = append(out, t)
		}
		out[i].Partitions = append(out[i].Partitions, *a.parts[k])
	}
	return out
}

// nodeEndpoints are the endpoints of the leaders named in hints.
func (a *shareAnswers) nodeEndpoints() []kmsg.ShareFetchResponseNodeEndpoint {
	var out []kmsg.ShareFetchResponseNodeEndpoint
	for _, m := range a.h.brokers() {
		if a.leaders[m.NodeID] {
			ne := kmsg.NewShareFetchResponseNodeEndpoint()
			ne.NodeID = m.NodeID
			ne.Host, ne.Port = m.Endpoint(a.r.Listener)
			out = append(out, ne)
		}
	}
	return out
}
