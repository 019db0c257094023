package protocol

// DescribeUserScramCredentials, version 0: the SCRAM mechanisms of users
// and their iteration counts (never salts or keys), from the store every
// gateway shares. No users named means all of them; an unknown user gets
// RESOURCE_NOT_FOUND, one named twice DUPLICATE_RESOURCE, as from Kafka.

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/user"
)

func init() {
	register(kmsg.DescribeUserSCRAMCredentials, 0, 0, (*Handler).handleDescribeUserScramCredentials)
}

// Users keeps the SCRAM credentials: user.Store.
type Users interface {
	Describe(ctx context.Context, name string) (user.Info, error)
	List(ctx context.Context) (map[string]user.Info, error)
	Apply(ctx context.Context, name string, changes []user.Change) error
}

// noUsers is the store of a handler configured without one.
type noUsers struct{}

func (noUsers) Describe(context.Context, string) (user.Info, error) { return nil, user.ErrNotFound }
func (noUsers) List(context.Context) (map[string]user.Info, error)  { return nil, nil }
func (noUsers) Apply(context.Context, string, []user.Change) error {
	return errors.New("the gateway has no user store")
}

// scramMechanisms are Kafka's codes of the SCRAM mechanisms.
var scramMechanisms = map[int8]string{1: user.SHA256, 2: user.SHA512}

func scramCode(mechanism string) int8 {
	for code, m := range scramMechanisms {
		if m == mechanism {
			return code
		}
	}
	return 0
}

func (h *Handler) handleDescribeUserScramCredentials(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
		if !h.allowedCluster(r, kmsg.ACLOperationDescribe) {
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			return resp, nil
		}
		result := func(name string, info user.Info, code int16, msg string) {
			res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
			res.User, res.ErrorCode = name, code
			if msg != "" {
				res.ErrorMessage = &msg
			}
			for _, m := range slices.Sorted(maps.Keys(info)) {
				ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				ci.Mechanism, ci.Iterations = scramCode(m), int32(info[m])
				res.CredentialInfos = append(res.CredentialInfos, ci)
			}
			resp.Results = append(resp.Results, res)
		}
		if len(req.Users) == 0 {
			all, err := h.cfg.Users.List(ctx)
			if err != nil {
				resp.ErrorCode = kerr.KafkaStorageError.Code
				msg := err.Error()
				resp.ErrorMessage = &msg
				return resp, nil
			}
			for _, name := range slices.Sorted(maps.Keys(all)) {
				result(name, all[name], 0, "")
			}
			return resp, nil
		}
		count := map[string]int{}
		for _, u := range req.Users {
			count[u.Name]++
		}
		reported := map[string]bool{}
		for _, u := range req.Users {
			if count[u.Name] > 1 {
				if !reported[u.Name] {
					result(u.Name, nil, kerr.DuplicateResource.Code, "cannot describe SCRAM credentials for the same user twice in a single request")
					reported[u.Name] = true
				}
				continue
			}
			info, err := h.cfg.Users.Describe(ctx, u.Name)
			switch {
			case errors.Is(err, user.ErrNotFound):
				result(u.Name, nil, kerr.ResourceNotFound.Code, "attempt to describe a user credential that does not exist")
			case err != nil:
				result(u.Name, nil, kerr.KafkaStorageError.Code, err.Error())
			default:
				result(u.Name, info, 0, "")
			}
		}
		return resp, nil
	}
}

// GatewayUser is the user the gateways of a cluster log in to one another
// as; no request may create, change or delete it.
const GatewayUser = "__gateway"
