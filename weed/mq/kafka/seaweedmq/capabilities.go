package seaweedmq

// The filer's conditional writes, which the gateway relies on wherever two
// gateways may write one file (segments, the write-ahead log, the
// membership view, group offsets, users): SeaweedFS's filer checks them
// from version MinSeaweedFS on. An older filer ignores the conditions it
// does not know and writes anyway, which would lose updates silently; so
// the gateway asks once, before it serves, whether the filer refuses what
// it must refuse.

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
)

// MinSeaweedFS is the oldest SeaweedFS whose filer the gateway serves on:
// the version it is built with, whose filer checks every condition the
// gateway's writes carry (conditional creates, IF_CHUNKS_EQUAL, deletes
// on an extended attribute).
const MinSeaweedFS = "4.53"

// ErrFilerTooOld: the filer does not check a condition the gateway's
// writes rely on.
var ErrFilerTooOld = errors.New("the filer is older than the gateway needs")

// probeDir holds each gateway's probe file, by its log's name (node id).
const probeDir = "/etc/kafka-gateway/probe"

// checkFiler writes a probe file under conditions that must fail, and
// returns ErrFilerTooOld naming the first that did not.
func (c *Client) checkFiler(ctx context.Context) error {
	name := c.opts.WALName
	if err := c.Remove(ctx, probeDir, name); err != nil {
		return err
	}
	defer c.Remove(context.WithoutCancel(ctx), probeDir, name) //nolint:errcheck // the next start removes it
	tooOld := func(what string) error {
		f, _ := c.filerAddr(ctx)
		return fmt.Errorf("%w: the filer at %s %s, which SeaweedFS %s and newer refuse: upgrade the cluster's filers to SeaweedFS %s or newer", ErrFilerTooOld, f, what, MinSeaweedFS, MinSeaweedFS)
	}
	if _, err := c.WriteFileIf(ctx, probeDir, name, []byte("probe"), ""); err != nil {
		return err
	}
	switch _, err := c.WriteFileIf(ctx, probeDir, name, []byte("probe again"), ""); {
	case err == nil:
		return tooOld("wrote over an existing file a create meant only for a new one (WriteCondition IF_NOT_EXISTS)")
	case !errors.Is(err, filerfs.ErrChanged):
		return err
	}
	switch _, err := c.WriteFileIf(ctx, probeDir, name, []byte("probe of another version"), "v:not-its-version"); {
	case err == nil:
		return tooOld("wrote a file whose version was not the one named (WriteCondition IF_ETAG_MATCH)")
	case !errors.Is(err, filerfs.ErrChanged):
		return err
	}
	err := c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		err := createIf(ctx, fc, c.l.at(probeDir), &filer_pb.Entry{Name: name, Attributes: &filer_pb.FuseAttributes{FileMode: 0o644}},
			&filer_pb.WriteCondition_Clause{Kind: filer_pb.WriteCondition_IF_CHUNKS_EQUAL, Fids: []string{"1,01637037d6"}})
		switch {
		case err == nil:
			return tooOld("replaced a file whose chunks were not the ones named (WriteCondition IF_CHUNKS_EQUAL)")
		case !errors.Is(err, errPrecondition):
			return err
		}
		_, err = fc.DeleteEntry(ctx, &filer_pb.DeleteEntryRequest{Directory: c.l.at(probeDir), Name: name,
			ExpectedExtended: map[string][]byte{versionAttr: []byte("not-its-version")}})
		switch {
		case err == nil:
			return tooOld("deleted a file whose version was not the one named (DeleteEntry's expected_extended)")
		case status.Code(err) != codes.FailedPrecondition:
			return err
		}
		return nil
	})
	return err
}
