package policy

import "testing"

func TestWebhookDue(t *testing.T) {
	a, b := Content{Value: "aaa"}, Content{Value: "bbb", Legacy: "plain-b"}
	live := func(h string) Recorded { return Recorded{Known: true, Hash: h} }
	tomb := func(h string) Recorded { return Recorded{Known: true, Deleted: true, Hash: h} }
	for _, tc := range []struct {
		name               string
		exists             bool
		current            Content
		recorded           Recorded
		onCreate, onDelete bool
		want               bool
	}{
		{"a change", true, b, live("aaa"), false, false, true},
		{"no change", true, a, live("aaa"), false, false, false},
		{"the legacy plain value of the same content", true, b, live("plain-b"), false, false, false},
		{"first sight", true, a, Recorded{}, true, true, false},
		{"made under a lost key", true, Content{Value: "hmac-11111111-" + sha("x")}, live("hmac-22222222-" + sha("y")), false, false, false},
		{"deleted", false, Content{}, live("aaa"), false, false, false},
		{"deleted, --reload-on-delete", false, Content{}, live("aaa"), false, true, true},
		{"deletion already notified", false, Content{}, tomb("aaa"), false, true, false},
		{"recreated with other content", true, b, tomb("aaa"), false, false, true},
		{"recreated with the same content", true, a, tomb("aaa"), true, false, false},
		{"appeared, never existed", true, a, tomb(""), false, false, false},
		{"appeared, --reload-on-create", true, a, tomb(""), true, false, true},
	} {
		if got := WebhookDue(tc.exists, tc.current, tc.recorded, tc.onCreate, tc.onDelete); got != tc.want {
			t.Errorf("%s: WebhookDue = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func sha(s string) string {
	const hex = "0123456789abcdef"
	out := make([]byte, 40)
	for i := range out {
		out[i] = hex[(int(s[0])+i)%16]
	}
	return string(out)
}
