package registry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Topic is the registry's topic, as Confluent's registry names it.
const Topic = "_schemas"

// KafkaLog is the _schemas topic through the gateways' own Kafka
// listener, as Confluent's registry keeps it in Kafka: one partition,
// compacted, created when missing; read from its start into the State.
type KafkaLog struct {
	cl    *kgo.Client
	adm   *kadm.Client
	state *State

	ready  chan struct{} // closed when the topic exists
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// NewKafkaLog returns a log of the client opts give (seeds, TLS, SASL)
// that reads into state; Start begins.
func NewKafkaLog(opts []kgo.Opt, state *State) (*KafkaLog, error) {
	opts = append(opts,
		kgo.ClientID("schema-registry"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{Topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(time.Second),
		kgo.ProducerLinger(0),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	return &KafkaLog{cl: cl, adm: kadm.NewClient(cl), state: state, ready: make(chan struct{}), done: make(chan struct{})}, nil
}

// Start creates the topic if it is missing and reads it until Close.
func (l *KafkaLog) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	go func() {
		defer close(l.done)
		for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
			err := l.create(ctx)
			if err == nil {
				close(l.ready)
				break
			}
			glog.V(1).Infof("schema registry: creating %s: %v; retrying", Topic, err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
		}
		for ctx.Err() == nil {
			fs := l.cl.PollFetches(ctx)
			fs.EachError(func(topic string, p int32, err error) {
				if !errors.Is(err, context.Canceled) {
					glog.V(1).Infof("schema registry: reading %s: %v", Topic, err)
				}
			})
			fs.EachRecord(func(r *kgo.Record) {
				if err := l.state.Apply(r.Offset, r.Key, r.Value); err != nil {
					glog.V(1).Infof("schema registry: %s offset %d skipped: %v", Topic, r.Offset, err)
				}
			})
		}
	}()
}

func (l *KafkaLog) create(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	compact := "compact"
	resp, err := l.adm.CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": &compact}, Topic)
	if err == nil {
		err = resp.Err
	}
	if errors.Is(err, kerr.TopicAlreadyExists) {
		return nil
	}
	return err
}

// Append implements Log.
func (l *KafkaLog) Append(ctx context.Context, recs ...Record) (int64, error) {
	select {
	case <-l.ready:
	case <-ctx.Done():
		return 0, fmt.Errorf("the %s topic is not there yet: %w", Topic, ctx.Err())
	}
	krs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		krs[i] = &kgo.Record{Topic: Topic, Partition: 0, Key: r.Key, Value: r.Value}
	}
	res := l.cl.ProduceSync(ctx, krs...)
	if err := res.FirstErr(); err != nil {
		return 0, err
	}
	return krs[len(krs)-1].Offset, nil
}

// End implements Log.
func (l *KafkaLog) End(ctx context.Context) (int64, error) {
	offs, err := l.adm.ListEndOffsets(ctx, Topic)
	if err != nil {
		return 0, err
	}
	o, ok := offs.Lookup(Topic, 0)
	if !ok {
		return 0, fmt.Errorf("no end offset of %s", Topic)
	}
	if o.Err != nil {
		return 0, o.Err
	}
	return o.Offset, nil
}

// Close stops reading and closes the client.
func (l *KafkaLog) Close() {
	l.once.Do(func() {
		if l.cancel != nil {
			l.cancel()
			<-l.done
		}
		l.cl.Close()
	})
}
