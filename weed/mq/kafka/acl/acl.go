// Package acl is the gateway's authorizer: Kafka's ACL model (resource
// types topic, group, cluster, transactional id, delegation token and
// user; literal and prefixed patterns; allow and deny; principal and
// host), with the ACLs kept in the SeaweedFS filer and shared by every
// gateway of the cluster.
//
// Decisions follow Kafka's StandardAuthorizer: a super user may do
// everything; a DENY that matches wins over any ALLOW; Read, Write, Delete
// and Alter imply Describe, AlterConfigs implies DescribeConfigs, All
// covers every operation; a resource that no ACL matches at all is allowed
// only with allow.everyone.if.no.acl.found.
//
// Layout, under Dir:
//
//	<sha256 of the binding>.json   one ACL binding
//
// One file per binding makes creating and deleting ACLs on several
// gateways at once safe; every gateway reads the directory again every
// RefreshEvery, and at once after its own changes.
package acl

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/guard"
)

// Dir is where the filer keeps the ACLs.
const Dir = "/etc/kafka-gateway/acls"

// RefreshEvery is how often each gateway reads the ACLs again: what one
// gateway creates applies on the others within it.
const RefreshEvery = 2 * time.Second

// The names of the types, as Kafka's wire codes.
type (
	ResourceType = kmsg.ACLResourceType
	PatternType  = kmsg.ACLResourcePatternType
	Operation    = kmsg.ACLOperation
	Permission   = kmsg.ACLPermissionType
)

// ClusterName is the name of the one cluster resource.
const ClusterName = "kafka-cluster"

// Binding is one ACL: a principal is allowed or denied an operation on the
// resources a pattern matches, from a host.
type Binding struct {
	ResourceType ResourceType `json:"resourceType"`
	ResourceName string       `json:"resourceName"`
	PatternType  PatternType  `json:"patternType"`
	Principal    string       `json:"principal"`
	Host         string       `json:"host"`
	Operation    Operation    `json:"operation"`
	Permission   Permission   `json:"permission"`
}

// key names the binding's file.
func (b Binding) key() string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%d\x00%s\x00%d\x00%s\x00%s\x00%d\x00%d",
		b.ResourceType, b.ResourceName, b.PatternType, b.Principal, b.Host, b.Operation, b.Permission))
	return hex.EncodeToString(sum[:16]) + ".json"
}

// Validate returns why a binding cannot be created, as Kafka refuses it
// (INVALID_REQUEST), or "".
func (b Binding) Validate() string {
	switch b.ResourceType {
	case kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeTransactionalId,
		kmsg.ACLResourceTypeDelegationToken, kmsg.ACLResourceTypeUser:
	case kmsg.ACLResourceTypeCluster:
		if b.ResourceName != ClusterName {
			return "the cluster resource is named " + ClusterName
		}
	default:
		return fmt.Sprintf("resource type %v is not served", b.ResourceType)
	}
	if b.PatternType != kmsg.ACLResourcePatternTypeLiteral && b.PatternType != kmsg.ACLResourcePatternTypePrefixed {
		return "the pattern type must be LITERAL or PREFIXED"
	}
	if b.ResourceName == "" {
		return "the resource name must not be empty"
	}
	if b.PatternType == kmsg.ACLResourcePatternTypePrefixed && b.ResourceName == "*" {
		return "a PREFIXED pattern cannot be *"
	}
	if _, _, ok := strings.Cut(b.Principal, ":"); !ok || strings.HasSuffix(b.Principal, ":") {
		return fmt.Sprintf("principal %q is not TYPE:name", b.Principal)
	}
	if b.Host == "" {
		return "the host must be * or an address"
	}
	switch b.Operation {
	case kmsg.ACLOperationUnknown, kmsg.ACLOperationAny:
		return "the operation must be a concrete one"
	}
	if b.Permission != kmsg.ACLPermissionTypeAllow && b.Permission != kmsg.ACLPermissionTypeDeny {
		return "the permission must be ALLOW or DENY"
	}
	return ""
}

// Filter selects bindings, as DescribeAcls and DeleteAcls name them: nil
// and ANY match everything, MATCH patterns the resources a name falls
// under.
type Filter struct {
	ResourceType ResourceType
	ResourceName *string
	PatternType  PatternType
	Principal    *string
	Host         *string
	Operation    Operation
	Permission   Permission
}

// Matches reports whether the filter selects b.
func (f Filter) Matches(b Binding) bool {
	if f.ResourceType != kmsg.ACLResourceTypeAny && f.ResourceType != b.ResourceType {
		return false
	}
	switch f.PatternType {
	case kmsg.ACLResourcePatternTypeAny:
		if f.ResourceName != nil && *f.ResourceName != b.ResourceName {
			return false
		}
	case kmsg.ACLResourcePatternTypeMatch:
		if f.ResourceName != nil && !patternMatches(b, *f.ResourceName) {
			return false
		}
	default:
		if f.PatternType != b.PatternType || (f.ResourceName != nil && *f.ResourceName != b.ResourceName) {
			return false
		}
	}
	if f.Principal != nil && *f.Principal != b.Principal {
		return false
	}
	if f.Host != nil && *f.Host != b.Host {
		return false
	}
	if f.Operation != kmsg.ACLOperationAny && f.Operation != b.Operation {
		return false
	}
	return f.Permission == kmsg.ACLPermissionTypeAny || f.Permission == b.Permission
}

// ValidFilter returns why a filter cannot select anything, or "".
func (f Filter) ValidFilter() string {
	switch {
	case f.ResourceType == kmsg.ACLResourceTypeUnknown:
		return "unknown resource type"
	case f.PatternType == kmsg.ACLResourcePatternTypeUnknown:
		return "unknown pattern type"
	case f.Operation == kmsg.ACLOperationUnknown:
		return "unknown operation"
	case f.Permission == kmsg.ACLPermissionTypeUnknown:
		return "unknown permission"
	}
	return ""
}

// patternMatches reports whether b's pattern covers the resource name.
func patternMatches(b Binding, name string) bool {
	switch b.PatternType {
	case kmsg.ACLResourcePatternTypeLiteral:
		return b.ResourceName == name || b.ResourceName == "*"
	case kmsg.ACLResourcePatternTypePrefixed:
		return strings.HasPrefix(name, b.ResourceName)
	}
	return false
}

// Options configure an Authorizer.
type Options struct {
	Files filerfs.Files
	// SuperUsers may do everything (super.users).
	SuperUsers []string
	// AllowIfNoACL allows what no ACL of the resource speaks of
	// (allow.everyone.if.no.acl.found).
	AllowIfNoACL bool
}

// Authorizer decides requests by the cluster's ACLs.
type Authorizer struct {
	opts  Options
	super map[string]bool

	mu       sync.RWMutex
	bindings []Binding
	loaded   bool

	loop *filerfs.Loop
}

// New returns an Authorizer; Start begins reading the ACLs.
func New(opts Options) *Authorizer {
	a := &Authorizer{opts: opts, super: map[string]bool{}}
	a.loop = filerfs.NewLoop(RefreshEvery, func(ctx context.Context) {
		if err := guard.Try("AclRefresh", func() error { return a.Refresh(ctx) }); err != nil {
			glog.V(1).Infof("kafka acls: reading %s: %v", Dir, err)
		}
	})
	for _, u := range opts.SuperUsers {
		a.super[u] = true
	}
	return a
}

// Start reads the ACLs now and every RefreshEvery, until Close.
func (a *Authorizer) Start() { a.loop.Start() }

// Close stops the refreshes.
func (a *Authorizer) Close() { a.loop.Close() }

// Ready reports whether the ACLs have been read once: until then every
// request is refused (except a super user's).
func (a *Authorizer) Ready() error {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if !a.loaded {
		return errors.New("the ACLs are not read yet")
	}
	return nil
}

// Refresh reads the ACLs from the filer.
func (a *Authorizer) Refresh(ctx context.Context) error {
	files, err := a.opts.Files.ListFiles(ctx, Dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	var bs []Binding
	for _, f := range files {
		if f.Dir || !strings.HasSuffix(f.Name, ".json") {
			continue
		}
		var b Binding
		if err := json.Unmarshal(f.Data, &b); err != nil || b.Validate() != "" {
			glog.Warningf("kafka acls: ignoring unreadable %s/%s", Dir, f.Name)
			continue
		}
		bs = append(bs, b)
	}
	a.mu.Lock()
	a.bindings, a.loaded = bs, true
	a.mu.Unlock()
	return nil
}

// appliesTo reports whether b speaks of principal connected from host.
func (b Binding) appliesTo(principal, host string) bool {
	return (b.Principal == principal || b.Principal == "User:*") && (b.Host == "*" || b.Host == host)
}

// Authorize decides whether principal, connected from host, may do op on
// the resource of type rt named name.
func (a *Authorizer) Authorize(principal, host string, op Operation, rt ResourceType, name string) bool {
	if a.super[principal] {
		return true
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	if !a.loaded {
		return false
	}
	matched, allowed := false, false
	for _, b := range a.bindings {
		if b.ResourceType != rt || !patternMatches(b, name) {
			continue
		}
		matched = true
		if !b.appliesTo(principal, host) {
			continue
		}
		if b.Permission == kmsg.ACLPermissionTypeDeny {
			if b.Operation == op || b.Operation == kmsg.ACLOperationAll {
				return false
			}
			continue
		}
		if implies(b.Operation, op) {
			allowed = true
		}
	}
	if !matched {
		return a.opts.AllowIfNoACL
	}
	return allowed
}

// implies reports whether an ALLOW of granted allows op.
func implies(granted, op Operation) bool {
	if granted == op || granted == kmsg.ACLOperationAll {
		return true
	}
	switch op {
	case kmsg.ACLOperationDescribe:
		switch granted {
		case kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
			return true
		}
	case kmsg.ACLOperationDescribeConfigs:
		return granted == kmsg.ACLOperationAlterConfigs
	}
	return false
}

// AuthorizeAny reports whether principal may do op on some resource of
// type rt (Kafka's authorizeByResourceType: an InitProducerId without a
// transactional id needs Write on some topic).
func (a *Authorizer) AuthorizeAny(principal, host string, op Operation, rt ResourceType) bool {
	if a.super[principal] {
		return true
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	if !a.loaded {
		return false
	}
	denied := map[string]bool{} // names denied outright
	any, wildcard := false, false
	for _, b := range a.bindings {
		if b.ResourceType == rt && b.PatternType == kmsg.ACLResourcePatternTypeLiteral && b.ResourceName == "*" {
			wildcard = true
		}
		if b.ResourceType != rt || !b.appliesTo(principal, host) {
			continue
		}
		if b.Permission == kmsg.ACLPermissionTypeDeny && (b.Operation == op || b.Operation == kmsg.ACLOperationAll) {
			if b.PatternType == kmsg.ACLResourcePatternTypeLiteral && b.ResourceName == "*" {
				return false
			}
			denied[b.ResourceName] = true
		}
	}
	for _, b := range a.bindings {
		if b.ResourceType != rt || b.Permission != kmsg.ACLPermissionTypeAllow || !implies(b.Operation, op) || !b.appliesTo(principal, host) {
			continue
		}
		if !denied[b.ResourceName] {
			any = true
		}
	}
	// As Kafka's authorizers: a resource of the type that no ACL speaks
	// of would be allowed to everyone, unless a wildcard covers them all.
	return any || (a.opts.AllowIfNoACL && !wildcard)
}

// Operations are the operations a resource may have, for the
// authorized-operations fields.
var Operations = map[ResourceType][]Operation{
	kmsg.ACLResourceTypeTopic: {kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDelete,
		kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs},
	kmsg.ACLResourceTypeGroup: {kmsg.ACLOperationRead, kmsg.ACLOperationDelete, kmsg.ACLOperationDescribe},
	kmsg.ACLResourceTypeCluster: {kmsg.ACLOperationCreate, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe, kmsg.ACLOperationClusterAction,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite},
	kmsg.ACLResourceTypeTransactionalId: {kmsg.ACLOperationDescribe, kmsg.ACLOperationWrite},
	kmsg.ACLResourceTypeDelegationToken: {kmsg.ACLOperationDescribe},
	kmsg.ACLResourceTypeUser:            {kmsg.ACLOperationCreateTokens, kmsg.ACLOperationDescribeTokens},
}

// AuthorizedOperations is the bit field of what principal may do on the
// resource: bit n for operation n, as Kafka's authorized-operations
// fields.
func (a *Authorizer) AuthorizedOperations(principal, host string, rt ResourceType, name string) int32 {
	var bits int32
	for _, op := range Operations[rt] {
		if a.Authorize(principal, host, op, rt, name) {
			bits |= 1 << op
		}
	}
	return bits
}

// Bindings returns the bindings a filter selects.
func (a *Authorizer) Bindings(f Filter) []Binding {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var out []Binding
	for _, b := range a.bindings {
		if f.Matches(b) {
			out = append(out, b)
		}
	}
	return out
}

// Create stores bindings; each gets its error (nil: created or there
// already).
func (a *Authorizer) Create(ctx context.Context, bs []Binding) []error {
	errs := make([]error, len(bs))
	for i, b := range bs {
		data, err := json.Marshal(b)
		if err == nil {
			err = a.opts.Files.WriteFile(ctx, Dir, b.key(), data)
		}
		errs[i] = err
	}
	if err := a.Refresh(ctx); err != nil {
		glog.V(1).Infof("kafka acls: reading %s after a change: %v", Dir, err)
	}
	return errs
}

// Delete removes the bindings each filter selects and returns them.
func (a *Authorizer) Delete(ctx context.Context, filters []Filter) ([][]Binding, []error) {
	if err := a.Refresh(ctx); err != nil {
		errs := make([]error, len(filters))
		for i := range errs {
			errs[i] = err
		}
		return make([][]Binding, len(filters)), errs
	}
	out := make([][]Binding, len(filters))
	errs := make([]error, len(filters))
	for i, f := range filters {
		for _, b := range a.Bindings(f) {
			if err := a.opts.Files.Remove(ctx, Dir, b.key()); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs[i] = err
				break
			}
			out[i] = append(out[i], b)
		}
	}
	if err := a.Refresh(ctx); err != nil {
		glog.V(1).Infof("kafka acls: reading %s after a change: %v", Dir, err)
	}
	return out, errs
}
