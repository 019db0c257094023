// Package iceberg keeps topics as Apache Iceberg tables in an Iceberg REST
// catalog (SeaweedFS's own, on its S3 gateway): a topic whose iceberg.mode
// is not disabled has the table kafka.<topic>, to which the gateway that
// leads each of its partitions appends the partition's committed records
// as Parquet files at most every iceberg.target.lag.ms.
//
// Exactly once: every commit writes, in its snapshot's summary, the next
// offset of each partition it covers (kafka.offsets); a commit is made on
// the snapshot its offsets were read from (a conflicting commit of another
// gateway is read again and the batch redone from there), so a gateway
// that takes a partition over continues where the table ends, and data
// files written by a commit that never happened are never part of the
// table.
package iceberg

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/guard"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/record"
)

// Topic configs, named as Redpanda names them.
const (
	ConfigMode      = "iceberg.mode"
	ConfigTargetLag = "iceberg.target.lag.ms"

	ConfigInvalidAction = "iceberg.invalid.record.action"

	ModeDisabled            = "disabled"
	ModeKeyValue            = "key_value"
	ModeValueSchemaIDPrefix = "value_schema_id_prefix"
	ModeValueSchemaLatest   = "value_schema_latest"

	// The invalid record actions: the dead-letter table, or none.
	ActionDLQ  = "dlq_table"
	ActionDrop = "drop"

	// DefaultTargetLag is iceberg.target.lag.ms unless set.
	DefaultTargetLag = time.Minute
	// Namespace is the catalog namespace of the default cluster's
	// topics' tables, and the default table bucket.
	Namespace = "kafka"
)

// CheckMode validates iceberg.mode.
func CheckMode(v string) error {
	switch v {
	case ModeDisabled, ModeKeyValue, ModeValueSchemaIDPrefix, ModeValueSchemaLatest:
		return nil
	}
	return fmt.Errorf("%q is not %s, %s, %s or %s", v, ModeDisabled, ModeKeyValue, ModeValueSchemaIDPrefix, ModeValueSchemaLatest)
}

// CheckInvalidAction validates iceberg.invalid.record.action.
func CheckInvalidAction(v string) error {
	if v != ActionDLQ && v != ActionDrop {
		return fmt.Errorf("%q is not %s or %s", v, ActionDLQ, ActionDrop)
	}
	return nil
}

// DeadLetterTable is the table of a topic's records that are no rows of
// its table.
func DeadLetterTable(topic string) string { return TableName(topic) + "_dlq" }

// Topic is a topic as the tables see it.
type Topic struct {
	Name       string
	Partitions int32
	Configs    map[string]string
}

// Record is a partition's record with its partition and offset.
type Record struct {
	Partition int32
	Offset    int64
	record.Record
}

// Size is what a record counts for against a commit's MaxBytes: its key,
// value and headers, and what holding it takes besides (without that, a
// commit of records of a few bytes held millions of them).
func Size(r *record.Record) int {
	n := len(r.Key) + len(r.Value) + recordOverhead
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value) + headerOverhead
	}
	return n
}

const (
	recordOverhead = int(unsafe.Sizeof(Record{}))
	headerOverhead = int(unsafe.Sizeof(kmsg.Header{}))
)

// Source is where the records come from: the gateway's topics.
type Source interface {
	Topics(ctx context.Context) ([]Topic, error)
	// Leads reports whether this gateway leads the partition (and so
	// writes its records to the table).
	Leads(topic string, partition int32) bool
	// Read appends to into the partition's records a read_committed
	// consumer reads from offset from on (no control records, no records
	// of aborted transactions, none past the last stable offset), up to
	// about maxBytes (of Size), and returns into and the offset to read next; next
	// is from when there is nothing to read. A from below the log start
	// reads from the log start.
	Read(ctx context.Context, topic string, partition int32, from int64, maxBytes int, into []Record) (recs []Record, next int64, err error)
	// End returns the partition's last stable offset.
	End(ctx context.Context, topic string, partition int32) (int64, error)
}

// Catalog is where the tables are.
type Catalog interface {
	// Table returns a table as the catalog has it now, created if missing
	// with schema, partitioned as spec (iceberg.partition.spec) says.
	Table(ctx context.Context, name string, schema *iceberg.Schema, spec string) (Table, error)
}

// Table is a table at one snapshot.
type Table interface {
	// Offsets are the next offsets of the partitions the table has
	// records of, as its latest commit of the gateways wrote them.
	Offsets() (map[int32]int64, error)
	// Schema is the table's current schema.
	Schema() *iceberg.Schema
	// Fits says why with cannot be unioned into the schema (nil: it can).
	Fits(with *iceberg.Schema) error
	// Evolve adds the columns of with the table has not, by name, and
	// returns the table then (errConflict if another commit came first).
	Evolve(ctx context.Context, with *iceberg.Schema) (Table, error)
	// Append adds the rows as data files (none: only the offsets) and
	// commits them, with next as the table's offsets, on the snapshot
	// Offsets were read from; a commit made in between fails it with
	// errConflict. It returns the data files added.
	Append(ctx context.Context, rows array.RecordReader, n int, next map[int32]int64) (files int, err error)
}

// Options configure Tables.
type Options struct {
	Source  Source
	Catalog Catalog
	// Schemas decode the values of the schema modes (nil: no registry,
	// every such record invalid).
	Schemas Schemas
	// Interval is how often the topics' tables are looked at (a second
	// when 0).
	Interval time.Duration
	// ListInterval is how often the topics and their configs are listed
	// again (10 s when 0): listing reads every topic's config from the
	// filer, too much to do every Interval.
	ListInterval time.Duration
	// MaxBytes bounds the records of one commit, counted as Size
	// counts them (64 MiB when 0).
	MaxBytes int
	// MaintenanceInterval is how often each table's snapshots are
	// expired and its orphan files deleted, by the leader of the topic's
	// partition 0 (0: never, when SeaweedFS's own maintenance does it).
	MaintenanceInterval time.Duration
	// OrphanAge is how old a file no snapshot holds must be to be deleted
	// (72 h when 0): younger, it may be a commit's under way.
	OrphanAge time.Duration
	// rest is how long the writer waits after a commit that took d
	// before the next while it catches up under producers (d when nil).
	rest func(d time.Duration) time.Duration

	// Compact rewrites a table's small data files into larger ones, at
	// each maintenance after the snapshots' expiry, and says what it did
	// (nil: never).
	Compact func(ctx context.Context, table string) (string, error)
}

// maintainer is a catalog that can maintain its tables.
type maintainer interface {
	Maintain(ctx context.Context, name string, orphanAge time.Duration) (expired, orphans int, err error)
}

// Tables writes topics' records to their tables.
type Tables struct {
	opts Options
	// last is when each topic's table was last committed to by this
	// gateway (or found to need nothing).
	last map[string]time.Time
	// topics are the topics with iceberg.mode as listed last, at listed.
	topics []Topic
	listed time.Time
	// maintained is when each table was last maintained by this gateway
	// (its first round counts as one: a restart waits an interval).
	maintained map[string]time.Time
	stop       chan struct{}
	wg         sync.WaitGroup
}

// New returns the tables of opts; Start starts writing them.
func New(opts Options) *Tables {
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 64 << 20
	}
	if opts.ListInterval <= 0 {
		opts.ListInterval = 10 * time.Second
	}
	if opts.OrphanAge <= 0 {
		opts.OrphanAge = 72 * time.Hour
	}
	if opts.rest == nil {
		opts.rest = func(d time.Duration) time.Duration { return d }
	}
	return &Tables{opts: opts, last: map[string]time.Time{}, maintained: map[string]time.Time{}, stop: make(chan struct{})}
}

// Start looks at the topics every Interval until Close.
func (t *Tables) Start() {
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		tick := time.NewTicker(t.opts.Interval)
		defer tick.Stop()
		for {
			select {
			case <-t.stop:
				return
			case <-tick.C:
			}
			guard.Run("IcebergTables", func() { t.round(time.Now()) }) //nolint:errcheck // logged and counted; the next round tries again
		}
	}()
}

// Close stops the writing and waits for a commit under way.
func (t *Tables) Close() {
	close(t.stop)
	t.wg.Wait()
}

// round commits to each table whose target lag has passed since this
// gateway last committed to it.
func (t *Tables) round(now time.Time) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-t.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	if now.Sub(t.listed) >= t.opts.ListInterval {
		topics, err := t.opts.Source.Topics(ctx)
		if err != nil {
			glog.V(1).Infof("kafka iceberg tables: listing topics: %v", err)
			return
		}
		t.topics, t.listed = topics[:0:0], now
		for _, tp := range topics {
			if mode := tp.Configs[ConfigMode]; mode != "" && mode != ModeDisabled {
				t.topics = append(t.topics, tp)
			}
		}
	}
	for _, tp := range t.topics {
		if ctx.Err() != nil {
			return
		}
		mode := tp.Configs[ConfigMode]
		if mode == "" || mode == ModeDisabled {
			continue
		}
		lag := TargetLag(tp.Configs)
		if now.Sub(t.last[tp.Name]) < lag {
			continue
		}
		var led []int32
		for p := int32(0); p < tp.Partitions; p++ {
			if t.opts.Source.Leads(tp.Name, p) {
				led = append(led, p)
			}
		}
		if len(led) == 0 {
			continue
		}
		// A table behind by more than a commit's MaxBytes is committed
		// to again, until it has caught up (its target lag is the most
		// its rows may be behind, not a pause between commits), or for
		// its target lag at most before the other topics' tables have
		// their turn. While producers write to its partitions (their
		// ends moved during a commit), the writer rests between those
		// commits as long as the last one took, so that it takes at
		// most about half a core from the produce path; once they stop,
		// it catches up at its own pace.
		failed := false
		for ctx.Err() == nil {
			start, ends := time.Now(), t.ends(ctx, tp.Name, led)
			res, err := t.Commit(ctx, tp, led)
			if err != nil {
				glog.Warningf("kafka iceberg tables: %s: %v", tp.Name, err)
				failed = true
				break
			}
			if !res.More || time.Since(now) >= lag {
				break
			}
			if t.ends(ctx, tp.Name, led) == ends {
				continue
			}
			select {
			case <-ctx.Done():
			case <-time.After(t.opts.rest(time.Since(start))):
			}
		}
		if failed {
			continue
		}
		t.last[tp.Name] = now
		t.maintain(ctx, tp, led, now)
	}
}

// ends sums the partitions' last stable offsets: it moves while
// producers write to them.
func (t *Tables) ends(ctx context.Context, topic string, partitions []int32) int64 {
	var sum int64
	for _, p := range partitions {
		if end, err := t.opts.Source.End(ctx, topic, p); err == nil {
			sum += end
		}
	}
	return sum
}

// maintain expires a table's snapshots and deletes its orphan files every
// MaintenanceInterval, if this gateway leads the topic's partition 0.
func (t *Tables) maintain(ctx context.Context, tp Topic, led []int32, now time.Time) {
	m, ok := t.opts.Catalog.(maintainer)
	if !ok || t.opts.MaintenanceInterval <= 0 || led[0] != 0 {
		return
	}
	last, seen := t.maintained[tp.Name]
	if !seen {
		t.maintained[tp.Name] = now
		return
	}
	if now.Sub(last) < t.opts.MaintenanceInterval {
		return
	}
	t.maintained[tp.Name] = now
	expired, orphans, err := m.Maintain(ctx, TableName(tp.Name), t.opts.OrphanAge)
	if err != nil {
		glog.Warningf("kafka iceberg tables: maintaining %s: %v", tp.Name, err)
		return
	}
	glog.V(1).Infof("kafka iceberg tables: %s: %d snapshots expired, %d orphan files deleted", tp.Name, expired, orphans)
	if t.opts.Compact == nil {
		return
	}
	did, err := t.opts.Compact(ctx, TableName(tp.Name))
	if err != nil {
		glog.Warningf("kafka iceberg tables: compacting %s: %v", tp.Name, err)
		return
	}
	glog.V(1).Infof("kafka iceberg tables: %s: %s", tp.Name, did)
}

// TargetLag is a topic's iceberg.target.lag.ms.
func TargetLag(configs map[string]string) time.Duration {
	if ms, err := strconv.ParseInt(configs[ConfigTargetLag], 10, 64); err == nil && ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return DefaultTargetLag
}

// TableName is the table of a topic: its name in lower case with what a
// table name may not hold (anything but a-z, 0-9, _ and -) made _, and a
// leading character other than a letter or digit preceded by t.
func TableName(topic string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(topic) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	if c := name[0]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
		name = "t" + name
	}
	return name
}

// Committed is what one commit wrote.
type Committed struct {
	Records int
	// Offsets are the next offsets of the partitions committed.
	Offsets map[int32]int64
	// More says the commit was cut at MaxBytes: there may be more to
	// commit at once.
	More bool
}

// errConflict is a commit another gateway's made first.
var errConflict = errors.New("another commit came first")

// Commit appends the records of the partitions (led by this gateway) that
// the table does not have yet, in one commit; a commit of another gateway
// in between is read and the batch made again, a few times.
func (t *Tables) Commit(ctx context.Context, tp Topic, partitions []int32) (Committed, error) {
	for attempt := 0; ; attempt++ {
		start := time.Now()
		res, err := t.commitOnce(ctx, tp, partitions)
		switch {
		case err == nil:
			if res.Records > 0 {
				metrics.IcebergCommits.WithLabelValues(metrics.Topic(tp.Name), "ok").Inc()
				metrics.IcebergCommitSeconds.Observe(time.Since(start).Seconds())
			}
			return res, nil
		case errors.Is(err, errConflict) && attempt < 3:
			metrics.IcebergCommits.WithLabelValues(metrics.Topic(tp.Name), "conflict").Inc()
			continue
		default:
			metrics.IcebergCommits.WithLabelValues(metrics.Topic(tp.Name), "error").Inc()
			return Committed{}, err
		}
	}
}

// commitOnce reads the table's offsets, the records past them, and
// commits those on the snapshot the offsets were read from.
func (t *Tables) commitOnce(ctx context.Context, tp Topic, partitions []int32) (Committed, error) {
	mode := tp.Configs[ConfigMode]
	base, spec := keyValueSchema(), tp.Configs[ConfigPartitionSpec]
	if mode != ModeKeyValue {
		base = valueSchemaBase()
		if spec == "" {
			spec = "(hour(" + kafkaColumn + ".timestamp))"
		}
	}
	tbl, err := t.opts.Catalog.Table(ctx, TableName(tp.Name), base, spec)
	if err != nil {
		return Committed{}, err
	}
	offsets, err := tbl.Offsets()
	if err != nil {
		return Committed{}, err
	}
	recs, next, more := t.read(ctx, tp, partitions, offsets)
	if len(next) == 0 {
		return Committed{Offsets: next}, nil
	}
	for p, n := range offsets {
		if _, ok := next[p]; !ok {
			next[p] = n
		}
	}
	topic := metrics.Topic(tp.Name)
	var rows array.RecordReader
	n := len(recs)
	if mode == ModeKeyValue {
		rows, err = keyValueRows(tbl.Schema(), recs, nil)
	} else {
		var good []decoded
		if tbl, good, err = t.decodeAll(ctx, tp, tbl, recs); err != nil {
			return Committed{}, err
		}
		rows, err = valueRows(tbl.Schema(), good)
		n = len(good)
	}
	if err != nil {
		return Committed{}, err
	}
	defer rows.Release()
	files, err := tbl.Append(ctx, rows, n, next)
	if err != nil {
		return Committed{}, err
	}
	metrics.IcebergRecords.WithLabelValues(topic).Add(float64(n))
	metrics.IcebergFiles.WithLabelValues(topic).Add(float64(files))
	return Committed{Records: len(recs), Offsets: next, More: more}, nil
}

// read reads the partitions from the table's offsets, each up to its
// share of MaxBytes (so that a busy partition does not hold the others
// back), and returns the records, the next offsets of the partitions read
// from, and whether a share cut a partition's reading short.
func (t *Tables) read(ctx context.Context, tp Topic, partitions []int32, offsets map[int32]int64) ([]Record, map[int32]int64, bool) {
	next := map[int32]int64{}
	// Each partition's records are read into a slice of their own, sized
	// by the source, and joined once: read into one slice in turn, grown
	// by each partition's read, they were copied as many times (a fifth
	// of the writer's CPU in a profile of the load test).
	var each [][]Record
	total := 0
	share := max(1, t.opts.MaxBytes/max(1, len(partitions)))
	more := false
	lagRecords, oldest := int64(0), time.Time{}
	for _, p := range partitions {
		from := offsets[p]
		read, n, err := t.opts.Source.Read(ctx, tp.Name, p, from, share, nil)
		if err != nil {
			glog.V(1).Infof("kafka iceberg tables: %s/%d: %v", tp.Name, p, err)
			continue
		}
		if end, err := t.opts.Source.End(ctx, tp.Name, p); err == nil {
			lagRecords += max(0, end-from)
		}
		if len(read) > 0 {
			next[p] = n
			if ts := time.UnixMilli(read[0].Timestamp); oldest.IsZero() || ts.Before(oldest) {
				oldest = ts
			}
			each = append(each, read)
			total += len(read)
		}
		size := 0
		for i := range read {
			read[i].Partition = p
			size += Size(&read[i].Record)
		}
		more = more || size >= share
	}
	var recs []Record
	if len(each) == 1 {
		recs = each[0]
	} else if len(each) > 1 {
		recs = make([]Record, 0, total)
		for _, r := range each {
			recs = append(recs, r...)
		}
	}
	topic := metrics.Topic(tp.Name)
	metrics.IcebergLagRecords.WithLabelValues(topic).Set(float64(lagRecords))
	if oldest.IsZero() {
		metrics.IcebergLagSeconds.WithLabelValues(topic).Set(0)
	} else {
		metrics.IcebergLagSeconds.WithLabelValues(topic).Set(time.Since(oldest).Seconds())
	}
	return recs, next, more
}

// decodeAll decodes the records' values, adds the columns of schemas
// new to the table, and sends the records that are no rows (no schema
// id, an unknown one, a schema that is no columns or that does not fit
// the table's) to the dead-letter table or drops them, as the topic's
// iceberg.invalid.record.action says.
func (t *Tables) decodeAll(ctx context.Context, tp Topic, tbl Table, recs []Record) (Table, []decoded, error) {
	var good []decoded
	var bad []invalid
	unfit := map[schemaKey]string{}
	schemas := map[schemaKey]*iceberg.Schema{}
	latest, noLatest := 0, ""
	if tp.Configs[ConfigMode] == ModeValueSchemaLatest && t.opts.Schemas != nil {
		subject := tp.Name + "-value"
		var err error
		if latest, err = t.opts.Schemas.Latest(subject); err != nil {
			noLatest = fmt.Sprintf("subject %s has no schema: %v", subject, err)
		}
	}
	// Each id's schema is looked up (and parsed) once per commit, not per
	// record.
	values := newValues(t.opts.Schemas, latest)
	for _, r := range recs {
		d, why := values.decode(r)
		if noLatest != "" {
			why = noLatest
		}
		if why == "" {
			if _, seen := schemas[d.key]; !seen {
				if _, known := unfit[d.key]; !known {
					vs, err := valueSchema(d.schema)
					if err == nil {
						err = tbl.Fits(vs)
					}
					if err != nil {
						unfit[d.key] = fmt.Sprintf("%s does not fit the table: %v", d.key, err)
					} else {
						schemas[d.key] = vs
					}
				}
			}
			why = unfit[d.key]
		}
		if why != "" {
			bad = append(bad, invalid{Record: r, reason: why})
			continue
		}
		good = append(good, d)
	}
	// The columns of the older schemas first.
	keys := slices.SortedFunc(maps.Keys(schemas), func(a, b schemaKey) int {
		return cmp.Or(cmp.Compare(a.id, b.id), cmp.Compare(a.message, b.message))
	})
	for _, k := range keys {
		var err error
		if tbl, err = tbl.Evolve(ctx, schemas[k]); err != nil {
			return nil, nil, err
		}
	}
	if len(bad) > 0 {
		if err := t.deadLetters(ctx, tp, bad); err != nil {
			return nil, nil, err
		}
	}
	return tbl, good, nil
}

// deadLetters writes the records that are no rows to the topic's
// dead-letter table (its own offsets say what it has: none twice), or
// drops them.
func (t *Tables) deadLetters(ctx context.Context, tp Topic, bad []invalid) error {
	action := tp.Configs[ConfigInvalidAction]
	if action == "" {
		action = ActionDLQ
	}
	metrics.IcebergInvalid.WithLabelValues(metrics.Topic(tp.Name), action).Add(float64(len(bad)))
	if action == ActionDrop {
		return nil
	}
	for attempt := 0; ; attempt++ {
		dlq, err := t.opts.Catalog.Table(ctx, DeadLetterTable(tp.Name), deadLetterSchema(), DefaultPartitionSpec)
		if err != nil {
			return err
		}
		offsets, err := dlq.Offsets()
		if err != nil {
			return err
		}
		next := maps.Clone(offsets)
		var recs []Record
		var reasons []string
		for _, b := range bad {
			if b.Offset < offsets[b.Partition] {
				continue
			}
			recs = append(recs, b.Record)
			reasons = append(reasons, b.reason)
			next[b.Partition] = max(next[b.Partition], b.Offset+1)
		}
		if len(recs) == 0 {
			return nil
		}
		rows, err := keyValueRows(dlq.Schema(), recs, reasons)
		if err != nil {
			return err
		}
		_, err = dlq.Append(ctx, rows, len(recs), next)
		rows.Release()
		if errors.Is(err, errConflict) && attempt < 3 {
			continue
		}
		return err
	}
}
