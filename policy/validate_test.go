package policy_test

import (
	"strings"
	"testing"

	"github.com/reloader/reloader/policy"
)

func TestParseFormats(t *testing.T) {
	got, err := policy.ParseFormats(" config.json=json, app.yaml = YAML ")
	if err != nil || len(got) != 2 || got["config.json"] != "json" || got["app.yaml"] != "yaml" {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, bad := range []string{"", "a", "a=xml", "=json", "a=json,"} {
		if _, err := policy.ParseFormats(bad); err == nil {
			t.Errorf("ParseFormats(%q) accepted", bad)
		}
	}
}

// The value in these cases is a secret: no part of it may appear in the description.
func TestValidateNamesTheKeyAndNeverTheValue(t *testing.T) {
	const secret = "hunter2-s3cr3t"
	for _, tc := range []struct {
		name, format, value, want string
	}{
		{"valid json", "json", `{"password":"` + secret + `"}`, ""},
		{"bad json", "json", "{\"a\": 1,\n \"password\": " + secret + "}", `key "k" is not valid JSON: syntax error at line 2, column 14`},
		{"truncated json", "json", `{"password":"` + secret, `key "k" is not valid JSON: it ends before the value is complete`},
		{"empty json", "json", ``, `key "k" is not valid JSON: it ends before the value is complete`},
		{"json with a bad last byte", "json", `{"a": 1}}`, `key "k" is not valid JSON: syntax error at line 1, column 9`},
		{"json with a bad last byte after a newline", "json", "{\"a\": 1}\n]", `key "k" is not valid JSON: syntax error at line 2, column 1`},
		{"valid yaml", "yaml", "a: 1\n---\nb: " + secret + "\n", ""},
		{"bad yaml", "yaml", "a: 1\nb: " + secret + ": c\n", `key "k" is not valid YAML: line 2: mapping values are not allowed in this context`},
		{"duplicate yaml key quotes the key: line only", "yaml", secret + ": 1\n" + secret + ": 2\n", `key "k" is not valid YAML: error at line 2`},
		{"bad yaml in a later document", "yaml", "a: 1\n---\n\t" + secret + "\n", `key "k" is not valid YAML`},
		{"yaml with an unexpected character", "yaml", "a: [" + secret + "\n", `key "k" is not valid YAML`},
	} {
		got := policy.Validate(map[string]string{"k": tc.format, "absent": "json"}, func(k string) ([]byte, bool) {
			if k != "k" {
				return nil, false
			}
			return []byte(tc.value), true
		})
		if !strings.HasPrefix(got, tc.want) || tc.want == "" && got != "" {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
		for i := 0; i+4 <= len(secret); i++ {
			if strings.Contains(got, secret[i:i+4]) {
				t.Errorf("%s: %q quotes part of the value", tc.name, got)
				break
			}
		}
	}
}
