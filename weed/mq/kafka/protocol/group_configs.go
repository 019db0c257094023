package protocol

// Group configs (the GROUP config resource of KIP-848 and KIP-932): the
// share.* settings of share groups and the consumer.* ones of consumer
// groups (package share), set with
// IncrementalAlterConfigs (SET and DELETE; APPEND and SUBTRACT are
// INVALID_CONFIG, none is a list) or AlterConfigs, and shown by
// DescribeConfigs with their source: set for the group (GROUP_CONFIG) or
// the gateway's default (DEFAULT_CONFIG). Values are checked against the
// gateway's bounds (INVALID_CONFIG with the reason); an unknown name is
// INVALID_CONFIG. Altering needs AlterConfigs on the group, describing
// DescribeConfigs.

import (
	"context"
	"errors"
	"maps"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/share"
)

// alterGroup changes a group's configs with change, checked, saved unless
// validateOnly.
func (h *Handler) alterGroup(ctx context.Context, r *Request, name string, validateOnly bool, change func(map[string]string) error) (*kerr.Error, string) {
	switch {
	case h.shares == nil:
		return kerr.InvalidRequest, "group configs are not kept by this gateway"
	case !h.allowedGroup(r, kmsg.ACLOperationAlterConfigs, name):
		return kerr.GroupAuthorizationFailed, ""
	case name == "":
		return kerr.InvalidRequest, "a group config resource needs the group's name"
	}
	cf := h.shares.Configs()
	if validateOnly {
		configs, err := cf.Get(ctx, name, true)
		if err != nil {
			return kerr.CoordinatorNotAvailable, err.Error()
		}
		configs = maps.Clone(configs)
		if err := change(configs); err != nil {
			return kerr.InvalidConfig, err.Error()
		}
		for n, v := range configs {
			if err := cf.Limits().Check(n, v); err != nil {
				return kerr.InvalidConfig, err.Error()
			}
		}
		return nil, ""
	}
	var changeErr error
	err := cf.Alter(ctx, name, func(configs map[string]string) error {
		changeErr = change(configs)
		return changeErr
	})
	var invalid *share.InvalidConfig
	switch {
	case err == nil:
		return nil, ""
	case changeErr != nil:
		return kerr.InvalidConfig, changeErr.Error()
	case errors.As(err, &invalid):
		return kerr.InvalidConfig, invalid.Reason
	}
	return kerr.CoordinatorNotAvailable, err.Error()
}

// applyGroupConfigOp applies one IncrementalAlterConfigs operation to a
// group's configs.
func applyGroupConfigOp(configs map[string]string, c kmsg.IncrementalAlterConfigsRequestResourceConfig) error {
	if !share.Known(c.Name) {
		return configError("unknown group config " + c.Name)
	}
	switch c.Op {
	case kmsg.IncrementalAlterConfigOpSet:
		if c.Value == nil {
			return configError(c.Name + ": SET needs a value")
		}
		configs[c.Name] = *c.Value
	case kmsg.IncrementalAlterConfigOpDelete:
		delete(configs, c.Name)
	default:
		return configError(c.Name + " is not a list: only SET and DELETE apply")
	}
	return nil
}

// describeGroupConfigs adds a group's configs to a DescribeConfigs answer.
func (h *Handler) describeGroupConfigs(ctx context.Context, r *Request, name string, sr *kmsg.DescribeConfigsResponseResource,
	add func(name, value string, source kmsg.ConfigSource, typ kmsg.ConfigType, doc string, readOnly bool)) {
	switch {
	case h.shares == nil:
		sr.ErrorCode = kerr.InvalidRequest.Code
		return
	case !h.allowedGroup(r, kmsg.ACLOperationDescribeConfigs, name):
		sr.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return
	}
	configs, err := h.shares.Configs().Get(ctx, name, true)
	if err != nil {
		sr.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return
	}
	for _, d := range h.shares.Configs().Limits().Defaults() {
		typ := kmsg.ConfigTypeInt
		if d.Name == share.AutoOffsetReset || d.Name == share.IsolationLevel {
			typ = kmsg.ConfigTypeString
		}
		if v, ok := configs[d.Name]; ok {
			add(d.Name, v, kmsg.ConfigSourceGroupConfig, typ, "", false)
		} else {
			add(d.Name, d.Value, kmsg.ConfigSourceDefaultConfig, typ, "", false)
		}
	}
}
