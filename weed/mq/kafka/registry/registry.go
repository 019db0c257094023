// Package registry is a schema registry with Confluent's REST API, kept in
// the _schemas topic in Confluent's record format (records.go) and served
// by every gateway.
//
// Every gateway reads _schemas from its start and applies each record to
// its State, which answers every read from memory. One gateway writes at a
// time: the one that owns the registry in the cluster's ownership, as a
// group has one coordinator; the others forward writes to it (http.go).
// The writer reads _schemas to its end before each write, decides it
// (ids, versions, compatibility) on what it read, appends its records and
// answers once it has read them back: a write answered is in the log and
// in the writer's memory, and in every gateway's within a fetch.
package registry

import (
	"context"
	"errors"
	"fmt"
	"golang.org/x/sync/semaphore"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// Record is a _schemas record; a nil Value is a tombstone.
type Record struct{ Key, Value []byte }

// Log is the _schemas topic.
type Log interface {
	// Append writes the records, in order, and returns the offset of the
	// last.
	Append(ctx context.Context, recs ...Record) (int64, error)
	// End returns the offset the next record will have.
	End(ctx context.Context) (int64, error)
}

// Options configure a Registry.
type Options struct {
	State *State
	Log   Log
	// Timeout bounds a write (DefaultTimeout when 0).
	Timeout time.Duration
}

// DefaultTimeout bounds a write: reading to the log's end, appending,
// reading the write back.
const DefaultTimeout = 30 * time.Second

// Registry serves reads from its State and makes writes through the Log.
type Registry struct {
	opts    Options
	writing *semaphore.Weighted // one write at a time, waited for within the caller's context
	// caughtUp is set once the State has read the log as far as it went
	// when the registry first answered: before, a read could miss what
	// was registered.
	caughtUp atomic.Bool
}

// Sync waits until the State has read the log to the end it has now:
// what was registered anywhere before is then known here.
func (r *Registry) Sync(ctx context.Context) error {
	end, err := r.opts.Log.End(ctx)
	if err != nil {
		return err
	}
	return r.opts.State.Wait(ctx, end-1)
}

// CatchUp waits until the State has read the log to its end (once; later
// calls return at once), as Confluent's registry reads its topic before it
// serves. A read waits on it.
func (r *Registry) CatchUp(ctx context.Context) *Error {
	if r.caughtUp.Load() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	end, err := r.opts.Log.End(ctx)
	if err == nil {
		err = r.opts.State.Wait(ctx, end-1)
	}
	if err != nil {
		return storeError(err)
	}
	r.caughtUp.Store(true)
	return nil
}

// New returns a registry of opts.
func New(opts Options) *Registry {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	return &Registry{opts: opts, writing: semaphore.NewWeighted(1)}
}

// State is what the registry reads from.
func (r *Registry) State() *State { return r.opts.State }

// Error is an error as Confluent's registry answers it: its code (the
// HTTP status is the code's first three digits) and message.
type Error struct {
	Code    int    `json:"error_code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return fmt.Sprintf("%d: %s", e.Code, e.Message) }

// Status is the HTTP status of the error.
func (e *Error) Status() int {
	code := e.Code
	for code >= 1000 {
		code /= 10
	}
	return code
}

func errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Confluent's error codes.
const (
	codeSubjectNotFound        = 40401
	codeVersionNotFound        = 40402
	codeSchemaNotFound         = 40403
	codeSubjectSoftDeleted     = 40404
	codeSubjectNotSoftDeleted  = 40405
	codeVersionSoftDeleted     = 40406
	codeVersionNotSoftDeleted  = 40407
	codeSubjectLevelNotSet     = 40408
	codeSubjectModeNotSet      = 40409
	codeIncompatible           = 409
	codeInvalidSchema          = 42201
	codeInvalidVersion         = 42202
	codeInvalidCompatibility   = 42203
	codeInvalidMode            = 42204
	codeOperationNotPermitted  = 42205
	codeReferenceExists        = 42206
	codeStoreError             = 50001
	codeOperationTimeout       = 50002
	codeForwardError           = 50003
	codeUnknownLeader          = 50004
	maxReferenceDepth          = 100
	latest                     = -1
	modeReadWrite              = "READWRITE"
	modeReadOnly               = "READONLY"
	modeReadOnlyOverride       = "READONLY_OVERRIDE"
	modeImport                 = "IMPORT"
	defaultMode                = modeReadWrite
	invalidCompatibilityDetail = "Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive"
)

// SchemaRequest is a schema as clients send it to register, look up or
// check.
type SchemaRequest struct {
	Schema     string      `json:"schema"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
	// ID and Version are kept as given in IMPORT mode.
	ID      int `json:"id,omitempty"`
	Version int `json:"version,omitempty"`
	// Normalize puts the schema in its normal form before anything else
	// (the normalize parameter).
	Normalize bool `json:"-"`
}

func (q *SchemaRequest) typ() string {
	if q.SchemaType == "" {
		return Avro
	}
	return strings.ToUpper(q.SchemaType)
}

// parse reads a schema with its references, resolved against the state.
func (r *Registry) parse(typ, schema string, refs []Reference) (parsed, *Error) {
	f, resolvedRefs, e := r.resolve(typ, schema, refs)
	if e != nil {
		return nil, e
	}
	p, err := f.parse(schema, resolvedRefs)
	if err != nil {
		return nil, errorf(codeInvalidSchema, "Invalid schema %s, details: %v", schema, err)
	}
	return p, nil
}

// keep turns a schema given to register, look up or check into the form
// it is kept in (the same for most formats), its normal form when the
// request asks.
func (r *Registry) keep(q *SchemaRequest) *Error {
	f, refs, e := r.resolve(q.typ(), q.Schema, q.References)
	if e != nil {
		return e
	}
	if k, ok := f.(keeper); ok {
		s, err := k.keep(q.Schema, refs)
		if err != nil {
			return errorf(codeInvalidSchema, "Invalid schema %s, details: %v", q.Schema, err)
		}
		q.Schema = s
	}
	if q.Normalize {
		s, err := f.normalForm(q.Schema, refs)
		if err != nil {
			return errorf(codeInvalidSchema, "Invalid schema %s, details: %v", q.Schema, err)
		}
		q.Schema = s
	}
	return nil
}

// Formatted returns a kept schema in the form format names: "serialized"
// (Protobuf's base64 FileDescriptorProto) or, for any other, as kept.
func (r *Registry) Formatted(typ, schema string, refs []Reference, format string) (string, *Error) {
	if format != "serialized" {
		return schema, nil
	}
	f, resolvedRefs, e := r.resolve(typ, schema, refs)
	if e != nil {
		return "", e
	}
	s, ok := f.(serializer)
	if !ok {
		return schema, nil
	}
	out, err := s.serialized(schema, resolvedRefs)
	if err != nil {
		return "", errorf(codeInvalidSchema, "Invalid schema %s, details: %v", schema, err)
	}
	return out, nil
}

// resolve returns a schema's format and its references with the schemas
// they name, transitively, the deepest first.
func (r *Registry) resolve(typ, schema string, refs []Reference) (format, []resolved, *Error) {
	f, ok := formats[typ]
	if !ok {
		return nil, nil, errorf(codeInvalidSchema, "Invalid schema type %s: this registry serves %s", typ, strings.Join(Types(), ", "))
	}
	if len(schema) > MaxSchemaBytes || len(refs) > MaxReferences {
		return nil, nil, errorf(codeInvalidSchema, "Invalid schema: more than %d bytes or %d references", MaxSchemaBytes, MaxReferences)
	}
	resolvedRefs, err := r.opts.State.references(refs, false)
	if err != nil {
		return nil, nil, errorf(codeInvalidSchema, "Invalid schema: %v", err)
	}
	return f, resolvedRefs, nil
}

// Compatibility is the level that applies to a subject: its own, else
// its context's, else the global one.
func (r *Registry) Compatibility(subject string) string {
	for _, scope := range scopes(subject) {
		if level, ok := r.opts.State.Config(scope); ok {
			return level
		}
	}
	return DefaultCompatibility
}

// Mode is the mode that applies to a subject, found as its level is.
func (r *Registry) Mode(subject string) string {
	for _, scope := range scopes(subject) {
		if m, ok := r.opts.State.Mode(scope); ok {
			return m
		}
	}
	return defaultMode
}

// write runs fn, which decides a write on a state read to the log's end
// and returns its records, and appends them; it returns once they are
// applied.
func (r *Registry) write(ctx context.Context, fn func() ([]Record, *Error)) *Error {
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	if err := r.writing.Acquire(ctx, 1); err != nil {
		return storeError(err)
	}
	defer r.writing.Release(1)
	end, err := r.opts.Log.End(ctx)
	if err != nil {
		return storeError(err)
	}
	if err := r.opts.State.Wait(ctx, end-1); err != nil {
		return storeError(err)
	}
	recs, e := fn()
	if e != nil || len(recs) == 0 {
		return e
	}
	last, err := r.opts.Log.Append(ctx, recs...)
	if err != nil {
		return storeError(err)
	}
	if err := r.opts.State.Wait(ctx, last); err != nil {
		return storeError(err)
	}
	return nil
}

func storeError(err error) *Error {
	if errors.Is(err, context.DeadlineExceeded) {
		return errorf(codeOperationTimeout, "Operation timed out: %v", err)
	}
	return errorf(codeStoreError, "Error in the backend data store: %v", err)
}

// Register registers a schema under a subject and returns its id: the id
// it has already when the subject has it (not deleted), else a new
// version, checked against the subject's compatibility level.
func (r *Registry) Register(ctx context.Context, subject string, q SchemaRequest) (int, *Error) {
	if e := validSubject(subject); e != nil {
		return 0, e
	}
	var id int
	e := r.write(ctx, func() ([]Record, *Error) {
		st := r.opts.State
		mode := r.Mode(subject)
		switch {
		case mode == modeReadOnly || mode == modeReadOnlyOverride:
			return nil, errorf(codeOperationNotPermitted, "Subject %s is in read-only mode", subject)
		case q.ID > 0 && mode != modeImport:
			return nil, errorf(codeOperationNotPermitted, "Subject %s is not in import mode", subject)
		case q.ID < 0 || q.Version < 0:
			return nil, errorf(codeInvalidSchema, "Invalid schema: a negative id or version")
		}
		typ := q.typ()
		if e := r.keep(&q); e != nil {
			return nil, e
		}
		p, e := r.parse(typ, q.Schema, q.References)
		if e != nil {
			return nil, e
		}
		key := contentKey(typ, q.Schema, q.References)
		versions := st.Versions(subject, true)
		for _, v := range versions {
			if !v.Deleted && contentKey(v.Type, v.Schema, v.References) == key && (q.ID == 0 || q.ID == v.ID) {
				id = v.ID
				return nil, nil
			}
		}
		if mode != modeImport {
			var previous []versionParsed
			for _, v := range versions {
				if v.Deleted {
					continue
				}
				if pp, e := r.parse(v.Type, v.Schema, v.References); e == nil {
					previous = append(previous, versionParsed{v.Version, pp})
				}
			}
			if msgs := incompatibilities(r.Compatibility(subject), p, previous); len(msgs) > 0 {
				return nil, errorf(codeIncompatible, "Schema being registered is incompatible with an earlier schema for subject \"%s\", details: [%s]", subject, strings.Join(msgs, "; "))
			}
		}
		switch {
		case q.ID > 0:
			if typ0, schema0, refs0, ok := st.ByID(Context(subject), q.ID); ok && contentKey(typ0, schema0, refs0) != key {
				return nil, errorf(codeOperationNotPermitted, "Overwrite new schema with id %d is not permitted.", q.ID)
			}
			id = q.ID
		default:
			if id = st.findID(Context(subject), typ, q.Schema, q.References); id == 0 {
				id = st.MaxID(Context(subject)) + 1
			}
		}
		version := q.Version
		if version == 0 {
			version = 1
			if len(versions) > 0 {
				version = versions[len(versions)-1].Version + 1
			}
		} else if sc, ok := st.Version(subject, version, true); ok && sc.ID != id {
			return nil, errorf(codeOperationNotPermitted, "Overwrite new schema version %d of %s is not permitted.", version, subject)
		}
		v := schemaValue{schemaJSON: showSchema(Schema{Subject: subject, Version: version, ID: id, Type: typ, Schema: q.Schema, References: q.References})}
		return []Record{{Key: schemaKey(subject, version), Value: mustJSON(v)}}, nil
	})
	return id, e
}

// Lookup returns the subject's version that has the schema.
func (r *Registry) Lookup(subject string, q SchemaRequest, deleted bool) (Schema, *Error) {
	st := r.opts.State
	if !st.HasSubject(subject, deleted) {
		return Schema{}, errorf(codeSubjectNotFound, "Subject '%s' not found.", subject)
	}
	typ := q.typ()
	if e := r.keep(&q); e != nil {
		return Schema{}, e
	}
	if _, e := r.parse(typ, q.Schema, q.References); e != nil {
		return Schema{}, e
	}
	key := contentKey(typ, q.Schema, q.References)
	vs := st.Versions(subject, deleted)
	for i := len(vs) - 1; i >= 0; i-- {
		if contentKey(vs[i].Type, vs[i].Schema, vs[i].References) == key {
			return vs[i], nil
		}
	}
	return Schema{}, errorf(codeSchemaNotFound, "Schema not found")
}

// Check returns why the schema may not follow the subject's version
// (latest: the latest; 0: every version, at the subject's level); none
// when compatible.
func (r *Registry) Check(subject string, version int, q SchemaRequest) ([]string, *Error) {
	st := r.opts.State
	if e := r.keep(&q); e != nil {
		return nil, e
	}
	p, e := r.parse(q.typ(), q.Schema, q.References)
	if e != nil {
		return nil, e
	}
	level := r.Compatibility(subject)
	var previous []versionParsed
	if version != 0 {
		sc, e := r.Version(subject, version, false)
		if e != nil {
			return nil, e
		}
		pp, pe := r.parse(sc.Type, sc.Schema, sc.References)
		if pe != nil {
			return nil, pe
		}
		previous = append(previous, versionParsed{sc.Version, pp})
		level = strings.TrimSuffix(level, "_TRANSITIVE")
	} else {
		for _, v := range st.Versions(subject, false) {
			if pp, e := r.parse(v.Type, v.Schema, v.References); e == nil {
				previous = append(previous, versionParsed{v.Version, pp})
			}
		}
	}
	return incompatibilities(level, p, previous), nil
}

// Version returns a subject's version (latest: the latest), or
// Confluent's error for it.
func (r *Registry) Version(subject string, version int, deleted bool) (Schema, *Error) {
	st := r.opts.State
	if !st.HasSubject(subject, deleted) {
		return Schema{}, errorf(codeSubjectNotFound, "Subject '%s' not found.", subject)
	}
	sc, ok := st.Version(subject, version, deleted)
	if !ok {
		return Schema{}, errorf(codeVersionNotFound, "Version %d not found.", version)
	}
	return sc, nil
}

// DeleteSubject deletes a subject's versions, softly (kept, shown with
// deleted=true) or, once soft-deleted, permanently, and returns them.
func (r *Registry) DeleteSubject(ctx context.Context, subject string, permanent bool) ([]int, *Error) {
	var out []int
	e := r.write(ctx, func() ([]Record, *Error) {
		st := r.opts.State
		if r.Mode(subject) == modeReadOnly {
			return nil, errorf(codeOperationNotPermitted, "Subject %s is in read-only mode", subject)
		}
		all := st.Versions(subject, true)
		if len(all) == 0 {
			return nil, errorf(codeSubjectNotFound, "Subject '%s' not found.", subject)
		}
		live := st.Versions(subject, false)
		if !permanent {
			if len(live) == 0 {
				return nil, errorf(codeSubjectSoftDeleted, "Subject '%s' was soft deleted.Set permanent=true to delete permanently", subject)
			}
			for _, v := range live {
				if ids := st.ReferencedBy(subject, v.Version); len(ids) > 0 {
					return nil, errorf(codeReferenceExists, "One or more references exist to the schema {subject=%s,version=%d}.", subject, v.Version)
				}
				out = append(out, v.Version)
			}
			return []Record{{Key: deleteSubjectKey(subject), Value: mustJSON(deleteSubjectValue{Subject: subject, Version: live[len(live)-1].Version})}}, nil
		}
		if len(live) > 0 {
			return nil, errorf(codeSubjectNotSoftDeleted, "Subject '%s' was not deleted first before being permanently deleted", subject)
		}
		var recs []Record
		for _, v := range all {
			out = append(out, v.Version)
			recs = append(recs, Record{Key: schemaKey(subject, v.Version)})
		}
		return recs, nil
	})
	return out, e
}

// DeleteVersion deletes one version of a subject, softly or, once
// soft-deleted, permanently.
func (r *Registry) DeleteVersion(ctx context.Context, subject string, version int, permanent bool) (int, *Error) {
	var out int
	e := r.write(ctx, func() ([]Record, *Error) {
		st := r.opts.State
		if r.Mode(subject) == modeReadOnly {
			return nil, errorf(codeOperationNotPermitted, "Subject %s is in read-only mode", subject)
		}
		sc, e := r.Version(subject, version, true)
		if e != nil {
			return nil, e
		}
		if version == latest && !permanent {
			if sc, e = r.Version(subject, latest, false); e != nil {
				return nil, e
			}
		}
		out = sc.Version
		if !permanent {
			if sc.Deleted {
				return nil, errorf(codeVersionSoftDeleted, "Subject '%s' Version %d was soft deleted.Set permanent=true to delete permanently", subject, sc.Version)
			}
			if ids := st.ReferencedBy(subject, sc.Version); len(ids) > 0 {
				return nil, errorf(codeReferenceExists, "One or more references exist to the schema {subject=%s,version=%d}.", subject, sc.Version)
			}
			v := schemaValue{schemaJSON: showSchema(sc), Deleted: true}
			return []Record{{Key: schemaKey(subject, sc.Version), Value: mustJSON(v)}}, nil
		}
		if !sc.Deleted {
			return nil, errorf(codeVersionNotSoftDeleted, "Subject '%s' Version %d was not deleted first before being permanently deleted", subject, sc.Version)
		}
		return []Record{{Key: schemaKey(subject, sc.Version)}}, nil
	})
	return out, e
}

// SetCompatibility sets the level of a subject ("": the global one).
func (r *Registry) SetCompatibility(ctx context.Context, subject, level string) *Error {
	level = strings.ToUpper(level)
	if !ValidLevel(level) {
		return errorf(codeInvalidCompatibility, invalidCompatibilityDetail)
	}
	return r.write(ctx, func() ([]Record, *Error) {
		return []Record{{Key: configKey(optional(subject)), Value: mustJSON(configValue{CompatibilityLevel: level})}}, nil
	})
}

// DeleteCompatibility removes a subject's level ("": the global one, back
// to the default) and returns the level it had.
func (r *Registry) DeleteCompatibility(ctx context.Context, subject string) (string, *Error) {
	var was string
	e := r.write(ctx, func() ([]Record, *Error) {
		level, ok := r.opts.State.Config(subject)
		if !ok {
			if subject != "" {
				return nil, errorf(codeSubjectNotFound, "Subject '%s' not found.", subject)
			}
			level = DefaultCompatibility
		}
		was = level
		return []Record{{Key: configKey(optional(subject))}}, nil
	})
	return was, e
}

// SetMode sets the mode of a subject ("": the global one). IMPORT for the
// whole registry needs it empty, unless forced.
func (r *Registry) SetMode(ctx context.Context, subject, mode string, force bool) *Error {
	mode = strings.ToUpper(mode)
	if !slices.Contains([]string{modeReadWrite, modeReadOnly, modeReadOnlyOverride, modeImport}, mode) {
		return errorf(codeInvalidMode, "Invalid mode. Valid values are READWRITE, READONLY, READONLY_OVERRIDE and IMPORT.")
	}
	return r.write(ctx, func() ([]Record, *Error) {
		if mode == modeImport && !force && r.Mode(subject) != modeImport {
			if (subject == "" && len(r.opts.State.Subjects("", false)) > 0) || (subject != "" && r.opts.State.HasSubject(subject, false)) {
				return nil, errorf(codeOperationNotPermitted, "Cannot import since found existing subjects")
			}
		}
		return []Record{{Key: modeKey(optional(subject)), Value: mustJSON(modeValue{Mode: mode})}}, nil
	})
}

// DeleteMode removes a subject's mode and returns the mode it had.
func (r *Registry) DeleteMode(ctx context.Context, subject string) (string, *Error) {
	var was string
	e := r.write(ctx, func() ([]Record, *Error) {
		m, ok := r.opts.State.Mode(subject)
		if !ok {
			return nil, errorf(codeSubjectModeNotSet, "Subject '%s' does not have subject-level mode configured", subject)
		}
		was = m
		return []Record{{Key: modeKey(optional(subject))}}, nil
	})
	return was, e
}

func optional(subject string) *string {
	if subject == "" {
		return nil
	}
	return &subject
}

// validSubject refuses what Confluent refuses as a subject name.
func validSubject(subject string) *Error {
	if _, name, _ := splitQualified(subject); name == "" || strings.ContainsFunc(subject, func(r rune) bool { return r < ' ' }) {
		return errorf(codeInvalidSchema, "Invalid subject %q", subject)
	}
	return nil
}
