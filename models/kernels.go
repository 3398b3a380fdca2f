package models

import (
	"errors"
	"fmt"
	"math"

	"github.com/gpc-dev/gpc/layers/kernels"
)

// makeKernels gives every latent function its kernel (one kernel for all
// with Options.Kernel.Shared), initialised from data; nil data (Load)
// gives placeholder values that the stored ones overwrite.
func (m *Model) makeKernels(latent int, data *kernels.Data) error {
	m.kernels = make([]kernels.Kernel, latent)
	if v := m.Opts.Kernel.LatentNoise; v > 0 {
		// One kernel shared by every latent function, each with its own
		// noise variance on top (SMGPC's ϑ²_k).
		base, err := m.makeKernel("k0", data)
		if err != nil {
			return err
		}
		for c := range m.kernels {
			m.kernels[c] = kernels.NewWithNoise(fmt.Sprintf("k%d", c), base, v)
		}
		return nil
	}
	for c := range m.kernels {
		if c > 0 && m.Opts.Kernel.Shared {
			m.kernels[c] = m.kernels[0]
			continue
		}
		k, err := m.makeKernel(fmt.Sprintf("k%d", c), data)
		if err != nil {
			return err
		}
		m.kernels[c] = k
	}
	return nil
}

// makeKernel builds one latent function's kernel: the user's factory, or
// the kernel expression Options.Kernel.Name from the registry, whose
// kernels initialise themselves from the data.
func (m *Model) makeKernel(name string, data *kernels.Data) (kernels.Kernel, error) {
	o := m.Opts.Kernel
	if o.Factory != nil {
		k := o.Factory(name, m.D, factoryInit(o, m.D, data))
		if k == nil {
			return nil, fmt.Errorf("models: the kernel factory returned no kernel for %s", name)
		}
		return k, nil
	}
	k, err := kernels.Build(o.Name, kernelConfig(o, name, m.D, data))
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	return k, nil
}

func kernelConfig(o KernelOptions, name string, d int, data *kernels.Data) kernels.Config {
	return kernels.Config{Name: name, D: d, Degree: o.Degree, Data: data}
}

// factoryInit is the KernelInit a user's KernelFactory receives: the
// initial values of the kernel Options.Kernel.Name names when it reports
// them (kernels.InitReporter: the ARD family), else the stationary
// kernels' (ℓ the median pairwise distance of the sampled rows, σ² = e,
// σ₀² = e⁻²⁰); all ones without data.
func factoryInit(o KernelOptions, d int, data *kernels.Data) KernelInit {
	if data == nil {
		return KernelInit{Lengthscale: 1, Variance: 1, Noise: 1}
	}
	if k, err := kernels.Build(o.Name, kernelConfig(o, "init", d, data)); err == nil {
		if r, ok := k.(kernels.InitReporter); ok {
			return KernelInit(r.Initial())
		}
	}
	return KernelInit{Lengthscale: data.MedianDistance(), Variance: math.E, Noise: math.Exp(-20)}
}

// probeKernel builds the kernel expression of o on one input without
// data, to check it (names registered, arguments valid) and to ask its
// default jitter before any data are seen.
func probeKernel(o KernelOptions) (kernels.Kernel, error) {
	return kernels.Build(o.Name, kernelConfig(o, "probe", 1, nil))
}

// defaultJitter is the jitter the kernel asks for (kernels.JitterOf);
// an invalid expression gets kernels.DefaultJitter, and Validate reports it.
func defaultJitter(o KernelOptions) float64 {
	k, err := probeKernel(o)
	if err != nil {
		return kernels.DefaultJitter
	}
	return kernels.JitterOf(k)
}

// checkKernel reports an invalid kernel choice; a user's factory is
// checked when it builds.
func checkKernel(o KernelOptions) error {
	if o.Factory != nil {
		return nil
	}
	if _, err := probeKernel(o); err != nil {
		return fmt.Errorf("models: kernel: %w", err)
	}
	return nil
}

// KernelNames lists the registered kernels (kernels.Names), which kernel
// expressions combine.
func KernelNames() []string { return kernels.Names() }

// unregisteredKernel explains a saved model whose kernel this program has
// not registered, or returns nil.
func unregisteredKernel(path string, o KernelOptions) error {
	if o.Factory != nil {
		return nil
	}
	_, err := kernels.Parse(o.Name)
	var ee *kernels.ExprError
	if !errors.As(err, &ee) || ee.Unknown == "" {
		return nil
	}
	return fmt.Errorf("models: %s was trained with the kernel %q, which this program has not registered: register it with kernels.Register before Load (registered: %s), or pass its KernelOptions.Factory to Load", path, ee.Unknown, joinOr(kernels.Names()))
}
