package iceberg

// The tables in an Iceberg REST catalog, through apache/iceberg-go: the
// table bucket (the warehouse) made on SeaweedFS's S3 gateway if missing,
// the namespace and each topic's table made on first use, data files
// written as Parquet by iceberg-go's writer through the S3 API.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"golang.org/x/sync/semaphore"
	"io"
	"maps"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	iceio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // s3:// data files
	"github.com/apache/iceberg-go/table"
)

// summaryOffsets is the snapshot summary property, and the table
// property, of the next offset of each partition the table has records
// of: {"0":120,"1":98}.
const summaryOffsets = "kafka.offsets"

// RESTOptions say where the catalog is.
type RESTOptions struct {
	// URI is the catalog's base URL (http://127.0.0.1:8181).
	URI string
	// Warehouse is the table bucket the tables are in (Namespace when
	// empty).
	Warehouse string
	// Namespace is the catalog namespace of the topics' tables: the
	// cluster's (Namespace when empty).
	Namespace string
	// S3Endpoint is the S3 API the data files are written through, and
	// where a missing table bucket is made; empty: the one the catalog
	// names for each table.
	S3Endpoint string
}

// REST is a catalog served over Iceberg's REST API.
type REST struct {
	o   RESTOptions
	cat *rest.Catalog
	// turn makes one table at a time, waited for within the caller's
	// context.
	turn    *semaphore.Weighted
	created map[string]bool // tables made or found
}

// NewREST opens the catalog. The S3 credentials are AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY when set (a SeaweedFS S3 gateway without
// identities takes any).
func NewREST(ctx context.Context, o RESTOptions) (*REST, error) {
	if o.Warehouse == "" {
		o.Warehouse = Namespace
	}
	if o.Namespace == "" {
		o.Namespace = Namespace
	}
	props := iceberg.Properties{iceio.S3Region: "us-east-1",
		iceio.S3AccessKeyID: envOr("AWS_ACCESS_KEY_ID", "kafka-gateway"), iceio.S3SecretAccessKey: envOr("AWS_SECRET_ACCESS_KEY", "kafka-gateway")}
	if o.S3Endpoint != "" {
		props[iceio.S3EndpointURL] = o.S3Endpoint
		if err := createTableBucket(ctx, o.S3Endpoint, o.Warehouse); err != nil {
			return nil, err
		}
	}
	cat, err := rest.NewCatalog(ctx, "seaweedfs", o.URI, rest.WithWarehouseLocation("s3://"+o.Warehouse+"/"), rest.WithAdditionalProps(props))
	if err != nil {
		return nil, fmt.Errorf("iceberg catalog %s: %w", o.URI, err)
	}
	return &REST{o: o, cat: cat, turn: semaphore.NewWeighted(1), created: map[string]bool{}}, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// createTableBucket makes the table bucket through the S3 Tables API of
// SeaweedFS's S3 gateway; one that exists is kept.
func createTableBucket(ctx context.Context, endpoint, name string) error {
	body, _ := json.Marshal(map[string]string{"name": name})
	q, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(endpoint, "/")+"/", bytes.NewReader(body))
	if err != nil {
		return err
	}
	q.Header.Set("X-Amz-Target", "S3Tables.CreateTableBucket")
	q.Header.Set("Content-Type", "application/x-amz-json-1.1")
	resp, err := http.DefaultClient.Do(q)
	if err != nil {
		return fmt.Errorf("creating table bucket %s: %w", name, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusConflict || strings.Contains(string(msg), "Conflict") || strings.Contains(string(msg), "already exists") {
		return nil
	}
	return fmt.Errorf("creating table bucket %s: %d %s", name, resp.StatusCode, bytes.TrimSpace(msg))
}

// Table loads a topic's table, making the namespace and the table (of
// schema, partitioned as spec says) first if missing.
func (c *REST) Table(ctx context.Context, name string, schema *iceberg.Schema, spec string) (Table, error) {
	ident := catalog.ToIdentifier(c.o.Namespace, name)
	tbl, err := c.cat.LoadTable(ctx, ident)
	if errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace) {
		tbl, err = c.create(ctx, ident, schema, spec)
	}
	if err != nil {
		return nil, fmt.Errorf("table %s.%s: %w", c.o.Namespace, name, err)
	}
	return &restTable{tbl: tbl}, nil
}

func (c *REST) create(ctx context.Context, ident table.Identifier, schema *iceberg.Schema, specText string) (*table.Table, error) {
	if err := c.turn.Acquire(ctx, 1); err != nil {
		return nil, err
	}
	defer c.turn.Release(1)
	ns := catalog.ToIdentifier(c.o.Namespace)
	if err := c.cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return nil, err
	}
	spec, err := partitionSpec(specText, schema)
	if err != nil {
		return nil, err
	}
	props := iceberg.Properties{"write.format.default": "parquet"}
	maps.Copy(props, writeDefaults)
	tbl, err := c.cat.CreateTable(ctx, ident, schema, catalog.WithPartitionSpec(&spec), catalog.WithProperties(props))
	if errors.Is(err, catalog.ErrTableAlreadyExists) {
		return c.cat.LoadTable(ctx, ident)
	}
	return tbl, err
}

// writeDefaults are the Parquet settings the gateway gives its tables (a
// table's own properties, which a user may change): Zstandard at its
// fastest level, and no dictionary for the columns whose values are all
// different (offsets, timestamps, values): the table's writer shares the
// produce path's CPU, and these take about a third of the time Iceberg's
// defaults take for incompressible values and two thirds for JSON text,
// for files of about the same size (BenchmarkParquetWrite).
var writeDefaults = iceberg.Properties{
	"write.parquet.compression-codec":                            "zstd",
	"write.parquet.compression-level":                            "1",
	"write.parquet.dict-encoding-enabled.column.offset":          "false",
	"write.parquet.dict-encoding-enabled.column.timestamp":       "false",
	"write.parquet.dict-encoding-enabled.column.value":           "false",
	"write.parquet.dict-encoding-enabled.column.kafka.offset":    "false",
	"write.parquet.dict-encoding-enabled.column.kafka.timestamp": "false",
}

// restTable is a table loaded from the catalog.
type restTable struct{ tbl *table.Table }

// Offsets reads kafka.offsets from the table's properties, which every
// commit sets with its snapshot (table maintenance keeps properties, while
// its own snapshots have no kafka.offsets and it expires old ones); a
// table without the property, from the latest snapshot that has it.
func (t *restTable) Offsets() (map[int32]int64, error) {
	if v, ok := t.tbl.Properties()[summaryOffsets]; ok {
		return parseOffsets(v)
	}
	out := map[int32]int64{}
	for s := t.tbl.CurrentSnapshot(); s != nil; {
		if s.Summary != nil {
			if v, ok := s.Summary.Properties[summaryOffsets]; ok {
				return parseOffsets(v)
			}
		}
		if s.ParentSnapshotID == nil {
			break
		}
		s = t.tbl.SnapshotByID(*s.ParentSnapshotID)
	}
	return out, nil
}

func parseOffsets(v string) (map[int32]int64, error) {
	var m map[string]int64
	if err := json.Unmarshal([]byte(v), &m); err != nil {
		return nil, fmt.Errorf("the table's %s %q: %w", summaryOffsets, v, err)
	}
	out := make(map[int32]int64, len(m))
	for k, n := range m {
		p, err := strconv.ParseInt(k, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("the table's %s %q: partition %q", summaryOffsets, v, k)
		}
		out[int32(p)] = n
	}
	return out, nil
}

func formatOffsets(next map[int32]int64) string {
	m := make(map[string]int64, len(next))
	for p, n := range next {
		m[strconv.Itoa(int(p))] = n
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func (t *restTable) Schema() *iceberg.Schema { return t.tbl.Schema() }

// Evolve adds the columns of with that the table has not (by name), in a
// commit of its own made on the snapshot the table was read at.
func (t *restTable) Evolve(ctx context.Context, with *iceberg.Schema) (Table, error) {
	tx := t.tbl.NewTransaction()
	if err := tx.AssertRefSnapshotID(""); err != nil {
		return nil, err
	}
	if err := tx.UpdateSchema(true, false).UnionByNameWith(with).Commit(); err != nil {
		return nil, err
	}
	tbl, err := tx.Commit(ctx)
	if errors.Is(err, table.ErrCommitFailed) {
		return nil, fmt.Errorf("%w: %v", errConflict, err)
	}
	if err != nil {
		return nil, err
	}
	return &restTable{tbl: tbl}, nil
}

// fits reports why with cannot be unioned into the table's schema (nil:
// it can), without committing anything.
func (t *restTable) Fits(with *iceberg.Schema) error {
	_, err := t.tbl.NewTransaction().UpdateSchema(true, false).UnionByNameWith(with).Apply()
	return err
}

func (t *restTable) Append(ctx context.Context, rdr array.RecordReader, rows int, next map[int32]int64) (int, error) {
	tx := t.tbl.NewTransaction()
	offsets := formatOffsets(next)
	if err := tx.AssertRefSnapshotID(""); err != nil {
		return 0, err
	}
	props := iceberg.Properties{summaryOffsets: offsets}
	for k, v := range writeDefaults { // for tables made before the gateway set them
		if _, ok := t.tbl.Properties()[k]; !ok {
			props[k] = v
		}
	}
	if err := tx.SetProperties(props); err != nil {
		return 0, err
	}
	if rows > 0 {
		if err := tx.Append(ctx, rdr, iceberg.Properties{summaryOffsets: offsets}); err != nil {
			return 0, err
		}
	}
	committed, err := tx.Commit(ctx)
	if errors.Is(err, table.ErrCommitFailed) {
		return 0, fmt.Errorf("%w: %v", errConflict, err)
	}
	if err != nil {
		return 0, err
	}
	files := 0
	if s := committed.CurrentSnapshot(); s != nil && s.Summary != nil {
		files, _ = strconv.Atoi(s.Summary.Properties["added-data-files"])
	}
	return files, nil
}

// Maintain expires the table's old snapshots, as its history.expire.*
// properties say (Iceberg's defaults: older than 5 days, the last one
// kept), deleting the files only they held, and deletes the files under
// the table that no snapshot holds and that are older than orphanAge (a
// commit that failed or never happened).
func (c *REST) Maintain(ctx context.Context, name string, orphanAge time.Duration) (expired, orphans int, err error) {
	tbl, err := c.cat.LoadTable(ctx, catalog.ToIdentifier(c.o.Namespace, name))
	if err != nil {
		return 0, 0, err
	}
	before := len(tbl.Metadata().Snapshots())
	tx := tbl.NewTransaction()
	if err := tx.ExpireSnapshots(); err != nil {
		return 0, 0, fmt.Errorf("expiring snapshots: %w", err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		return 0, 0, fmt.Errorf("expiring snapshots: %w", err)
	}
	expired = before - len(tbl.Metadata().Snapshots())
	res, err := tbl.DeleteOrphanFiles(ctx, table.WithFilesOlderThan(orphanAge))
	if err != nil {
		return expired, 0, fmt.Errorf("deleting orphan files: %w", err)
	}
	return expired, len(res.DeletedFiles), nil
}
