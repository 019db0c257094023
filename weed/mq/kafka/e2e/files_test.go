package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/seaweedfs/seaweedfs/weed/pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/seaweedmq"
)

// The filer's conditional writes fence what only one gateway may write:
// a write naming a version the file no longer has is refused, atomically,
// also for a file written before versions were kept.
func TestConditionalFilerWrites(t *testing.T) {
	c := seaweedmq.New(seaweedmq.Options{Masters: []pb.ServerAddress{pb.ServerAddress(cluster.master)},
		WALName: "e2e-conditional-writes"})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := "/etc/kafka-gateway-e2e/" + newTopic(t)

	// A new file: created once; a second creation is refused.
	v1, err := c.WriteFileIf(ctx, dir, "f", []byte("one"), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WriteFileIf(ctx, dir, "f", []byte("again"), ""); !errors.Is(err, filerfs.ErrChanged) {
		t.Fatalf("creating an existing file: %v, want ErrChanged", err)
	}
	// Written at its version; then that version is stale.
	v2, err := c.WriteFileIf(ctx, dir, "f", []byte("two"), v1)
	if err != nil || v2 == v1 {
		t.Fatalf("write at the current version: %q %v", v2, err)
	}
	if _, err := c.WriteFileIf(ctx, dir, "f", []byte("late"), v1); !errors.Is(err, filerfs.ErrChanged) {
		t.Fatalf("write at a stale version: %v, want ErrChanged", err)
	}
	data, v, err := c.ReadFileVersion(ctx, dir, "f")
	if err != nil || string(data) != "two" || v != v2 {
		t.Fatalf("read back: %q %q %v, want two at %q", data, v, err, v2)
	}
	// A file written the old way (no version kept) is versioned by what
	// the filer compares, and fenced the same way.
	if err := c.WriteFile(ctx, dir, "old", []byte("unversioned")); err != nil {
		t.Fatal(err)
	}
	_, vOld, err := c.ReadFileVersion(ctx, dir, "old")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WriteFileIf(ctx, dir, "old", []byte("versioned"), vOld); err != nil {
		t.Fatalf("first conditional write over an unversioned file: %v", err)
	}
	if _, err := c.WriteFileIf(ctx, dir, "old", []byte("late"), vOld); !errors.Is(err, filerfs.ErrChanged) {
		t.Fatalf("a stale write over it: %v, want ErrChanged", err)
	}
	files, err := c.ListFiles(ctx, dir)
	if err != nil || len(files) != 2 {
		t.Fatalf("listing: %+v %v", files, err)
	}
	for _, f := range files {
		if _, v, _ := c.ReadFileVersion(ctx, dir, f.Name); f.Version != v {
			t.Fatalf("%s listed at version %q, read at %q", f.Name, f.Version, v)
		}
	}
	// A removal at a stale version is refused and leaves the file; at
	// its version it removes it, and a missing file is removed already.
	// The same for a file written the old way.
	if err := c.RemoveIf(ctx, dir, "f", v1); !errors.Is(err, filerfs.ErrChanged) {
		t.Fatalf("a removal at a stale version: %v, want ErrChanged", err)
	}
	if err := c.RemoveIf(ctx, dir, "f", v2); err != nil {
		t.Fatalf("a removal at the current version: %v", err)
	}
	if _, _, err := c.ReadFileVersion(ctx, dir, "f"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the removed file: %v, want fs.ErrNotExist", err)
	}
	if err := c.RemoveIf(ctx, dir, "f", v2); err != nil {
		t.Fatalf("removing a missing file: %v", err)
	}
	if err := c.WriteFile(ctx, dir, "old2", []byte("unversioned")); err != nil {
		t.Fatal(err)
	}
	_, vOld2, err := c.ReadFileVersion(ctx, dir, "old2")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveIf(ctx, dir, "old2", "v:0123"); !errors.Is(err, filerfs.ErrChanged) {
		t.Fatalf("removing an unversioned file at another version: %v, want ErrChanged", err)
	}
	if err := c.RemoveIf(ctx, dir, "old2", vOld2); err != nil {
		t.Fatalf("removing an unversioned file at its version: %v", err)
	}
	c.Remove(ctx, "/etc", "kafka-gateway-e2e") //nolint:errcheck
}

// A deleted topic leaves nothing in the filer: its broker makes its empty
// partition directories again when it flushes what the closed publish
// streams left, and every deleted topic once left them behind for good.
func TestDeletedTopicLeavesNothing(t *testing.T) {
	topic, again := newTopic(t), newTopic(t)+"-again"
	adm := kadm.NewClient(newClient(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, name := range []string{topic, again} {
		createTopic(t, name, 3, nil)
		produceBatch(t, name, 0, 300, map[int32][]string{})
		if resp, err := adm.DeleteTopics(ctx, name); err != nil || resp.Error() != nil {
			t.Fatalf("delete: %v %v", err, resp.Error())
		}
	}
	// One is created again at once under its name: what the cleanup
	// removes is the old topic's only.
	createTopic(t, again, 1, nil)
	produceBatch(t, again, 0, 1, map[int32][]string{})
	// The broker makes them again within seconds; the gateway removes
	// them 3 and 15 s after the deletion (and once more later).
	time.Sleep(17 * time.Second)
	dir := "http://127.0.0.1:" + strconv.Itoa(cluster.filerPort) + "/topics/kafka/" + topic + "/"
	resp, err := http.Get(dir)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the deleted topic's directory, 17 s on: %s, holding %v", resp.Status, filerTree(dir))
	}
	got := consumeN(t, again, 1)
	if len(got) != 1 || string(got[0].Value) != "record-0" {
		t.Fatalf("the topic created again holds %d records", len(got))
	}
}

// filerTree lists what the filer holds under dir (an http URL ending in /).
func filerTree(dir string) []string {
	req, _ := http.NewRequest(http.MethodGet, dir, nil)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return []string{err.Error()}
	}
	defer resp.Body.Close()
	var listing struct {
		Entries []struct {
			FullPath string
			Mode     uint32
			FileSize uint64
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&listing); err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, e := range listing.Entries {
		out = append(out, fmt.Sprintf("%s (%d bytes)", e.FullPath, e.FileSize))
		if e.Mode&(1<<31) != 0 {
			out = append(out, filerTree(strings.TrimSuffix(dir, "/")+"/"+path.Base(e.FullPath)+"/")...)
		}
	}
	return out
}
