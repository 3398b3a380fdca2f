//go:build !race

package graph

import "testing"

func skipUnderRace(testing.TB) {}
