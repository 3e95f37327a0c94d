package pageout

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestSpansAreTheExecutablesReadOnlyMappings(t *testing.T) {
	maps := `00400000-01073000 r-xp 00000000 08:01 123 /usr/bin/reloader
01073000-01e02000 r--p 00c73000 08:01 123 /usr/bin/reloader
01e02000-01e80000 rw-p 01a02000 08:01 123 /usr/bin/reloader
01e80000-03e80000 rw-p 00000000 00:00 0
7f0000000000-7f0000001000 r--p 00000000 08:01 456 /usr/bin/reloader-other
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]
`
	got, err := spans(strings.NewReader(maps), "/usr/bin/reloader")
	if err != nil {
		t.Fatal(err)
	}
	want := []span{{0x400000, 0x1073000}, {0x1073000, 0x1e02000}}
	if !slices.Equal(got, want) {
		t.Fatalf("spans = %x, want %x", got, want)
	}
}

func TestAMalformedMappingIsAnError(t *testing.T) {
	if _, err := spans(strings.NewReader("zz-01 r-xp 0 0:0 1 /x\n"), "/x"); err == nil {
		t.Fatal("no error for a mapping that does not parse")
	}
}

// rssFile is the process's resident file-backed memory in KiB, from /proc/self/status.
func rssFile(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skip("no RssFile in /proc/self/status")
	return 0
}

func TestExecutableLowersTheResidentPagesOfThisTest(t *testing.T) {
	before := rssFile(t)
	n, err := Executable()
	if err != nil {
		t.Skipf("the kernel does not page out: %v", err)
	}
	after := rssFile(t)
	t.Logf("advised %d KiB of mappings; resident file pages %d KiB -> %d KiB", n/1024, before, after)
	if n == 0 || after >= before {
		t.Fatalf("advised %d bytes; resident file pages %d KiB -> %d KiB, want fewer", n, before, after)
	}
}

// vmFlags returns the VmFlags of each mapping of the executable in /proc/self/smaps, keyed by
// the mapping's permissions.
func vmFlags(t *testing.T) map[string][]string {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	out := map[string][]string{}
	perms := ""
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 6 && strings.Contains(f[0], "-") && len(f[1]) == 4:
			perms = ""
			if f[5] == exe {
				perms = f[1]
			}
		case len(f) > 0 && f[0] == "VmFlags:" && perms != "":
			out[perms] = f[1:]
		}
	}
	return out
}

func TestTheExecutableIsReadAtRandomOnceThePackageIsLoaded(t *testing.T) {
	flags := vmFlags(t)
	if len(flags) == 0 {
		t.Skip("no mappings of the executable found")
	}
	for perms, f := range flags {
		advised := slices.Contains(f, "rr")
		if want := !strings.Contains(perms, "w"); advised != want {
			t.Errorf("mapping %s: read-at-random advice %v, want %v (VmFlags %v)", perms, advised, want, f)
		}
	}
	if _, ok := flags["rw-p"]; !ok {
		t.Log("no writable mapping of the executable to show that unadvised mappings lack the flag")
	}
}
