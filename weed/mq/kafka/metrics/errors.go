package metrics

import (
	"reflect"

	"github.com/twmb/franz-go/pkg/kerr"
)

// CountErrors counts the error codes of a response: every non-zero
// ErrorCode field in it (of the request, a topic, a partition, a group or a
// member), by API and code name.
func CountErrors(api string, resp any) {
	if resp == nil {
		return
	}
	walkErrors(reflect.ValueOf(resp), func(code int16) {
		name := "UNKNOWN"
		if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
			name = e.Message
		}
		Errors.WithLabelValues(api, name).Inc()
	})
}

func walkErrors(v reflect.Value, found func(int16)) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkErrors(v.Elem(), found)
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if t.Field(i).Name == "ErrorCode" && f.Kind() == reflect.Int16 {
				if code := f.Int(); code != 0 {
					found(int16(code))
				}
				continue
			}
			switch f.Kind() {
			case reflect.Struct, reflect.Slice, reflect.Pointer:
				walkErrors(f, found)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return // bytes: records, metadata
		}
		for i := 0; i < v.Len(); i++ {
			walkErrors(v.Index(i), found)
		}
	}
}
