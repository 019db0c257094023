package filerfs

import (
	"strings"
	"testing"
)

func TestEscape(t *testing.T) {
	for _, name := range []string{"group", "my.group-1_x", "a/b", "..", ".", ".hidden", "100%", "ü", " ", strings.Repeat("x", 200)} {
		e := Escape(name)
		if strings.ContainsAny(e, "/ ") || e == "." || e == ".." || strings.HasPrefix(e, ".") {
			t.Errorf("Escape(%q) = %q is not a safe file name", name, e)
		}
		if back, ok := Unescape(e); !ok || back != name {
			t.Errorf("Unescape(Escape(%q)) = %q, %v", name, back, ok)
		}
	}
	long := strings.Repeat("/", 100)
	if e := Escape(long); len(e) > maxEscaped || e[0] != '~' {
		t.Errorf("a long name escapes to %q", e)
	}
	if _, ok := Unescape(Escape(long)); ok {
		t.Error("a hashed name reads back")
	}
}

func FuzzEscape(f *testing.F) {
	f.Add("group")
	f.Add("../x")
	f.Fuzz(func(t *testing.T, name string) {
		e := Escape(name)
		if len(e) > maxEscaped+1 || strings.Contains(e, "/") || e == "." || e == ".." || e == "" {
			t.Fatalf("Escape(%q) = %q", name, e)
		}
		if back, ok := Unescape(e); ok && back != name {
			t.Fatalf("Unescape(Escape(%q)) = %q", name, back)
		}
	})
}
