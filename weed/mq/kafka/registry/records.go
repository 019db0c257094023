package registry

// The records of the _schemas topic, as Confluent's Schema Registry writes
// them (so that its backup and migration tools read ours, and ours theirs):
// JSON keys naming what a record is about, JSON values, tombstones for
// what is deleted for good.
//
//	SCHEMA          {"keytype":"SCHEMA","subject":"s","version":1,"magic":1}
//	                {"subject":"s","version":1,"id":1,"schemaType":"PROTOBUF","references":[...],"schema":"...","deleted":false}
//	CONFIG          {"keytype":"CONFIG","subject":null,"magic":0}   {"compatibilityLevel":"FULL"}
//	MODE            {"keytype":"MODE","subject":null,"magic":0}     {"mode":"IMPORT"}
//	DELETE_SUBJECT  {"keytype":"DELETE_SUBJECT","subject":"s","magic":0}  {"subject":"s","version":3}
//	CLEAR_SUBJECT   {"keytype":"CLEAR_SUBJECT","subject":"s","magic":0}   {"subject":"s"}
//	NOOP            {"keytype":"NOOP","magic":0}

import (
	"encoding/json"
	"errors"
	"fmt"
)

// The key types.
const (
	keySchema        = "SCHEMA"
	keyConfig        = "CONFIG"
	keyMode          = "MODE"
	keyDeleteSubject = "DELETE_SUBJECT"
	keyClearSubject  = "CLEAR_SUBJECT"
	keyNoop          = "NOOP"
)

// recordKey is a _schemas record's key.
type recordKey struct {
	KeyType string  `json:"keytype"`
	Subject *string `json:"subject,omitempty"`
	Version int     `json:"version,omitempty"`
	Magic   int     `json:"magic"`
}

// Reference is a schema's reference to another subject's version, by the
// name the schema uses for it.
type Reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// schemaValue is a SCHEMA record's value: a version as the API shows it,
// and whether it is soft-deleted.
type schemaValue struct {
	schemaJSON
	Deleted bool `json:"deleted"`
}

type configValue struct {
	CompatibilityLevel string `json:"compatibilityLevel"`
}

type modeValue struct {
	Mode string `json:"mode"`
}

type deleteSubjectValue struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// Bounds of what a record may hold: a schema's text and references.
const (
	MaxSchemaBytes = 1 << 20
	MaxReferences  = 1000
)

func schemaKey(subject string, version int) []byte {
	return mustJSON(recordKey{KeyType: keySchema, Subject: &subject, Version: version, Magic: 1})
}

func configKey(subject *string) []byte {
	return mustJSON(recordKey{KeyType: keyConfig, Subject: subject})
}

func modeKey(subject *string) []byte {
	return mustJSON(recordKey{KeyType: keyMode, Subject: subject})
}

func deleteSubjectKey(subject string) []byte {
	return mustJSON(recordKey{KeyType: keyDeleteSubject, Subject: &subject})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // plain structs of strings and numbers
	}
	return b
}

// errSkip marks a record that is not the registry's (or not one it
// knows): skipped, as Confluent's reader skips them.
var errSkip = errors.New("not a schema registry record")

// decodeKey reads a record's key.
func decodeKey(key []byte) (recordKey, error) {
	var k recordKey
	if err := json.Unmarshal(key, &k); err != nil {
		return k, fmt.Errorf("%w: key: %v", errSkip, err)
	}
	switch k.KeyType {
	case keySchema, keyDeleteSubject, keyClearSubject:
		if k.Subject == nil {
			return k, fmt.Errorf("%w: %s key without a subject", errSkip, k.KeyType)
		}
	case keyConfig, keyMode, keyNoop:
	default:
		return k, fmt.Errorf("%w: key type %q", errSkip, k.KeyType)
	}
	return k, nil
}
