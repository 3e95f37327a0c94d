package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ValidateAnnotation, on a ConfigMap or Secret, declares the format of some of its keys:
// "config.json=json,app.yaml=yaml". A change in which such a key does not parse is not rolled
// out.
const ValidateAnnotation = "reloader/validate"

// Formats a key may be declared to have.
const (
	FormatJSON = "json"
	FormatYAML = "yaml"
)

// ParseFormats reads the validate annotation: key → format.
func ParseFormats(v string) (map[string]string, error) {
	out := map[string]string{}
	for _, part := range strings.Split(v, ",") {
		k, f, ok := strings.Cut(strings.TrimSpace(part), "=")
		f = strings.ToLower(strings.TrimSpace(f))
		if !ok || strings.TrimSpace(k) == "" || f != FormatJSON && f != FormatYAML {
			return nil, fmt.Errorf("annotation %s: %q is not <key>=json or <key>=yaml", ValidateAnnotation, part)
		}
		out[strings.TrimSpace(k)] = f
	}
	return out, nil
}

// Validate checks every declared key that is present, in key order, and describes the first
// that does not parse. The description names the key and where the parse failed, and never
// quotes the value: it may be a Secret's. A declared key that is absent is not an error.
func Validate(formats map[string]string, value func(key string) ([]byte, bool)) string {
	for _, k := range slices.Sorted(maps.Keys(formats)) {
		b, ok := value(k)
		if !ok {
			continue
		}
		var problem string
		if formats[k] == FormatJSON {
			problem = jsonProblem(b)
		} else {
			problem = yamlProblem(b)
		}
		if problem != "" {
			return fmt.Sprintf("key %q %s", k, problem)
		}
	}
	return ""
}

// jsonProblem says where b stops being JSON, by line and column only.
func jsonProblem(b []byte) string {
	var v any
	err := json.Unmarshal(b, &v)
	if err == nil {
		return ""
	}
	var syntax *json.SyntaxError
	if !errors.As(err, &syntax) {
		return "is not valid JSON"
	}
	// Only the end of the input is reported at its length; a bad last byte is reported there too.
	if syntax.Error() == "unexpected end of JSON input" {
		return "is not valid JSON: it ends before the value is complete"
	}
	line, col := position(b, syntax.Offset)
	return fmt.Sprintf("is not valid JSON: syntax error at line %d, column %d", line, col)
}

// position converts a byte offset to a 1-based line and column.
func position(b []byte, offset int64) (line, col int) {
	before := b[:max(offset-1, 0)]
	line = bytes.Count(before, []byte("\n")) + 1
	return line, len(before) - bytes.LastIndexByte(before, '\n')
}

// yamlLine finds the line and the parser's problem in a YAML error. The problem is kept only
// when it is plain words: some messages quote the input (a duplicate key, an unexpected
// character), and those are reduced to the line.
var (
	yamlLine  = regexp.MustCompile(`line (\d+)(?:, column \d+)?: (.*)$`)
	plainText = regexp.MustCompile(`^[a-z ]+$`)
)

// yamlProblem parses every document of b and says where the first error is.
func yamlProblem(b []byte) string {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var v any
		err := dec.Decode(&v)
		if err == nil {
			continue
		}
		if errors.Is(err, io.EOF) {
			return ""
		}
		for _, l := range strings.Split(err.Error(), "\n") {
			m := yamlLine.FindStringSubmatch(l)
			switch {
			case m == nil:
				continue
			case plainText.MatchString(m[2]):
				return fmt.Sprintf("is not valid YAML: line %s: %s", m[1], m[2])
			}
			return fmt.Sprintf("is not valid YAML: error at line %s", m[1])
		}
		return "is not valid YAML"
	}
}
