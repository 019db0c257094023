package history

import (
	"path/filepath"
	"testing"
)

// The histories of TestFaults runs that found a bug in the gateway, cut
// down to the partition and offsets where it showed: each is still found
// by the checker. (The fixes have tests of their own, named here.)
func TestKeptHistories(t *testing.T) {
	for _, kept := range []struct {
		file    string
		classes []string
	}{
		// A gateway cut off from all but its clients: its log's
		// commit landed once the cut healed, went into its released
		// partition's tail, and the tail was written over the next
		// leader's records (seaweedmq's TestLoggedAfterRelease).
		{"tail-over-successor.json", []string{"lost-write", "duplicate", "inconsistent-offsets"}},
		// A view that took a partition away while a request checked
		// its leadership went unseen; the deposed leader wrote the
		// partition on (gateway's TestOwnedViewChangeDuringLead).
		{"lead-race.json", []string{"lost-write"}},
		// Partitions 0 and 4: the volume server killed while batches
		// waited for the write-ahead log; a partition's producer state
		// read again without them took a retry as a new batch (stored
		// twice) and lost where a transaction was open from, its abort
		// not covering its first records (seaweedmq's
		// TestReloadKeepsBatchesInFlight). Partition 5: the assigned
		// consumer over two records acknowledged after the master's
		// and the broker's kills (cause not found yet).
		{"run-11.json", []string{"duplicate", "G1a", "poll-skip", "unseen"}},
		// Partitions 2 and 4: the records a leader wrote back from the
		// write-ahead logs were older than the segment before them,
		// which the leader before had written, and their segment was
		// named before it: consumers jumped over them, the final read
		// went past the records before them, and the leader's producer
		// state missed them (retries stored twice). (e2e's
		// TestRecoveredAfterASegmentNamedAhead.)
		{"run-18.json", []string{"lost-write", "duplicate", "int-poll-skip"}},
		// Partition 1: a leader paused while its write-ahead log's
		// commit waited came back, took the batch whose offset its
		// successor had given to an abort marker, saved its producer
		// state over the successor's and wrote its tail over the
		// marker: aborted transactions' records read (seaweedmq's
		// TestLoggedAfterTermEnded, TestDeposedLeaderSavesNoProducerState).
		{"run-19.json", []string{"G1a", "poll-skip", "unseen"}},
		// Partitions 1, 2, 4 and 5: a released tail's upload, checked
		// before it stalled, was appended after the next leader's
		// recovery to the file it had written, and the file's end was
		// noted as the tail's; fetches at the recovered records were
		// answered from the tail, past them (seaweedmq's
		// writeSegmentBytes checks again after the upload; readRaw).
		{"run-29.json", []string{"poll-skip", "unseen"}},
		// Partition 0: a gateway reopened its old partition object in a
		// new term with producer state loaded in the old one, took
		// idempotent retries as new batches, and had the object released
		// while their log commit waited: they were acknowledged at
		// offsets a new object then gave to other records (seaweedmq's
		// TestLoggedAfterRelease; openPartition reads the producers
		// again).
		{"run-47.json", []string{"inconsistent-offsets", "nonmonotonic-send"}},
		// Partition 1: a transaction's write, let through by its
		// coordinator (another gateway, its save stalled by the filer)
		// before the coordinator aborted the transaction on its timeout,
		// was stored after the abort's marker, which had the producer's
		// next epoch: past the aborted range, read as committed
		// (seaweedmq's TestMarkerFencesEarlierEpochs).
		{"run-55.json", []string{"G1a"}},
		// Partition 0: a gateway that had recovered the partition while
		// it led nothing (requests admitted before a cut from the filer
		// took the partition away) led it again and answered, in its new
		// term, from that object: OffsetForLeaderEpoch named an end
		// behind the consumer's position, and franz-go went back to it
		// (seaweedmq's TestRecoveredOnlyByTheLeaderInItsTerm).
		{"run-64.json", []string{"nonmonotonic-poll"}},
		// Run 80: an abort marker of a transformer's transaction, sent
		// during a cut and delivered after it healed, ended the
		// transformer's next transaction in the partition: its five
		// records were aborted although it committed (seaweedmq's
		// TestMarkerFencesEarlierEpochs: a marker older than the
		// producer's batches is refused).
		{"run-80.json", []string{"lost-write"}},
	} {
		h, err := ReadFile(filepath.Join("testdata", kept.file))
		if err != nil {
			t.Fatal(err)
		}
		r := h.Check()
		for _, c := range kept.classes {
			if r.Counts[c] == 0 {
				t.Errorf("%s: no %s found:\n%s", kept.file, c, r)
			}
		}
		t.Logf("%s:\n%s", kept.file, r)
	}
}
