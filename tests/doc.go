// Package tests holds gpc's end-to-end tests: models trained through the
// public API, a kernel and a likelihood written by a "user" outside their
// packages, and the paper's 1-D toy problem.
package tests
