package node

import (
	"context"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	swiceberg "github.com/seaweedfs/seaweedfs/weed/worker/tasks/iceberg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/iceberg"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/membership"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

// icebergOptions are where the topics' tables are; no catalog: no tables.
func (n *Node) icebergOptions() iceberg.RESTOptions {
	return iceberg.RESTOptions{URI: n.cfg.IcebergCatalog, Warehouse: n.cfg.IcebergWarehouse, S3Endpoint: n.cfg.IcebergS3,
		Namespace: seaweedmq.ClusterNamespace(n.cfg.ClusterName)}
}

// startIcebergTables writes the topics with iceberg.mode to their tables,
// each partition by the gateway that leads it, values of the schema modes
// decoded by the registry's schemas; nil without a catalog.
func startIcebergTables(o iceberg.RESTOptions, backend storage.Backend, filer func(context.Context, func(filer_pb.SeaweedFilerClient) error) error,
	members *membership.Membership, schemas iceberg.Schemas, maintenance time.Duration) (*iceberg.Tables, error) {
	if o.URI == "" {
		return nil, nil
	}
	// The catalog may still be starting (the embedded S3 gateway).
	var cat *iceberg.REST
	var err error
	for deadline := time.Now().Add(60 * time.Second); ; {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cat, err = iceberg.NewREST(ctx, o)
		cancel()
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		return nil, fmt.Errorf("iceberg tables: %w", err)
	}
	t := iceberg.New(iceberg.Options{Source: &icebergSource{backend: backend, members: members}, Catalog: cat, Schemas: schemas,
		MaintenanceInterval: maintenance,
		Compact:             compactor(filer, o.Warehouse, o.Namespace)})
	t.Start()
	glog.V(0).Infof("kafka gateway: topics with iceberg.mode kept as tables %s.<topic> in the Iceberg catalog %s (warehouse %s)", o.Namespace, o.URI, o.Warehouse)
	return t, nil
}

// compactor rewrites a table's small data files with SeaweedFS's own
// Iceberg maintenance (its workers' binpack compaction, at its defaults:
// five files or more of a partition into files of up to 256 MiB),
// committed on the table's entry in the filer, conditional on the
// version it read as the catalog's commits are. The filer is the
// gateway's: the catalog's when the gateway runs in its cluster.
func compactor(filer func(context.Context, func(filer_pb.SeaweedFilerClient) error) error, warehouse, namespace string) func(context.Context, string) (string, error) {
	if warehouse == "" {
		warehouse = iceberg.Namespace
	}
	h := swiceberg.NewHandler(nil)
	config := swiceberg.ParseConfig(nil)
	return func(ctx context.Context, table string) (string, error) {
		var did string
		err := filer(ctx, func(fc filer_pb.SeaweedFilerClient) error {
			var err error
			did, _, err = h.CompactDataFiles(ctx, fc, warehouse, path.Join(namespace, table), config)
			return err
		})
		return did, err
	}
}

// icebergSource is the gateway's backend as the tables read it.
type icebergSource struct {
	backend storage.Backend
	members *membership.Membership
}

func (s *icebergSource) Topics(ctx context.Context) ([]iceberg.Topic, error) {
	topics, err := s.backend.ListTopics(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]iceberg.Topic, len(topics))
	for i, t := range topics {
		out[i] = iceberg.Topic{Name: t.Name, Partitions: t.Partitions, Configs: t.Configs}
	}
	return out, nil
}

func (s *icebergSource) Leads(topic string, partition int32) bool {
	_, ok := s.members.Serving(membership.PartitionKey(topic, partition))
	return ok
}

// End is the last stable offset: the high watermark, or the first offset
// of the earliest open transaction.
func (s *icebergSource) End(ctx context.Context, topic string, partition int32) (int64, error) {
	offs, err := s.backend.Offsets(ctx, topic, partition)
	if err != nil {
		return 0, err
	}
	txns, err := s.backend.Transactions(ctx, topic, partition, 1, 0)
	if err != nil {
		return 0, err
	}
	if txns.FirstUnstable >= 0 && txns.FirstUnstable < offs.HighWatermark {
		return txns.FirstUnstable, nil
	}
	return offs.HighWatermark, nil
}

// Read reads as a read_committed consumer: up to the last stable offset,
// without markers and the records of aborted transactions.
func (s *icebergSource) Read(ctx context.Context, topic string, partition int32, from int64, maxBytes int, out []iceberg.Record) ([]iceberg.Record, int64, error) {
	offs, err := s.backend.Offsets(ctx, topic, partition)
	if err != nil {
		return out, from, err
	}
	from = max(from, offs.LogStart)
	end, err := s.End(ctx, topic, partition)
	if err != nil || from >= end {
		return out, from, err
	}
	txns, err := s.backend.Transactions(ctx, topic, partition, from, end-1)
	if err != nil {
		return out, from, err
	}
	aborted := func(off int64, txn *record.TxnMark) bool {
		for _, a := range txns.Aborted {
			if txn != nil && txn.ProducerID == a.ProducerID && off >= a.FirstOffset && off <= a.LastOffset {
				return true
			}
		}
		return false
	}
	next, size, grown := from, 0, false
	// grow makes room, once, for what the budget holds at the size of the
	// first records decoded (batches' sizes would not do: compressed).
	grow := func(n, bytes int) {
		if grown {
			return
		}
		grown = true
		fit := int64(maxBytes) * int64(n) / int64(bytes+1)
		out = slices.Grow(out, int(min(end-next, fit+1)))
	}
	// take appends one record, unless it is past what is read; false
	// once the read is full.
	take := func(off int64, r record.Record) bool {
		if off < next {
			return true // before from, in the batch that holds it
		}
		if off >= end || size >= maxBytes {
			return false
		}
		next = off + 1
		if (r.Txn != nil && r.Txn.Control >= 0) || aborted(off, r.Txn) {
			return true
		}
		out = append(out, iceberg.Record{Offset: off, Record: r})
		size += iceberg.Size(&r)
		return true
	}
	for next < end && size < maxBytes {
		// The batches as stored, decoded here one at a time into out:
		// Read would decode them all into a slice of its own first,
		// which, grown record by record and copied into out, took half
		// the writer's CPU (and its pointers, the collector's).
		res, err := s.backend.ReadBatches(ctx, topic, partition, next, maxBytes-size)
		if err != nil {
			return out, from, err
		}
		if len(res.Raw) == 0 && len(res.Records) == 0 {
			break
		}
		before := next
		full := false
		// Batches and single records (written by other clients of
		// SeaweedMQ), each in offset order: merged.
		raw, single := res.Raw, res.Records
		for !full && (len(raw) > 0 || len(single) > 0) {
			if len(single) > 0 && (len(raw) == 0 || single[0].Offset < raw[0].Base) {
				if !grown {
					bytes := 0
					for i := range single {
						bytes += iceberg.Size(&single[i].Record)
					}
					grow(len(single), bytes)
				}
				full = !take(single[0].Offset, single[0].Record)
				single = single[1:]
				continue
			}
			rb := raw[0]
			raw = raw[1:]
			b, err := record.ParseStoredBatch(rb.Data, storage.MaxDecompressedBatch)
			if err != nil {
				// As Read leaves it out (it was validated when it was
				// produced): the table goes on past it.
				glog.Warningf("kafka iceberg tables: %s/%d: the batch at offset %d cannot be read, left out: %v", topic, partition, rb.Base, err)
				next = max(next, min(end, rb.Base+int64(rb.Count)))
				continue
			}
			b.Mark()
			if !grown {
				bytes := 0
				for i := range b.Records {
					bytes += iceberg.Size(&b.Records[i])
				}
				grow(len(b.Records), bytes)
			}
			for k := range b.Records {
				if !take(rb.Base+b.Delta(k), b.Records[k]) {
					full = true
					break
				}
			}
		}
		if full || next == before {
			break
		}
	}
	return out, next, nil
}
