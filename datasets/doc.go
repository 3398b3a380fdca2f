// Package datasets loads, generates and prepares the labelled data used by
// the gpc experiments.
//
// It covers four concerns, each in its own file:
//
//   - Readers for user data (CSV, LIBSVM/svmlight, MNIST idx) that never
//     panic on malformed input and report every problem as a *ParseError
//     carrying file:line:column, so a user can jump straight to the bad cell.
//   - Loaders for the data of the papers gpc reproduces (the gpinputnoise UCI
//     sets and the Fermi-LAT astrophysics table, MNIST, Rätsch's benchmark
//     sets and banana, the Delgado et al. UCI collection, the airline-delay
//     stand-in), which follow the PROVENANCE.md files under the shared data
//     directory; every quirk that had to be resolved is written next to the
//     code that resolves it. FetchMNIST and FetchAirline download the two
//     sets the data directory need not hold (gpc data fetch).
//   - Generators for the synthetic problems of the noisy-inputs paper (the
//     1-D toy of §5.1 and the GP-prior problems of §5.2 and Appendix B, each
//     with its Bayes-optimal predictive under input noise: Toy1DProblem,
//     SyntheticOracle), seeded and deterministic.
//   - The experimental protocol: random splits, standardisation with training
//     statistics, input-noise injection, label flipping and bootstrap errors.
//
// Everything is float64. Randomness always comes from math/rand/v2 PCG
// generators seeded by the caller, so a (function, seed) pair always gives
// the same data on every platform.
//
// The data directory is found by ResolveDataDir (flag, then GPC_DATA, then a
// shared/data directory beside the working tree, then ./data); data are read
// from there and never copied into the repository.
package datasets
