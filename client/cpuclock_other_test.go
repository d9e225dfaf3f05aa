//go:build !unix

package client

import "time"

// cpuClock cannot read the CPU time here (no getrusage); 0 makes
// reportRates leave out the per-CPU-second rate.
func cpuClock() time.Duration { return 0 }
