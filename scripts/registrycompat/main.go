// Command registrycompat runs a published set of schema compatibility
// cases against a running schema registry over its REST API, and says for
// how many the registry's answer is the one the cases expect.
//
// A case file is a JSON array of {description, original_schema,
// update_schema, compatible} (Confluent's schema registry publishes its
// JSON Schema and Protobuf cases so, in its providers' test resources).
// For each case the original is registered in a subject of its own and
// the update checked against it at BACKWARD; the subjects are deleted
// after.
//
//	go run ./scripts/registrycompat -url http://127.0.0.1:8081 -type JSON diff-schema-examples.json
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

type testCase struct {
	Description      string          `json:"description"`
	Original         json.RawMessage `json:"original_schema"`
	Update           json.RawMessage `json:"update_schema"`
	OriginalMetadata json.RawMessage `json:"original_metadata"`
	UpdateMetadata   json.RawMessage `json:"update_metadata"`
	Compatible       bool            `json:"compatible"`
}

func main() {
	url := flag.String("url", "http://127.0.0.1:8081", "the registry's URL")
	typ := flag.String("type", "JSON", "the cases' schema type: JSON, PROTOBUF or AVRO")
	verbose := flag.Bool("v", false, "name every case the registry answers otherwise")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: registrycompat [-url URL] [-type JSON|PROTOBUF|AVRO] [-v] CASES.json...")
		os.Exit(2)
	}
	failed := false
	for fi, file := range flag.Args() {
		var cases []testCase
		b, err := os.ReadFile(file)
		if err == nil {
			err = json.Unmarshal(b, &cases)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", file, err)
			os.Exit(1)
		}
		var agree, differ, skipped, refused int
		for i, c := range cases {
			if len(c.OriginalMetadata) > 0 || len(c.UpdateMetadata) > 0 {
				skipped++ // metadata rules (reserved fields) are not served
				continue
			}
			subject := fmt.Sprintf("registrycompat-%d-%d", fi, i)
			got, err := check(*url, subject, *typ, c)
			switch {
			case err != nil:
				refused++
				if *verbose {
					fmt.Printf("  refused: %s: %v\n", c.Description, err)
				}
			case got == c.Compatible:
				agree++
			default:
				differ++
				if *verbose {
					fmt.Printf("  differs: %s: compatible=%v, expected %v\n", c.Description, got, c.Compatible)
				}
			}
		}
		fmt.Printf("%s: %d cases, %d answered as expected, %d otherwise, %d refused, %d skipped (metadata)\n",
			filepath.Base(file), len(cases), agree, differ, refused, skipped)
		failed = failed || differ > 0 || refused > 0
	}
	if failed {
		os.Exit(1)
	}
}

// schemaText is a case's schema as registered: a JSON schema's JSON, a
// Protobuf schema's text.
func schemaText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

func check(url, subject, typ string, c testCase) (bool, error) {
	defer func() {
		call(url, "DELETE", "/subjects/"+subject, nil, nil)                   //nolint:errcheck // best effort
		call(url, "DELETE", "/subjects/"+subject+"?permanent=true", nil, nil) //nolint:errcheck // best effort
	}()
	if err := call(url, "PUT", "/config/"+subject, map[string]string{"compatibility": "BACKWARD"}, nil); err != nil {
		return false, err
	}
	body := func(raw json.RawMessage) map[string]string {
		return map[string]string{"schema": schemaText(raw), "schemaType": typ}
	}
	if err := call(url, "POST", "/subjects/"+subject+"/versions", body(c.Original), nil); err != nil {
		return false, fmt.Errorf("the original: %w", err)
	}
	var out struct {
		IsCompatible bool `json:"is_compatible"`
	}
	if err := call(url, "POST", "/compatibility/subjects/"+subject+"/versions/latest", body(c.Update), &out); err != nil {
		return false, fmt.Errorf("the update: %w", err)
	}
	return out.IsCompatible, nil
}

func call(url, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	q, err := http.NewRequest(method, strings.TrimSuffix(url, "/")+path, body)
	if err != nil {
		return err
	}
	q.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	resp, err := http.DefaultClient.Do(q)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}
