package workload

import "github.com/servebench/servebench/engine/dist"

// The distribution grammar lives in engine/dist, shared with the bundled
// engine's --reasoning-tokens; these are its names here, kept so that
// callers of bench read as before.

// Dist is a distribution of token counts or seconds (dist.Dist).
type Dist = dist.Dist

// Distribution kinds, as written in --input-tokens, --output-tokens and
// --think-time.
const (
	DistConst     = dist.Const
	DistUniform   = dist.Uniform
	DistNormal    = dist.Normal
	DistLognormal = dist.Lognormal
	DistZipf      = dist.Zipf
)

// DistGrammar is the accepted syntax, for help texts and errors.
const DistGrammar = dist.Grammar

// ParseDist reads a distribution (dist.Parse); the caller names the option.
func ParseDist(s string) (Dist, error) { return dist.Parse(s) }
