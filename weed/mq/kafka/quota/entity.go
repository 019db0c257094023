package quota

// Entities, their quota keys and the filters that select them, checked as
// Kafka checks them.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"
)

// The quota keys, as Kafka names them.
const (
	ProducerByteRate       = "producer_byte_rate"
	ConsumerByteRate       = "consumer_byte_rate"
	RequestPercentage      = "request_percentage"
	ControllerMutationRate = "controller_mutation_rate"
	ConnectionCreationRate = "connection_creation_rate"
)

// The entity types.
const (
	User     = "user"
	ClientID = "client-id"
	IP       = "ip"
)

// integral tells, for each key an entity of users and client ids may
// have, whether its values are whole numbers (Kafka's LONG) or not
// (DOUBLE).
var clientKeys = map[string]bool{ProducerByteRate: true, ConsumerByteRate: true, RequestPercentage: false, ControllerMutationRate: false}

// ipKeys are the keys of IP entities (Kafka's INT).
var ipKeys = map[string]bool{ConnectionCreationRate: true}

// Component is one part of an entity: a user, a client id or an IP, by
// name or (Name nil) the default.
type Component struct {
	Type string  `json:"type"`
	Name *string `json:"name,omitempty"`
}

// Entity is what quotas are set for: its components in type order.
type Entity []Component

// Sorted returns the entity with its components in type order.
func (e Entity) Sorted() Entity {
	out := slices.Clone(e)
	slices.SortFunc(out, func(a, b Component) int { return strings.Compare(a.Type, b.Type) })
	return out
}

func (e Entity) String() string {
	var b strings.Builder
	for i, c := range e.Sorted() {
		if i > 0 {
			b.WriteByte(',')
		}
		name := "<default>"
		if c.Name != nil {
			name = *c.Name
		}
		fmt.Fprintf(&b, "%s=%s", c.Type, name)
	}
	return b.String()
}

// key names the entity's file.
func (e Entity) key() string {
	var b strings.Builder
	for _, c := range e.Sorted() {
		b.WriteString(c.Type)
		if c.Name != nil {
			b.WriteString("\x00=")
			b.WriteString(*c.Name)
		}
		b.WriteByte(0)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:16]) + ".json"
}

// ident is an entity as a map key, for lookups that allocate nothing: the
// types it has and which of them are defaults, as bits, and the names.
type ident struct {
	user, client, ip string
	has, dflt        uint8
}

const (
	typeUser uint8 = 1 << iota
	typeClient
	typeIP
)

func (e Entity) ident() ident {
	var id ident
	for _, c := range e {
		var bit uint8
		var name *string
		switch c.Type {
		case User:
			bit, name = typeUser, &id.user
		case ClientID:
			bit, name = typeClient, &id.client
		case IP:
			bit, name = typeIP, &id.ip
		default:
			continue
		}
		id.has |= bit
		if c.Name == nil {
			id.dflt |= bit
		} else {
			*name = *c.Name
		}
	}
	return id
}

func (e Entity) has(typ string) (Component, bool) {
	for _, c := range e {
		if c.Type == typ {
			return c, true
		}
	}
	return Component{}, false
}

// Validate returns why quotas cannot be set for the entity, as Kafka
// refuses it (INVALID_REQUEST), or "".
func (e Entity) Validate() string {
	if len(e) == 0 {
		return "Invalid empty client quota entity"
	}
	seen := map[string]bool{}
	for _, c := range e {
		switch c.Type {
		case User, ClientID, IP:
		default:
			return fmt.Sprintf("Unhandled client quota entity type: %s", c.Type)
		}
		if seen[c.Type] {
			return fmt.Sprintf("Duplicate %s entity type", c.Type)
		}
		seen[c.Type] = true
		if c.Type == IP && c.Name != nil {
			if _, err := netip.ParseAddr(*c.Name); err != nil {
				return fmt.Sprintf("%s is not a valid IP address", *c.Name)
			}
		}
	}
	if seen[IP] && len(e) > 1 {
		return "Invalid quota entity combination, IP entity should not be combined with User or ClientId entities."
	}
	return ""
}

// Op is one change of an entity's quotas: a key set to Value, or removed.
type Op struct {
	Key    string
	Value  float64
	Remove bool
}

// ValidateOp returns why op cannot be made on the entity, or "".
func (e Entity) ValidateOp(op Op) string {
	keys := clientKeys
	if _, ok := e.has(IP); ok {
		keys = ipKeys
	}
	integral, ok := keys[op.Key]
	if !ok {
		return fmt.Sprintf("Invalid configuration key %s", op.Key)
	}
	if op.Remove {
		return ""
	}
	switch {
	case math.IsNaN(op.Value) || math.IsInf(op.Value, 0):
		return fmt.Sprintf("Configuration %s must be a number", op.Key)
	case integral && op.Value != math.Trunc(op.Value):
		return fmt.Sprintf("Configuration %s must be a Long value", op.Key)
	case integral && (op.Value > math.MaxInt64 || (op.Key == ConnectionCreationRate && op.Value > math.MaxInt32)):
		return fmt.Sprintf("Proposed value for %s is too large", op.Key)
	case op.Value <= 0:
		return fmt.Sprintf("Configuration %s must be positive", op.Key)
	}
	return ""
}

// Entry is an entity with its quotas.
type Entry struct {
	Entity Entity             `json:"entity"`
	Values map[string]float64 `json:"values"`
}

// The match types of a filter component, as DescribeClientQuotas sends them.
const (
	MatchExact   = 0 // the name given
	MatchDefault = 1 // the default
	MatchAny     = 2 // any name, the default too
)

// Filter is one component of a DescribeClientQuotas filter.
type Filter struct {
	Type  string
	Match int8
	Name  *string
}

// ValidateFilters returns why a filter cannot be used, or "".
func ValidateFilters(fs []Filter) string {
	seen := map[string]bool{}
	for _, f := range fs {
		switch f.Type {
		case User, ClientID, IP:
		default:
			return fmt.Sprintf("Custom entity type '%s' not supported", f.Type)
		}
		if seen[f.Type] {
			return fmt.Sprintf("Duplicate filter component entity type %s", f.Type)
		}
		seen[f.Type] = true
		switch f.Match {
		case MatchExact:
			if f.Name == nil {
				return fmt.Sprintf("Invalid filter component: an exact match of %s needs a name", f.Type)
			}
		case MatchDefault, MatchAny:
		default:
			return fmt.Sprintf("Unknown match type %d", f.Match)
		}
	}
	if seen[IP] && len(seen) > 1 {
		return "Invalid entity filter component combination, IP filter component should not be used with User or ClientId filter component."
	}
	return ""
}

// matches reports whether the filter (strict: and nothing else) selects e.
func matches(fs []Filter, strict bool, e Entity) bool {
	if strict && len(e) != len(fs) {
		return false
	}
	for _, f := range fs {
		c, ok := e.has(f.Type)
		if !ok {
			return false
		}
		switch f.Match {
		case MatchExact:
			if c.Name == nil || *c.Name != *f.Name {
				return false
			}
		case MatchDefault:
			if c.Name != nil {
				return false
			}
		}
	}
	return true
}
