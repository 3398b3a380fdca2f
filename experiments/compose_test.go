package experiments

import (
	"strings"
	"testing"
)

// A method's training: block overrides exactly the keys it gives, of any
// type (a false bool over a true one included), through the generic merge;
// an unknown key there is an error with its line; parts and presets are
// validated by building the model.
func TestMethodTrainingOverrides(t *testing.T) {
	spec := strings.Replace(miniSpec, "training: {epochs: 1, batch: 5, lr: 0.01, inducing: 3}",
		"training: {epochs: 1, batch: 5, lr: 0.01, inducing: 3, residual: true, hidden: [4]}", 1)
	spec = strings.Replace(spec, "  - {name: NIMGP, kind: nimgp}",
		"  - {name: NIMGP, kind: nimgp}\n  - {name: NN, model: nimgp-nn, training: {lr: 0.05, residual: false, hidden: [7, 7]}}\n  - {name: SVGP, model: svgp, likelihood: logit}", 1)
	spec = strings.Replace(spec, `values: ["1±0.1", "2"]`, `values: ["1±0.1", "2", "3", "4"]`, 1)
	s, err := ParseSpec("mini.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	nn := s.Methods[2]
	b := s.budgetFor(nn, s.Settings[0])
	if b.LR != 0.05 || b.Residual || len(b.Hidden) != 2 || b.Epochs != 1 || b.Batch != 5 {
		t.Errorf("NN budget %+v: want lr 0.05, residual false, hidden [7 7], epochs and batch inherited", b)
	}
	if b := s.budgetFor(s.Methods[1], s.Settings[0]); b.LR != 0.01 {
		t.Errorf("NIMGP inherited lr %v", b.LR)
	}
	for _, c := range []struct{ edit, want string }{
		{strings.Replace(spec, "lr: 0.05,", "lr: 0.05, epoch: 3,", 1), "line 14: field epoch not found"},
		{strings.Replace(spec, "likelihood: logit", "likelihood: robustmax", 1), "takes the probit or logit likelihood, not robustmax"},
		{strings.Replace(spec, "model: svgp, likelihood: logit", "likelihood: logit, inputs: first-order", 1), ""},
	} {
		_, err := ParseSpec("mini.yaml", []byte(c.edit))
		if c.want == "" {
			if err != nil {
				t.Errorf("explicit parts: %v", err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error containing %q", err, c.want)
		}
	}
}
