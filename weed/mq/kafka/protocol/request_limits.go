package protocol

import (
	"fmt"
	"reflect"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka 4.4's bounds on what one request may hold: a request with an
// array of more elements, or a tag section of more tagged fields, is
// malformed, and its connection is closed as for any request that does not
// parse.
const (
	MaxArrayElements = 1_000_000
	MaxTaggedFields  = 10_000
)

// Every array element takes at least a byte on the wire and every tagged
// field at least two (its tag and its size), so a request shorter than
// these cannot break the limits and is not walked.
const (
	minBytesOverArray = MaxArrayElements + 1
	minBytesOverTags  = 2 * (MaxTaggedFields + 1)
)

var tagsType = reflect.TypeFor[kmsg.Tags]()

// checkRequestLimits reports the first array or tag section of a decoded
// request body (whose encoding was size bytes) that is over Kafka's
// bounds. The decoder has already bounded every array by the bytes left,
// so the memory a request takes is bounded by its size; this refuses what
// Kafka refuses. Tagged fields are counted as kept: a tag repeated in one
// section is one field (the later value wins, holding no more memory).
func checkRequestLimits(body kmsg.Request, size int) error {
	if size < minBytesOverTags {
		return nil
	}
	return walkLimits(reflect.ValueOf(body).Elem(), size >= minBytesOverArray)
}

func walkLimits(v reflect.Value, arrays bool) error {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == tagsType {
			if n := v.Addr().Interface().(*kmsg.Tags).Len(); n > MaxTaggedFields {
				return fmt.Errorf("%d tagged fields in one tag section, over the limit of %d", n, MaxTaggedFields)
			}
			return nil
		}
		for i := range v.NumField() {
			if err := walkLimits(v.Field(i), arrays); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 { // bytes, not an array
			return nil
		}
		if arrays && v.Len() > MaxArrayElements {
			return fmt.Errorf("an array of %d elements, over the limit of %d", v.Len(), MaxArrayElements)
		}
		if k := v.Type().Elem().Kind(); k == reflect.Struct || k == reflect.Pointer {
			for i := range v.Len() {
				if err := walkLimits(v.Index(i), arrays); err != nil {
					return err
				}
			}
		}
	case reflect.Pointer:
		if !v.IsNil() {
			return walkLimits(v.Elem(), arrays)
		}
	}
	return nil
}
