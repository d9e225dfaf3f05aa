package launch

import (
	"context"
	"fmt"
	"time"
)

// Startup is one start-up's times and log facts. Times are seconds since the
// process was spawned unless the name says otherwise; nil means unknown.
// bench/result.Startup is its results.json form: the same fields with JSON
// keys, so a type conversion turns one into the other (launch may not
// import bench, where the schema lives).
type Startup struct {
	PortOpenS            *float64
	HealthOKS            *float64
	ModelListedS         *float64
	FirstTokenS          *float64
	WeightsLoadS         *float64 // a duration, from the log
	WeightsLoadedAtS     *float64
	ModelGiB             *float64
	InitEngineS          *float64 // a duration, from the log
	KVCacheTokens        *int64
	MaxConcurrency       *float64
	MaxConcurrencyTokens *int64
	PollIntervalS        *float64
	ModelLoadS           *float64 // a duration, from the engine (Ollama's load_duration)
	ModelLoadedAtS       *float64
}

// Measurement is one cold start of a server.
type Measurement struct {
	Startup *Startup
	Facts   Facts // everything the log said, including facts Startup has no field for
	BaseURL string
	Model   string
	LogPath string
}

// ColdStart starts the server spec describes, waits until it is ready, stops
// it, and returns what it measured. A start that fails returns an error
// wrapping ErrExited or ErrNotReady (or ctx's error); the server is always
// stopped before ColdStart returns.
func ColdStart(ctx context.Context, spec Spec, progress func(phase string, at time.Duration)) (*Measurement, error) {
	s, err := Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	st, err := s.WaitReady(ctx, progress)
	stopErr := s.Stop()
	if err != nil {
		return nil, err
	}
	m := &Measurement{Startup: st, Facts: s.Facts(), BaseURL: s.BaseURL(), Model: s.Model(), LogPath: s.spec.LogPath}
	if stopErr != nil {
		return m, fmt.Errorf("stopping the server after its start-up: %w", stopErr)
	}
	return m, nil
}
