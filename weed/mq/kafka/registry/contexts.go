package registry

// Contexts, as Confluent's registry has them: a qualified subject
// (":.ctx:name") is in context .ctx, whose ids, level and mode are its
// own; requests under /contexts/{ctx}/ stand for requests with their
// subjects qualified.

import (
	"net/http"
	"net/url"
	"strings"
)

// DefaultContext is the context of subjects not qualified with one.
const DefaultContext = "."

// Context returns the context a subject is in: ".ctx" for ":.ctx:name",
// else the default.
func Context(subject string) string {
	if ctx, _, ok := splitQualified(subject); ok {
		return ctx
	}
	return DefaultContext
}

// splitQualified splits ":.ctx:name" into ".ctx" and "name".
func splitQualified(subject string) (ctx, name string, ok bool) {
	if !strings.HasPrefix(subject, ":.") {
		return "", subject, false
	}
	i := strings.IndexByte(subject[1:], ':')
	if i < 0 {
		return "", subject, false
	}
	return subject[1 : 1+i], subject[2+i:], true
}

// Qualify returns the subject as it is kept: ":.:name" (the default
// context named) is "name".
func Qualify(subject string) string {
	if ctx, name, ok := splitQualified(subject); ok && ctx == DefaultContext {
		return name
	}
	return subject
}

// scopes are where a subject's config and mode are looked for, in
// order: the subject, its context (":.ctx:", unless the default one),
// the global ("").
func scopes(subject string) []string {
	var out []string
	if subject != "" {
		out = append(out, subject)
	}
	if ctx := Context(subject); ctx != DefaultContext && subject != ":"+ctx+":" {
		out = append(out, ":"+ctx+":")
	}
	return append(out, "")
}

// inContext rewrites a request under /contexts/{context}/ (as clients
// scoped to a context send them) to the request it stands for, with
// subjects qualified by the context: /contexts/.ctx/subjects/s/versions
// is /subjects/:.ctx:s/versions, /contexts/.ctx/schemas/ids/1 is
// /schemas/ids/1?subject=:.ctx:, /contexts/.ctx/config is
// /config/:.ctx:. What the rewritten request is, forwarding and the ACLs
// see too.
func inContext(q *http.Request) {
	segs := strings.Split(strings.TrimPrefix(q.URL.EscapedPath(), "/"), "/")
	if len(segs) < 3 || segs[0] != "contexts" {
		return
	}
	ctx, err := url.PathUnescape(segs[1])
	if err != nil || !strings.HasPrefix(ctx, ".") || strings.Contains(ctx, ":") {
		return
	}
	rest := segs[2:]
	qualify := func(seg string) string {
		s, err := url.PathUnescape(seg)
		if err != nil {
			return seg
		}
		if _, _, ok := splitQualified(s); !ok && ctx != DefaultContext {
			s = ":" + ctx + ":" + s
		}
		return url.PathEscape(s)
	}
	params := q.URL.Query()
	setDefault := func(name, value string) {
		if _, ok := params[name]; !ok && ctx != DefaultContext {
			params.Set(name, value)
		}
	}
	switch {
	case rest[0] == "subjects" && len(rest) == 1, rest[0] == "schemas" && len(rest) == 1:
		setDefault("subjectPrefix", ":"+ctx+":")
	case rest[0] == "subjects", rest[0] == "compatibility" && len(rest) > 2 && rest[1] == "subjects":
		i := 1
		if rest[0] == "compatibility" {
			i = 2
		}
		rest[i] = qualify(rest[i])
	case rest[0] == "schemas" && len(rest) > 2 && rest[1] == "ids":
		setDefault("subject", ":"+ctx+":")
	case (rest[0] == "config" || rest[0] == "mode") && len(rest) == 1:
		rest = append(rest, url.PathEscape(":"+ctx+":"))
	case rest[0] == "config" || rest[0] == "mode":
		rest[1] = qualify(rest[1])
	default:
		return
	}
	raw := "/" + strings.Join(rest, "/")
	if p, err := url.PathUnescape(raw); err == nil {
		q.URL.Path, q.URL.RawPath = p, raw
		q.URL.RawQuery = params.Encode()
	}
}

// subjectArg is the subject a request's path names, as it is kept
// (":.:name", the default context named, is "name").
func subjectArg(q *http.Request) string { return Qualify(q.PathValue("subject")) }

// subjectsOf lists the subjects subjectPrefix asks for: all of every
// context when it is not given or ":*:", the default context's when it
// is empty, else those it begins (":.ctx:" a context's).
func subjectsOf(st *State, q *http.Request, deleted bool) []string {
	prefix, given := q.URL.Query()["subjectPrefix"]
	switch {
	case !given || prefix[0] == ":*:":
		return st.Subjects("", deleted)
	case prefix[0] == "":
		var out []string
		for _, subject := range st.Subjects("", deleted) {
			if Context(subject) == DefaultContext {
				out = append(out, subject)
			}
		}
		return out
	}
	return st.Subjects(Qualify(prefix[0]), deleted)
}
