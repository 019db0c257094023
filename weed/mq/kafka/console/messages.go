package console

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// shownRecord is a record as the browser shows and exports it.
type shownRecord struct {
	Partition int32         `json:"partition"`
	Offset    int64         `json:"offset"`
	Timestamp time.Time     `json:"timestamp"`
	Key       shown         `json:"-"`
	Value     shown         `json:"-"`
	Headers   []shownHeader `json:"headers"`
}

type shownHeader struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// browse is what a browse asks for.
type browse struct {
	topic     string
	partition int32
	from      string // earliest, latest, offset, timestamp
	offset    int64
	timestamp int64 // Unix ms
	search    string
	max       int
	format    string // "" (the page), "json" or "csv"
}

func (r *request) parseBrowse() (browse, error) {
	v := r.q.URL.Query()
	b := browse{topic: r.q.PathValue("topic"), from: v.Get("from"), search: v.Get("q"), format: v.Get("format")}
	if b.from == "" {
		b.from = "latest"
	}
	p, err := strconv.ParseInt(v.Get("partition"), 10, 32)
	if err != nil && v.Get("partition") != "" {
		return b, pageError{http.StatusBadRequest, "partition: not a number"}
	}
	b.partition = int32(p)
	b.max = r.c.opts.MaxRecords
	if n, err := strconv.Atoi(v.Get("max")); err == nil && n > 0 && n < b.max {
		b.max = n
	}
	switch b.from {
	case "earliest", "latest":
	case "offset":
		if b.offset, err = strconv.ParseInt(v.Get("offset"), 10, 64); err != nil || b.offset < 0 {
			return b, pageError{http.StatusBadRequest, "offset: not an offset"}
		}
	case "timestamp":
		if b.timestamp, err = parseTimestamp(v.Get("timestamp")); err != nil {
			return b, pageError{http.StatusBadRequest, err.Error()}
		}
	default:
		return b, pageError{http.StatusBadRequest, "from: earliest, latest, offset or timestamp"}
	}
	switch b.format {
	case "", "json", "csv":
	default:
		return b, pageError{http.StatusBadRequest, "format: json or csv"}
	}
	return b, nil
}

// parseTimestamp reads milliseconds since the epoch, an RFC 3339 time, or
// a browser's datetime-local value (UTC).
func parseTimestamp(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("timestamp: milliseconds since the epoch or a time like 2026-12-07T10:00:00Z")
}

// messagesPage browses a partition's records: from the earliest, the
// latest, an offset or a timestamp, at most max records and the
// console's bytes; with q, only the records whose key, value or a header
// holds it, after masking.
func (r *request) messagesPage() error {
	b, err := r.parseBrowse()
	if err != nil {
		return err
	}
	if b.format != "" && r.c.opts.NoExport {
		return pageError{http.StatusForbidden, "exports are turned off (-console.export=false)"}
	}
	res, err := r.browse(b)
	if err != nil {
		return err
	}
	switch b.format {
	case "json":
		return r.exportJSON(b, res.records)
	case "csv":
		return r.exportCSV(b, res.records)
	}
	r.data["Topic"] = b.topic
	r.data["Partition"] = b.partition
	r.data["Partitions"] = res.partitions
	r.data["From"] = b.from
	r.data["Offset"] = b.offset
	r.data["Timestamp"] = r.q.URL.Query().Get("timestamp")
	r.data["Q"] = b.search
	r.data["Max"] = b.max
	r.data["Records"] = res.records
	r.data["Scanned"] = res.scanned
	r.data["ScannedBytes"] = res.bytes
	r.data["Stopped"] = res.stopped
	r.data["Start"], r.data["End"] = res.start, res.end
	r.data["Masked"] = len(fieldsMasked(r.c.opts.Masks, b.topic)) > 0
	r.data["Export"] = !r.c.opts.NoExport
	r.data["ExportQuery"] = r.q.URL.RawQuery
	return r.render("messages", http.StatusOK)
}

type browseResult struct {
	records    []shownRecord
	scanned    int
	bytes      int64
	start, end int64
	stopped    string // why the scan ended early ("": it reached the end)
	partitions []int32
}

func (r *request) browse(b browse) (*browseResult, error) {
	details, err := r.adm.ListTopicsWithInternal(r.ctx, b.topic)
	if err != nil {
		return nil, err
	}
	d, ok := details[b.topic]
	if !ok || d.Err != nil {
		return nil, pageError{http.StatusNotFound, fmt.Sprintf("topic %s: not found, or not yours to describe", b.topic)}
	}
	res := &browseResult{}
	for _, p := range d.Partitions.Sorted() {
		res.partitions = append(res.partitions, p.Partition)
	}
	if _, ok := d.Partitions[b.partition]; !ok {
		return nil, pageError{http.StatusNotFound, fmt.Sprintf("topic %s has no partition %d", b.topic, b.partition)}
	}
	starts, ends, err := startsAndEnds(r.ctx, r.cl, map[string][]int32{b.topic: {b.partition}})
	if err != nil {
		return nil, err
	}
	so, sok := starts.Lookup(b.topic, b.partition)
	eo, eok := ends.Lookup(b.topic, b.partition)
	if !sok || !eok {
		return nil, fmt.Errorf("no offsets listed for %s[%d]", b.topic, b.partition)
	}
	if so.Err != nil {
		return nil, so.Err
	}
	if eo.Err != nil {
		return nil, eo.Err
	}
	res.start, res.end = so.Offset, eo.Offset
	at := res.start
	switch b.from {
	case "latest":
		at = max(res.end-int64(b.max), res.start)
	case "offset":
		at = min(max(b.offset, res.start), res.end)
	case "timestamp":
		listed, err := r.adm.ListOffsetsAfterMilli(r.ctx, b.timestamp, b.topic)
		if err != nil {
			return nil, err
		}
		o, ok := listed.Lookup(b.topic, b.partition)
		if !ok || o.Err != nil {
			return nil, fmt.Errorf("the offset at %d: %v", b.timestamp, o.Err)
		}
		at = o.Offset
		if at < 0 {
			at = res.end
		}
	}
	if at >= res.end {
		return res, nil
	}
	opts, err := r.c.opts.Client(r.ctx, r.user, r.password)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append(opts, kgo.ClientID("kafka-gateway-console"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{b.topic: {b.partition: kgo.NewOffset().At(at)}}),
		kgo.FetchMaxBytes(int32(min(r.c.opts.MaxBytes, 16<<20))), kgo.FetchMaxPartitionBytes(int32(min(r.c.opts.MaxBytes, 16<<20))),
		kgo.FetchMaxWait(500*time.Millisecond))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	dec := &decoder{schemas: r.c.opts.Schemas}
	fields := fieldsMasked(r.c.opts.Masks, b.topic)
	deadline := time.Now().Add(10 * time.Second)
	for at < res.end {
		if len(res.records) >= b.max {
			res.stopped = fmt.Sprintf("the %d records asked for were found", b.max)
			break
		}
		if res.bytes >= int64(r.c.opts.MaxBytes) {
			res.stopped = fmt.Sprintf("the console reads at most %s per request", humanBytes(int64(r.c.opts.MaxBytes)))
			break
		}
		if time.Now().After(deadline) {
			res.stopped = "10 s passed"
			break
		}
		ctx, cancel := context.WithDeadline(r.ctx, deadline)
		fetches := cl.PollRecords(ctx, b.max)
		cancel()
		if r.ctx.Err() != nil {
			return nil, r.ctx.Err()
		}
		var ferr error
		fetches.EachError(func(_ string, _ int32, err error) {
			if ferr == nil && !isContextErr(err) {
				ferr = err
			}
		})
		if ferr != nil {
			return nil, ferr
		}
		for _, rec := range fetches.Records() {
			if rec.Offset >= res.end || len(res.records) >= b.max {
				at = res.end
				break
			}
			at = rec.Offset + 1
			res.scanned++
			res.bytes += int64(len(rec.Key) + len(rec.Value))
			sr := shownRecord{Partition: rec.Partition, Offset: rec.Offset, Timestamp: rec.Timestamp,
				Key: dec.decode(rec.Key), Value: dec.decode(rec.Value)}
			sr.Key.mask(fields, "key")
			sr.Value.mask(fields, "value")
			for _, h := range rec.Headers {
				v := plain(h.Value).Text
				if h.Value == nil {
					v = "null"
				}
				if fields[h.Key] {
					v = masked
				}
				sr.Headers = append(sr.Headers, shownHeader{h.Key, v})
			}
			if b.search != "" && !sr.holds(b.search) {
				continue
			}
			res.records = append(res.records, sr)
		}
	}
	return res, nil
}

// holds says whether the record's key, value or a header (key=value),
// as shown, contains s.
func (sr *shownRecord) holds(s string) bool {
	if strings.Contains(sr.Key.Text, s) || strings.Contains(sr.Value.Text, s) {
		return true
	}
	for _, h := range sr.Headers {
		if strings.Contains(h.Key+"="+h.Value, s) {
			return true
		}
	}
	return false
}

func (r *request) exportJSON(b browse, recs []shownRecord) error {
	type exported struct {
		Topic     string        `json:"topic"`
		Partition int32         `json:"partition"`
		Offset    int64         `json:"offset"`
		Timestamp int64         `json:"timestamp"`
		Key       any           `json:"key"`
		Value     any           `json:"value"`
		SchemaID  int           `json:"valueSchemaId,omitempty"`
		Headers   []shownHeader `json:"headers"`
	}
	out := make([]exported, 0, len(recs))
	for _, sr := range recs {
		out = append(out, exported{b.topic, sr.Partition, sr.Offset, sr.Timestamp.UnixMilli(),
			exportable(sr.Key), exportable(sr.Value), sr.Value.SchemaID, sr.Headers})
	}
	r.w.Header().Set("Content-Type", "application/json")
	r.w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-%d.json"`, safeName(b.topic), b.partition))
	enc := json.NewEncoder(r.w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// exportable is a key or value in an export: its document when it is
// one, its text otherwise.
func exportable(s shown) any {
	if s.Format == "null" {
		return nil
	}
	if s.tree != nil && s.Text != masked {
		var v any
		if json.Unmarshal([]byte(s.Text), &v) == nil {
			return v
		}
	}
	return s.Text
}

func (r *request) exportCSV(b browse, recs []shownRecord) error {
	r.w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	r.w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-%d.csv"`, safeName(b.topic), b.partition))
	w := csv.NewWriter(r.w)
	w.Write([]string{"topic", "partition", "offset", "timestamp", "key", "value", "value_schema_id", "headers"}) //nolint:errcheck // w.Error below
	for _, sr := range recs {
		var hs []string
		for _, h := range sr.Headers {
			hs = append(hs, h.Key+"="+h.Value)
		}
		id := ""
		if sr.Value.SchemaID != 0 {
			id = strconv.Itoa(sr.Value.SchemaID)
		}
		w.Write([]string{b.topic, strconv.Itoa(int(sr.Partition)), strconv.FormatInt(sr.Offset, 10), //nolint:errcheck // w.Error below
			sr.Timestamp.UTC().Format(time.RFC3339Nano), sr.Key.Text, sr.Value.Text, id, strings.Join(hs, ";")})
	}
	w.Flush()
	return w.Error()
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '"' || r == '\\' || r < 0x20 {
			return '_'
		}
		return r
	}, s)
}
