package seaweedmq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
)

// The filer's distributed locks, as package membership uses them. A filer
// forwards a lock call to the filer that holds the lock's name.

// ErrLockHeld is Lock's error for a lock another owner holds.
var ErrLockHeld = errors.New("the lock is held")

// Lock takes (token "") or renews a filer lock for ttl, rounded up to whole
// seconds, and returns the token to renew it with.
func (c *Client) Lock(ctx context.Context, name, owner, token string, ttl time.Duration) (string, error) {
	name = c.l.named(name)
	secs := int64((ttl + time.Second - 1) / time.Second)
	var got string
	err := c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		resp, err := fc.DistributedLock(ctx, &filer_pb.LockRequest{Name: name, SecondsToLock: secs, RenewToken: token, Owner: owner})
		if err != nil {
			return err
		}
		if resp.Error != "" || resp.RenewToken == "" {
			return fmt.Errorf("lock %s: held by %q: %s: %w", name, resp.LockOwner, resp.Error, ErrLockHeld)
		}
		got = resp.RenewToken
		return nil
	})
	return got, err
}

// Unlock releases a lock taken with token.
func (c *Client) Unlock(ctx context.Context, name, token string) error {
	name = c.l.named(name)
	return c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		resp, err := fc.DistributedUnlock(ctx, &filer_pb.UnlockRequest{Name: name, RenewToken: token})
		if err != nil {
			return err
		}
		if resp.Error != "" {
			return fmt.Errorf("unlock %s: %s", name, resp.Error)
		}
		return nil
	})
}

// LockOwner returns the owner of a held lock, "" if it is free.
func (c *Client) LockOwner(ctx context.Context, name string) (string, error) {
	name = c.l.named(name)
	var owner string
	err := c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		resp, err := fc.FindLockOwner(ctx, &filer_pb.FindLockOwnerRequest{Name: name})
		if status.Code(err) == codes.NotFound {
			return nil
		}
		if err != nil {
			return err
		}
		owner = resp.Owner
		return nil
	})
	var st interface{ GRPCStatus() *status.Status }
	if errors.As(err, &st) && st.GRPCStatus().Code() == codes.NotFound {
		return "", nil
	}
	return owner, err
}

// ReadSecret reads a value of the filer's key-value store (nil if there
// is none): it is reached over gRPC only, never served by the filer's HTTP
// API, which serves every file.
func (c *Client) ReadSecret(ctx context.Context, name string) ([]byte, error) {
	name = c.l.named(name)
	var value []byte
	err := c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		resp, err := fc.KvGet(ctx, &filer_pb.KvGetRequest{Key: []byte(name)})
		if err != nil {
			return err
		}
		if resp.Error != "" {
			return fmt.Errorf("read %s from the filer's key-value store: %s", name, resp.Error)
		}
		value = resp.Value
		return nil
	})
	return value, err
}

// WriteSecret writes a value of the filer's key-value store.
func (c *Client) WriteSecret(ctx context.Context, name string, value []byte) error {
	name = c.l.named(name)
	return c.withFiler(ctx, func(fc filer_pb.SeaweedFilerClient) error {
		resp, err := fc.KvPut(ctx, &filer_pb.KvPutRequest{Key: []byte(name), Value: value})
		if err != nil {
			return err
		}
		if resp.Error != "" {
			return fmt.Errorf("write %s to the filer's key-value store: %s", name, resp.Error)
		}
		return nil
	})
}
