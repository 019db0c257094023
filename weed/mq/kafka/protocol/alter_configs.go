package protocol

// AlterConfigs (versions 0-2) and IncrementalAlterConfigs (versions 0-1)
// for topics: the settings of topic_config.go, checked as CreateTopics
// checks them (INVALID_CONFIG, with the reason, for what the gateway cannot
// honour: log-append time) and saved with
// the topic, so they survive restarts and every gateway sees them;
// retention.ms becomes SeaweedMQ's retention of the topic. AlterConfigs
// replaces all of a topic's settings, IncrementalAlterConfigs sets, deletes
// (back to the default), appends to or subtracts from single ones.
// ValidateOnly checks without saving. The internal topics' settings are
// fixed (INVALID_REQUEST). BROKER resources take the dynamic broker
// configs (broker_configs.go); group configs (the GROUP resource,
// KIP-932's share.* settings) are set and deleted the same way
// (group_configs.go).

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/storage"
)

func init() {
	register(kmsg.AlterConfigs, 0, 2, (*Handler).handleAlterConfigs)
	register(kmsg.IncrementalAlterConfigs, 0, 1, (*Handler).handleIncrementalAlterConfigs)
}

// alterTopic computes a topic's new settings from its current ones with
// change, checks and (unless validateOnly) saves them. It returns the
// Kafka error and a message for the client.
func (h *Handler) alterTopic(ctx context.Context, r *Request, typ kmsg.ConfigResourceType, name string, validateOnly bool, change func(map[string]string) error) (*kerr.Error, string) {
	switch typ {
	case kmsg.ConfigResourceTypeGroupConfig:
		return h.alterGroup(ctx, r, name, validateOnly, change)
	case kmsg.ConfigResourceTypeClientMetrics:
		return h.alterClientMetrics(ctx, r, name, validateOnly, change)
	}
	switch {
	case typ == kmsg.ConfigResourceTypeBroker && !h.allowedCluster(r, kmsg.ACLOperationAlterConfigs):
		return kerr.ClusterAuthorizationFailed, ""
	case typ == kmsg.ConfigResourceTypeTopic && !h.allowedTopic(r, kmsg.ACLOperationAlterConfigs, name):
		return kerr.TopicAuthorizationFailed, ""
	}
	switch typ {
	case kmsg.ConfigResourceTypeBroker:
		return h.alterBroker(ctx, name, validateOnly, change)
	case kmsg.ConfigResourceTypeTopic:
	default:
		return kerr.InvalidRequest, "unknown resource type"
	}
	if e := storage.ValidTopicName(name); e != nil {
		return e, "not a valid topic name" // as Kafka's config validator answers
	}
	info, err := h.describeTopic(ctx, name)
	if err != nil {
		return kafkaErr(err, kerr.KafkaStorageError), ""
	}
	if internalTopic(name) {
		return kerr.InvalidRequest, internalFixed(name)
	}
	// The change is applied to the settings as they are when it is
	// saved, so that concurrent changes on any gateway are all kept.
	var invalid error
	apply := func(configs map[string]string) error {
		if err := change(configs); err != nil {
			invalid = err
			return err
		}
		if err := validateTopicConfigs(configs); err != nil {
			invalid = err
			return err
		}
		return nil
	}
	if validateOnly {
		configs := maps.Clone(info.Own())
		if configs == nil {
			configs = map[string]string{}
		}
		if err := apply(configs); err != nil {
			return kerr.InvalidConfig, err.Error()
		}
		return nil, ""
	}
	if err := h.backend.AlterTopicConfigs(ctx, info.Name, apply); err != nil {
		if invalid != nil {
			return kerr.InvalidConfig, invalid.Error()
		}
		return kafkaErr(err, kerr.KafkaStorageError), err.Error()
	}
	return nil, ""
}

func (h *Handler) handleAlterConfigs(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.AlterConfigsRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
		dup := duplicateResources(len(req.Resources), func(i int) (kmsg.ConfigResourceType, string) {
			return req.Resources[i].ResourceType, req.Resources[i].ResourceName
		})
		for i, rr := range req.Resources {
			sr := kmsg.NewAlterConfigsResponseResource()
			sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
			if msg := badAlter(dup[i], len(rr.Configs), func(j int) (string, bool) { return rr.Configs[j].Name, rr.Configs[j].Value == nil }); msg != "" {
				sr.ErrorCode, sr.ErrorMessage = kerr.InvalidRequest.Code, &msg
				resp.Resources = append(resp.Resources, sr)
				continue
			}
			e, msg := h.alterTopic(ctx, r, rr.ResourceType, rr.ResourceName, req.ValidateOnly, func(configs map[string]string) error {
				clear(configs) // AlterConfigs replaces every setting
				for _, c := range rr.Configs {
					if c.Value != nil {
						configs[c.Name] = *c.Value
					}
				}
				return nil
			})
			if e != nil {
				sr.ErrorCode = e.Code
				if msg != "" {
					sr.ErrorMessage = &msg
				}
			}
			resp.Resources = append(resp.Resources, sr)
		}
		return resp, nil
	}
}

func (h *Handler) handleIncrementalAlterConfigs(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.IncrementalAlterConfigsRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		dup := duplicateResources(len(req.Resources), func(i int) (kmsg.ConfigResourceType, string) {
			return req.Resources[i].ResourceType, req.Resources[i].ResourceName
		})
		for i, rr := range req.Resources {
			sr := kmsg.NewIncrementalAlterConfigsResponseResource()
			sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
			if msg := badAlter(dup[i], len(rr.Configs), func(j int) (string, bool) {
				c := rr.Configs[j]
				return c.Name, c.Value == nil && c.Op != kmsg.IncrementalAlterConfigOpDelete
			}); msg != "" {
				sr.ErrorCode, sr.ErrorMessage = kerr.InvalidRequest.Code, &msg
				resp.Resources = append(resp.Resources, sr)
				continue
			}
			e, msg := h.alterTopic(ctx, r, rr.ResourceType, rr.ResourceName, req.ValidateOnly, func(configs map[string]string) error {
				for _, c := range rr.Configs {
					op := applyConfigOp
					switch rr.ResourceType {
					case kmsg.ConfigResourceTypeGroupConfig:
						op = applyGroupConfigOp
					case kmsg.ConfigResourceTypeClientMetrics:
						op = applyClientMetricsOp
					case kmsg.ConfigResourceTypeBroker:
						op = applyBrokerConfigOp
					}
					if err := op(configs, c); err != nil {
						return err
					}
				}
				return nil
			})
			if e != nil {
				sr.ErrorCode = e.Code
				if msg != "" {
					sr.ErrorMessage = &msg
				}
			}
			resp.Resources = append(resp.Resources, sr)
		}
		return resp, nil
	}
}

// duplicateResources marks the resources named more than once in a
// request, which Kafka refuses (INVALID_REQUEST) all of.
func duplicateResources(n int, at func(int) (kmsg.ConfigResourceType, string)) []bool {
	type key struct {
		typ  kmsg.ConfigResourceType
		name string
	}
	count := map[key]int{}
	keys := make([]key, n)
	for i := range n {
		typ, name := at(i)
		keys[i] = key{typ, name}
		count[keys[i]]++
	}
	dup := make([]bool, n)
	for i, k := range keys {
		dup[i] = count[k] > 1
	}
	return dup
}

// badAlter says why Kafka refuses (INVALID_REQUEST) a resource's
// alteration before looking at it: the resource named twice in the
// request, a setting named twice, a value missing where one is needed.
// at returns setting i's name and whether it lacks a needed value.
func badAlter(dup bool, n int, at func(int) (string, bool)) string {
	if dup {
		return "the resource is named more than once in the request"
	}
	seen := map[string]bool{}
	for i := range n {
		name, missing := at(i)
		switch {
		case seen[name]:
			return "setting " + name + " is named more than once"
		case missing:
			return "setting " + name + " has a null value"
		}
		seen[name] = true
	}
	return ""
}

type configError string

func (e configError) Error() string { return string(e) }

// applyConfigOp applies one IncrementalAlterConfigs operation.
func applyConfigOp(configs map[string]string, c kmsg.IncrementalAlterConfigsRequestResourceConfig) error {
	tc := topicConfigNamed(c.Name)
	if tc == nil {
		return configError("unknown topic config " + c.Name)
	}
	value := ""
	if c.Value != nil {
		value = *c.Value
	}
	switch c.Op {
	case kmsg.IncrementalAlterConfigOpSet:
		if c.Value == nil {
			return configError(c.Name + ": SET needs a value")
		}
		configs[c.Name] = value
	case kmsg.IncrementalAlterConfigOpDelete:
		delete(configs, c.Name)
	case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
		if tc.typ != kmsg.ConfigTypeList {
			return configError(c.Name + " is not a list: only SET and DELETE apply")
		}
		applyListOpTo(configs, c.Name, tc.def, c.Op, value)
	default:
		return configError("unknown operation")
	}
	return nil
}

// applyListOpTo applies an APPEND or SUBTRACT to list config name of
// configs, whose value is def while it is not set.
func applyListOpTo(configs map[string]string, name, def string, op kmsg.IncrementalAlterConfigOp, value string) {
	current, ok := configs[name]
	if !ok {
		current = def
	}
	configs[name] = applyListOp(current, op, value)
}

// applyListOp appends the comma-separated items of value to a list config
// (those not in it yet) or subtracts them from it.
func applyListOp(current string, op kmsg.IncrementalAlterConfigOp, value string) string {
	var items []string
	if current != "" {
		items = strings.Split(current, ",")
	}
	for _, v := range strings.Split(value, ",") {
		if op == kmsg.IncrementalAlterConfigOpAppend && !slices.Contains(items, v) {
			items = append(items, v)
		}
		if op == kmsg.IncrementalAlterConfigOpSubtract {
			items = slices.DeleteFunc(items, func(s string) bool { return s == v })
		}
	}
	return strings.Join(items, ",")
}
