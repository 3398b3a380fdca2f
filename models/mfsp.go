package models

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/layers"
	"github.com/gpc-dev/gpc/layers/inputs"
	"github.com/gpc-dev/gpc/layers/kernels"
	"github.com/gpc-dev/gpc/layers/likelihoods"
	"github.com/gpc-dev/gpc/layers/local"
	"github.com/gpc-dev/gpc/models/svi"
	"github.com/gpc-dev/gpc/solvers"
)

// MFSp is the SVGP paper's sparse mean-field model (§3.1): the probit
// written as a step of g = f + ε, ε ~ N(0, 1), Titsias's bound on g, and a
// factorised q(g) whose optimal factors are truncated Gaussians with free
// locations a_n (per-row local parameters).
func init() {
	mustRegister(Preset{Name: "mfsp", ZInit: "kmeans", Order: 2.3, Summary: "binary sparse mean-field model (truncated-Gaussian q(g_n)), probit",
		Inputs: "observed", Likelihoods: []string{"probit"}, Posterior: "sparse", Inference: "mf", Train: svgpTraining})
	mustRegisterEngine(mfEngine{})
}

// mfEngine maximises the SVGP paper's sparse mean-field bound.
type mfEngine struct{}

func (mfEngine) Name() string { return "mf" }

// Supports: the bound writes the probit as a step of f plus unit noise, so
// it needs that likelihood, Z (the sparse family) and the observed inputs.
func (mfEngine) Supports(m *Model) error {
	if up, ok := m.lik.(likelihoods.UnitProbit); !ok || !up.UnitProbit() {
		return fmt.Errorf("models: the mf engine is for a likelihood that is a step of f plus unit Gaussian noise (likelihoods.UnitProbit: probit), not %s", m.Opts.Likelihood.Name)
	}
	if !inputs.IsPassthrough(m.inputs) {
		return fmt.Errorf("models: the mf engine works on the latent values at the observed inputs (inputs.Passthrough); the %s input model is not", m.inputs.Name())
	}
	return nil
}

func (mfEngine) Fit(ctx context.Context, m *Model, train *datasets.Dataset, cfg FitConfig) error {
	return fitMF(ctx, m, train, cfg)
}

// FullBatch: the bound sums over every row.
func (mfEngine) FullBatch(*Model) bool { return true }

func (mfEngine) GradientOrders() []int { return []int{1, 2} }

func (mfEngine) CheckGradients(m *Model, ds *datasets.Dataset, order int, rng *rand.Rand) (graph.CheckReport, error) {
	return checkMFGradients(m, ds, order, rng)
}

// fitMF maximises the mean-field bound (eq. 12) over the kernel
// hyper-parameters and Z by L-BFGS, with the locations a optimised in an
// inner loop at every outer evaluation (warm-started), so that the outer
// objective is max_a L(a, θ, Z), whose gradient at the inner optimum is the
// partial one. The fitted q(u) is the Gaussian approximation of the paper's
// prediction option (ii): N(K_mm P⁻¹ K_mn ḡ, K_mm P⁻¹ K_mm) with
// P = K_mm + K_mn K_nm and ḡ = E_q[g], the DTC posterior of u given ḡ at
// unit noise; a test label then has p(y=1) = Φ(μ*/√(1 + σ*²)), the probit
// likelihood's predictive.
func fitMF(ctx context.Context, m *Model, train *datasets.Dataset, cfg FitConfig) error {
	if m.post.Latent != 1 || m.post.FixedZ {
		return errors.New("models: the mean-field engine needs one latent function and the sparse posterior family")
	}
	o, err := newMFObjective(m, train)
	if err != nil {
		return err
	}
	tobj, err := withTrace(o, cfg, o.setPosterior)
	if err != nil {
		return err
	}
	if len(o.params) > 0 {
		t := m.Opts.Train
		var res solvers.Result
		res, err = solvers.TrainLBFGS(ctx, tobj, svi.AsSolverParams(o.params), train.N, m.lbfgsSettings(t.Epochs, cfg, "bound"))
		if err = lbfgsStopped(err, cfg.Warnings); err != nil {
			return err
		}
		m.report = lbfgsReport(t.Stop, "mean-field bound", res, res.Iterations, t.Epochs, reportTol(t.Tolerance, DefaultLBFGSTol))
	}
	loss, _, err := o.Step(solvers.FullBatch(train.N))
	if err != nil {
		return err
	}
	if cfg.Callback != nil {
		if err := cfg.Callback(Epoch{Epoch: 1, Loss: loss, Steps: o.evals, Iterations: o.evals}); err != nil && !errors.Is(err, solvers.ErrStopTraining) {
			return err
		}
	}
	return o.setPosterior()
}

// mfObjective is minus the mean-field bound, maximised over a inside Step.
type mfObjective struct {
	jitterOf
	m          *Model
	n          int
	s          *layers.Scope
	prog       *graph.Program
	bound      *G.Node
	a          *local.Param
	aData      []float64 // the graph input holding a
	aGrad      *G.Node
	gbar       *G.Node
	sdinv      *G.Node // 1/σ̃
	sign       []float64
	kzz, kzx   *G.Node
	params     []*layers.Param
	grads      G.Nodes
	gbuf       [][]float64
	wrt        G.Nodes
	evals      int
	innerIters int
}

func newMFObjective(m *Model, train *datasets.Dataset) (*mfObjective, error) {
	n := train.N
	g := G.NewGraph()
	o := &mfObjective{jitterOf: jitterOf{m.post.JitterParam}, m: m, n: n, s: layers.NewScope(g), innerIters: 100}
	o.a = local.New("mf/a", 1, func(*datasets.Dataset, int, []float64) {})
	o.a.Reset(train)
	sign := make([]float64, n)
	for i, y := range train.Y {
		sign[i] = 2*float64(y) - 1
	}
	o.sign = sign
	o.aData = make([]float64, n)
	aN := graph.Input(g, "mf/a", tensor.Shape{n}, o.aData)
	sN := graph.Input(g, "mf/s", tensor.Shape{n}, sign)
	x := graph.Input(g, "mf/x", tensor.Shape{n, train.D}, append([]float64(nil), train.X...))
	kern, s := m.kernels[0], o.s
	e := &graph.Chain{}
	z := e.Do(s.Raw(m.post.Z[0]))
	jit := e.Do(s.Node(m.post.JitterParam))
	o.kzz = e.Do(kernels.KZZ(kern, s, z, jit))
	o.kzx = e.Do(kern.K(s, z, x))
	kd := e.Do(kernels.KDiag(kern, s, x, jit))
	lk := e.Do(graph.Cholesky(o.kzz))
	// P = K_mm + K_mn K_nm; (Q+I)⁻¹ = I − WᵀW with W = L_P⁻¹ K_mn.
	p := e.Do(G.Add(o.kzz, e.Do(graph.MatMul(o.kzx, o.kzx, false, true))))
	lp := e.Do(graph.Cholesky(p))
	w := e.Do(graph.TriSolve(lp, o.kzx, true, false))
	one := G.NewConstant(1.0)
	dinv := e.Do(G.Sub(one, e.Do(G.Sum(e.Do(G.Square(w)), 0)))) // σ̃⁻²
	sdinv := e.Do(G.Sqrt(dinv))
	alpha := e.Do(G.HadamardProd(e.Do(G.HadamardProd(sN, aN)), sdinv))
	lam := e.Do(graph.InvMills(alpha))
	logGamma := e.Do(graph.LogNormCDF(alpha))
	// ḡ = a + s·σ̃·λ; Var[g]/σ̃² = 1 − λ(λ+α); E(a−g)²/σ̃² = 1 − αλ.
	o.sdinv = sdinv
	o.gbar = e.Do(G.Add(aN, e.Do(G.HadamardDiv(e.Do(G.HadamardProd(sN, lam)), sdinv))))
	varRatio := e.Do(G.Sub(one, e.Do(G.HadamardProd(lam, e.Do(G.Add(lam, alpha))))))
	alphaLam := e.Do(G.HadamardProd(alpha, lam))
	gcol := e.Do(graph.Reshape(o.gbar, tensor.Shape{n, 1}))
	wg := e.Do(graph.MatMul(w, gcol, false, false))
	quad := e.Do(G.Sub(e.Do(G.Sum(e.Do(G.Square(o.gbar)))), e.Do(G.Sum(e.Do(G.Square(wg))))))
	logDet := e.Do(G.Sub(e.Do(graph.LogDetChol(lp)), e.Do(graph.LogDetChol(lk))))
	ak := e.Do(graph.TriSolve(lk, o.kzx, true, false))
	trace := e.Do(G.Sub(e.Do(G.Sum(kd)), e.Do(G.Sum(e.Do(G.Square(ak))))))
	// L = Σ log γ − ½ log|Q+I| − ½[ḡᵀ(Q+I)⁻¹ḡ + Σ Var/σ̃²] + ½ Σ[log σ̃² + 1 − αλ] − ½ tr(K − Q).
	half := G.NewConstant(0.5)
	sumTerms := e.Do(G.Sum(e.Do(G.Sub(e.Do(G.Sub(e.Do(G.Sub(one, alphaLam)), e.Do(G.Log(dinv)))), varRatio))))
	inner := e.Do(G.Sub(e.Do(G.Sub(e.Do(G.Sub(sumTerms, logDet)), quad)), trace))
	o.bound = e.Do(G.Add(e.Do(G.Sum(logGamma)), e.Do(G.HadamardProd(inner, half))))
	if e.Err != nil {
		return nil, fmt.Errorf("models: mean-field bound: %w", e.Err)
	}
	// Everything trainable but q(u), which the fit derives from ḡ.
	trained := slices.DeleteFunc(m.trainable(), func(p *layers.Param) bool {
		return p == m.post.Mean[0] || p == m.post.LRaw[0]
	})
	var wrt G.Nodes
	o.params, wrt = s.TrainableAmong(trained)
	wrt = append(G.Nodes{aN}, wrt...)
	grads, err := graph.Grad(o.bound, wrt...)
	if err != nil {
		return nil, fmt.Errorf("models: differentiating the mean-field bound: %w", err)
	}
	o.aGrad, o.grads, o.wrt = grads[0], grads[1:], wrt
	if o.prog, err = graph.Compile(g, append(G.Nodes{o.bound, o.gbar, o.sdinv, o.kzz, o.kzx}, grads...)...); err != nil {
		return nil, err
	}
	for _, p := range o.params {
		o.gbuf = append(o.gbuf, make([]float64, len(p.Data)))
	}
	return o, nil
}

// eval runs the graph at locations a and returns the bound.
func (o *mfObjective) eval(a []float64) (float64, error) {
	copy(o.aData, a)
	if err := o.s.Sync(); err != nil {
		return 0, err
	}
	if err := o.prog.Run(); err != nil {
		return 0, err
	}
	return o.prog.Scalar(o.bound)
}

// Step implements solvers.Objective: the inner loop maximises the bound
// over a (L-BFGS, warm-started from the last a), then −bound and its
// gradient in the hyper-parameters and Z at that a.
func (o *mfObjective) Step(solvers.Batch) (float64, [][]float64, error) {
	o.evals++
	res, err := solvers.MinimizeLBFGS(context.Background(), func(a, grad []float64) (float64, error) {
		l, err := o.eval(a)
		if err != nil {
			return 0, err
		}
		g, err := o.prog.Float64s(o.aGrad)
		if err != nil {
			return 0, err
		}
		for i := range grad {
			grad[i] = -g[i]
		}
		return -l, nil
	}, o.a.Values(), solvers.LBFGSSettings{MaxIterations: o.innerIters, GradTol: 1e-8})
	if err != nil && !errors.Is(err, solvers.ErrLineSearch) {
		return 0, nil, err
	}
	if res.X != nil {
		copy(o.a.Values(), res.X)
	}
	l, err := o.eval(o.a.Values())
	if err != nil {
		return 0, nil, err
	}
	for i, g := range o.grads {
		v, err := o.prog.Float64s(g)
		if err != nil {
			return 0, nil, err
		}
		for j := range v {
			o.gbuf[i][j] = -v[j]
		}
	}
	return -l, o.gbuf, nil
}

// setPosterior stores q(u) = N(K_mm P⁻¹ K_mn ḡ, K_mm P⁻¹ K_mm) from the last
// evaluation.
func (o *mfObjective) setPosterior() error {
	M, n := o.m.post.M, o.n
	gb, err := o.prog.Float64s(o.gbar)
	if err != nil {
		return err
	}
	kzzD, err := o.prog.Float64s(o.kzz)
	if err != nil {
		return err
	}
	kzxD, err := o.prog.Float64s(o.kzx)
	if err != nil {
		return err
	}
	Kmm := mat.NewSymDense(M, append([]float64(nil), kzzD...))
	Kmn := mat.NewDense(M, n, append([]float64(nil), kzxD...))
	// P = K_mm + K_mn K_nm.
	P := mat.NewSymDense(M, nil)
	P.SymOuterK(1, Kmn)
	P.AddSym(P, Kmm)
	var ch mat.Cholesky
	if !ch.Factorize(P) {
		return errors.New("models: mean-field: K_mm + K_mn K_nm is not positive definite")
	}
	// meanOf is the DTC posterior mean of u for targets g: K_mm P⁻¹ K_mn g.
	meanOf := func(g *mat.VecDense) ([]float64, error) {
		var kg, pg, mg mat.VecDense
		kg.MulVec(Kmn, g)
		if err := ch.SolveVecTo(&pg, &kg); err != nil {
			return nil, err
		}
		mg.MulVec(Kmm, &pg)
		return mg.RawVector().Data, nil
	}
	mean, err := meanOf(mat.NewVecDense(n, append([]float64(nil), gb...)))
	if err != nil {
		return err
	}
	copy(o.m.post.Mean[0].Data, mean)
	if S := o.m.Opts.Posterior.MeanSamples; S > 0 {
		// Prediction option (i): draws g ~ q(g) pushed through p(g* | g).
		// Its mean is linear in g, K_*m P⁻¹ K_mn g = K_*m K_mm⁻¹ m(g) with
		// m(g) = K_mm P⁻¹ K_mn g, and its variance is the Gaussian
		// approximation's; so each draw is a q(u) mean m(g_s) sharing the
		// covariance, and Predict averages the class probabilities over them.
		sdinv, err := o.prog.Float64s(o.sdinv)
		if err != nil {
			return err
		}
		std := distuv.Normal{Mu: 0, Sigma: 1, Src: nil}
		rng := rand.New(rand.NewPCG(o.m.Opts.Train.Seed, 0x3f5a))
		o.m.meanSamples = make([][]float64, S)
		gs := mat.NewVecDense(n, nil)
		a := o.a.Values()
		for k := range S {
			for i := 0; i < n; i++ {
				sd, s := 1/sdinv[i], o.sign[i]
				alpha := s * a[i] / sd
				// t ~ N(0,1) truncated to s(a + σ̃t) > 0, by inversion.
				lo := std.CDF(-alpha)
				u := lo + (1-lo)*rng.Float64()
				gs.SetVec(i, a[i]+sd*s*std.Quantile(u))
			}
			if o.m.meanSamples[k], err = meanOf(gs); err != nil {
				return err
			}
		}
	}
	// S = K_mm P⁻¹ K_mm = VᵀV with V = L_P⁻¹ K_mm: symmetric by construction.
	var lp mat.TriDense
	ch.LTo(&lp)
	var V mat.Dense
	if err := V.Solve(&lp, Kmm); err != nil {
		return err
	}
	S := mat.NewSymDense(M, nil)
	S.SymOuterK(1, V.T())
	return o.m.post.SetL(0, cholOf(S, M))
}
