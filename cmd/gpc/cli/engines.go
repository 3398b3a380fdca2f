package cli

// The engines registered outside package models, so that --inference and
// --model can name them and their presets (htpc).
import _ "github.com/gpc-dev/gpc/models/laplace"
