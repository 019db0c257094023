package console

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// aclRow is an ACL as the page shows it.
type aclRow struct {
	Principal, Host, Type, Name, Pattern, Operation, Permission string
}

// quotaRow is a quota entity with its values.
type quotaRow struct {
	Entity string
	Values []string
}

// securityPage lists the ACLs, SCRAM users and quotas the session may
// describe (each list is the Kafka API's answer: empty, with why, when
// the session may not).
func (r *request) securityPage() error {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	var acls []aclRow
	if resp, err := req.RequestWith(r.ctx, r.cl); err != nil {
		r.data["ACLError"] = err.Error()
	} else if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		r.data["ACLError"] = err.Error()
	} else {
		for _, res := range resp.Resources {
			for _, a := range res.ACLs {
				acls = append(acls, aclRow{a.Principal, a.Host, res.ResourceType.String(), res.ResourceName,
					res.ResourcePatternType.String(), a.Operation.String(), a.PermissionType.String()})
			}
		}
	}
	sort.Slice(acls, func(i, j int) bool {
		a, b := acls[i], acls[j]
		return a.Principal+a.Type+a.Name+a.Operation < b.Principal+b.Type+b.Name+b.Operation
	})
	type userRow struct {
		Name       string
		Mechanisms string
	}
	var users []userRow
	if described, err := r.adm.DescribeUserSCRAMs(r.ctx); err != nil {
		r.data["UserError"] = err.Error()
	} else {
		for name, u := range described {
			if u.Err != nil {
				continue
			}
			var ms []string
			for _, ci := range u.CredInfos {
				ms = append(ms, fmt.Sprintf("%s (%d iterations)", ci.Mechanism, ci.Iterations))
			}
			users = append(users, userRow{name, strings.Join(ms, ", ")})
		}
		sort.Slice(users, func(i, j int) bool { return users[i].Name < users[j].Name })
	}
	var quotas []quotaRow
	if described, err := r.adm.DescribeClientQuotas(r.ctx, false, nil); err != nil {
		r.data["QuotaError"] = err.Error()
	} else {
		for _, q := range described {
			var vs []string
			for _, v := range q.Values {
				vs = append(vs, v.Key+"="+strconv.FormatFloat(v.Value, 'f', -1, 64))
			}
			quotas = append(quotas, quotaRow{q.Entity.String(), vs})
		}
		sort.Slice(quotas, func(i, j int) bool { return quotas[i].Entity < quotas[j].Entity })
	}
	r.data["ACLs"], r.data["Users"], r.data["Quotas"] = acls, users, quotas
	r.data["ResourceTypes"] = []string{"TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER"}
	r.data["Operations"] = []string{"ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "CREATE_TOKENS", "DESCRIBE_TOKENS"}
	return r.render("security", http.StatusOK)
}

// aclForm reads an ACL from the form.
func (r *request) aclForm() (kmsg.ACLResourceType, string, kmsg.ACLResourcePatternType, string, string, kmsg.ACLOperation, kmsg.ACLPermissionType, error) {
	f := r.q.PostFormValue
	typ, err := kmsg.ParseACLResourceType(f("type"))
	if err != nil {
		return 0, "", 0, "", "", 0, 0, fmt.Errorf("resource type: %w", err)
	}
	pattern, err := kmsg.ParseACLResourcePatternType(orDefault(f("pattern"), "literal"))
	if err != nil {
		return 0, "", 0, "", "", 0, 0, fmt.Errorf("pattern: %w", err)
	}
	op, err := kmsg.ParseACLOperation(f("operation"))
	if err != nil {
		return 0, "", 0, "", "", 0, 0, fmt.Errorf("operation: %w", err)
	}
	perm, err := kmsg.ParseACLPermissionType(orDefault(f("permission"), "allow"))
	if err != nil {
		return 0, "", 0, "", "", 0, 0, fmt.Errorf("permission: %w", err)
	}
	name := strings.TrimSpace(f("name"))
	if typ == kmsg.ACLResourceTypeCluster {
		name = "kafka-cluster"
	}
	principal := strings.TrimSpace(f("principal"))
	if !strings.Contains(principal, ":") {
		principal = "User:" + principal
	}
	return typ, name, pattern, principal, orDefault(strings.TrimSpace(f("host")), "*"), op, perm, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (r *request) createACL() error {
	typ, name, pattern, principal, host, op, perm, err := r.aclForm()
	if err != nil {
		return pageError{http.StatusBadRequest, err.Error()}
	}
	req := kmsg.NewPtrCreateACLsRequest()
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = typ, name, pattern
	c.Principal, c.Host, c.Operation, c.PermissionType = principal, host, op, perm
	req.Creations = append(req.Creations, c)
	resp, err := req.RequestWith(r.ctx, r.cl)
	if err == nil && len(resp.Results) == 1 {
		err = kerr.ErrorForCode(resp.Results[0].ErrorCode)
		if err != nil && resp.Results[0].ErrorMessage != nil {
			err = fmt.Errorf("%w: %s", err, *resp.Results[0].ErrorMessage)
		}
	}
	return r.doneAs("acl", "/security", fmt.Sprintf("ACL added: %s %s %s on %s %s.", principal, perm, op, typ, name), err)
}

func (r *request) deleteACL() error {
	typ, name, pattern, principal, host, op, perm, err := r.aclForm()
	if err != nil {
		return pageError{http.StatusBadRequest, err.Error()}
	}
	req := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourceName, f.ResourcePatternType = typ, &name, pattern
	f.Principal, f.Host, f.Operation, f.PermissionType = &principal, &host, op, perm
	req.Filters = append(req.Filters, f)
	resp, err := req.RequestWith(r.ctx, r.cl)
	if err == nil && len(resp.Results) == 1 {
		err = kerr.ErrorForCode(resp.Results[0].ErrorCode)
	}
	return r.doneAs("acl", "/security", fmt.Sprintf("ACL removed: %s %s %s on %s %s.", principal, perm, op, typ, name), err)
}

func (r *request) upsertUser() error {
	name, password := strings.TrimSpace(r.q.PostFormValue("user")), r.q.PostFormValue("password")
	mech := kadm.ScramSha512
	if r.q.PostFormValue("mechanism") == "SCRAM-SHA-256" {
		mech = kadm.ScramSha256
	}
	if name == "" || password == "" {
		return pageError{http.StatusBadRequest, "a user needs a name and a password"}
	}
	resps, err := r.adm.AlterUserSCRAMs(r.ctx, nil, []kadm.UpsertSCRAM{{User: name, Mechanism: mech, Iterations: 8192, Password: password}})
	if err == nil {
		err = resps.Error()
	}
	return r.doneAs("user", "/security", "User "+name+" saved.", err)
}

func (r *request) deleteUser() error {
	name := strings.TrimSpace(r.q.PostFormValue("user"))
	described, err := r.adm.DescribeUserSCRAMs(r.ctx, name)
	if err != nil {
		return err
	}
	u, ok := described[name]
	if !ok || u.Err != nil {
		return pageError{http.StatusNotFound, "user " + name + ": not found"}
	}
	var del []kadm.DeleteSCRAM
	for _, ci := range u.CredInfos {
		del = append(del, kadm.DeleteSCRAM{User: name, Mechanism: ci.Mechanism})
	}
	resps, err := r.adm.AlterUserSCRAMs(r.ctx, del, nil)
	if err == nil {
		err = resps.Error()
	}
	return r.doneAs("user", "/security", "User "+name+" deleted.", err)
}

// setQuota sets (or, with an empty value, removes) one quota of an
// entity: a user, a client id or an IP ("" name: the default).
func (r *request) setQuota() error {
	typ := r.q.PostFormValue("entity")
	switch typ {
	case "user", "client-id", "ip":
	default:
		return pageError{http.StatusBadRequest, "entity: user, client-id or ip"}
	}
	var name *string
	if n := strings.TrimSpace(r.q.PostFormValue("name")); n != "" {
		name = &n
	}
	key := strings.TrimSpace(r.q.PostFormValue("key"))
	op := kadm.AlterClientQuotaOp{Key: key}
	if v := strings.TrimSpace(r.q.PostFormValue("value")); v == "" {
		op.Remove = true
	} else if f, err := strconv.ParseFloat(v, 64); err != nil {
		return pageError{http.StatusBadRequest, "value: not a number"}
	} else {
		op.Value = f
	}
	entry := kadm.AlterClientQuotaEntry{Entity: kadm.ClientQuotaEntity{{Type: typ, Name: name}}, Ops: []kadm.AlterClientQuotaOp{op}}
	resps, err := r.adm.AlterClientQuotas(r.ctx, []kadm.AlterClientQuotaEntry{entry})
	if err == nil {
		for _, resp := range resps {
			if resp.Err != nil {
				err = fmt.Errorf("%w %s", resp.Err, resp.ErrMessage)
			}
		}
	}
	return r.doneAs("quota", "/security", "Quota "+key+" of "+entry.Entity.String()+" set.", err)
}
