package laplace

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/layers/variational"
)

// kernGraph gives the prior covariances K_c = K(X, X) + (σ₀² + jitter)I of
// the latent functions (the model's kernels at Z = X) and the kernel part
// of the evidence gradient: every kernel-dependent term of dE/dθ is linear
// in ∂K_c/∂θ, so it equals ∂/∂θ Σ_c ⟨M_c, K_c(θ)⟩ for constant n×n matrices
// M_c assembled from the Laplace quantities, one reverse pass for every
// kernel parameter.
type kernGraph struct {
	n     int
	s     *layers.Scope
	k     []*G.Node
	mData [][]float64
	hyper []*layers.Param
	grads G.Nodes
	progK *graph.Program
	progJ *graph.Program
}

func newKernGraph(post *variational.Posterior, ks []kernels.Kernel, n int) (*kernGraph, error) {
	g := G.NewGraph()
	kg := &kernGraph{n: n, s: layers.NewScope(g)}
	e := &graph.Chain{}
	z := e.Do(kg.s.Raw(post.Z[0]))
	jit := e.Do(kg.s.Node(post.JitterParam))
	if e.Err != nil {
		return nil, e.Err
	}
	if z.Shape()[0] != n {
		return nil, fmt.Errorf("laplace: the posterior has %d inducing inputs for %d rows; the Laplace engine needs Z = X (the full family)", z.Shape()[0], n)
	}
	var j *G.Node
	var kps []*layers.Param
	seen := map[kernels.Kernel]*G.Node{}
	for c, kern := range ks {
		k, ok := seen[kern]
		if !ok {
			k = e.Do(kernels.KZZ(kern, kg.s, z, jit))
			seen[kern] = k
			kps = append(kps, kern.Params()...)
		}
		kg.k = append(kg.k, k)
		md := make([]float64, n*n)
		kg.mData = append(kg.mData, md)
		mIn := graph.Input(g, fmt.Sprintf("laplace/M%d", c), tensor.Shape{n, n}, md)
		term := e.Do(G.Sum(e.Do(G.HadamardProd(mIn, k))))
		if j == nil {
			j = term
		} else {
			j = e.Do(G.Add(j, term))
		}
	}
	if e.Err != nil {
		return nil, fmt.Errorf("laplace: building the prior: %w", e.Err)
	}
	var wrt G.Nodes
	kg.hyper, wrt = kg.s.TrainableAmong(kps)
	var err error
	if len(wrt) > 0 {
		if kg.grads, err = graph.Grad(j, wrt...); err != nil {
			return nil, fmt.Errorf("laplace: kernel gradient: %w", err)
		}
		if kg.progJ, err = graph.Compile(g, kg.grads...); err != nil {
			return nil, err
		}
	}
	uniq := G.Nodes{}
	for _, k := range seen {
		uniq = append(uniq, k)
	}
	if kg.progK, err = graph.Compile(g, uniq...); err != nil {
		return nil, err
	}
	return kg, nil
}

// covariances returns K_c (n×n, row-major) at the current parameters; latent
// functions sharing a kernel share the slice.
func (kg *kernGraph) covariances() ([][]float64, error) {
	if err := kg.s.Sync(); err != nil {
		return nil, err
	}
	if err := kg.progK.Run(); err != nil {
		return nil, err
	}
	out := make([][]float64, len(kg.k))
	done := map[*G.Node][]float64{}
	for c, k := range kg.k {
		if v, ok := done[k]; ok {
			out[c] = v
			continue
		}
		v, err := copyOut(kg.progK, k)
		if err != nil {
			return nil, err
		}
		done[k], out[c] = v, v
	}
	return out, nil
}

// grad returns ∂/∂θ Σ_c ⟨M_c, K_c⟩ for every trainable kernel parameter.
func (kg *kernGraph) grad(m [][]float64) ([][]float64, error) {
	if kg.progJ == nil {
		return nil, nil
	}
	for c := range m {
		copy(kg.mData[c], m[c])
	}
	if err := kg.s.Sync(); err != nil {
		return nil, err
	}
	if err := kg.progJ.Run(); err != nil {
		return nil, err
	}
	var out [][]float64
	for _, g := range kg.grads {
		v, err := copyOut(kg.progJ, g)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func (kg *kernGraph) close() {
	for _, p := range []*graph.Program{kg.progK, kg.progJ} {
		if p != nil {
			p.Close()
		}
	}
}
