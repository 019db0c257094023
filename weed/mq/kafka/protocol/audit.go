package protocol

// The audit log's view of the Kafka APIs (-audit.enabled, package audit):
// each administrative request, with its outcome per resource, and each
// request the ACLs deny. Reads are not audited, nor are denials of the
// listings that leave out what the principal may not see (as Kafka's
// authorizer logs only the denials it answers with an error).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/acl"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/audit"
)

// listings filter what they answer by the ACLs: their denials are not
// audited.
var listings = map[int16]bool{
	int16(kmsg.ListGroups): true, int16(kmsg.ListTransactions): true, int16(kmsg.DescribeLogDirs): true,
	int16(kmsg.DescribeTopicPartitions): true, int16(kmsg.DescribeUserSCRAMCredentials): true,
	int16(kmsg.DescribeACLs): true, int16(kmsg.DescribeClientQuotas): true, int16(kmsg.DescribeDelegationToken): true,
}

// listing reports whether the request lists what the principal may see
// (every topic of Metadata, every commit of OffsetFetch, ...) rather
// than naming it.
func listing(r *Request) bool {
	if listings[r.Key] {
		return true
	}
	switch req := r.Body.(type) {
	case *kmsg.MetadataRequest:
		return req.Topics == nil
	case *kmsg.OffsetFetchRequest:
		if r.Version >= 8 {
			for _, g := range req.Groups {
				if g.Topics == nil {
					return true
				}
			}
			return false
		}
		return req.Topics == nil
	case *kmsg.DescribeShareGroupOffsetsRequest:
		for _, g := range req.Groups {
			if g.Topics == nil {
				return true
			}
		}
	}
	return false
}

// auditDenied records a denial of the ACLs.
func (h *Handler) auditDenied(r *Request, op acl.Operation, rt acl.ResourceType, name string) {
	if h.cfg.Audit == nil || listing(r) {
		return
	}
	h.cfg.Audit.Denied(r.Principal, r.clientIP(), kmsg.NameForKey(r.Key), op.String(), resourceName(rt), name)
}

func resourceName(rt acl.ResourceType) string {
	switch rt {
	case kmsg.ACLResourceTypeTopic:
		return "topic"
	case kmsg.ACLResourceTypeGroup:
		return "group"
	case kmsg.ACLResourceTypeCluster:
		return "cluster"
	case kmsg.ACLResourceTypeTransactionalId:
		return "transactional_id"
	case kmsg.ACLResourceTypeDelegationToken:
		return "delegation_token"
	case kmsg.ACLResourceTypeUser:
		return "user"
	}
	return rt.String()
}

// audited wraps the reply of an administrative request to record it
// once answered; other requests are left as they are.
func (h *Handler) audited(r *Request, reply Reply) Reply {
	if h.cfg.Audit == nil || !changes[r.Key] {
		return reply
	}
	return func() (kmsg.Response, error) {
		resp, err := reply()
		if err == nil && resp != nil {
			h.auditChange(r, resp)
		}
		return resp, err
	}
}

// changes are the administrative APIs.
var changes = map[int16]bool{}

func init() {
	for _, k := range []kmsg.Key{kmsg.CreateTopics, kmsg.DeleteTopics, kmsg.CreatePartitions, kmsg.AlterConfigs,
		kmsg.IncrementalAlterConfigs, kmsg.CreateACLs, kmsg.DeleteACLs, kmsg.AlterUserSCRAMCredentials,
		kmsg.AlterClientQuotas, kmsg.DeleteGroups, kmsg.OffsetDelete, kmsg.DeleteRecords, kmsg.UpdateFeatures,
		kmsg.CreateDelegationToken, kmsg.RenewDelegationToken, kmsg.ExpireDelegationToken,
		kmsg.AlterShareGroupOffsets, kmsg.DeleteShareGroupOffsets, kmsg.ElectLeaders, kmsg.AlterPartitionAssignments} {
		changes[int16(k)] = true
	}
}

// outcome is a resource of an administrative request and its error code.
type outcome struct {
	typ, name string
	code      int16
}

// auditChange records an administrative request with its outcomes.
func (h *Handler) auditChange(r *Request, resp kmsg.Response) {
	activity := audit.ActivityUpdate
	var outs []outcome
	add := func(typ, name string, code int16) { outs = append(outs, outcome{typ, name, code}) }
	topicName := func(name *string, id [16]byte) string {
		if name != nil {
			return *name
		}
		return fmt.Sprintf("%x", id)
	}
	switch req := r.Body.(type) {
	case *kmsg.CreateTopicsRequest:
		if req.ValidateOnly {
			return
		}
		activity = audit.ActivityCreate
		for _, t := range resp.(*kmsg.CreateTopicsResponse).Topics {
			add("topic", t.Topic, t.ErrorCode)
		}
	case *kmsg.DeleteTopicsRequest:
		activity = audit.ActivityDelete
		for _, t := range resp.(*kmsg.DeleteTopicsResponse).Topics {
			add("topic", topicName(t.Topic, t.TopicID), t.ErrorCode)
		}
	case *kmsg.CreatePartitionsRequest:
		if req.ValidateOnly {
			return
		}
		for _, t := range resp.(*kmsg.CreatePartitionsResponse).Topics {
			add("topic", t.Topic, t.ErrorCode)
		}
	case *kmsg.AlterConfigsRequest:
		if req.ValidateOnly {
			return
		}
		for _, rc := range resp.(*kmsg.AlterConfigsResponse).Resources {
			add(configResource(rc.ResourceType), rc.ResourceName, rc.ErrorCode)
		}
	case *kmsg.IncrementalAlterConfigsRequest:
		if req.ValidateOnly {
			return
		}
		for _, rc := range resp.(*kmsg.IncrementalAlterConfigsResponse).Resources {
			add(configResource(rc.ResourceType), rc.ResourceName, rc.ErrorCode)
		}
	case *kmsg.CreateACLsRequest:
		activity = audit.ActivityCreate
		results := resp.(*kmsg.CreateACLsResponse).Results
		for i, c := range req.Creations {
			code := int16(0)
			if i < len(results) {
				code = results[i].ErrorCode
			}
			add("acl", fmt.Sprintf("%s %s %s from %s on %s %s:%s", c.Principal, c.PermissionType, c.Operation, c.Host,
				c.ResourceType, c.ResourcePatternType, c.ResourceName), code)
		}
	case *kmsg.DeleteACLsRequest:
		activity = audit.ActivityDelete
		results := resp.(*kmsg.DeleteACLsResponse).Results
		for i, f := range req.Filters {
			code, n := int16(0), 0
			if i < len(results) {
				code, n = results[i].ErrorCode, len(results[i].MatchingACLs)
			}
			add("acl", fmt.Sprintf("%d matching %s %s %s on %s %s:%s", n, deref(f.Principal), f.PermissionType, f.Operation,
				f.ResourceType, f.ResourcePatternType, deref(f.ResourceName)), code)
		}
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		for _, u := range resp.(*kmsg.AlterUserSCRAMCredentialsResponse).Results {
			add("user", u.User, u.ErrorCode)
		}
	case *kmsg.AlterClientQuotasRequest:
		if req.ValidateOnly {
			return
		}
		for _, e := range resp.(*kmsg.AlterClientQuotasResponse).Entries {
			name := ""
			for i, c := range e.Entity {
				if i > 0 {
					name += ","
				}
				name += c.Type + "=" + deref(c.Name)
			}
			add("quota", name, e.ErrorCode)
		}
	case *kmsg.DeleteGroupsRequest:
		activity = audit.ActivityDelete
		for _, g := range resp.(*kmsg.DeleteGroupsResponse).Groups {
			add("group", g.Group, g.ErrorCode)
		}
	case *kmsg.OffsetDeleteRequest:
		activity = audit.ActivityDelete
		add("group", req.Group, resp.(*kmsg.OffsetDeleteResponse).ErrorCode)
	case *kmsg.DeleteRecordsRequest:
		activity = audit.ActivityDelete
		for _, t := range resp.(*kmsg.DeleteRecordsResponse).Topics {
			code := int16(0)
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					code = p.ErrorCode
				}
			}
			add("topic", t.Topic, code)
		}
	case *kmsg.UpdateFeaturesRequest:
		if req.ValidateOnly {
			return
		}
		rs := resp.(*kmsg.UpdateFeaturesResponse)
		for _, f := range rs.Results {
			code := f.ErrorCode
			if rs.ErrorCode != 0 {
				code = rs.ErrorCode
			}
			add("feature", f.Feature, code)
		}
	case *kmsg.CreateDelegationTokenRequest:
		activity = audit.ActivityCreate
		rs := resp.(*kmsg.CreateDelegationTokenResponse)
		add("delegation_token", rs.TokenID, rs.ErrorCode)
	case *kmsg.RenewDelegationTokenRequest:
		add("delegation_token", "", resp.(*kmsg.RenewDelegationTokenResponse).ErrorCode)
	case *kmsg.ExpireDelegationTokenRequest:
		add("delegation_token", "", resp.(*kmsg.ExpireDelegationTokenResponse).ErrorCode)
	case *kmsg.AlterShareGroupOffsetsRequest:
		rs := resp.(*kmsg.AlterShareGroupOffsetsResponse)
		add("group", req.GroupID, rs.ErrorCode)
	case *kmsg.DeleteShareGroupOffsetsRequest:
		activity = audit.ActivityDelete
		add("group", req.GroupID, resp.(*kmsg.DeleteShareGroupOffsetsResponse).ErrorCode)
	case *kmsg.ElectLeadersRequest:
		rs := resp.(*kmsg.ElectLeadersResponse)
		for _, t := range rs.Topics {
			add("topic", t.Topic, rs.ErrorCode)
		}
		if len(rs.Topics) == 0 {
			add("cluster", acl.ClusterName, rs.ErrorCode)
		}
	case *kmsg.AlterPartitionAssignmentsRequest:
		rs := resp.(*kmsg.AlterPartitionAssignmentsResponse)
		for _, t := range rs.Topics {
			add("topic", t.Topic, rs.ErrorCode)
		}
	default:
		return
	}
	resources := make([]audit.Resource, 0, len(outs))
	failed, detail := 0, ""
	for _, o := range outs {
		res := audit.Resource{Type: o.typ, Name: o.name}
		if e := kerr.ErrorForCode(o.code); e != nil {
			res.Result = e.Error()
			failed++
			detail = e.Error()
		}
		resources = append(resources, res)
	}
	if failed < len(outs) {
		detail = ""
	}
	h.cfg.Audit.Change(r.Principal, r.clientIP(), "kafka", kmsg.NameForKey(r.Key), activity, resources, detail)
}

// configResource names a config resource type.
func configResource(t kmsg.ConfigResourceType) string {
	switch t {
	case kmsg.ConfigResourceTypeTopic:
		return "topic"
	case kmsg.ConfigResourceTypeBroker:
		return "broker"
	case kmsg.ConfigResourceTypeBrokerLogger:
		return "broker_logger"
	case kmsg.ConfigResourceTypeClientMetrics:
		return "client_metrics"
	case kmsg.ConfigResourceTypeGroupConfig:
		return "group"
	}
	return t.String()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
