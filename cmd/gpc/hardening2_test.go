package main

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Class 3 of the second hardening round: gpc bench stops between
// iterations when the context ends (it ran every iteration to the end).
func TestBenchStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	t0 := time.Now()
	_, err := BenchConfigured(ctx, []string{"mgp"}, BenchConfigs["waveform"], 1_000_000)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("BenchConfigured returned %v, want the context's error", err)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("BenchConfigured returned after %v", d)
	}
}
