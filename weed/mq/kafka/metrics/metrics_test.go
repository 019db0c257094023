package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestCountErrors(t *testing.T) {
	resp := kmsg.NewPtrProduceResponse()
	for _, code := range []int16{0, kerr.NotLeaderForPartition.Code, kerr.NotLeaderForPartition.Code, kerr.MessageTooLarge.Code} {
		tp := kmsg.NewProduceResponseTopic()
		p := kmsg.NewProduceResponseTopicPartition()
		p.ErrorCode = code
		tp.Partitions = append(tp.Partitions, p)
		resp.Topics = append(resp.Topics, tp)
	}
	CountErrors("Produce", resp)
	if got := testutil.ToFloat64(Errors.WithLabelValues("Produce", "NOT_LEADER_FOR_PARTITION")); got != 2 {
		t.Fatalf("NOT_LEADER_FOR_PARTITION counted %v times", got)
	}
	if got := testutil.ToFloat64(Errors.WithLabelValues("Produce", "MESSAGE_TOO_LARGE")); got != 1 {
		t.Fatalf("MESSAGE_TOO_LARGE counted %v times", got)
	}
}

func TestLabelsBounded(t *testing.T) {
	var l labels
	for i := 0; i < MaxLabelValues; i++ {
		if v := l.value(string(rune('a'+i%26)) + string(rune(i))); v == "other" {
			t.Fatalf("value %d refused", i)
		}
	}
	if l.value("one-too-many") != "other" {
		t.Fatal("labels not bounded")
	}
}

// A deleted topic's series go, and its label value is free for another:
// topics created and deleted all along once kept every series and used up
// the 1,000 label values.
func TestForgetTopic(t *testing.T) {
	MessagesIn.WithLabelValues(Topic("forgotten")).Add(3)
	if n := testutil.CollectAndCount(MessagesIn); n == 0 {
		t.Fatal("no series")
	}
	before := testutil.CollectAndCount(MessagesIn)
	ForgetTopic("forgotten")
	if n := testutil.CollectAndCount(MessagesIn); n != before-1 {
		t.Fatalf("%d series after forgetting, want %d", n, before-1)
	}
	topics.mu.Lock()
	_, kept := topics.seen["forgotten"]
	topics.mu.Unlock()
	if kept {
		t.Fatal("the label value is still taken")
	}
}
