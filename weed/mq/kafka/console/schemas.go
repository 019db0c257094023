package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/registry"
)

// subjectRow is a line of the subjects' list.
type subjectRow struct {
	Subject       string
	Latest        registry.Schema
	Versions      int
	Compatibility string
	Mode          string
}

// The registry's reads are decided as the registry decides them: READ on
// the topic a subject is named for.
func (r *request) mayRead(subject string) bool {
	return r.allowed(kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, registry.SubjectTopic(subject))
}

func (r *request) schemasPage() error {
	s := r.c.opts.Schemas
	if s == nil {
		r.data["NoRegistry"] = true
		return r.render("schemas", http.StatusOK)
	}
	q := strings.TrimSpace(r.q.URL.Query().Get("q"))
	pageNo, _ := strconv.Atoi(r.q.URL.Query().Get("page"))
	var rows []subjectRow
	for _, subject := range s.Subjects("", false) {
		if (q != "" && !strings.Contains(subject, q)) || !r.mayRead(subject) {
			continue
		}
		rows = append(rows, subjectRow{Subject: subject})
	}
	from, to, more := pageBounds(len(rows), pageNo)
	rows = rows[from:to]
	for i := range rows {
		vs := s.Versions(rows[i].Subject, false)
		rows[i].Versions = len(vs)
		if len(vs) > 0 {
			rows[i].Latest = vs[len(vs)-1]
		}
		rows[i].Compatibility, _ = s.Config(rows[i].Subject)
		rows[i].Mode, _ = s.Mode(rows[i].Subject)
	}
	r.data["Global"] = globalCompatibility(s)
	r.data["Q"], r.data["Rows"], r.data["PageNo"], r.data["More"] = q, rows, pageNo, more
	r.data["CanWrite"] = r.c.opts.Registry != ""
	return r.render("schemas", http.StatusOK)
}

// diffLine is a line of a diff: " ", "+" or "-" and the text.
type diffLine struct {
	Op, Text string
}

func (r *request) subjectPage() error {
	s := r.c.opts.Schemas
	subject := r.q.PathValue("subject")
	if s == nil || !r.mayRead(subject) || !s.HasSubject(subject, false) {
		return pageError{http.StatusNotFound, "subject " + subject + ": not found, or not yours to read"}
	}
	versions := s.Versions(subject, false)
	pick := func(name string, def int) registry.Schema {
		if n, err := strconv.Atoi(r.q.URL.Query().Get(name)); err == nil {
			for _, v := range versions {
				if v.Version == n {
					return v
				}
			}
		}
		return versions[max(0, min(def, len(versions)-1))]
	}
	shown := pick("version", len(versions)-1)
	r.data["Subject"] = subject
	r.data["Versions"] = versions
	r.data["Shown"] = shown
	r.data["Pretty"] = prettySchema(shown)
	if len(versions) > 1 {
		a, b := pick("a", len(versions)-2), pick("b", len(versions)-1)
		r.data["A"], r.data["B"] = a, b
		r.data["Diff"] = diffLines(prettySchema(a), prettySchema(b))
	}
	r.data["Compatibility"], _ = s.Config(subject)
	r.data["Mode"], _ = s.Mode(subject)
	r.data["Global"] = globalCompatibility(s)
	r.data["CanWrite"] = r.c.opts.Registry != ""
	return r.render("subject", http.StatusOK)
}

// prettySchema indents a JSON schema (Avro, JSON Schema) for reading and
// diffing; a Protobuf file is shown as written.
func prettySchema(s registry.Schema) string {
	if s.Type == registry.Protobuf {
		return s.Schema
	}
	var buf bytes.Buffer
	if json.Indent(&buf, []byte(s.Schema), "", "  ") == nil {
		return buf.String()
	}
	return s.Schema
}

// diffLines is the line diff of a and b by their longest common
// subsequence (schemas are small: a few hundred lines at most).
func diffLines(a, b string) []diffLine {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	if len(x)*len(y) > 4_000_000 {
		return []diffLine{{"-", a}, {"+", b}}
	}
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []diffLine
	i, j := 0, 0
	for i < len(x) && j < len(y) {
		switch {
		case x[i] == y[j]:
			out = append(out, diffLine{" ", x[i]})
			i++
			j++
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, diffLine{"-", x[i]})
			i++
		default:
			out = append(out, diffLine{"+", y[j]})
			j++
		}
	}
	for ; i < len(x); i++ {
		out = append(out, diffLine{"-", x[i]})
	}
	for ; j < len(y); j++ {
		out = append(out, diffLine{"+", y[j]})
	}
	return out
}

// registryCall makes a change through this gateway's registry, logged in
// as the session's user: the registry decides it as it decides any
// client's.
func (r *request) registryCall(method, path string, body any) error {
	if r.c.opts.Registry == "" {
		return pageError{http.StatusNotFound, "this gateway serves no schema registry"}
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(r.ctx, method, strings.TrimRight(r.c.opts.Registry, "/")+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	if r.user != "" {
		req.SetBasicAuth(r.user, r.password)
	}
	resp, err := r.c.registry.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 300 {
		var e struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(out, &e) == nil && e.Message != "" {
			return pageError{resp.StatusCode, "the registry: " + e.Message}
		}
		return pageError{resp.StatusCode, fmt.Sprintf("the registry answered %s", resp.Status)}
	}
	return nil
}

func (r *request) registerSchema() error {
	subject := strings.TrimSpace(r.q.PostFormValue("subject"))
	typ := r.q.PostFormValue("type")
	body := map[string]any{"schema": r.q.PostFormValue("schema")}
	if typ != "" && typ != registry.Avro {
		body["schemaType"] = typ
	}
	err := r.registryCall(http.MethodPost, "/subjects/"+url.PathEscape(subject)+"/versions", body)
	return r.doneAs("register", "/schemas/"+pathEscape(subject), "Schema registered under "+subject+".", err)
}

func (r *request) deleteSubject() error {
	subject := r.q.PathValue("subject")
	path := "/subjects/" + url.PathEscape(subject)
	if v := r.q.PostFormValue("version"); v != "" {
		path += "/versions/" + url.PathEscape(v)
	}
	err := r.registryCall(http.MethodDelete, path, nil)
	return r.done("/schemas", "Deleted "+strings.TrimPrefix(path, "/subjects/")+" (soft: its ids still decode).", err)
}

func (r *request) setCompatibility() error {
	subject := r.q.PathValue("subject")
	err := r.registryCall(http.MethodPut, "/config/"+url.PathEscape(subject), map[string]string{"compatibility": r.q.PostFormValue("compatibility")})
	return r.done("/schemas/"+pathEscape(subject), "Compatibility of "+subject+" set.", err)
}

// globalCompatibility is the registry's level for subjects without one.
func globalCompatibility(s *registry.State) string {
	if g, ok := s.Config(""); ok && g != "" {
		return g
	}
	return registry.DefaultCompatibility + " (the default)"
}
