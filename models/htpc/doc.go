// Package htpc is the heavy-tailed process classifier (HTPC) of Wauthier &
// Jordan (NIPS 2010), the Laplace-approximation baseline of Hernández-Lobato
// et al., "Robust Multi-Class Gaussian Process Classification" (NIPS 2011).
//
// Model. Each of the l classes has a latent Gaussian process g_k ~ GP(0, c)
// with c(x, x') = σ² exp(−‖x − x'‖²/(2γ)), γ = ℓ² (the paper's kernel (22);
// σ = 1 unless Config.LearnAmplitude). It is turned into a heavy-tailed
// process through the Gaussian copula: f_k(x) = F_{b_k}⁻¹(Φ(g_k(x))), with
// F_b the CDF of the hyperbolic-secant distribution of scale b, so with σ = 1
// every f_k(x) has the density (1/2b) sech(πf/(2b)) and the dependence
// structure of the GP. Labels follow the multinomial-logistic (softmax) rule
// p(y = k | f) = exp f_k / Σ_j exp f_j, the smooth multi-class likelihood
// that the Laplace approximation requires (the digest notes the RMGPC paper
// does not name HTPC's likelihood and that softmax is the likely one).
//
// Inference. The posterior over the latent Gaussian values g (n·l of them)
// is approximated by a Gaussian at its mode (Laplace), found by damped
// Newton with a backtracking line search in whitened coordinates. The
// gradient and the l×l per-point Hessian blocks of the log-likelihood
// through the transform are graph code differentiated with graph.Grad (the
// transform is a custom op whose derivatives are closed-form to fourth
// order), and so are the third derivatives that the evidence gradient needs.
//
// Hyper-parameters. Fit maximises the Laplace evidence log q(y | X, γ, σ, b)
// over log ℓ, log b_1..log b_l (and log σ if asked) with L-BFGS, using the
// exact gradient of the evidence, mode dependence included.
//
// Prediction. The latent Gaussian values at a test input have a Gaussian
// Laplace predictive (mean k*ᵀ∇ℓ(ĝ), an l×l covariance across classes);
// class probabilities are the expectation of the softmax of b ⊙ τ(g*) under
// it, by Monte Carlo with a fixed seed and antithetic pairs, so each row
// sums to one.
package htpc
