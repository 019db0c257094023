// Package link is topic links: the gateway pulls topics from another Kafka
// cluster (Apache Kafka, or another gateway cluster) and writes every batch
// at the offset it has there, bytes as its log holds them, so that a
// consumer group's committed offsets mean the same on both sides and a
// cutover needs no offset translation. A link also copies the topics'
// partition counts and configs, consumer groups' committed offsets (for
// groups with no members here), and optionally their ACLs.
//
// A link's configuration (what the user asked for: Config) and its state
// (what the link did: Status) are two files in the filer, each with one
// kind of writer: the API writes the first; the gateway that owns the link
// in the cluster's ownership (its controller) the second. The controller
// creates the mirror topics, syncs configs, groups and ACLs, measures the
// lag and promotes; each gateway pulls the mirrored partitions it leads.
// A mirror topic refuses produce until it is promoted.
package link

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"time"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/filerfs"
	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/user"
)

// Dir is where the filer keeps the links: name.json, the configuration,
// and name.status.json, the state.
const Dir = "/etc/kafka-gateway/links"

// Config is a link as created: its source and what it mirrors.
type Config struct {
	Name   string `json:"name"`
	Source Source `json:"source"`
	// Topics is a regular expression of the source's topics to mirror
	// (the whole name matches); Groups one of its consumer groups whose
	// committed offsets are copied ("": none).
	Topics string `json:"topics"`
	Groups string `json:"groups,omitempty"`
	// ACLs copies the source's ACLs of the mirrored topics and groups.
	ACLs bool `json:"acls,omitempty"`
	// Paused stops pulling; the mirror topics stay read-only.
	Paused bool `json:"paused,omitempty"`
	// Promote are the topics asked to be promoted ("*": every one), and
	// whether without waiting for the mirror to catch up (the source is
	// lost).
	Promote map[string]Promotion `json:"promote,omitempty"`
	Created int64                `json:"created"`
}

// Promotion is a request to make a mirror topic writable.
type Promotion struct {
	// Force promotes without waiting to catch up with the source.
	Force bool  `json:"force,omitempty"`
	At    int64 `json:"at"`
}

// Source is how the link reaches its source cluster, as a Kafka client's
// settings name it.
type Source struct {
	Bootstrap []string `json:"bootstrap"`
	// SecurityProtocol is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
	SecurityProtocol string `json:"securityProtocol,omitempty"`
	// SASLMechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	SASLMechanism string `json:"saslMechanism,omitempty"`
	SASLUser      string `json:"saslUser,omitempty"`
	// SASLPassword is given to the API and never kept or shown: the filer
	// holds it sealed with the cluster's secret (SealedPassword).
	SASLPassword   string `json:"saslPassword,omitempty"`
	SealedPassword []byte `json:"sealedPassword,omitempty"`
	// SSLCA is the PEM of the CAs the source's certificate is checked
	// against ("": the system's).
	SSLCA string `json:"sslCa,omitempty"`
	// SSLInsecure skips checking the source's certificate.
	SSLInsecure bool `json:"sslInsecure,omitempty"`
}

// States of a link, of its topics and partitions.
const (
	StateActive      = "active"
	StatePaused      = "paused"
	StateFailed      = "failed"
	StatePromoting   = "promoting"
	StatePromoted    = "promoted"
	StateUnreachable = "source unreachable"
	StateConflict    = "conflict"
	StateMirroring   = "mirroring"
)

// Status is what a link's controller found and did, kept for every gateway
// (the produce check, the fetchers) and the API.
type Status struct {
	// Controller is the node id of the gateway that wrote it, Updated
	// when (Unix milliseconds).
	Controller int32  `json:"controller"`
	Updated    int64  `json:"updated"`
	State      string `json:"state"`
	Error      string `json:"error,omitempty"`
	// Topics are the mirror topics: created (or adopted empty) by the
	// link; a name the link could not take is kept with the reason.
	Topics map[string]*TopicStatus `json:"topics,omitempty"`
	// Groups are the consumer groups whose offsets were copied.
	Groups map[string]*GroupStatus `json:"groups,omitempty"`
	// ProducerIDFloor is the largest producer id of the mirrored
	// partitions when a topic was promoted: every gateway hands out
	// larger ones (-1: none promoted yet).
	ProducerIDFloor int64 `json:"producerIdFloor"`
}

// TopicStatus is a mirror topic's.
type TopicStatus struct {
	State string `json:"state"`
	// Taken is set once the link created the topic here, or took one
	// that held no record.
	Taken      bool   `json:"taken,omitempty"`
	Error      string `json:"error,omitempty"`
	Partitions int32  `json:"partitions"`
	// Refused are the source's configs the gateway does not take, with
	// why.
	Refused map[string]string `json:"refusedConfigs,omitempty"`
	// Lag per partition: the source's end minus the mirror's.
	Lag        map[int32]PartitionLag `json:"lag,omitempty"`
	PromotedAt int64                  `json:"promotedAt,omitempty"`
}

// PartitionLag is a mirrored partition's offsets on both sides.
type PartitionLag struct {
	SourceStart int64 `json:"sourceStart"`
	SourceEnd   int64 `json:"sourceEnd"`
	MirrorEnd   int64 `json:"mirrorEnd"`
	// Behind is when the mirror was last seen behind the source's end
	// without catching up since (Unix milliseconds; 0: caught up).
	Behind int64  `json:"behindSince,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Records is how many records the mirror is behind.
func (l PartitionLag) Records() int64 { return max(0, l.SourceEnd-l.MirrorEnd) }

// Seconds is how long the mirror has been behind at now.
func (l PartitionLag) Seconds(now time.Time) float64 {
	if l.Behind == 0 {
		return 0
	}
	return max(0, now.Sub(time.UnixMilli(l.Behind)).Seconds())
}

// GroupStatus is a consumer group's offset sync.
type GroupStatus struct {
	Synced int64  `json:"synced,omitempty"`
	Error  string `json:"error,omitempty"`
}

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,128}$`)

// Validate checks a link as the API takes it.
func (c *Config) Validate() error {
	if !nameRE.MatchString(c.Name) {
		return fmt.Errorf("link name %q: letters, digits, '.', '_' and '-', at most 128", c.Name)
	}
	if len(c.Source.Bootstrap) == 0 {
		return errors.New("the source's bootstrap servers are missing")
	}
	if c.Topics == "" {
		return errors.New("the topics to mirror (a regular expression) are missing")
	}
	for what, re := range map[string]string{"topics": c.Topics, "groups": c.Groups} {
		if _, err := regexp.Compile(re); err != nil {
			return fmt.Errorf("%s: %v", what, err)
		}
	}
	switch c.Source.SecurityProtocol {
	case "", "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL":
	default:
		return fmt.Errorf("source security protocol %q: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", c.Source.SecurityProtocol)
	}
	switch c.Source.SASLMechanism {
	case "", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
	default:
		return fmt.Errorf("source SASL mechanism %q: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", c.Source.SASLMechanism)
	}
	return nil
}

// matcher is a whole-name match of re.
func matcher(re string) (*regexp.Regexp, error) {
	if re == "" {
		return nil, nil
	}
	return regexp.Compile("^(?:" + re + ")$")
}

// Store keeps the links in the filer.
type Store struct {
	Files  filerfs.VersionedFiles
	Sealer *user.Sealer
}

func configFile(name string) string { return name + ".json" }
func statusFile(name string) string { return name + ".status.json" }

// ErrNotFound is a link that does not exist.
var ErrNotFound = errors.New("no such link")

// ErrExists is a link created twice.
var ErrExists = errors.New("the link exists")

// Get reads a link's configuration and its version.
func (s *Store) Get(ctx context.Context, name string) (*Config, string, error) {
	data, version, err := s.Files.ReadFileVersion(ctx, Dir, configFile(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	if err != nil {
		return nil, "", err
	}
	var c Config
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, "", fmt.Errorf("link %s: %w", name, err)
	}
	return &c, version, nil
}

// Create writes a new link, its password sealed.
func (s *Store) Create(ctx context.Context, c *Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if c.Source.SASLPassword != "" {
		sealed, err := s.Sealer.Seal("link "+c.Name, []byte(c.Source.SASLPassword))
		if err != nil {
			return err
		}
		c.Source.SealedPassword, c.Source.SASLPassword = sealed, ""
	}
	c.Created = time.Now().UnixMilli()
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if _, err := s.Files.WriteFileIf(ctx, Dir, configFile(c.Name), data, ""); errors.Is(err, filerfs.ErrChanged) {
		return fmt.Errorf("%w: %s", ErrExists, c.Name)
	} else if err != nil {
		return err
	}
	return nil
}

// Update changes a link's configuration with change, read afresh, and
// writes it if no one else did meanwhile (else tries again).
func (s *Store) Update(ctx context.Context, name string, change func(*Config) error) error {
	for attempt := 0; ; attempt++ {
		c, version, err := s.Get(ctx, name)
		if err != nil {
			return err
		}
		if err := change(c); err != nil {
			return err
		}
		data, err := json.Marshal(c)
		if err != nil {
			return err
		}
		_, err = s.Files.WriteFileIf(ctx, Dir, configFile(name), data, version)
		if !errors.Is(err, filerfs.ErrChanged) || attempt == 5 {
			return err
		}
	}
}

// Delete removes a link and its state.
func (s *Store) Delete(ctx context.Context, name string) error {
	if _, _, err := s.Get(ctx, name); err != nil {
		return err
	}
	if err := s.Files.Remove(ctx, Dir, configFile(name)); err != nil {
		return err
	}
	return s.Files.Remove(ctx, Dir, statusFile(name))
}

// Link is a link's configuration with its state.
type Link struct {
	Config Config  `json:"config"`
	Status *Status `json:"status,omitempty"`
}

// List reads every link with its state, by name.
func (s *Store) List(ctx context.Context) ([]Link, error) {
	files, err := s.Files.ListFiles(ctx, Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	statuses := map[string]*Status{}
	var out []Link
	for _, f := range files {
		if f.Dir {
			continue
		}
		var name string
		switch {
		case len(f.Name) > len(".status.json") && f.Name[len(f.Name)-len(".status.json"):] == ".status.json":
			var st Status
			if json.Unmarshal(f.Data, &st) == nil {
				statuses[f.Name[:len(f.Name)-len(".status.json")]] = &st
			}
			continue
		case len(f.Name) > len(".json") && f.Name[len(f.Name)-len(".json"):] == ".json":
			name = f.Name[:len(f.Name)-len(".json")]
		default:
			continue
		}
		var c Config
		if err := json.Unmarshal(f.Data, &c); err != nil || c.Name != name {
			continue
		}
		out = append(out, Link{Config: c})
	}
	for i := range out {
		out[i].Status = statuses[out[i].Config.Name]
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Config.Name < out[j].Config.Name })
	return out, nil
}

// SaveStatus writes a link's state (its controller does).
func (s *Store) SaveStatus(ctx context.Context, name string, st *Status) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return s.Files.WriteFile(ctx, Dir, statusFile(name), data)
}

// Status reads a link's state (nil before its controller wrote one).
func (s *Store) Status(ctx context.Context, name string) (*Status, error) {
	data, err := s.Files.ReadFile(ctx, Dir, statusFile(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st Status
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// password opens the link's sealed password.
func (s *Store) password(c *Config) (string, error) {
	if len(c.Source.SealedPassword) == 0 {
		return "", nil
	}
	plain, err := s.Sealer.Open("link "+c.Name, c.Source.SealedPassword)
	return string(plain), err
}

// Redacted is c as the API shows it: no secret.
func (c Config) Redacted() Config {
	c.Source.SASLPassword, c.Source.SealedPassword = "", nil
	return c
}
