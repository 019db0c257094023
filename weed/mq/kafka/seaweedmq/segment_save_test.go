package seaweedmq

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/mq"
	"github.com/seaweedfs/seaweedfs/weed/mq/topic"
	"github.com/seaweedfs/seaweedfs/weed/operation"
	"github.com/seaweedfs/seaweedfs/weed/pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// segmentFiler is a filer of one directory's entries, with the filer's
// conditional create for the conditions segment writes use (a create
// otherwise replaces the entry, as the filer's does).
type segmentFiler struct {
	filer_pb.UnimplementedSeaweedFilerServer
	mu      sync.Mutex
	entries map[string]*filer_pb.Entry // by name
	// beforeCreate, if set, runs (under mu) before each create is
	// checked and made.
	beforeCreate func(req *filer_pb.CreateEntryRequest)
	// ignore and ignoreExpected make it a filer older than the gateway
	// needs: conditions of those kinds, and deletes' expected_extended,
	// are not checked.
	ignore         map[filer_pb.WriteCondition_Kind]bool
	ignoreExpected bool
}

// DistributedLock grants every lock: one gateway holds them in these tests.
func (f *segmentFiler) DistributedLock(context.Context, *filer_pb.LockRequest) (*filer_pb.LockResponse, error) {
	return &filer_pb.LockResponse{RenewToken: "token"}, nil
}

func (f *segmentFiler) DistributedUnlock(context.Context, *filer_pb.UnlockRequest) (*filer_pb.UnlockResponse, error) {
	return &filer_pb.UnlockResponse{}, nil
}

func (f *segmentFiler) LookupDirectoryEntry(_ context.Context, req *filer_pb.LookupDirectoryEntryRequest) (*filer_pb.LookupDirectoryEntryResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.entries[req.Name]
	if e == nil {
		return &filer_pb.LookupDirectoryEntryResponse{}, nil
	}
	return &filer_pb.LookupDirectoryEntryResponse{Entry: proto.Clone(e).(*filer_pb.Entry)}, nil
}

func (f *segmentFiler) CreateEntry(_ context.Context, req *filer_pb.CreateEntryRequest) (*filer_pb.CreateEntryResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.beforeCreate != nil {
		f.beforeCreate(req)
	}
	cur := f.entries[req.Entry.Name]
	for _, c := range req.GetCondition().GetClauses() {
		if f.ignore[c.Kind] {
			continue
		}
		ok := false
		switch c.Kind {
		case filer_pb.WriteCondition_IF_NOT_EXISTS:
			ok = cur == nil
		case filer_pb.WriteCondition_IF_ETAG_MATCH:
			ok = cur != nil && slices.Contains(c.Etags, strings.TrimPrefix(fileVersion(cur), "v:"))
		case filer_pb.WriteCondition_IF_CHUNKS_EQUAL:
			var fids []string
			for _, ch := range cur.GetChunks() {
				fids = append(fids, ch.GetFileIdString())
			}
			want := slices.Clone(c.Fids)
			slices.Sort(fids)
			slices.Sort(want)
			ok = slices.Equal(fids, want)
		}
		if !ok {
			return &filer_pb.CreateEntryResponse{Error: "precondition failed", ErrorCode: filer_pb.FilerError_PRECONDITION_FAILED}, nil
		}
	}
	f.entries[req.Entry.Name] = proto.Clone(req.Entry).(*filer_pb.Entry)
	return &filer_pb.CreateEntryResponse{}, nil
}

// UpdateEntry replaces the entry, as the filer's does without a
// condition (SeaweedFS's own writers update files so).
func (f *segmentFiler) UpdateEntry(_ context.Context, req *filer_pb.UpdateEntryRequest) (*filer_pb.UpdateEntryResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entries[req.Entry.Name] = proto.Clone(req.Entry).(*filer_pb.Entry)
	return &filer_pb.UpdateEntryResponse{}, nil
}

func (f *segmentFiler) ListEntries(req *filer_pb.ListEntriesRequest, stream filer_pb.SeaweedFiler_ListEntriesServer) error {
	f.mu.Lock()
	var names []string
	for n := range f.entries {
		if n > req.StartFromFileName || (req.InclusiveStartFrom && n == req.StartFromFileName) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var es []*filer_pb.Entry
	for _, n := range names {
		es = append(es, proto.Clone(f.entries[n]).(*filer_pb.Entry))
	}
	f.mu.Unlock()
	for _, e := range es {
		if err := stream.Send(&filer_pb.ListEntriesResponse{Entry: e}); err != nil {
			return err
		}
	}
	return nil
}

func (f *segmentFiler) DeleteEntry(_ context.Context, req *filer_pb.DeleteEntryRequest) (*filer_pb.DeleteEntryResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur := f.entries[req.Name]
	if len(req.ExpectedExtended) > 0 && !f.ignoreExpected {
		if cur == nil {
			return nil, status.Error(codes.FailedPrecondition, "not found")
		}
		for k, want := range req.ExpectedExtended {
			if got, ok := cur.Extended[k]; ok && !bytes.Equal(got, want) || !ok && len(want) > 0 {
				return nil, status.Errorf(codes.FailedPrecondition, "extended attribute %q changed", k)
			}
		}
	}
	delete(f.entries, req.Name)
	return &filer_pb.DeleteEntryResponse{}, nil
}

// segmentEntry is a gateway's segment file of offsets first to last in the
// given chunks.
func segmentEntry(name string, first, last int64, fids ...string) *filer_pb.Entry {
	e := &filer_pb.Entry{Name: name, Attributes: &filer_pb.FuseAttributes{}, Extended: map[string][]byte{
		mq.ExtendedAttrOffsetMin: binary.BigEndian.AppendUint64(nil, uint64(first)),
		mq.ExtendedAttrOffsetMax: binary.BigEndian.AppendUint64(nil, uint64(last)),
		gatewaySegmentAttr:       {1},
	}}
	for i, fid := range fids {
		e.Chunks = append(e.Chunks, &filer_pb.FileChunk{FileId: fid, Offset: int64(i) * 100, Size: 100})
	}
	e.Attributes.FileSize = uint64(len(fids)) * 100
	return e
}

// startSegmentFiler serves f on a port of its own until the test ends and
// returns a client of it.
func startSegmentFiler(t *testing.T, f *segmentFiler) *Client {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	filer_pb.RegisterSeaweedFilerServer(srv, f)
	go srv.Serve(lis) //nolint:errcheck // ends with Stop
	t.Cleanup(srv.Stop)
	port := lis.Addr().(*net.TCPAddr).Port
	c := &Client{
		filer: pb.NewServerAddress("127.0.0.1", port, port),
		opts:  Options{Security: Security{DialOption: grpc.WithTransportCredentials(insecure.NewCredentials())}},
	}
	c.segs.init()
	return c
}

// Two gateways appending to one segment file at once: the second update
// finds the file changed and looks again, so the first's chunk stays
// (before, the filer's create replaced the entry with the second's
// lookup plus its chunk, and deleted the first's chunk: a new leader's
// recovered records, acknowledged, gone from the segments, and readers
// past them skipping their offsets).
func TestSegmentAppendsDoNotOverwrite(t *testing.T) {
	const dir = "/topics/kafka/t/v/0000-0630"
	newest := time.Now().Add(time.Hour).UTC().Format(topic.TIME_FORMAT)
	f := &segmentFiler{entries: map[string]*filer_pb.Entry{newest: segmentEntry(newest, 0, 9, "1,a1")}}
	c := startSegmentFiler(t, f)
	c.segs.knowEnd(segment{entry: f.entries[newest]}.key(dir), 10)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	now := time.Now().UnixNano()

	// The deposed leader's tail, offsets 10-14, and meanwhile the next
	// leader's recovery of 10-19 from the logs: both name the newest
	// file (their records are older than its name) and look it up before
	// either writes.
	raced := false
	c.beforeSegmentSave = func() {
		if raced {
			return
		}
		raced = true
		// Another gateway's write: this gateway's lock of the directory
		// does not hold it.
		if err := c.saveSegmentOnce(ctx, dir, defaultRolling, 10, 19, now, "3,c3", &operation.UploadResult{Size: 100}); err != nil {
			t.Errorf("the recovery's write: %v", err)
		}
	}
	err := c.saveSegment(ctx, dir, defaultRolling, 10, 14, now, "2,b2", &operation.UploadResult{Size: 100})
	var covered *coveredError
	if !errors.As(err, &covered) || covered.end != 20 {
		t.Fatalf("the tail's write: %v, want the segments covering it up to offset 19", err)
	}
	e := f.entries[newest]
	var fids []string
	for _, ch := range e.Chunks {
		fids = append(fids, ch.GetFileIdString())
	}
	if got := strings.Join(fids, " "); got != "1,a1 3,c3" || len(f.entries) != 1 {
		t.Fatalf("segment file chunks %q (%d files), want the first segment's and the recovery's", got, len(f.entries))
	}
	if max := int64(binary.BigEndian.Uint64(e.Extended[mq.ExtendedAttrOffsetMax])); max != 19 {
		t.Fatalf("offset_max %d, want 19", max)
	}
	if st, err := c.flushed(ctx, dir, true); err != nil || st.end != 20 {
		t.Fatalf("segments end at %v (%v), want 20", st, err)
	}
}

// A segment's upload stops asking the filer for a volume once its caller
// gave up: SeaweedFS's uploader retries the assignment on its own.
func TestUploadFilerCallsEndWithTheirContext(t *testing.T) {
	c := &Client{filer: "127.0.0.1:1"}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	err := filerClient{c, ctx}.WithFilerClient(false, func(filer_pb.SeaweedFilerClient) error {
		called = true
		return nil
	})
	if called || !errors.Is(err, context.Canceled) {
		t.Fatalf("called %v, error %v: want no call and the context's error", called, err)
	}
}

// A cleaner removes a segment it merged into another only if the segment
// is as it listed it: one the partition's next cleaner rewrote meanwhile
// (a deposed cleaner's round running late), or the leader appended to,
// stays with the records it holds.
func TestCleanerRemovesOnlyTheSegmentAsListed(t *testing.T) {
	const dir = "/topics/kafka/t/v/0000-0630"
	f := &segmentFiler{entries: map[string]*filer_pb.Entry{
		"s1": segmentEntry("s1", 0, 9, "1,a1"),
		"s2": segmentEntry("s2", 10, 19, "2,b2"),
		"s3": segmentEntry("s3", 20, 29, "3,c3"),
	}}
	c := startSegmentFiler(t, f)
	l := &cleanedLog{c: c, dir: dir}
	ctx := context.Background()
	segs, err := l.Segments(ctx)
	if err != nil || len(segs) != 3 {
		t.Fatalf("%d segments, %v", len(segs), err)
	}
	// The next cleaner merged s2 and s3 into s2 (its offsets up to 29,
	// its base 10) while this one held its listing.
	rewritten := segmentEntry("s2", 10, 29, "4,d4")
	rewritten.Extended[cleanedBaseAttr] = binary.BigEndian.AppendUint64(nil, 10)
	f.mu.Lock()
	f.entries["s2"] = rewritten
	f.mu.Unlock()
	if err := l.Remove(ctx, segs[1]); err == nil {
		t.Fatal("removed a segment rewritten since it was listed")
	}
	if _, ok := f.entries["s2"]; !ok {
		t.Fatal("the rewritten segment is gone")
	}
	if err := l.Remove(ctx, segs[2]); err != nil {
		t.Fatalf("removing a segment as listed: %v", err)
	}
	if _, ok := f.entries["s3"]; ok {
		t.Fatal("the segment as listed is still there")
	}
}
