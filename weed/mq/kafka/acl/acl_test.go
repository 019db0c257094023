package acl

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs/filerfstest"
)

func bind(rt ResourceType, name string, pt PatternType, principal string, op Operation, perm Permission) Binding {
	return Binding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: "*", Operation: op, Permission: perm}
}

const (
	topic   = kmsg.ACLResourceTypeTopic
	group   = kmsg.ACLResourceTypeGroup
	cluster = kmsg.ACLResourceTypeCluster
	literal = kmsg.ACLResourcePatternTypeLiteral
	prefix  = kmsg.ACLResourcePatternTypePrefixed
	allow   = kmsg.ACLPermissionTypeAllow
	deny    = kmsg.ACLPermissionTypeDeny
)

func authorizer(allowIfNoACL bool, bs ...Binding) *Authorizer {
	a := New(Options{SuperUsers: []string{"User:root"}, AllowIfNoACL: allowIfNoACL})
	a.bindings, a.loaded = bs, true
	return a
}

// Kafka's rules: super users, deny over allow, implied Describe and
// DescribeConfigs, All, wildcards and prefixes, hosts, and what no ACL
// speaks of.
func TestAuthorize(t *testing.T) {
	a := authorizer(false,
		bind(topic, "orders", literal, "User:bob", kmsg.ACLOperationRead, allow),
		bind(topic, "logs-", prefix, "User:bob", kmsg.ACLOperationWrite, allow),
		bind(topic, "logs-secret", literal, "User:bob", kmsg.ACLOperationWrite, deny),
		bind(topic, "*", literal, "User:carol", kmsg.ACLOperationAll, allow),
		bind(topic, "conf", literal, "User:*", kmsg.ACLOperationAlterConfigs, allow),
		bind(group, "g", literal, "User:bob", kmsg.ACLOperationRead, allow),
		Binding{ResourceType: topic, ResourceName: "hosted", PatternType: literal, Principal: "User:bob", Host: "10.0.0.1", Operation: kmsg.ACLOperationRead, Permission: allow},
	)
	for _, tc := range []struct {
		principal, host string
		op              Operation
		rt              ResourceType
		name            string
		want            bool
	}{
		{"User:root", "1.2.3.4", kmsg.ACLOperationDelete, topic, "anything", true},
		{"User:bob", "1.2.3.4", kmsg.ACLOperationRead, topic, "orders", true},
		{"User:bob", "1.2.3.4", kmsg.ACLOperationDescribe, topic, "orders", true}, // Read implies Describe
		{"User:bob", "1.2.3.4", kmsg.ACLOperationWrite, topic, "orders", false},
		{"User:bob", "1.2.3.4", kmsg.ACLOperationWrite, topic, "logs-app", true},
		{"User:bob", "1.2.3.4", kmsg.ACLOperationWrite, topic, "logs-secret", false}, // deny wins
		{"User:bob", "1.2.3.4", kmsg.ACLOperationWrite, topic, "log", false},
		{"User:carol", "1.2.3.4", kmsg.ACLOperationDelete, topic, "orders", true},       // All on *
		{"User:dave", "1.2.3.4", kmsg.ACLOperationDescribeConfigs, topic, "conf", true}, // AlterConfigs implies DescribeConfigs, User:*
		{"User:dave", "1.2.3.4", kmsg.ACLOperationRead, topic, "conf", false},
		{"User:bob", "1.2.3.4", kmsg.ACLOperationRead, group, "g", true},
		{"User:bob", "1.2.3.4", kmsg.ACLOperationDelete, group, "g", false},
		{"User:bob", "10.0.0.1", kmsg.ACLOperationRead, topic, "hosted", true},
		{"User:bob", "10.0.0.2", kmsg.ACLOperationRead, topic, "hosted", false},
		{"User:bob", "1.2.3.4", kmsg.ACLOperationRead, group, "other", false},           // no ACL: denied by default
		{"User:bob", "1.2.3.4", kmsg.ACLOperationDescribe, cluster, ClusterName, false}, // no ACL
	} {
		if got := a.Authorize(tc.principal, tc.host, tc.op, tc.rt, tc.name); got != tc.want {
			t.Errorf("%s from %s: %v on %v %q: %v, want %v", tc.principal, tc.host, tc.op, tc.rt, tc.name, got, tc.want)
		}
	}
	open := authorizer(true, bind(topic, "orders", literal, "User:bob", kmsg.ACLOperationRead, allow))
	if !open.Authorize("User:eve", "h", kmsg.ACLOperationWrite, topic, "free") || open.Authorize("User:eve", "h", kmsg.ACLOperationRead, topic, "orders") {
		t.Error("allow.everyone.if.no.acl.found: a resource without ACLs is open, one with ACLs is not")
	}
	if !a.AuthorizeAny("User:bob", "h", kmsg.ACLOperationWrite, topic) || a.AuthorizeAny("User:dave", "h", kmsg.ACLOperationWrite, topic) {
		t.Error("Write on some topic: bob has it (logs-), dave does not")
	}
	if got := a.AuthorizedOperations("User:bob", "h", group, "g"); got != 1<<kmsg.ACLOperationRead|1<<kmsg.ACLOperationDescribe {
		t.Errorf("bob's operations on group g: %b", got)
	}
	unread := New(Options{})
	if unread.Authorize("User:bob", "h", kmsg.ACLOperationRead, topic, "orders") {
		t.Error("before the ACLs are read, nothing is allowed")
	}
}

func TestFilters(t *testing.T) {
	b := bind(topic, "logs-", prefix, "User:bob", kmsg.ACLOperationWrite, allow)
	name, other := "logs-app", "User:carol"
	for _, tc := range []struct {
		f    Filter
		want bool
	}{
		{Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, true},
		{Filter{ResourceType: topic, ResourceName: &name, PatternType: kmsg.ACLResourcePatternTypeMatch, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, true},
		{Filter{ResourceType: topic, ResourceName: &name, PatternType: literal, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, false},
		{Filter{ResourceType: topic, PatternType: prefix, Principal: &other, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, false},
		{Filter{ResourceType: group, PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, false},
	} {
		if got := tc.f.Matches(b); got != tc.want {
			t.Errorf("%+v: %v, want %v", tc.f, got, tc.want)
		}
	}
	for _, bad := range []Binding{
		bind(cluster, "other", literal, "User:bob", kmsg.ACLOperationAlter, allow),
		bind(topic, "*", prefix, "User:bob", kmsg.ACLOperationRead, allow),
		bind(topic, "t", literal, "bob", kmsg.ACLOperationRead, allow),
		bind(topic, "t", literal, "User:bob", kmsg.ACLOperationAny, allow),
		bind(topic, "t", kmsg.ACLResourcePatternTypeMatch, "User:bob", kmsg.ACLOperationRead, allow),
	} {
		if bad.Validate() == "" {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// Created bindings are read back by another gateway's authorizer; deleted
// ones disappear from both.
func TestStoreShared(t *testing.T) {
	files := filerfstest.New()
	one, two := New(Options{Files: files}), New(Options{Files: files})
	b := bind(topic, "orders", literal, "User:bob", kmsg.ACLOperationRead, allow)
	if errs := one.Create(context.Background(), []Binding{b, b}); errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	if err := two.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !two.Authorize("User:bob", "h", kmsg.ACLOperationRead, topic, "orders") || len(two.Bindings(Filter{ResourceType: kmsg.ACLResourceTypeAny,
		PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny})) != 1 {
		t.Fatal("the other gateway does not apply the binding, once")
	}
	deleted, errs := two.Delete(context.Background(), []Filter{{ResourceType: topic, PatternType: kmsg.ACLResourcePatternTypeAny,
		Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}})
	if errs[0] != nil || len(deleted[0]) != 1 {
		t.Fatal(deleted, errs)
	}
	one.Refresh(context.Background())
	if one.Authorize("User:bob", "h", kmsg.ACLOperationRead, topic, "orders") {
		t.Fatal("a deleted binding still applies")
	}
}
