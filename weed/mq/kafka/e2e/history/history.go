// Package history records what a queue workload did against Kafka (every
// send, acknowledgement, transaction outcome, poll and assignment, with its
// time) and checks it for the anomalies Jepsen's queue checker finds in
// Kafka-compatible systems: lost, duplicated and unseen writes, two values
// at one offset, consumers skipping or going back over offsets, sends
// stored out of order, aborted records read, and write cycles between
// transactions.
package history

import (
	"encoding/json"
	"os"
	"sync"
	"time"
)

// Producer kinds: what a producer promises decides what counts as an
// anomaly (a plain producer's retry may store a value twice).
const (
	Plain         = "plain"
	Idempotent    = "idempotent"
	Transactional = "transactional"
)

// Transaction outcomes.
const (
	Committed = "commit"
	Aborted   = "abort"
	Unknown   = "unknown" // EndTxn failed: either may have happened
)

// Op types.
const (
	OpSend   = "send"
	OpAck    = "ack"
	OpNack   = "nack" // the send failed: it may or may not be stored
	OpTxn    = "txn"  // a transaction's end
	OpPoll   = "poll"
	OpAssign = "assign"
	OpRevoke = "revoke" // revoked or lost
	OpFinal  = "final"  // the read of everything after the faults healed
	OpFault  = "fault"
	// OpRead is what a transaction read (consume-transform-produce): its
	// reads count if it commits.
	OpRead = "read"
	// OpFetchError is an error a consumer's fetch of a partition returned
	// (the client's view: franz-go's data loss is an end behind what it had
	// read).
	OpFetchError = "fetch-error"
)

// Rec is one record read: where it is and its value. Topic is empty for
// the workload's topic, named for another (a transformer's output).
type Rec struct {
	Partition int32  `json:"p"`
	Offset    int64  `json:"o"`
	Value     string `json:"v"`
	Topic     string `json:"t,omitempty"`
}

// Op is one event of the history.
type Op struct {
	At        time.Duration `json:"at"`
	Process   string        `json:"proc"`
	Type      string        `json:"type"`
	Value     string        `json:"v,omitempty"`
	Txn       string        `json:"txn,omitempty"`
	Topic     string        `json:"t,omitempty"`
	Partition int32         `json:"p,omitempty"`
	Offset    int64         `json:"o,omitempty"`
	Outcome   string        `json:"outcome,omitempty"`
	Records   []Rec         `json:"recs,omitempty"`
	Parts     []int32       `json:"parts,omitempty"`
	Note      string        `json:"note,omitempty"`
	// Kind is a fetch error's kind (FetchError).
	Kind string `json:"kind,omitempty"`
}

// History is safe for concurrent use by the workload's clients.
type History struct {
	mu        sync.Mutex
	start     time.Time
	ops       []Op
	producers map[string]string // process → kind
	consumers map[string]string // process → its group ("" when assigned)
}

// New starts an empty history; times are since now.
func New() *History {
	return &History{start: time.Now(), producers: map[string]string{}, consumers: map[string]string{}}
}

// Producer declares a producing process and its kind.
func (h *History) Producer(proc, kind string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.producers[proc] = kind
}

// Consumer declares a consuming process: a member of group, or a consumer
// of assigned partitions when group is empty (its own reader then).
func (h *History) Consumer(proc, group string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.consumers[proc] = group
}

func (h *History) add(op Op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	op.At = time.Since(h.start)
	h.ops = append(h.ops, op)
}

// Send records that proc sends value, in transaction txn if not empty.
// Values are unique over the history.
func (h *History) Send(proc, value, txn string) {
	h.add(Op{Process: proc, Type: OpSend, Value: value, Txn: txn})
}

// Ack records that value was acknowledged at partition/offset.
func (h *History) Ack(proc, value string, partition int32, offset int64) {
	h.add(Op{Process: proc, Type: OpAck, Value: value, Partition: partition, Offset: offset})
}

// AckIn records that value was acknowledged at partition/offset of topic
// (a topic other than the workload's).
func (h *History) AckIn(proc, value, topic string, partition int32, offset int64) {
	h.add(Op{Process: proc, Type: OpAck, Value: value, Topic: topic, Partition: partition, Offset: offset})
}

// Read records the records transaction txn of proc read, to write what
// it made of them in the same transaction.
func (h *History) Read(proc, txn string, recs []Rec) {
	if len(recs) == 0 {
		return
	}
	h.add(Op{Process: proc, Type: OpRead, Txn: txn, Records: recs})
}

// Nack records that sending value failed with err.
func (h *History) Nack(proc, value string, err error) {
	h.add(Op{Process: proc, Type: OpNack, Value: value, Note: err.Error()})
}

// TxnEnd records a transaction's outcome (Committed, Aborted or Unknown).
func (h *History) TxnEnd(proc, txn, outcome string, err error) {
	op := Op{Process: proc, Type: OpTxn, Txn: txn, Outcome: outcome}
	if err != nil {
		op.Note = err.Error()
	}
	h.add(op)
}

// Poll records the records one poll returned, in the order returned.
func (h *History) Poll(proc string, recs []Rec) {
	if len(recs) == 0 {
		return
	}
	h.add(Op{Process: proc, Type: OpPoll, Records: recs})
}

// FetchError records that proc's fetch of partition failed with err, of
// kind (a Kafka error's name, or the client's own such as "data loss").
func (h *History) FetchError(proc string, partition int32, kind string, err error) {
	h.add(Op{Process: proc, Type: OpFetchError, Partition: partition, Kind: kind, Note: err.Error()})
}

// Assign records partitions given to proc: its reads of them start anew.
func (h *History) Assign(proc string, parts []int32) {
	h.add(Op{Process: proc, Type: OpAssign, Parts: parts})
}

// Revoke records partitions taken from proc (revoked or lost).
func (h *History) Revoke(proc string, parts []int32) {
	h.add(Op{Process: proc, Type: OpRevoke, Parts: parts})
}

// Fault records a fault injected or healed, for the reader of the history.
func (h *History) Fault(what string) {
	h.add(Op{Process: "nemesis", Type: OpFault, Note: what})
}

// Final records the read of every partition from its start, after the
// faults healed, with read_committed.
func (h *History) Final(recs []Rec) {
	h.add(Op{Process: "final", Type: OpFinal, Records: recs})
}

// Unread returns how many values reader rd (a group, "group <name>", or
// an assigned consumer) has yet to read of those it must find: the
// acknowledged values of the workload's topic, outside transactions or in
// committed ones, but those its own members wrote.
func (h *History) Unread(rd string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	outcome := map[string]string{}
	for _, op := range h.ops {
		if op.Type == OpTxn {
			outcome[op.Process+"/"+op.Txn] = op.Outcome
		}
	}
	read := map[string]bool{}
	sent := map[string]string{} // value → proc/txn, "" outside transactions
	for _, op := range h.ops {
		switch {
		case op.Type == OpSend && op.Txn != "":
			sent[op.Value] = op.Process + "/" + op.Txn
		case op.Type == OpPoll || op.Type == OpRead && outcome[op.Process+"/"+op.Txn] == Committed:
			if reader(op.Process, h.consumers) == rd {
				for _, rec := range op.Records {
					read[rec.Value] = true
				}
			}
		}
	}
	n := 0
	for _, op := range h.ops {
		if op.Type != OpAck || op.Topic != "" || read[op.Value] || reader(op.Process, h.consumers) == rd {
			continue
		}
		if t, ok := sent[op.Value]; ok && outcome[t] != Committed {
			continue
		}
		n++
	}
	return n
}

// reader names whose reads must together cover everything: a group, or
// an assigned consumer alone.
func reader(proc string, consumers map[string]string) string {
	if g := consumers[proc]; g != "" {
		return "group " + g
	}
	return proc
}

// MustSee returns, by topic ("" for the workload's) and partition, the
// highest offset acknowledged for a value a reader must find (not in a
// transaction, or in one committed).
func (h *History) MustSee() map[string]map[int32]int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	txnOf := map[string]string{}
	inTxn := map[string]string{}
	for _, op := range h.ops {
		switch op.Type {
		case OpTxn:
			txnOf[op.Process+"/"+op.Txn] = op.Outcome
		case OpSend:
			if op.Txn != "" {
				inTxn[op.Value] = op.Process + "/" + op.Txn
			}
		}
	}
	out := map[string]map[int32]int64{}
	for _, op := range h.ops {
		if op.Type != OpAck {
			continue
		}
		if t, ok := inTxn[op.Value]; ok && txnOf[t] != Committed {
			continue
		}
		if out[op.Topic] == nil {
			out[op.Topic] = map[int32]int64{}
		}
		if o, ok := out[op.Topic][op.Partition]; !ok || op.Offset > o {
			out[op.Topic][op.Partition] = op.Offset
		}
	}
	return out
}

type file struct {
	Producers map[string]string `json:"producers"`
	Consumers map[string]string `json:"consumers"`
	Ops       []Op              `json:"ops"`
}

// WriteFile keeps the history as JSON, for a run that found an anomaly.
func (h *History) WriteFile(path string) error {
	h.mu.Lock()
	data, err := json.Marshal(file{Producers: h.producers, Consumers: h.consumers, Ops: h.ops})
	h.mu.Unlock()
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// ReadFile reads a history WriteFile kept (to check it again, as a
// regression test).
func ReadFile(path string) (*History, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	return &History{producers: f.Producers, consumers: f.Consumers, ops: f.Ops}, nil
}
