package experiments

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpc-dev/gpc/models"
)

// modelSettingsSpec is a mnist_oddeven spec whose settings vary the model
// (Setting.Kernel, Whitened, ZInit, Standardize); SETTINGS is replaced.
const modelSettingsSpec = `name: x
title: x
source: x
family: mnist_oddeven
datasets: [mnist]
protocol: {splits: 1}
training: {epochs: 1, batch: 10, lr: 0.1, inducing: 5, kernel: se, optimizer: adadelta}
settings:
SETTINGS
methods:
  - {name: KLSp, model: svgp}
`

// The model fields of a setting parse, change only their own setting's
// run key, and reach the model a run builds: the kernel through the
// budget, whitening, the Z initialisation and the standardisation through
// modelOptions, as models.New then holds them.
func TestModelSettingsReachTheModel(t *testing.T) {
	src := strings.Replace(modelSettingsSpec, "SETTINGS", `  - {name: base}
  - {name: iso, kernel: se-iso}
  - {name: white, whitened: true}
  - {name: rz, z_init: random}
  - {name: std, standardize: true}`, 1)
	s, err := ParseSpec("x.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := ParseSpec("x.yaml", []byte(strings.Replace(modelSettingsSpec, "SETTINGS", "  - {name: base}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	runs, base := Expand(s), Expand(plain)
	if len(runs) != 5 || len(base) != 1 {
		t.Fatalf("%d and %d runs, want 5 and 1", len(runs), len(base))
	}
	if runs[0].Key != base[0].Key {
		t.Errorf("the other settings changed the plain setting's key: %s vs %s", runs[0].Key, base[0].Key)
	}
	type want struct {
		kernel, zinit         string
		whitened, standardize bool
	}
	wants := []want{
		{"se", "kmeans", false, false},
		{"se-iso", "kmeans", false, false},
		{"se", "kmeans", true, false},
		{"se", "random", false, false},
		{"se", "kmeans", false, true},
	}
	hashes := map[string]bool{}
	for i, r := range runs {
		hash := r.Key[strings.LastIndexByte(r.Key, '|')+1:]
		if hashes[hash] {
			t.Errorf("setting %s: key hash %s repeats another setting's", r.Setting.Name, hash)
		}
		hashes[hash] = true
		if r.Budget.Kernel != wants[i].kernel {
			t.Errorf("setting %s: budget kernel %q, want %q", r.Setting.Name, r.Budget.Kernel, wants[i].kernel)
		}
		m, err := models.New(modelOptions(r, 1000, 1))
		if err != nil {
			t.Fatalf("setting %s: %v", r.Setting.Name, err)
		}
		o := m.Opts
		got := want{o.Kernel.Name, o.Posterior.ZInit, o.Posterior.Whitened, o.Inputs.Standardize && !o.Inputs.NoStandardize}
		if got != wants[i] {
			t.Errorf("setting %s: model options %+v, want %+v", r.Setting.Name, got, wants[i])
		}
	}
}

// A model field is refused, at its line, by a family that does not read it
// (naming the family that does), and a value the kernel registry or
// models.New rejects is refused with the setting's name.
func TestModelSettingsRefused(t *testing.T) {
	toy := func(field string) string {
		return strings.Replace(miniSpec, "{name: a, noise: 0.1}", "{name: a, noise: 0.1, "+field+"}", 1)
	}
	odd := func(setting string) string { return strings.Replace(modelSettingsSpec, "SETTINGS", "  - "+setting, 1) }
	cases := []struct{ src, want string }{
		{toy("kernel: se-iso"), "kernel does not apply to the toy1d family (the families that read it: mnist_oddeven)"},
		{toy("whitened: true"), "whitened does not apply to the toy1d family (the families that read it: mnist_oddeven)"},
		{toy("z_init: random"), "z_init does not apply to the toy1d family (the families that read it: mnist_oddeven)"},
		{toy("standardize: true"), "standardize does not apply to the toy1d family (the families that read it: mnist_oddeven)"},
		{odd("{name: b, kernel: nosuch}"), `setting b: kernel "nosuch"`},
		{odd("{name: b, z_init: grid}"), `setting b with method KLSp (methods[0]): models: inducing-input initialisation "grid"`},
		{odd("{name: b, whitened: yes please}"), "cannot unmarshal"},
		{odd("{name: b, kernel: se-iso, whitened: true, z_init: kmeans, standardize: true}"), ""},
	}
	for _, c := range cases {
		_, err := ParseSpec("x.yaml", []byte(c.src))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("valid spec rejected: %v", err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("got %v, want an error containing %q", err, c.want)
		}
	}
	// The refusal points at the field, on the first setting's line (9).
	if _, err := ParseSpec("mini.yaml", []byte(toy("kernel: se-iso"))); err == nil || !strings.HasPrefix(err.Error(), "mini.yaml:9:") {
		t.Errorf("refusal %v carries no line", err)
	}
}

// The ablation spec's baseline is svgp_mnist_oddeven.yaml's run but for
// the epochs, and each other setting differs from it in its own field
// only; svgp_mnist_oddeven.yaml keeps the key of its committed result.
func TestOddEvenAblationSpec(t *testing.T) {
	full, err := LoadSpec("svgp_mnist_oddeven.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const want = "mnist|default|KLSp|0|780db321"
	fr := Expand(full)
	if len(fr) != 1 || fr[0].Key != want {
		t.Fatalf("svgp_mnist_oddeven.yaml expands to %d runs, first key %q; want 1 run keyed %q", len(fr), fr[0].Key, want)
	}
	if b, err := os.ReadFile(filepath.Join("results", "svgp_mnist_oddeven", "results.jsonl")); err == nil && !strings.Contains(string(b), `"key":"`+want+`"`) {
		t.Errorf("results/svgp_mnist_oddeven/results.jsonl has no run keyed %q", want)
	}
	abl, err := LoadSpec("svgp_mnist_oddeven_ablation.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ar := Expand(abl)
	if len(ar) != 5 {
		t.Fatalf("%d ablation runs, want 5", len(ar))
	}
	base := ar[0]
	fb, ab := fr[0].Budget, base.Budget
	fb.Epochs, ab.Epochs = 0, 0
	if hashOf(fb) != hashOf(ab) || base.Setting != (Setting{Name: base.Setting.Name}) {
		t.Errorf("the ablation's baseline budget %+v (setting %+v) is not the full run's %+v but for the epochs", ab, base.Setting, fb)
	}
	for _, r := range ar[1:] {
		st := r.Setting
		st.Name = ""
		fields := 0
		for _, set := range []bool{st.Kernel != "", st.Whitened, st.ZInit != "", st.Standardize} {
			if set {
				fields++
			}
		}
		if fields != 1 || st != (Setting{Kernel: st.Kernel, Whitened: st.Whitened, ZInit: st.ZInit, Standardize: st.Standardize}) {
			t.Errorf("setting %s changes %d model fields (%+v), want exactly one and nothing else", r.Setting.Name, fields, r.Setting)
		}
	}
}
