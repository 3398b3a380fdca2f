// Package tests holds gpc's end-to-end tests: models trained through the
// public API, a kernel and a likelihood written by a "user" outside their
// packages (the README's examples of both), the noisy-input paper's 1-D toy
// problem, and the README's walk-through and Go example run as written.
package tests
