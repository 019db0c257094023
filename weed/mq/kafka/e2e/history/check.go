package history

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// The anomaly classes Check reports, Jepsen's names.
var Classes = []string{
	"lost-write",            // acknowledged (and committed), absent from the final read
	"unseen",                // in the final read, never read by a group or an assigned consumer
	"duplicate",             // an idempotent or transactional value at two offsets
	"inconsistent-offsets",  // two values at one offset
	"nonmonotonic-send",     // one producer's values to a partition stored out of their send order
	"poll-skip",             // a consumer's next read jumps over visible records
	"nonmonotonic-poll",     // a consumer's next read goes back
	"int-poll-skip",         // the same, inside one poll
	"int-nonmonotonic-poll", // the same, inside one poll
	"G1a",                   // an aborted transaction's record read with read_committed
	"G0",                    // a cycle of transactions in the partitions' orders that real time rules out
}

// Report is what Check found.
type Report struct {
	Counts   map[string]int      // by class
	Examples map[string][]string // by class, the first few
	// Allowed are counts of what is not an anomaly but worth knowing: a
	// plain producer's value stored twice, sends and transactions whose
	// outcome is unknown.
	Allowed map[string]int
	Stats   map[string]int
}

// OK is true when no class was found.
func (r *Report) OK() bool {
	for _, n := range r.Counts {
		if n > 0 {
			return false
		}
	}
	return true
}

func (r *Report) String() string {
	var b strings.Builder
	for _, c := range Classes {
		fmt.Fprintf(&b, "%s: %d", c, r.Counts[c])
		if ex := r.Examples[c]; len(ex) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(ex, "; "))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "stats: %v; allowed: %v", sortedMap(r.Stats), sortedMap(r.Allowed))
	return b.String()
}

func sortedMap(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}

func (r *Report) found(class, format string, args ...any) {
	r.Counts[class]++
	if len(r.Examples[class]) < 5 {
		r.Examples[class] = append(r.Examples[class], fmt.Sprintf(format, args...))
	}
}

type sent struct {
	proc, txn string
	seq       int // its place among its producer's sends
	acked     bool
	partition int32
	offset    int64
}

type loc struct {
	partition int32
	offset    int64
}

// Check checks the history; it needs the final read (Final).
func (h *History) Check() *Report {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := &Report{Counts: map[string]int{}, Examples: map[string][]string{}, Allowed: map[string]int{}, Stats: map[string]int{}}
	for _, c := range Classes {
		r.Counts[c] = 0
	}

	sends := map[string]*sent{}
	outcome := map[string]string{} // proc/txn → outcome
	seqs := map[string]int{}
	began, ended := map[string]time.Duration{}, map[string]time.Duration{} // proc/txn
	var final []Rec
	for _, op := range h.ops {
		switch op.Type {
		case OpSend:
			sends[op.Value] = &sent{proc: op.Process, txn: op.Txn, seq: seqs[op.Process]}
			if t := op.Process + "/" + op.Txn; op.Txn != "" {
				if _, ok := began[t]; !ok {
					began[t] = op.At
				}
			}
			seqs[op.Process]++
			r.Stats["sent"]++
		case OpAck:
			if s := sends[op.Value]; s != nil {
				s.acked, s.partition, s.offset = true, op.Partition, op.Offset
				r.Stats["acknowledged"]++
			}
		case OpNack:
			r.Allowed["send failed"]++
		case OpTxn:
			outcome[op.Process+"/"+op.Txn] = op.Outcome
			ended[op.Process+"/"+op.Txn] = op.At
			r.Stats["txn "+op.Outcome]++
		case OpPoll:
			r.Stats["polled"] += len(op.Records)
		case OpFinal:
			final = append(final, op.Records...)
		}
	}
	txnOf := func(s *sent) string { return outcome[s.proc+"/"+s.txn] }
	// committed: a value a reader must find.
	committed := func(s *sent) bool {
		if !s.acked {
			return false
		}
		return s.txn == "" || txnOf(s) == Committed
	}
	r.Stats["final"] = len(final)

	// Where each value is in the final read, and what each offset holds
	// by every account.
	at := map[string][]loc{}
	visible := map[int32][]int64{}
	values := map[loc]map[string]bool{}
	note := func(l loc, v string) {
		if values[l] == nil {
			values[l] = map[string]bool{}
		}
		values[l][v] = true
	}
	for _, rec := range final {
		l := loc{rec.Partition, rec.Offset}
		at[rec.Value] = append(at[rec.Value], l)
		visible[rec.Partition] = append(visible[rec.Partition], rec.Offset)
		note(l, rec.Value)
	}
	for p := range visible {
		slices.Sort(visible[p])
	}
	for v, s := range sends {
		if s.acked {
			note(loc{s.partition, s.offset}, v)
		}
	}
	for _, op := range h.ops {
		if op.Type == OpPoll {
			for _, rec := range op.Records {
				note(loc{rec.Partition, rec.Offset}, rec.Value)
			}
		}
	}

	// inconsistent-offsets
	locs := make([]loc, 0, len(values))
	for l, vs := range values {
		if len(vs) > 1 {
			locs = append(locs, l)
		}
	}
	slices.SortFunc(locs, func(a, b loc) int {
		if a.partition != b.partition {
			return int(a.partition - b.partition)
		}
		return int(a.offset - b.offset)
	})
	for _, l := range locs {
		vs := make([]string, 0, len(values[l]))
		for v := range values[l] {
			vs = append(vs, v)
		}
		sort.Strings(vs)
		r.found("inconsistent-offsets", "partition %d offset %d holds %s", l.partition, l.offset, strings.Join(vs, ", "))
	}

	// lost-write, duplicate, G1a
	vals := make([]string, 0, len(sends))
	for v := range sends {
		vals = append(vals, v)
	}
	sort.Strings(vals)
	for _, v := range vals {
		s := sends[v]
		where := at[v]
		switch {
		case committed(s) && len(where) == 0:
			r.found("lost-write", "%s acknowledged at partition %d offset %d, not in the final read", v, s.partition, s.offset)
		case s.txn != "" && txnOf(s) == Aborted && len(where) > 0:
			r.found("G1a", "%s of aborted transaction %s/%s in the final read at partition %d offset %d", v, s.proc, s.txn, where[0].partition, where[0].offset)
		}
		if s.txn != "" && txnOf(s) == Unknown || s.txn != "" && txnOf(s) == "" {
			r.Allowed["in a transaction of unknown outcome"]++
		}
		if len(where) > 1 {
			if h.producers[s.proc] == Plain {
				r.Allowed["plain producer's value stored twice"]++
			} else {
				r.found("duplicate", "%s at %v", v, where)
			}
		}
	}
	for _, op := range h.ops {
		if op.Type != OpPoll {
			continue
		}
		for _, rec := range op.Records {
			if s := sends[rec.Value]; s != nil && s.txn != "" && txnOf(s) == Aborted {
				r.found("G1a", "%s read %s of aborted transaction %s/%s at partition %d offset %d", op.Process, rec.Value, s.proc, s.txn, rec.Partition, rec.Offset)
			}
		}
	}

	// nonmonotonic-send: an idempotent or transactional producer's acked
	// values to a partition, in send order, have growing offsets.
	type key struct {
		proc      string
		partition int32
	}
	bySend := map[key][]*sent{}
	for _, v := range vals {
		s := sends[v]
		if s.acked && h.producers[s.proc] != Plain && (s.txn == "" || txnOf(s) == Committed) {
			k := key{s.proc, s.partition}
			bySend[k] = append(bySend[k], s)
		}
	}
	for k, ss := range bySend {
		slices.SortFunc(ss, func(a, b *sent) int { return a.seq - b.seq })
		for i := 1; i < len(ss); i++ {
			if ss[i].offset <= ss[i-1].offset {
				r.found("nonmonotonic-send", "%s's send %d to partition %d at offset %d, its send %d at %d", k.proc, ss[i].seq, k.partition, ss[i].offset, ss[i-1].seq, ss[i-1].offset)
			}
		}
	}

	// Polls: each consumer's reads of a partition, from its assignment on,
	// go forward without jumping over a visible record.
	between := func(p int32, lo, hi int64) int { // visible offsets in (lo, hi)
		vs := visible[p]
		i, _ := slices.BinarySearch(vs, lo+1)
		j, _ := slices.BinarySearch(vs, hi)
		return j - i
	}
	last := map[key]int64{}
	readBy := map[string]map[string]bool{}
	for _, op := range h.ops {
		switch op.Type {
		case OpAssign, OpRevoke:
			for _, p := range op.Parts {
				delete(last, key{op.Process, p})
			}
		case OpPoll:
			rd := reader(op.Process, h.consumers)
			if readBy[rd] == nil {
				readBy[rd] = map[string]bool{}
			}
			inPoll := map[int32]bool{}
			for _, rec := range op.Records {
				readBy[rd][rec.Value] = true
				k := key{op.Process, rec.Partition}
				prev, ok := last[k]
				last[k] = rec.Offset
				if !ok {
					inPoll[rec.Partition] = true
					continue
				}
				prefix := ""
				if inPoll[rec.Partition] {
					prefix = "int-"
				}
				inPoll[rec.Partition] = true
				if rec.Offset <= prev {
					r.found(prefix+"nonmonotonic-poll", "%s read partition %d offset %d after %d (at %v)", op.Process, rec.Partition, rec.Offset, prev, op.At)
				} else if n := between(rec.Partition, prev, rec.Offset); n > 0 {
					r.found(prefix+"poll-skip", "%s read partition %d offset %d after %d, over %d visible records (at %v)", op.Process, rec.Partition, rec.Offset, prev, n, op.At)
				}
			}
		}
	}

	// unseen: every reader (a group's members together, or an assigned
	// consumer) read every record of the final read.
	readers := make([]string, 0, len(readBy))
	for proc := range h.consumers {
		rd := reader(proc, h.consumers)
		if !slices.Contains(readers, rd) {
			readers = append(readers, rd)
		}
	}
	sort.Strings(readers)
	for _, rd := range readers {
		n, first := 0, ""
		for _, rec := range final {
			if !readBy[rd][rec.Value] {
				if n == 0 {
					first = fmt.Sprintf("%s, e.g. %s at partition %d offset %d", rd, rec.Value, rec.Partition, rec.Offset)
				}
				n++
			}
		}
		if n > 0 {
			r.Counts["unseen"] += n
			if len(r.Examples["unseen"]) < 5 {
				r.Examples["unseen"] = append(r.Examples["unseen"], fmt.Sprintf("%d records never read by %s", n, first))
			}
		}
	}

	// G0: the order of committed transactions' records in each partition
	// (consecutive ones are enough) has no cycle.
	edges := map[string]map[string]bool{}
	prev := map[int32]string{}
	for _, rec := range final {
		s := sends[rec.Value]
		if s == nil || s.txn == "" {
			continue
		}
		t := s.proc + "/" + s.txn
		if p := prev[rec.Partition]; p != "" && p != t {
			if edges[p] == nil {
				edges[p] = map[string]bool{}
			}
			edges[p][t] = true
		}
		prev[rec.Partition] = t
	}
	// Kafka's transactions make their records visible all or none, but do
	// not order concurrent ones: two transactions open at once may each
	// come first in a different partition. A cycle is an anomaly only
	// where one of its orders goes against real time: a transaction ended
	// before another began, yet one of its records comes after one of the
	// other's.
	for _, c := range cycles(edges) {
		against := ""
		for _, ti := range c {
			for tj := range edges[ti] {
				if e, ok := ended[tj]; ok && slices.Contains(c, tj) && e < began[ti] {
					against = fmt.Sprintf("%s ended before %s began, yet comes after it in a partition", tj, ti)
				}
			}
		}
		if against == "" {
			r.Allowed["G0 of concurrent transactions"]++
			continue
		}
		r.found("G0", "transactions %s in a cycle: %s", strings.Join(c, ", "), against)
	}
	return r
}

// cycles returns the strongly connected components of more than one node
// (Tarjan's algorithm), each sorted.
func cycles(edges map[string]map[string]bool) [][]string {
	index, low := map[string]int{}, map[string]int{}
	on := map[string]bool{}
	var stack []string
	var out [][]string
	n := 0
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = n, n
		n++
		stack = append(stack, v)
		on[v] = true
		next := make([]string, 0, len(edges[v]))
		for w := range edges[v] {
			next = append(next, w)
		}
		sort.Strings(next)
		for _, w := range next {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if on[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var comp []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				on[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			if len(comp) > 1 {
				sort.Strings(comp)
				out = append(out, comp)
			}
		}
	}
	nodes := make([]string, 0, len(edges))
	for v := range edges {
		nodes = append(nodes, v)
	}
	sort.Strings(nodes)
	for _, v := range nodes {
		if _, seen := index[v]; !seen {
			visit(v)
		}
	}
	return out
}
