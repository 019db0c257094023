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
	"G0",                    // a cycle of transactions in the partitions' orders that goes against real time
	"G1c",                   // the same, through what one transaction read of another's writes
}

// Report is what Check found.
type Report struct {
	Counts   map[string]int      // by class
	Examples map[string][]string // by class, the first few
	// Allowed are counts of what is not an anomaly but worth knowing: a
	// plain producer's value stored twice, sends and transactions whose
	// outcome is unknown, the errors consumers' fetches returned by kind.
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
	topic     string
	partition int32
	offset    int64
}

// loc is a place in a topic's partition (topic "": the workload's).
type loc struct {
	topic     string
	partition int32
	offset    int64
}

type tp struct {
	topic     string
	partition int32
}

func (l loc) String() string {
	if l.topic == "" {
		return fmt.Sprintf("partition %d offset %d", l.partition, l.offset)
	}
	return fmt.Sprintf("%s partition %d offset %d", l.topic, l.partition, l.offset)
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
				s.acked, s.topic, s.partition, s.offset = true, op.Topic, op.Partition, op.Offset
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
		case OpRead:
			if _, ok := began[op.Process+"/"+op.Txn]; !ok {
				began[op.Process+"/"+op.Txn] = op.At
			}
		case OpFinal:
			final = append(final, op.Records...)
		case OpFetchError:
			r.Allowed["fetch error: "+op.Kind]++
		}
	}
	// A transaction whose end was not answered committed if any of its
	// records is in the final read, and aborted if it wrote some and none
	// is (what it read counts, or not, accordingly).
	inFinal := map[string]bool{}
	for _, rec := range final {
		inFinal[rec.Value] = true
	}
	wrote, seen := map[string]bool{}, map[string]bool{}
	for v, s := range sends {
		if s.txn != "" {
			t := s.proc + "/" + s.txn
			wrote[t] = true
			seen[t] = seen[t] || inFinal[v]
		}
	}
	for t, o := range outcome {
		if o != Unknown || !wrote[t] {
			continue
		}
		if seen[t] {
			outcome[t] = Committed
			r.Allowed["unanswered end: committed, by the final read"]++
		} else {
			outcome[t] = Aborted
			r.Allowed["unanswered end: aborted, by the final read"]++
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
	visible := map[tp][]int64{}
	values := map[loc]map[string]bool{}
	note := func(l loc, v string) {
		if values[l] == nil {
			values[l] = map[string]bool{}
		}
		values[l][v] = true
	}
	for _, rec := range final {
		l := loc{rec.Topic, rec.Partition, rec.Offset}
		at[rec.Value] = append(at[rec.Value], l)
		visible[tp{rec.Topic, rec.Partition}] = append(visible[tp{rec.Topic, rec.Partition}], rec.Offset)
		note(l, rec.Value)
	}
	for p := range visible {
		slices.Sort(visible[p])
	}
	for v, s := range sends {
		if s.acked {
			note(loc{s.topic, s.partition, s.offset}, v)
		}
	}
	for _, op := range h.ops {
		if op.Type == OpPoll || op.Type == OpRead {
			for _, rec := range op.Records {
				note(loc{rec.Topic, rec.Partition, rec.Offset}, rec.Value)
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
		if a.topic != b.topic {
			return strings.Compare(a.topic, b.topic)
		}
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
		r.found("inconsistent-offsets", "%v holds %s", l, strings.Join(vs, ", "))
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
			r.found("lost-write", "%s acknowledged at %v, not in the final read", v, loc{s.topic, s.partition, s.offset})
		case s.txn != "" && txnOf(s) == Aborted && len(where) > 0:
			r.found("G1a", "%s of aborted transaction %s/%s in the final read at %v", v, s.proc, s.txn, where[0])
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
	// A record of the workload's topic → the committed transaction that
	// read it, and its value.
	type readRec struct{ txn, value string }
	readOf := map[loc]readRec{}
	for _, op := range h.ops {
		if op.Type != OpPoll && op.Type != OpRead {
			continue
		}
		t := op.Process + "/" + op.Txn
		for _, rec := range op.Records {
			if s := sends[rec.Value]; s != nil && s.txn != "" && txnOf(s) == Aborted {
				r.found("G1a", "%s read %s of aborted transaction %s/%s at %v", op.Process, rec.Value, s.proc, s.txn, loc{rec.Topic, rec.Partition, rec.Offset})
			}
			if op.Type == OpRead && outcome[t] == Committed && rec.Topic == "" {
				// Exactly once: one committed transaction made
				// something of each record (of each offset: a value a
				// plain producer stored twice is two records).
				l := loc{rec.Topic, rec.Partition, rec.Offset}
				if prev, twice := readOf[l]; twice && prev.txn != t {
					r.found("duplicate", "%s at %v read by committed transactions %s and %s", rec.Value, l, prev.txn, t)
				}
				readOf[l] = readRec{t, rec.Value}
			}
		}
	}

	// nonmonotonic-send: an idempotent or transactional producer's acked
	// values to a partition, in send order, have growing offsets.
	type key struct {
		proc string
		tp
	}
	bySend := map[key][]*sent{}
	for _, v := range vals {
		s := sends[v]
		if s.acked && h.producers[s.proc] != Plain && (s.txn == "" || txnOf(s) == Committed) {
			k := key{s.proc, tp{s.topic, s.partition}}
			bySend[k] = append(bySend[k], s)
		}
	}
	for k, ss := range bySend {
		slices.SortFunc(ss, func(a, b *sent) int { return a.seq - b.seq })
		for i := 1; i < len(ss); i++ {
			if ss[i].offset <= ss[i-1].offset {
				r.found("nonmonotonic-send", "%s's send %d to %v, its send %d at offset %d", k.proc, ss[i].seq, loc{k.topic, k.partition, ss[i].offset}, ss[i-1].seq, ss[i-1].offset)
			}
		}
	}

	// Polls: each consumer's reads of a partition, from its assignment on,
	// go forward without jumping over a visible record. (A transaction's
	// reads start again from the group's offsets when it aborts: they are
	// checked for exactly once above instead.)
	between := func(k tp, lo, hi int64) int { // visible offsets in (lo, hi)
		vs := visible[k]
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
				delete(last, key{op.Process, tp{"", p}})
			}
		case OpRead:
			if outcome[op.Process+"/"+op.Txn] != Committed {
				continue
			}
			rd := reader(op.Process, h.consumers)
			if readBy[rd] == nil {
				readBy[rd] = map[string]bool{}
			}
			for _, rec := range op.Records {
				readBy[rd][rec.Value] = true
			}
		case OpPoll:
			rd := reader(op.Process, h.consumers)
			if readBy[rd] == nil {
				readBy[rd] = map[string]bool{}
			}
			inPoll := map[tp]bool{}
			for _, rec := range op.Records {
				readBy[rd][rec.Value] = true
				at := tp{rec.Topic, rec.Partition}
				k := key{op.Process, at}
				prev, ok := last[k]
				last[k] = rec.Offset
				if !ok {
					inPoll[at] = true
					continue
				}
				prefix := ""
				if inPoll[at] {
					prefix = "int-"
				}
				inPoll[at] = true
				if rec.Offset <= prev {
					r.found(prefix+"nonmonotonic-poll", "%s read %v after %d (at %v)", op.Process, loc{rec.Topic, rec.Partition, rec.Offset}, prev, op.At)
				} else if n := between(at, prev, rec.Offset); n > 0 {
					r.found(prefix+"poll-skip", "%s read %v after %d, over %d visible records (at %v)", op.Process, loc{rec.Topic, rec.Partition, rec.Offset}, prev, n, op.At)
				}
			}
		}
	}

	// unseen: every reader (a group's members together, or an assigned
	// consumer) read every record of the workload's topic in the final
	// read, but those its own members wrote.
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
			own := false // what its own members wrote last is not read by it again
			if s := sends[rec.Value]; s != nil {
				own = reader(s.proc, h.consumers) == rd
			}
			if rec.Topic == "" && !own && !readBy[rd][rec.Value] {
				if n == 0 {
					first = fmt.Sprintf("%s, e.g. %s at %v", rd, rec.Value, loc{rec.Topic, rec.Partition, rec.Offset})
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

	// Cycles between committed transactions. ww: the order of their records
	// in each partition (consecutive ones are enough); wr: a transaction
	// that read another's record, after that one committed.
	edges := map[string]map[string]bool{}
	edge := func(from, to string) {
		if edges[from] == nil {
			edges[from] = map[string]bool{}
		}
		edges[from][to] = true
	}
	prev := map[tp]string{}
	for _, rec := range final {
		s := sends[rec.Value]
		if s == nil || s.txn == "" {
			continue
		}
		t := s.proc + "/" + s.txn
		k := tp{rec.Topic, rec.Partition}
		if p := prev[k]; p != "" && p != t {
			edge(p, t)
		}
		prev[k] = t
	}
	wr := map[[2]string]bool{}
	for _, rd := range readOf {
		if s := sends[rd.value]; s != nil && s.txn != "" && txnOf(s) == Committed {
			w := s.proc + "/" + s.txn
			edge(w, rd.txn)
			wr[[2]string{w, rd.txn}] = true
		}
	}
	// Kafka's transactions make their records visible all or none, but do
	// not isolate concurrent ones from each other's writes: two
	// transactions open at once may each come first in a different
	// partition, and a third that read one of them can then close a cycle
	// of writes and reads. A cycle is an anomaly only where one of its
	// orders goes against real time: a transaction ended before another
	// began, yet comes after it in a partition, or was read by it. It is
	// G1c if it runs through a read, G0 if through writes alone.
	for _, c := range cycles(edges) {
		against, read := "", false
		for _, ti := range c {
			for tj := range edges[ti] {
				if !slices.Contains(c, tj) {
					continue
				}
				read = read || wr[[2]string{ti, tj}]
				if e, ok := ended[tj]; ok && e < began[ti] {
					against = fmt.Sprintf("%s ended before %s began, yet comes after it", tj, ti)
				}
			}
		}
		class := "G0"
		if read {
			class = "G1c"
		}
		if against == "" {
			r.Allowed[class+" of concurrent transactions"]++
			continue
		}
		r.found(class, "transactions %s in a cycle: %s", strings.Join(c, ", "), against)
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
