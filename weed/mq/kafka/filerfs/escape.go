package filerfs

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxEscaped bounds an escaped name: the filer refuses file names over 255
// bytes, and a group's state file adds a suffix.
const maxEscaped = 200

// Escape turns a group, topic or transactional id into a file name that
// reads back the same: ASCII letters, digits, '_', '-' and '.' (not first)
// stay, every other byte becomes %XX. A name that would grow past
// maxEscaped becomes '~' and a hash of it; such names are not read back from
// the file name (a group's state file carries its name).
func Escape(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-', c == '.' && i > 0:
			b.WriteByte(c)
		default:
			const hexDigits = "0123456789ABCDEF"
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		}
	}
	if name == "" || b.Len() > maxEscaped {
		sum := sha256.Sum256([]byte(name))
		return "~" + hex.EncodeToString(sum[:20])
	}
	return b.String()
}

// Unescape reverses Escape; it reports false for hashed and foreign names.
func Unescape(file string) (string, bool) {
	if file == "" || file[0] == '~' {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(file); i++ {
		c := file[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(file) {
			return "", false
		}
		v, err := hex.DecodeString(file[i+1 : i+3])
		if err != nil {
			return "", false
		}
		b.WriteByte(v[0])
		i += 2
	}
	return b.String(), true
}
