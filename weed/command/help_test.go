package command

import (
	"strings"
	"testing"

	flag "github.com/seaweedfs/seaweedfs/weed/util/fla9"
)

// The gateway's help is written by hand, so a flag added without a word
// there is caught here.
func TestHelpNamesEveryFlag(t *testing.T) {
	long := MqKafkaGateway.Long
	MqKafkaGateway.Flag.VisitAll(func(f *flag.Flag) {
		if !namesFlag(long, f.Name) {
			t.Errorf("the help (MqKafkaGateway.Long) does not name -%s", f.Name)
		}
	})
}

// namesFlag reports whether text holds "-"+name not followed by a byte
// that could continue a flag name ("-audit.topic" is not "-audit.topics").
func namesFlag(text, name string) bool {
	needle := "-" + name
	for i := 0; ; {
		j := strings.Index(text[i:], needle)
		if j < 0 {
			return false
		}
		end := i + j + len(needle)
		if end == len(text) || !continuesName(text[end]) {
			return true
		}
		i += j + 1
	}
}

func continuesName(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_'
}
