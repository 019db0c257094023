package console

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/url"
	"strconv"
	"strings"
	"time"
)

func urlEscape(s string) string { return url.QueryEscape(s) }

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"bytes":  humanBytes,
	"num":    groupDigits,
	"ms":     func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) },
	"since":  func(t time.Time) string { return humanSince(time.Since(t)) },
	"time":   func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000") },
	"join":   strings.Join,
	"path":   url.PathEscape,
	"query":  url.QueryEscape,
	"add":    func(a, b int) int { return a + b },
	"rate":   func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) },
	"orDash": func(s string) string { return orDash(s) },
	"list":   func(s ...string) []string { return s },
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func humanBytes(n int64) string {
	if n < 0 {
		return "—"
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// groupDigits writes n with thin groups of three digits.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func humanSince(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh %dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// page returns the rows of page p (from 0) of n rows, and whether there
// is another.
func pageBounds(n, p int) (from, to int, more bool) {
	if p < 0 {
		p = 0
	}
	from = p * pageSize
	if from > n {
		from = n
	}
	to = min(from+pageSize, n)
	return from, to, to < n
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

func pathEscape(s string) string { return url.PathEscape(s) }

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
