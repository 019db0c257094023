package filerfstest

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Locks are the filer's locks in memory, as the membership takes them: a
// lock is held until it is unlocked or its ttl passes on the clock now.
type Locks struct {
	mu    sync.Mutex
	now   func() time.Time
	locks map[string]heldLock
	seq   int
}

type heldLock struct {
	owner, token string
	until        time.Time
}

// NewLocks returns locks on the clock now (time.Now if nil).
func NewLocks(now func() time.Time) *Locks {
	if now == nil {
		now = time.Now
	}
	return &Locks{now: now, locks: map[string]heldLock{}}
}

// Lock takes (token "") or renews the lock name for ttl and returns the
// token to renew it with; it fails while another owner holds it.
func (l *Locks) Lock(_ context.Context, name, owner, token string, ttl time.Duration) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, held := l.locks[name]
	if held && l.now().Before(h.until) && h.token != token {
		return "", fmt.Errorf("lock %s held by %s", name, h.owner)
	}
	l.seq++
	h = heldLock{owner: owner, token: fmt.Sprint(l.seq), until: l.now().Add(ttl)}
	l.locks[name] = h
	return h.token, nil
}

// Unlock releases a lock taken with token.
func (l *Locks) Unlock(_ context.Context, name, token string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.locks[name].token == token {
		delete(l.locks, name)
	}
	return nil
}

// LockOwner returns the owner of a held lock, "" if it is free.
func (l *Locks) LockOwner(_ context.Context, name string) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, held := l.locks[name]
	if !held || !l.now().Before(h.until) {
		return "", nil
	}
	return h.owner, nil
}
