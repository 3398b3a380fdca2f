//go:build !race

package models

import "testing"

func skipFiniteDifferencesUnderRace(testing.TB) {}

func skipSequentialUnderRace(testing.TB) {}
