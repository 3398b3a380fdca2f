package htpc

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/graph"
)

// kernGraph is the kernel as graph code, K_c(θ) = σ² exp(−D²/(2ℓ²)), used
// for the kernel part of the evidence gradient: every kernel-dependent term
// of dE/dθ is linear in ∂K_c/∂θ, so it equals ∂/∂θ ⟨M, K_c(θ)⟩ for a
// constant n×n matrix M assembled from the Laplace quantities
// (evidence.go), and one reverse pass gives the derivative for both log ℓ
// and log σ.
type kernGraph struct {
	g                *G.ExprGraph
	logEll, logSigma *G.Node
	mData            []float64
	dEll, dSigma     *G.Node
	kc, j            *G.Node
	prog, progK      *graph.Program
}

func newKernGraph(d2 []float64, n int) (*kernGraph, error) {
	kg := &kernGraph{g: G.NewGraph(), mData: make([]float64, n*n)}
	g := kg.g
	kg.logEll = G.NewScalar(g, G.Float64, G.WithName("logEll"), G.WithValue(G.NewF64(0)))
	kg.logSigma = G.NewScalar(g, G.Float64, G.WithName("logSigma"), G.WithValue(G.NewF64(0)))
	d2In := graph.Input(g, "D2", tensor.Shape{n, n}, append([]float64(nil), d2...))
	mIn := graph.Input(g, "M", tensor.Shape{n, n}, kg.mData)
	e := &graph.Chain{}
	// −½ exp(−2 log ℓ) D² + 2 log σ, then exp.
	c := e.Do(G.Mul(e.Do(graph.Exp(e.Do(G.Mul(kg.logEll, G.NewConstant(-2.0))))), G.NewConstant(-0.5)))
	arg := e.Do(G.Add(e.Do(G.Mul(d2In, c)), e.Do(G.Mul(kg.logSigma, G.NewConstant(2.0)))))
	kg.kc = e.Do(graph.Exp(arg))
	kg.j = e.Do(G.Sum(e.Do(G.HadamardProd(mIn, kg.kc))))
	if e.Err != nil {
		return nil, fmt.Errorf("htpc: building the kernel graph: %w", e.Err)
	}
	gr, err := graph.Grad(kg.j, kg.logEll, kg.logSigma)
	if err != nil {
		return nil, fmt.Errorf("htpc: kernel gradient: %w", err)
	}
	kg.dEll, kg.dSigma = gr[0], gr[1]
	if kg.prog, err = graph.Compile(g, kg.dEll, kg.dSigma); err != nil {
		return nil, err
	}
	if kg.progK, err = graph.Compile(g, kg.kc); err != nil {
		return nil, err
	}
	return kg, nil
}

func (kg *kernGraph) setHyper(h Hyper) error {
	if err := G.Let(kg.logEll, G.NewF64(h.LogEll)); err != nil {
		return err
	}
	return G.Let(kg.logSigma, G.NewF64(h.LogSigma))
}

// grad returns ∂/∂(log ℓ, log σ) of ⟨M, K_c⟩ at h.
func (kg *kernGraph) grad(h Hyper, m []float64) (dEll, dSigma float64, err error) {
	if err = kg.setHyper(h); err != nil {
		return 0, 0, err
	}
	copy(kg.mData, m)
	if err = kg.prog.Run(); err != nil {
		return 0, 0, err
	}
	if dEll, err = kg.prog.Scalar(kg.dEll); err != nil {
		return 0, 0, err
	}
	dSigma, err = kg.prog.Scalar(kg.dSigma)
	return dEll, dSigma, err
}

// value returns K_c at h (for checking the graph against seKernel).
func (kg *kernGraph) value(h Hyper) ([]float64, error) {
	if err := kg.setHyper(h); err != nil {
		return nil, err
	}
	if err := kg.progK.Run(); err != nil {
		return nil, err
	}
	return kg.progK.Float64s(kg.kc)
}

func (kg *kernGraph) close() {
	kg.prog.Close()
	kg.progK.Close()
}
