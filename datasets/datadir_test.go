package datasets

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testDataDir resolves the data directory as the CLI would and skips the
// test only if that directory does not exist (e.g. a clone without the
// papers' data beside it).
func testDataDir(t *testing.T) string {
	t.Helper()
	dir, how, err := ResolveDataDirSource("")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Skipf("data directory %s (%s) is absent; set %s to run this test", dir, how, DataEnv)
	}
	return dir
}

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestResolveDataDirRules(t *testing.T) {
	root := t.TempDir()
	clone := filepath.Join(root, "x", "main")
	shared := filepath.Join(root, "x", "shared", "data")
	deep := filepath.Join(clone, "datasets", "sub")
	mkdirs(t, deep, shared)

	cases := []struct {
		name, flag, env, wd, want, how string
	}{
		{"flag wins", "/some/flag/dir", "/env/dir", deep, "/some/flag/dir", "--data-dir"},
		{"relative flag", "rel", "", deep, filepath.Join(deep, "rel"), "--data-dir"},
		{"env next", "", "/env/dir", deep, "/env/dir", DataEnv},
		{"walk up from clone root", "", "", clone, shared, "walking up"},
		{"walk up from package dir", "", "", deep, shared, "walking up"},
		{"child shared/data", "", "", filepath.Join(root, "x"), shared, "walking up"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, how, err := resolveDataDir(tc.flag, tc.env, tc.wd)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || !strings.Contains(how, tc.how) {
				t.Errorf("got %q (%s), want %q (%s)", got, how, tc.want, tc.how)
			}
		})
	}

	// Without shared/ anywhere above, fall back to ./data.
	lonely := filepath.Join(t.TempDir(), "repo")
	mkdirs(t, lonely)
	if sharedAbove(lonely) {
		t.Skip("a shared/data exists above the temp dir; cannot test the fallback")
	}
	got, how, err := resolveDataDir("", "", lonely)
	if err != nil || got != filepath.Join(lonely, "data") || !strings.Contains(how, "default ./data") {
		t.Errorf("fallback: got %q (%s) %v", got, how, err)
	}

	// A flag naming a file is an error.
	f := writeFile(t, root, "afile", "")
	if _, _, err := resolveDataDir(f, "", deep); err == nil {
		t.Error("a regular file was accepted as the data directory")
	}
}

// sharedAbove reports whether some ancestor of dir has shared/data beside or
// inside it (which would make the fallback rule unreachable).
func sharedAbove(dir string) bool {
	for a := dir; ; a = filepath.Dir(a) {
		for _, c := range []string{filepath.Join(a, "shared", "data"), filepath.Join(filepath.Dir(a), "shared", "data")} {
			if st, err := os.Stat(c); err == nil && st.IsDir() {
				return true
			}
		}
		if filepath.Dir(a) == a {
			return false
		}
	}
}

// TestResolveDataDirProcess exercises the exported function with the real
// environment variable and working directory, and checks that a missing
// file's error says where it looked, how that place was chosen and how to
// get the data.
func TestResolveDataDirProcess(t *testing.T) {
	envDir := t.TempDir()
	t.Setenv(DataEnv, envDir)
	got, err := ResolveDataDir("")
	if err != nil || got != envDir {
		t.Fatalf("env: got %q %v, want %q", got, err, envDir)
	}
	flagDir := t.TempDir()
	if got, _ := ResolveDataDir(flagDir); got != flagDir {
		t.Errorf("flag: got %q, want %q", got, flagDir)
	}

	_, err = LoadUCI("", "glass") // "" resolves through GPC_DATA to envDir
	var md *MissingDataError
	if !errors.As(err, &md) {
		t.Fatalf("LoadUCI in an empty dir: %v (%T), want *MissingDataError", err, err)
	}
	msg := err.Error()
	for _, want := range []string{filepath.Join(envDir, "gpinputnoise", "uci", "glass", "X.txt"), "data directory " + envDir, DataEnv + " environment variable", "--data-dir"} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing-data error %q lacks %q", msg, want)
		}
	}

	// Walking up from a package directory with the env var unset.
	t.Setenv(DataEnv, "")
	root := t.TempDir()
	shared := filepath.Join(root, "shared", "data")
	pkg := filepath.Join(root, "main", "datasets")
	mkdirs(t, shared, pkg)
	t.Chdir(pkg)
	got, how, err := ResolveDataDirSource("")
	if err != nil {
		t.Fatal(err)
	}
	// Compare after resolving symlinks (macOS temp dirs live under /private).
	gotR, _ := filepath.EvalSymlinks(got)
	wantR, _ := filepath.EvalSymlinks(shared)
	if gotR != wantR || !strings.Contains(how, "walking up") {
		t.Errorf("walk up: got %q (%s), want %q", got, how, shared)
	}
	_, err = LoadAstro("")
	if err == nil || !strings.Contains(err.Error(), "walking up") {
		t.Errorf("missing astro data error should say how the dir was found: %v", err)
	}
}
