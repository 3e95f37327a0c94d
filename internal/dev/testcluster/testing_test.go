package testcluster

import (
	"flag"
	"strings"
	"testing"
)

func TestDefaultParallelKeepsAGivenParallel(t *testing.T) {
	for _, tt := range []struct {
		args []string
		n    int
		want string
	}{
		{nil, 8, "8"},
		{nil, 12, "12"},
		{[]string{"-test.parallel=3"}, 12, "3"},
		{[]string{"-test.parallel", "2"}, 8, "2"},
	} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.Int("test.parallel", 2, "")
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		if err := defaultParallel(fs, tt.n); err != nil {
			t.Fatal(err)
		}
		if got := fs.Lookup("test.parallel").Value.String(); got != tt.want {
			t.Errorf("args %q: -test.parallel %s, want %s", tt.args, got, tt.want)
		}
	}
}

func TestNamespacePrefixIsADNSLabelPrefix(t *testing.T) {
	tests := []struct {
		name     string
		testName string
		want     string
	}{
		{name: "lower-cases letters", testName: "TestFoo", want: "testfoo"},
		{name: "collapses separators", testName: "TestFoo/sub_case #2", want: "testfoo-sub-case-2"},
		{name: "trims leading and trailing separators", testName: "/_Test_/", want: "test"},
		{name: "falls back when nothing is left", testName: "///", want: "test"},
		{name: "truncates without a trailing dash", testName: strings.Repeat("a", 56) + "/b", want: strings.Repeat("a", 56)},
		{name: "truncates long names", testName: strings.Repeat("x", 100), want: strings.Repeat("x", namespacePrefixMax)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := namespacePrefix(tt.testName); got != tt.want {
				t.Errorf("namespacePrefix(%q) = %q, want %q", tt.testName, got, tt.want)
			}
		})
	}
}
