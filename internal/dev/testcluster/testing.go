package testcluster

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// startTimeout bounds Start in Main, including a cold build of every
	// binary.
	startTimeout = 30 * time.Minute
	// namespacePrefixMax leaves room for the "-" and the five random
	// characters the apiserver appends to a generateName.
	namespacePrefixMax = 63 - 6
	// parallel is how many tests run at once unless -parallel or Options.Parallel says: they
	// mostly wait on the control plane, so go test's default (GOMAXPROCS, 2 on 2 cores) leaves
	// the cores idle. make test passes the same.
	parallel = 8
)

// Main is for TestMain: it starts one cluster shared by the package's tests,
// stores it in *dst, runs m, stops the cluster and returns the exit code. If
// the cluster does not start it prints why (naming the failing component) and
// returns 1.
//
// Without -parallel on the command line, up to opts.Parallel (else parallel) of the package's
// tests run at once.
func Main(m *testing.M, opts Options, dst **Cluster) int {
	flag.Parse()
	if err := defaultParallel(flag.CommandLine, cmp.Or(opts.Parallel, parallel)); err != nil {
		fmt.Fprintf(os.Stderr, "testcluster: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	c, err := Start(ctx, opts)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testcluster: %v\n", err)
		return 1
	}
	*dst = c
	code := m.Run()
	if err := c.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testcluster: stop: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// defaultParallel sets fs's -test.parallel to n unless it was given.
func defaultParallel(fs *flag.FlagSet, n int) error {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if given {
		return nil
	}
	return fs.Set("test.parallel", strconv.Itoa(n))
}

// NewNamespace creates a namespace whose name starts with the sanitized test
// name and ends with a random suffix, and deletes it when the test ends.
func (c *Cluster) NewNamespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: namespacePrefix(t.Name()) + "-"}}
	created, err := c.client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace for %s: %v", t.Name(), err)
	}
	name := created.Name
	t.Cleanup(func() {
		err := c.client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil {
			t.Errorf("delete namespace %s: %v", name, err)
		}
	})
	return name
}

// namespacePrefix turns a test name into a DNS label prefix: lower case,
// runs of other characters replaced by one "-", at most namespacePrefixMax
// characters, starting and ending with a letter or digit.
func namespacePrefix(testName string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(testName) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
			continue
		}
		if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	name := strings.Trim(b.String(), "-")
	if len(name) > namespacePrefixMax {
		name = strings.TrimRight(name[:namespacePrefixMax], "-")
	}
	if name == "" {
		name = "test"
	}
	return name
}
