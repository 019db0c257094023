package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/metrics"
)

// Schema is one version of a subject.
type Schema struct {
	Subject    string
	Version    int
	ID         int
	Type       string // AVRO, PROTOBUF or JSON
	Schema     string
	References []Reference
	Deleted    bool // soft-deleted
}

// The schema types.
const (
	Avro     = "AVRO"
	Protobuf = "PROTOBUF"
	JSON     = "JSON"
)

// content is what an id stands for: the same for every subject and
// version registered under it.
type content struct {
	typ    string
	schema string
	refs   []Reference
}

// State is the registry as the _schemas records applied in order make it:
// what every gateway serves reads from.
type State struct {
	mu       sync.RWMutex
	subjects map[string]map[int]*Schema // by subject (qualified), by version
	// spaces are the contexts' ids, by context ("." the default).
	spaces  map[string]*idSpace
	configs map[string]string // compatibility level by subject (":.ctx:" a context's), "" the global
	modes   map[string]string // by subject, "" the global
	applied int64             // the offset of the last record applied, -1 none
	notify  chan struct{}     // closed and replaced at each record applied
}

// idSpace is one context's schema ids: each context counts its own.
type idSpace struct {
	ids map[int]content
	// names caches RecordName's answers by id ("": none).
	names map[int]string
	// byContent is the first id of each content.
	byContent map[string]int
	maxID     int
}

// NewState returns an empty registry.
func NewState() *State {
	return &State{subjects: map[string]map[int]*Schema{}, spaces: map[string]*idSpace{}, configs: map[string]string{}, modes: map[string]string{}, applied: -1, notify: make(chan struct{})}
}

// space returns a context's ids, made when missing. s.mu is held.
func (s *State) space(ctx string) *idSpace {
	sp := s.spaces[ctx]
	if sp == nil {
		sp = &idSpace{ids: map[int]content{}, names: map[int]string{}, byContent: map[string]int{}}
		s.spaces[ctx] = sp
	}
	return sp
}

// Contexts returns the contexts that have subjects, and the default one,
// sorted.
func (s *State) Contexts() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	seen := map[string]bool{DefaultContext: true}
	for subject := range s.subjects {
		seen[Context(subject)] = true
	}
	return sortedKeys(seen)
}

// Wait waits until the record at offset is applied.
func (s *State) Wait(ctx context.Context, offset int64) error {
	for {
		s.mu.RLock()
		applied, ch := s.applied, s.notify
		s.mu.RUnlock()
		if applied >= offset {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Apply applies the record at offset (value nil: a tombstone). A record
// that is not the registry's is skipped, as Confluent's reader skips it;
// the error says why, for the log.
func (s *State) Apply(offset int64, key, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applied = max(s.applied, offset)
	close(s.notify)
	s.notify = make(chan struct{})
	k, err := decodeKey(key)
	if err != nil {
		return err
	}
	switch k.KeyType {
	case keySchema:
		versions := s.subjects[*k.Subject]
		if value == nil {
			delete(versions, k.Version)
			if len(versions) == 0 {
				delete(s.subjects, *k.Subject)
			}
			return nil
		}
		var v schemaValue
		if err := json.Unmarshal(value, &v); err != nil {
			return fmt.Errorf("%w: schema value: %v", errSkip, err)
		}
		if v.Subject != *k.Subject || v.Version != k.Version || v.Version <= 0 || v.ID < 0 || len(v.Schema) > MaxSchemaBytes || len(v.References) > MaxReferences {
			return fmt.Errorf("%w: schema value of %s version %d does not match its key", errSkip, *k.Subject, k.Version)
		}
		typ := v.SchemaType
		if typ == "" {
			typ = Avro
		}
		sp := s.space(Context(v.Subject))
		if c, ok := sp.ids[v.ID]; ok && (c.typ != typ || c.schema != v.Schema) {
			return fmt.Errorf("%w: id %d stands for another schema already", errSkip, v.ID)
		}
		if _, ok := sp.ids[v.ID]; !ok {
			sp.ids[v.ID] = content{typ: typ, schema: v.Schema, refs: v.References}
			n := 0
			for _, sp := range s.spaces {
				n += len(sp.ids)
			}
			metrics.RegistrySchemas.Set(float64(n))
			if ck := contentKey(typ, v.Schema, v.References); sp.byContent[ck] == 0 || v.ID < sp.byContent[ck] {
				sp.byContent[ck] = v.ID
			}
		}
		sp.maxID = max(sp.maxID, v.ID)
		if versions == nil {
			versions = map[int]*Schema{}
			s.subjects[*k.Subject] = versions
		}
		versions[v.Version] = &Schema{Subject: v.Subject, Version: v.Version, ID: v.ID, Type: typ, Schema: v.Schema, References: v.References, Deleted: v.Deleted}
	case keyConfig, keyMode:
		m, field := s.configs, "compatibilityLevel"
		if k.KeyType == keyMode {
			m, field = s.modes, "mode"
		}
		subject := ""
		if k.Subject != nil {
			subject = *k.Subject
		}
		if value == nil {
			delete(m, subject)
			return nil
		}
		var v map[string]any
		if err := json.Unmarshal(value, &v); err != nil {
			return fmt.Errorf("%w: %s value: %v", errSkip, k.KeyType, err)
		}
		level, _ := v[field].(string)
		if level == "" {
			return fmt.Errorf("%w: %s value without %s", errSkip, k.KeyType, field)
		}
		m[subject] = level
	case keyDeleteSubject:
		if value == nil {
			return nil
		}
		var v deleteSubjectValue
		if err := json.Unmarshal(value, &v); err != nil {
			return fmt.Errorf("%w: delete subject value: %v", errSkip, err)
		}
		for version, sc := range s.subjects[*k.Subject] {
			if version <= v.Version {
				sc.Deleted = true
			}
		}
	case keyClearSubject:
		if value != nil {
			delete(s.subjects, *k.Subject)
		}
	}
	return nil
}

// versions returns a subject's versions in order, the soft-deleted too
// when deleted. s.mu is held.
func (s *State) versionsLocked(subject string, deleted bool) []*Schema {
	var out []*Schema
	for _, sc := range s.subjects[subject] {
		if deleted || !sc.Deleted {
			out = append(out, sc)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out
}

// Subjects returns the subjects with a version (a soft-deleted one too
// when deleted) whose names begin with prefix, sorted.
func (s *State) Subjects(prefix string, deleted bool) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for name := range s.subjects {
		if strings.HasPrefix(name, prefix) && len(s.versionsLocked(name, deleted)) > 0 {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Versions returns a subject's versions in order (nil: no such subject).
func (s *State) Versions(subject string, deleted bool) []Schema {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Schema
	for _, sc := range s.versionsLocked(subject, deleted) {
		out = append(out, *sc)
	}
	return out
}

// Version returns a subject's version (-1: the latest not deleted, or the
// latest when deleted).
func (s *State) Version(subject string, version int, deleted bool) (Schema, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if version == -1 {
		vs := s.versionsLocked(subject, deleted)
		if len(vs) == 0 {
			return Schema{}, false
		}
		return *vs[len(vs)-1], true
	}
	sc, ok := s.subjects[subject][version]
	if !ok || (sc.Deleted && !deleted) {
		return Schema{}, false
	}
	return *sc, true
}

// HasSubject reports whether the subject has versions, soft-deleted ones
// counted when deleted.
func (s *State) HasSubject(subject string, deleted bool) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.versionsLocked(subject, deleted)) > 0
}

// ByID returns the schema an id of a context stands for.
func (s *State) ByID(ctx string, id int) (typ, schema string, refs []Reference, ok bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	sp := s.spaces[ctx]
	if sp == nil {
		return "", "", nil, false
	}
	c, ok := sp.ids[id]
	return c.typ, c.schema, c.refs, ok
}

// IDVersions returns the subjects' versions registered under an id of a
// context.
func (s *State) IDVersions(ctx string, id int, deleted bool) []Schema {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Schema
	for subject, versions := range s.subjects {
		if Context(subject) != ctx {
			continue
		}
		for _, sc := range versions {
			if sc.ID == id && (deleted || !sc.Deleted) {
				out = append(out, *sc)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Subject != out[j].Subject {
			return out[i].Subject < out[j].Subject
		}
		return out[i].Version < out[j].Version
	})
	return out
}

// ReferencedBy returns the ids of the schemas, not deleted, that refer to
// a subject's version.
func (s *State) ReferencedBy(subject string, version int) []int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	seen := map[int]bool{}
	for _, versions := range s.subjects {
		for _, sc := range versions {
			if sc.Deleted {
				continue
			}
			for _, r := range sc.References {
				if r.Subject == subject && r.Version == version {
					seen[sc.ID] = true
				}
			}
		}
	}
	out := make([]int, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// Config returns a subject's compatibility level ("" the global), and
// whether it is set.
func (s *State) Config(subject string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.configs[subject]
	return c, ok
}

// Mode returns a subject's mode ("" the global), and whether it is set.
func (s *State) Mode(subject string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m, ok := s.modes[subject]
	return m, ok
}

// MaxID is the largest id a context has given so far.
func (s *State) MaxID(ctx string) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if sp := s.spaces[ctx]; sp != nil {
		return sp.maxID
	}
	return 0
}

// contentKey is what two registrations of the same schema share.
func contentKey(typ, schema string, refs []Reference) string {
	norm := schema
	if f, ok := formats[typ]; ok {
		norm = f.normalize(schema)
	}
	key := typ + "\x00" + norm
	if len(refs) > 0 { // none given and an empty list are the same
		key += "\x00" + string(mustJSON(refs))
	}
	return key
}

// findID returns the id of a schema registered with the same content
// under any subject of a context, or 0.
func (s *State) findID(ctx, typ, schema string, refs []Reference) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if sp := s.spaces[ctx]; sp != nil {
		return sp.byContent[contentKey(typ, schema, refs)]
	}
	return 0
}

// SubjectHasID reports whether a version of the subject, not deleted, has
// the schema id: what broker-side validation checks of a record.
func (s *State) SubjectHasID(subject string, id int) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, sc := range s.subjects[subject] {
		if sc.ID == id && !sc.Deleted {
			return true
		}
	}
	return false
}

// RecordName returns the fully qualified name of the record (Avro: the
// named type) the schema of id (in the default context, where topics'
// subjects are) is, as RecordNameStrategy names subjects.
func (s *State) RecordName(id int) (string, bool) {
	s.mu.RLock()
	sp := s.spaces[DefaultContext]
	if sp == nil {
		s.mu.RUnlock()
		return "", false
	}
	c, ok := sp.ids[id]
	name, named := sp.names[id]
	s.mu.RUnlock()
	if !ok {
		return "", false
	}
	if named {
		return name, name != ""
	}
	// References are parsed first, as registration did.
	refs, _ := s.references(c.refs, true) // one gone: the schema does not parse, no name
	if f, ok := formats[c.typ]; ok {
		if p, err := f.parse(c.schema, refs); err == nil {
			switch p := p.(type) {
			case avroSchema:
				if n, ok := p.s.(interface{ FullName() string }); ok {
					name = n.FullName()
				}
			case protobufSchema:
				name = string(p.fd.Messages().Get(0).FullName()) // the first message, as Confluent's serializers name it
			}
		}
	}
	s.mu.Lock()
	sp.names[id] = name // ids never change what they stand for
	s.mu.Unlock()
	return name, name != ""
}

// Schema returns the schema an id of the default context stands for,
// parsed with the schemas its references name, as the topics' Iceberg
// tables decode records' values with it: an Avro schema (avro.Schema,
// its references' types first), a Protobuf file
// (protoreflect.FileDescriptor, its imports resolved) or a compiled JSON
// Schema (*jsonschema.Schema, its references resolved).
func (s *State) Schema(id int) (any, error) {
	typ, schema, refs, ok := s.ByID(DefaultContext, id)
	if !ok {
		return nil, fmt.Errorf("schema id %d is not registered", id)
	}
	// A soft-deleted reference still decodes the records written with it.
	resolvedRefs, err := s.references(refs, true)
	if err != nil {
		return nil, fmt.Errorf("schema id %d: %w", id, err)
	}
	switch typ {
	case Protobuf:
		return compileProto(schema, resolvedRefs)
	case JSON:
		_, compiled, err := compileJSON(schema, resolvedRefs)
		return compiled, err
	}
	p, err := avroFormat{}.parse(schema, resolvedRefs)
	if err != nil {
		return nil, err
	}
	return p.(avroSchema).s, nil
}

// Latest returns the id of a subject's latest version (not deleted).
func (s *State) Latest(subject string) (int, error) {
	sc, ok := s.Version(subject, -1, false)
	if !ok {
		return 0, fmt.Errorf("subject %s has no version", subject)
	}
	return sc.ID, nil
}

// references returns the references with the schemas they name,
// transitively, the deepest first (soft-deleted versions too when
// deleted).
func (s *State) references(refs []Reference, deleted bool) ([]resolved, error) {
	var out []resolved
	seen := map[string]bool{}
	var walk func(refs []Reference, depth int) error
	walk = func(refs []Reference, depth int) error {
		if depth > maxReferenceDepth {
			return fmt.Errorf("references nested deeper than %d", maxReferenceDepth)
		}
		for _, ref := range refs {
			sc, ok := s.Version(ref.Subject, ref.Version, deleted)
			if !ok {
				return fmt.Errorf("reference %s to %s version %d: no such schema", ref.Name, ref.Subject, ref.Version)
			}
			key := fmt.Sprintf("%s\x00%d", sc.Subject, sc.Version)
			if seen[key] {
				continue
			}
			seen[key] = true
			if err := walk(sc.References, depth+1); err != nil {
				return err
			}
			out = append(out, resolved{Reference: ref, schema: sc.Schema})
		}
		return nil
	}
	if err := walk(refs, 0); err != nil {
		return nil, err
	}
	return out, nil
}
