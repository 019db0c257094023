package history

import (
	"errors"
	"path/filepath"
	"testing"
)

// clean is a history with no anomaly: an idempotent producer, a
// transactional one (one commit, one abort), a group of two and an
// assigned consumer that read everything visible.
func clean() *History {
	h := New()
	h.Producer("idem", Idempotent)
	h.Producer("tx", Transactional)
	h.Consumer("c1", "g")
	h.Consumer("c2", "g")
	h.Consumer("a", "")
	h.Send("idem", "i0", "")
	h.Send("idem", "i1", "")
	h.Ack("idem", "i0", 0, 0)
	h.Ack("idem", "i1", 0, 1)
	h.Send("tx", "t0", "1")
	h.Ack("tx", "t0", 1, 0)
	h.TxnEnd("tx", "1", Committed, nil)
	h.Send("tx", "t1", "2")
	h.Ack("tx", "t1", 1, 2) // offset 1 is the commit marker
	h.TxnEnd("tx", "2", Aborted, nil)
	h.Assign("c1", []int32{0})
	h.Assign("c2", []int32{1})
	h.Poll("c1", []Rec{{0, 0, "i0", ""}, {0, 1, "i1", ""}})
	h.Poll("c2", []Rec{{1, 0, "t0", ""}})
	h.Poll("a", []Rec{{0, 0, "i0", ""}, {1, 0, "t0", ""}})
	h.Poll("a", []Rec{{0, 1, "i1", ""}})
	h.Final([]Rec{{0, 0, "i0", ""}, {0, 1, "i1", ""}, {1, 0, "t0", ""}})
	return h
}

func TestCheckClean(t *testing.T) {
	r := clean().Check()
	if !r.OK() {
		t.Fatalf("anomalies in a clean history:\n%s", r)
	}
	if r.Stats["acknowledged"] != 4 || r.Stats["final"] != 3 || r.Stats["txn abort"] != 1 {
		t.Fatalf("stats %v", r.Stats)
	}
}

// Each class is found in a history that has it, and only it.
func TestCheckFindsEachClass(t *testing.T) {
	cases := map[string]func(h *History) []Rec{
		"lost-write": func(h *History) []Rec { return []Rec{{0, 0, "i0", ""}, {1, 0, "t0", ""}} },
		"duplicate": func(h *History) []Rec {
			h.Poll("a", []Rec{{0, 2, "i1", ""}})
			h.Poll("c1", []Rec{{0, 2, "i1", ""}})
			return []Rec{{0, 0, "i0", ""}, {0, 1, "i1", ""}, {0, 2, "i1", ""}, {1, 0, "t0", ""}}
		},
		"inconsistent-offsets": func(h *History) []Rec {
			h.Poll("c2", []Rec{{1, 3, "x", ""}})
			h.Poll("a", []Rec{{1, 3, "y", ""}})
			return nil
		},
		"nonmonotonic-send": func(h *History) []Rec {
			h.Send("idem", "i2", "")
			h.Send("idem", "i3", "")
			h.Ack("idem", "i3", 0, 2)
			h.Ack("idem", "i2", 0, 3)
			h.Poll("a", []Rec{{0, 2, "i3", ""}, {0, 3, "i2", ""}})
			h.Poll("c1", []Rec{{0, 2, "i3", ""}, {0, 3, "i2", ""}})
			return []Rec{{0, 0, "i0", ""}, {0, 1, "i1", ""}, {0, 2, "i3", ""}, {0, 3, "i2", ""}, {1, 0, "t0", ""}}
		},
		"poll-skip": func(h *History) []Rec {
			h.Send("idem", "i2", "")
			h.Ack("idem", "i2", 0, 2)
			h.Send("idem", "i3", "")
			h.Ack("idem", "i3", 0, 3)
			h.Poll("c1", []Rec{{0, 3, "i3", ""}}) // over offset 2
			h.Revoke("c1", []int32{0})
			h.Assign("c2", []int32{0})
			h.Poll("c2", []Rec{{0, 2, "i2", ""}, {0, 3, "i3", ""}})
			h.Poll("a", []Rec{{0, 2, "i2", ""}, {0, 3, "i3", ""}})
			return []Rec{{0, 0, "i0", ""}, {0, 1, "i1", ""}, {0, 2, "i2", ""}, {0, 3, "i3", ""}, {1, 0, "t0", ""}}
		},
		"int-nonmonotonic-poll": func(h *History) []Rec {
			h.Assign("a", []int32{1})
			h.Poll("a", []Rec{{1, 0, "t0", ""}, {1, 0, "t0", ""}})
			return nil
		},
		"nonmonotonic-poll": func(h *History) []Rec {
			h.Poll("a", []Rec{{0, 0, "i0", ""}})
			return nil
		},
		"int-poll-skip": func(h *History) []Rec {
			h.Send("idem", "i2", "")
			h.Ack("idem", "i2", 0, 2)
			h.Send("idem", "i3", "")
			h.Ack("idem", "i3", 0, 3)
			h.Assign("c1", []int32{0})
			h.Poll("c1", []Rec{{0, 1, "i1", ""}, {0, 3, "i3", ""}})
			h.Poll("c2", []Rec{{0, 2, "i2", ""}})
			h.Poll("a", []Rec{{0, 2, "i2", ""}, {0, 3, "i3", ""}})
			return []Rec{{0, 0, "i0", ""}, {0, 1, "i1", ""}, {0, 2, "i2", ""}, {0, 3, "i3", ""}, {1, 0, "t0", ""}}
		},
		"unseen": func(h *History) []Rec {
			h.Send("idem", "i2", "")
			h.Ack("idem", "i2", 0, 2)
			h.Poll("a", []Rec{{0, 2, "i2", ""}})
			return []Rec{{0, 0, "i0", ""}, {0, 1, "i1", ""}, {0, 2, "i2", ""}, {1, 0, "t0", ""}}
		},
		"G1a": func(h *History) []Rec {
			h.Poll("a", []Rec{{1, 2, "t1", ""}})
			h.Poll("c2", []Rec{{1, 2, "t1", ""}})
			return nil
		},
		"G1c": func(h *History) []Rec {
			// x reads z0 of tz's committed transaction, and its own
			// write comes before tz's other write in topic out.
			h.Producer("tz", Transactional)
			h.Producer("x", Transactional)
			h.Consumer("x", "ctp")
			h.Send("tz", "z0", "1")
			h.Send("tz", "z1", "1")
			h.Ack("tz", "z0", 2, 0)
			h.AckIn("tz", "z1", "out", 0, 1)
			h.TxnEnd("tz", "1", Committed, nil)
			h.Read("x", "1", []Rec{{0, 0, "i0", ""}, {0, 1, "i1", ""}, {1, 0, "t0", ""}, {2, 0, "z0", ""}})
			h.Send("x", "o0", "1")
			h.AckIn("x", "o0", "out", 0, 0)
			h.TxnEnd("x", "1", Committed, nil)
			h.Assign("c1", []int32{2})
			h.Poll("c1", []Rec{{2, 0, "z0", ""}})
			h.Poll("a", []Rec{{2, 0, "z0", ""}})
			return []Rec{{0, 0, "i0", ""}, {0, 1, "i1", ""}, {1, 0, "t0", ""}, {2, 0, "z0", ""}, {0, 0, "o0", "out"}, {0, 1, "z1", "out"}}
		},
		"G0": func(h *History) []Rec {
			return g0(h, false)
		},
	}
	for class, add := range cases {
		t.Run(class, func(t *testing.T) {
			h := clean()
			h.ops = h.ops[:len(h.ops)-1] // the final read is the case's
			final := add(h)
			if final == nil {
				final = []Rec{{0, 0, "i0", ""}, {0, 1, "i1", ""}, {1, 0, "t0", ""}}
			}
			h.Final(final)
			r := h.Check()
			for _, c := range Classes {
				if want := c == class; (r.Counts[c] > 0) != want {
					t.Errorf("%s: %d found, want found %v:\n%s", c, r.Counts[c], want, r)
				}
			}
		})
	}
}

// A plain producer's value stored twice and a send of unknown outcome are
// allowed, not anomalies; a history kept as a file checks the same.
func TestCheckAllowedAndKept(t *testing.T) {
	h := clean()
	h.ops = h.ops[:len(h.ops)-1]
	h.Producer("plain", Plain)
	h.Send("plain", "p0", "")
	h.Ack("plain", "p0", 0, 3)
	h.Send("plain", "p1", "")
	h.Nack("plain", "p1", errors.New("timed out"))
	h.FetchError("c1", 0, "data loss", errors.New("topic t partition 0 lost records from offset 4 to 5"))
	recs := []Rec{{0, 2, "p0", ""}, {0, 3, "p0", ""}}
	h.Poll("c1", recs)
	h.Poll("a", recs)
	h.Final([]Rec{{0, 0, "i0", ""}, {0, 1, "i1", ""}, {0, 2, "p0", ""}, {0, 3, "p0", ""}, {1, 0, "t0", ""}})
	r := h.Check()
	if !r.OK() || r.Allowed["plain producer's value stored twice"] != 1 || r.Allowed["send failed"] != 1 || r.Allowed["fetch error: data loss"] != 1 {
		t.Fatalf("got\n%s", r)
	}
	path := filepath.Join(t.TempDir(), "history.json")
	if err := h.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	kept, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := kept.Check(); got.String() != r.String() {
		t.Fatalf("kept history checks\n%s\nnot\n%s", got, r)
	}
}

// g0 adds two committed transactions ordered one way in partition 2 and
// the other way in partition 3: open at once (concurrent), or one after
// the other.
func g0(h *History, concurrent bool) []Rec {
	h.Producer("ty", Transactional)
	h.Send("tx", "t2", "3")
	h.Send("tx", "t3", "3")
	if concurrent {
		h.Send("ty", "u0", "1")
		h.Send("ty", "u1", "1")
	}
	h.Ack("tx", "t2", 2, 0)
	h.Ack("tx", "t3", 3, 1)
	h.TxnEnd("tx", "3", Committed, nil)
	if !concurrent {
		h.Send("ty", "u0", "1")
		h.Send("ty", "u1", "1")
	}
	h.Ack("ty", "u1", 2, 1)
	h.Ack("ty", "u0", 3, 0)
	h.TxnEnd("ty", "1", Committed, nil)
	recs := []Rec{{2, 0, "t2", ""}, {2, 1, "u1", ""}, {3, 0, "u0", ""}, {3, 1, "t3", ""}}
	h.Assign("c1", []int32{2, 3})
	h.Poll("c1", recs)
	h.Poll("a", recs)
	return append([]Rec{{0, 0, "i0", ""}, {0, 1, "i1", ""}, {1, 0, "t0", ""}}, recs...)
}

// Concurrent transactions may form a cycle: Kafka allows it.
func TestCheckConcurrentCycleAllowed(t *testing.T) {
	h := clean()
	h.ops = h.ops[:len(h.ops)-1]
	h.Final(g0(h, true))
	r := h.Check()
	if !r.OK() || r.Allowed["G0 of concurrent transactions"] != 1 {
		t.Fatalf("got\n%s", r)
	}
}

// A transformer's committed transactions make something of each value
// once: two that read one value are a duplicate; one that aborted does
// not count.
func TestCheckExactlyOnce(t *testing.T) {
	for _, second := range []string{Committed, Aborted} {
		h := clean()
		h.ops = h.ops[:len(h.ops)-1]
		h.Producer("x", Transactional)
		h.Consumer("x", "ctp")
		all := []Rec{{0, 0, "i0", ""}, {0, 1, "i1", ""}, {1, 0, "t0", ""}}
		h.Read("x", "1", all)
		h.TxnEnd("x", "1", Committed, nil)
		h.Read("x", "2", all[:1])
		h.TxnEnd("x", "2", second, nil)
		h.Final(all)
		r := h.Check()
		if want := second == Committed; (r.Counts["duplicate"] == 1) != want || r.Counts["unseen"] != 0 {
			t.Fatalf("second transaction %s:\n%s", second, r)
		}
	}
}

// Unread counts what a reader must still find: acknowledged values outside
// transactions or in committed ones, but what its own members wrote.
func TestUnread(t *testing.T) {
	h := clean()
	for _, rd := range []string{"group g", "a"} {
		if n := h.Unread(rd); n != 0 {
			t.Fatalf("%s: %d unread in a clean history", rd, n)
		}
	}
	h.Producer("x", Transactional)
	h.Consumer("x", "ctp")
	h.Send("idem", "i2", "")
	h.Ack("idem", "i2", 0, 2)
	h.Send("x", "o0", "1")
	h.Ack("x", "o0", 0, 3)
	h.TxnEnd("x", "1", Committed, nil)
	if n := h.Unread("a"); n != 2 {
		t.Fatalf("a: %d unread, want 2", n)
	}
	h.Read("x", "2", []Rec{{0, 0, "i0", ""}, {0, 1, "i1", ""}, {1, 0, "t0", ""}, {0, 2, "i2", ""}})
	if n := h.Unread("group ctp"); n != 4 {
		t.Fatalf("group ctp before its reading transaction ends: %d unread, want 4 (its own o0 aside)", n)
	}
	h.TxnEnd("x", "2", Committed, nil)
	if n := h.Unread("group ctp"); n != 0 {
		t.Fatalf("group ctp: %d unread, want 0", n)
	}
}

// A transaction whose end was not answered is taken as committed if the
// final read holds its records, as aborted if it holds none: neither is an
// anomaly, and what it read counts accordingly.
func TestCheckUnansweredEnd(t *testing.T) {
	h := clean()
	h.ops = h.ops[:len(h.ops)-1]
	h.Send("tx", "t2", "3")
	h.Ack("tx", "t2", 1, 3)
	h.TxnEnd("tx", "3", Unknown, errors.New("timed out"))
	h.Send("tx", "t3", "4")
	h.Ack("tx", "t3", 1, 5)
	h.TxnEnd("tx", "4", Unknown, errors.New("timed out"))
	h.Poll("c2", []Rec{{1, 3, "t2", ""}})
	h.Poll("a", []Rec{{1, 3, "t2", ""}})
	h.Final([]Rec{{0, 0, "i0", ""}, {0, 1, "i1", ""}, {1, 0, "t0", ""}, {1, 3, "t2", ""}})
	r := h.Check()
	if !r.OK() || r.Allowed["unanswered end: committed, by the final read"] != 1 || r.Allowed["unanswered end: aborted, by the final read"] != 1 {
		t.Fatalf("got\n%s", r)
	}
}

// A plain producer's value stored twice is two records: two committed
// transactions that read one each made something of each once.
func TestCheckExactlyOnceByRecord(t *testing.T) {
	h := clean()
	h.ops = h.ops[:len(h.ops)-1]
	h.Producer("plain", Plain)
	h.Producer("x", Transactional)
	h.Consumer("x", "ctp")
	h.Send("plain", "p0", "")
	h.Ack("plain", "p0", 0, 3)
	recs := []Rec{{0, 0, "i0", ""}, {0, 1, "i1", ""}, {1, 0, "t0", ""}, {0, 2, "p0", ""}, {0, 3, "p0", ""}}
	h.Read("x", "1", recs[:4])
	h.TxnEnd("x", "1", Committed, nil)
	h.Read("x", "2", recs[4:])
	h.TxnEnd("x", "2", Committed, nil)
	h.Poll("c1", recs[3:])
	h.Poll("a", recs[3:])
	h.Final(recs)
	if r := h.Check(); !r.OK() {
		t.Fatalf("got\n%s", r)
	}
}
