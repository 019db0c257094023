package iceberg

// iceberg.partition.spec, written as Redpanda writes it: a parenthesized
// list of partition fields, each a column (identity) or a transform of
// one: "(hour(timestamp))" (the default), "(day(timestamp), partition)",
// "(bucket(16, key))", "(truncate(4, value))", "()" for none.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
)

// ConfigPartitionSpec is the topic config of the table's partitioning.
const ConfigPartitionSpec = "iceberg.partition.spec"

// DefaultPartitionSpec partitions a table by hour of the records'
// timestamps.
const DefaultPartitionSpec = "(hour(timestamp))"

// CheckPartitionSpec validates iceberg.partition.spec against the
// columns of key_value's tables, or the metadata of the schema modes'
// (kafka.timestamp, kafka.partition...).
func CheckPartitionSpec(v string) error {
	_, err := partitionSpec(v, keyValueSchema())
	if err != nil {
		if _, err2 := partitionSpec(v, valueSchemaBase()); err2 == nil {
			return nil
		}
	}
	return err
}

// partitionSpec parses a spec for schema.
func partitionSpec(v string, schema *iceberg.Schema) (iceberg.PartitionSpec, error) {
	s := strings.TrimSpace(v)
	if s == "" {
		s = DefaultPartitionSpec
	}
	if !strings.HasPrefix(s, "(") || !strings.HasSuffix(s, ")") {
		return iceberg.PartitionSpec{}, fmt.Errorf("%q is not a parenthesized list such as %s", v, DefaultPartitionSpec)
	}
	var opts []iceberg.PartitionOption
	for _, term := range splitTop(s[1 : len(s)-1]) {
		if term == "" {
			continue
		}
		col, tr, name, err := partitionTerm(term)
		if err != nil {
			return iceberg.PartitionSpec{}, fmt.Errorf("%q: %w", v, err)
		}
		field, ok := schema.FindFieldByName(col)
		if !ok {
			return iceberg.PartitionSpec{}, fmt.Errorf("%q: no column %s", v, col)
		}
		if !tr.CanTransform(field.Type) {
			return iceberg.PartitionSpec{}, fmt.Errorf("%q: %s does not apply to %s, a %s", v, tr, col, field.Type)
		}
		opts = append(opts, iceberg.AddPartitionFieldByName(col, name, tr, schema, nil))
	}
	spec, err := iceberg.NewPartitionSpecOpts(opts...)
	if err != nil {
		return iceberg.PartitionSpec{}, fmt.Errorf("%q: %w", v, err)
	}
	return spec, nil
}

// splitTop splits on the commas outside parentheses, trimming each part.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// partitionTerm reads "col" or "fn(col)" or "fn(n, col)".
func partitionTerm(term string) (col string, tr iceberg.Transform, name string, err error) {
	open := strings.IndexByte(term, '(')
	if open < 0 {
		return term, iceberg.IdentityTransform{}, strings.ReplaceAll(term, ".", "_"), nil
	}
	if !strings.HasSuffix(term, ")") {
		return "", nil, "", fmt.Errorf("%s: no closing parenthesis", term)
	}
	fn := strings.ToLower(strings.TrimSpace(term[:open]))
	args := splitTop(term[open+1 : len(term)-1])
	col = args[len(args)-1]
	// A partition field's name is a directory's: no dot (kafka.timestamp
	// is kafka_timestamp).
	flat := strings.ReplaceAll(col, ".", "_")
	width := 0
	if fn == "bucket" || fn == "truncate" {
		if len(args) != 2 {
			return "", nil, "", fmt.Errorf("%s: %s takes a width and a column", term, fn)
		}
		if width, err = strconv.Atoi(args[0]); err != nil || width <= 0 {
			return "", nil, "", fmt.Errorf("%s: %s's width %q is not a positive number", term, fn, args[0])
		}
	} else if len(args) != 1 {
		return "", nil, "", fmt.Errorf("%s: %s takes one column", term, fn)
	}
	switch fn {
	case "identity":
		return col, iceberg.IdentityTransform{}, flat, nil
	case "hour", "day", "month", "year":
		tr, _ := iceberg.ParseTransform(fn)
		return col, tr, flat + "_" + fn, nil
	case "bucket":
		return col, iceberg.BucketTransform{NumBuckets: width}, fmt.Sprintf("%s_bucket_%d", flat, width), nil
	case "truncate":
		return col, iceberg.TruncateTransform{Width: width}, fmt.Sprintf("%s_trunc_%d", flat, width), nil
	}
	return "", nil, "", fmt.Errorf("%s: %s is not identity, hour, day, month, year, bucket or truncate", term, fn)
}
