package experiments

// The engines registered outside package models, so that specs can name
// them and their presets (htpc).
import _ "github.com/gpc-dev/gpc/models/laplace"
