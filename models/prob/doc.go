// Package prob is the pure probability maths and statistics behind jemcheck: joint
// tables p(x,y), their generators, exact samplers, the divergences and accuracies that
// compare a learned joint q with the truth p, and the paired statistics that compare
// methods across tables.
//
// A joint table over x ∈ {0..X−1} and y ∈ {0..K−1} is a []float64 of length X·K in
// row-major order: cell (x, y) is at index x*K+y.
//
// Randomness is explicit: every sampler takes a *rand.Rand (math/rand/v2), and Seed,
// SeedString and NewRand derive independent, reproducible streams from a run seed and
// the identifiers of the work (table id, method, replicate, ...), so results do not
// depend on scheduling or on the order in which work is done.
//
// The package uses only the standard library.
package prob
