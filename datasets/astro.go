package datasets

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
)

// Fermi-LAT 4FGL table of the noisy-inputs paper (§5.6, Table 9,
// Appendix B.4), as described in gpinputnoise/PROVENANCE.md.
//
// Column layout of fermi4fgl.dat (10 space-separated columns, no header).
// PROVENANCE warns that attribute_list_as_published.txt does NOT give the
// column order; the order below is PROVENANCE's, decoded from value ranges
// and from how the authors' script reads the file, and re-checked here
// against the file: col 2 has min 3.402 = ln 30 (the >30σ detection cut),
// col 8 has min −2.303 = ln 0.1, col 9 takes 0/1/2 with counts 184/168/102
// (see AstroClassNames for which class is which).
var astroColumnNames = [10]string{
	0: "flux_1_100_GeV",
	1: "flux_error",
	2: "ln_detection_significance",
	3: "ln_pivot_energy",
	4: "lp_index_alpha",
	5: "lp_index_alpha_error",
	6: "lp_beta",
	7: "lp_beta_error",
	8: "ln_curvature_significance",
	9: "class",
}

// astroErrorColumn maps a feature column of fermi4fgl.dat to the column
// holding its error bar. Only flux, α and β have error bars (PROVENANCE);
// the errors are 1σ standard deviations — PROVENANCE and the authors' code
// form the variance as (error / training std)², i.e. they square them.
var astroErrorColumn = map[int]int{0: 1, 4: 5, 6: 7}

// astroClassColumn is the label column: 0 = bll, 1 = fsrq, 2 = psr.
const astroClassColumn = 9

// AstroClassNames names the astrophysics classes in label order: the labels
// of fermi4fgl.dat are alphabetical, 0 = bll (184 sources), 1 = fsrq (168),
// 2 = psr (102).
//
// This contradicts PROVENANCE.md, the implementation notes (§2.1) and the
// paper's text (§5.6: "184 are pulsars, 168 are blazars and 102 are
// quasars"), which all read the counts 184/168/102 of labels 0/1/2 as
// psr/bll/fsrq. The data and the paper's own tables decide against that:
//
//   - Table 10: the average number of test points per true class over the
//     100 fixed splits of splits.txt is exactly the paper's column totals.
//     Averaging the labels of the last 46 indices of each split gives
//     label 0: 19.14, label 1: 16.76, label 2: 10.10; Table 10's columns
//     sum (for every model, e.g. MGP 17.66+1.48+0.00, 1.31+15.16+0.29,
//     0.01+0.36+9.73) to bll 19.14, fsrq 16.76, psr 10.10, and Table 18's
//     to the same. So 0 = bll, 1 = fsrq, 2 = psr.
//   - Spectral shape (per-class means from the file; curvature significance
//     as the geometric mean). Pulsars have strongly curved, cut-off spectra;
//     BL Lacs hard, nearly straight ones (α ≈ 2.0); FSRQs soft ones
//     (α ≈ 2.4) peaking at low energy:
//     label 0: α 1.91, β 0.067, curvature significance 3.3σ, pivot 1.4 GeV;
//     label 1: α 2.29, β 0.100, curvature significance 5.6σ, pivot 0.64 GeV;
//     label 2: α 2.16, β 0.405, curvature significance 18.5σ, pivot 1.4 GeV.
//     Only label 2 has β > 0.25 (91 of its 102 sources, none of the other
//     352), matching the paper's "the pulsars class has larger values of β"
//     and its Figure 8. Label 0 is the hard class (147 of 184 with α < 2.1),
//     label 1 the soft, low-pivot class.
//   - 11 of the 12 brightest sources are label 2; the brightest (1–100 GeV
//     flux 1.35e-6 cm⁻² s⁻¹, about twice the next) has a 196σ curvature,
//     the profile of the Vela pulsar, the brightest GeV source in the sky.
//
// TestAstroClassOrder checks the first two points against the file.
// The paper's text thus lists the counts in label order under the wrong
// names; its tables (printed in the order bll, fsrq, psr) use the right ones.
var AstroClassNames = []string{"bll", "fsrq", "psr"}

// Feature selections used by the paper.
var (
	// AstroColumnsTable9 are the six inputs of Table 9 (and Table 10):
	// flux, ln detection significance, ln pivot energy, α, β, ln curvature
	// significance — cols_data = [0,2,3,4,6,8] in the authors' script.
	AstroColumnsTable9 = []int{0, 2, 3, 4, 6, 8}
	// AstroColumnsB4 are the four inputs of Appendix B.4 (Tables 17, 18),
	// which drop the two significance attributes.
	AstroColumnsB4 = []int{0, 3, 4, 6}
)

// AstroNoiseFloor is the input-noise variance the authors' script gives to
// attributes without an error bar (after standardisation); AstroFold applies
// it. Using a tiny positive value rather than 0 keeps V⁻¹ finite in the
// NIMGP likelihood term E_q log p(x̃|x).
const AstroNoiseFloor = 1e-5

// astroN is the number of sources after the >30σ cut (paper and PROVENANCE).
const astroN = 454

// LoadAstro loads <dataDir>/gpinputnoise/astrophysics/fermi4fgl.dat with the
// six inputs of Table 9 (AstroColumnsTable9). See LoadAstroColumns.
func LoadAstro(dataDir string) (*Dataset, error) {
	return LoadAstroColumns(dataDir, AstroColumnsTable9)
}

// LoadAstroColumns loads the astrophysics table with the given input columns
// of fermi4fgl.dat (indices into its 10 columns; each must be a measured
// attribute, not an error or the class column). dataDir "" means
// ResolveDataDir("").
//
// The result has N = 454, C = 3 (0 bll, 1 fsrq, 2 psr; see
// AstroClassNames) and raw,
// unstandardised inputs. Noise holds per-point variances in the raw units:
// error² for flux (col 1), α (col 5) and β (col 7), and 0 for attributes
// without an error bar. Use AstroFold to apply the paper's protocol, which
// standardises with training statistics — turning the variances into
// (error / training std)² exactly as PROVENANCE states — and puts
// AstroNoiseFloor on the attributes without error bars.
//
// Ambiguities resolved: the flux is used as is (not log-transformed), as in
// the authors' script; errors are treated as standard deviations (squared),
// as PROVENANCE's formula implies.
func LoadAstroColumns(dataDir string, cols []int) (*Dataset, error) {
	if len(cols) == 0 {
		return nil, fmt.Errorf("datasets: LoadAstroColumns: no columns selected")
	}
	for k, c := range cols {
		if c < 0 || c >= astroClassColumn || c == 1 || c == 5 || c == 7 {
			return nil, fmt.Errorf("datasets: LoadAstroColumns: column %d is not an input attribute (inputs are 0,2,3,4,6,8)", c)
		}
		if slices.Contains(cols[:k], c) {
			return nil, fmt.Errorf("datasets: LoadAstroColumns: column %d selected twice", c)
		}
	}
	dataDir, err := resolveIfEmpty(dataDir)
	if err != nil {
		return nil, err
	}
	rel := filepath.Join("gpinputnoise", "astrophysics", "fermi4fgl.dat")
	vals, n, ncol, lines, path, err := readDataTable(dataDir, rel, hintDataDir)
	if err != nil {
		return nil, err
	}
	if ncol != 10 {
		return nil, perr(path, lines[0], 0, "", "expected 10 columns (see gpinputnoise/PROVENANCE.md), got %d", ncol)
	}
	if n != astroN {
		return nil, fmt.Errorf("datasets: %s: %d rows, but PROVENANCE and the paper say %d sources", path, n, astroN)
	}
	d := len(cols)
	ds := &Dataset{
		Name:         "astro",
		N:            n,
		D:            d,
		C:            len(AstroClassNames),
		X:            make([]float64, n*d),
		Y:            make([]int, n),
		Noise:        make([]float64, n*d),
		FeatureNames: make([]string, d),
		ClassNames:   slices.Clone(AstroClassNames),
	}
	for j, c := range cols {
		ds.FeatureNames[j] = astroColumnNames[c]
	}
	for i := range n {
		row := vals[i*10 : (i+1)*10]
		lab := row[astroClassColumn]
		if lab != math.Trunc(lab) || lab < 0 || lab >= float64(ds.C) {
			return nil, perr(path, lines[i], astroClassColumn+1, fmt.Sprint(lab), "is not a class label 0 (bll), 1 (fsrq) or 2 (psr)")
		}
		ds.Y[i] = int(lab)
		for j, c := range cols {
			ds.X[i*d+j] = row[c]
			if ec, ok := astroErrorColumn[c]; ok {
				e := row[ec]
				if e < 0 {
					return nil, perr(path, lines[i], ec+1, fmt.Sprint(e), "is a negative error bar")
				}
				ds.Noise[i*d+j] = e * e
			}
		}
	}
	return ds, ds.Validate()
}

// AstroSplits reads <dataDir>/gpinputnoise/astrophysics/splits.txt: 100
// lines, each a permutation of the 454 row indices; the training set is the
// first int(0.9·454) = 408 indices and the test set the last 46
// (PROVENANCE; the same rule as the authors' script). Each line is checked
// to be a permutation so a corrupted split cannot silently leak test points
// into training. dataDir "" means ResolveDataDir("").
func AstroSplits(dataDir string) ([][2][]int, error) {
	dataDir, err := resolveIfEmpty(dataDir)
	if err != nil {
		return nil, err
	}
	rel := filepath.Join("gpinputnoise", "astrophysics", "splits.txt")
	vals, rows, cols, lines, path, err := readDataTable(dataDir, rel, hintDataDir)
	if err != nil {
		return nil, err
	}
	if cols != astroN {
		return nil, perr(path, lines[0], 0, "", "expected %d indices per line, got %d", astroN, cols)
	}
	nTrain := int(math.Floor(0.9 * astroN))
	out := make([][2][]int, rows)
	seen := make([]int, astroN)
	for r := range rows {
		perm := make([]int, cols)
		for j := range cols {
			v := vals[r*cols+j]
			if v != math.Trunc(v) || v < 0 || v >= astroN {
				return nil, perr(path, lines[r], j+1, fmt.Sprint(v), "is not a row index 0..%d", astroN-1)
			}
			k := int(v)
			if seen[k] == r+1 {
				return nil, perr(path, lines[r], j+1, fmt.Sprint(k), "appears twice on this line: each split must be a permutation")
			}
			seen[k] = r + 1
			perm[j] = k
		}
		out[r] = [2][]int{perm[:nTrain:nTrain], perm[nTrain:]}
	}
	return out, nil
}

// AstroFold applies the paper's astrophysics protocol to one split: take the
// train and test rows, standardise both with the training mean and
// population standard deviation (which rescales the error-bar variances to
// (error / training std)², the test rows using their own error bars over the
// training std), and set the noise variance of every attribute without an
// error bar to AstroNoiseFloor. ds must come from LoadAstro or
// LoadAstroColumns (the error-bar attributes are recognised by name).
func AstroFold(ds *Dataset, split [2][]int) (train, test *Dataset, sc *Scaler) {
	std, sc := Standardize(ds.Subset(split[0]), ds.Subset(split[1]))
	train, test = std[0], std[1]
	hasErr := make([]bool, ds.D)
	for j, name := range ds.FeatureNames {
		for c := range astroErrorColumn {
			if astroColumnNames[c] == name {
				hasErr[j] = true
			}
		}
	}
	for _, part := range []*Dataset{train, test} {
		if part.Noise == nil {
			part.Noise = make([]float64, part.N*part.D)
		}
		for i := range part.N {
			for j := range part.D {
				if !hasErr[j] {
					part.Noise[i*part.D+j] = AstroNoiseFloor
				}
			}
		}
	}
	return train, test, sc
}
