package protocol

// AlterUserScramCredentials, version 0: creates, changes and deletes users'
// SCRAM credentials in the store every gateway shares; a login on any
// gateway sees the change at once. As in Kafka: the client salts the
// password (the password itself never travels); iterations outside
// 4096-16384, an empty name, salt or salted password get
// UNACCEPTABLE_CREDENTIAL; a mechanism other than SCRAM-SHA-256/512
// UNSUPPORTED_SASL_MECHANISM; one user and mechanism named twice
// DUPLICATE_RESOURCE; deleting a credential that does not exist
// RESOURCE_NOT_FOUND. A user with any error has none of its changes made.

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/user"
)

func init() {
	register(kmsg.AlterUserSCRAMCredentials, 0, 0, (*Handler).handleAlterUserScramCredentials)
}

func (h *Handler) handleAlterUserScramCredentials(ctx context.Context, r *Request) Reply {
	req := r.Body.(*kmsg.AlterUserSCRAMCredentialsRequest)
	return func() (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
		if !h.allowedCluster(r, kmsg.ACLOperationAlter) {
			for _, name := range scramUsersNamed(req) {
				res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				res.User, res.ErrorCode = name, kerr.ClusterAuthorizationFailed.Code
				resp.Results = append(resp.Results, res)
			}
			return resp, nil
		}
		type userChanges struct {
			changes []user.Change
			code    *kerr.Error
			msg     string
		}
		var order []string
		byUser := map[string]*userChanges{}
		seen := map[[2]string]bool{}
		add := func(name string, mech int8, cred *user.Credential, check func() (*kerr.Error, string)) {
			uc := byUser[name]
			if uc == nil {
				uc = &userChanges{}
				byUser[name] = uc
				order = append(order, name)
			}
			if uc.code != nil {
				return
			}
			m, ok := scramMechanisms[mech]
			switch {
			case name == "":
				uc.code, uc.msg = kerr.UnacceptableCredential, "username must not be empty"
			case name == GatewayUser:
				uc.code, uc.msg = kerr.UnacceptableCredential, GatewayUser+" is the gateways' own user"
			case !ok:
				uc.code, uc.msg = kerr.UnsupportedSaslMechanism, fmt.Sprintf("unknown SCRAM mechanism %d", mech)
			case seen[[2]string{name, m}]:
				uc.code, uc.msg = kerr.DuplicateResource, "a user credential cannot be altered twice in the same request"
			}
			if uc.code == nil && check != nil {
				uc.code, uc.msg = check()
			}
			if uc.code != nil {
				return
			}
			seen[[2]string{name, m}] = true
			uc.changes = append(uc.changes, user.Change{Mechanism: m, Credential: cred})
		}
		for _, d := range req.Deletions {
			add(d.Name, d.Mechanism, nil, nil)
		}
		for _, u := range req.Upsertions {
			mech, iters := scramMechanisms[u.Mechanism], int(u.Iterations)
			var cred user.Credential
			add(u.Name, u.Mechanism, &cred, func() (*kerr.Error, string) {
				switch {
				case iters < user.MinIterations || iters > user.MaxIterations:
					return kerr.UnacceptableCredential, fmt.Sprintf("iterations %d are outside %d-%d", iters, user.MinIterations, user.MaxIterations)
				case len(u.Salt) == 0 || len(u.SaltedPassword) == 0:
					return kerr.UnacceptableCredential, "salt and salted password must not be empty"
				}
				cred = user.FromSaltedPassword(mech, u.Salt, u.SaltedPassword, iters)
				return nil, ""
			})
		}
		for _, name := range order {
			uc := byUser[name]
			res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			res.User = name
			if uc.code == nil {
				err := h.cfg.Users.Apply(ctx, name, uc.changes)
				switch {
				case errors.Is(err, user.ErrNotFound):
					uc.code, uc.msg = kerr.ResourceNotFound, "attempt to delete a user credential that does not exist"
				case err != nil:
					uc.code, uc.msg = kerr.KafkaStorageError, err.Error()
				}
			}
			if uc.code != nil {
				res.ErrorCode = uc.code.Code
				res.ErrorMessage = &uc.msg
			}
			resp.Results = append(resp.Results, res)
		}
		return resp, nil
	}
}

// scramUsersNamed are the users a request names, once each, in order.
func scramUsersNamed(req *kmsg.AlterUserSCRAMCredentialsRequest) []string {
	var out []string
	seen := map[string]bool{}
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, d := range req.Deletions {
		add(d.Name)
	}
	for _, u := range req.Upsertions {
		add(u.Name)
	}
	return out
}
