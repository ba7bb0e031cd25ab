// Command flatref prints the flat reference of docs/images.md ("The finding"): the exact
// KL from an images:S,K truth to the density uniform on the pixel box [−2, 3]^D (the box
// the model is normalised on) and uniform over the classes, E_p log p(x, y) + D log 5 +
// log K, as a mean over 4000 exact draws, for truths of the same spec at a few seeds.
//
//	GOEXPERIMENT=simd go run ./scripts/flatref [-k 2] [-seed_lo 11] [-seed_hi 14]
package main

import (
	"flag"
	"fmt"
	"math"
	"os"

	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/models/prob/mfa"
)

func main() {
	k := flag.Int("k", 2, "classes K")
	var lo, hi uint64
	flag.Uint64Var(&lo, "seed_lo", 11, "first truth seed")
	flag.Uint64Var(&hi, "seed_hi", 14, "last truth seed")
	n := flag.Int("n", 4000, "exact draws a truth")
	flag.Parse()
	for _, S := range []int{8, 16, 28} {
		for seed := lo; seed <= hi; seed++ {
			tr, err := mfa.New(seed, mfa.DefaultSpec(S, *k))
			if err != nil {
				fmt.Fprintln(os.Stderr, "flatref:", err)
				os.Exit(2)
			}
			x, y := tr.Sample(prob.NewRand(seed), *n)
			D := tr.D()
			lj := make([]float64, *k)
			var m float64
			for i := range y {
				tr.LogJoint(x[i*D:(i+1)*D], lj)
				m += lj[y[i]]
			}
			m /= float64(len(y))
			fmt.Printf("S %d (D %d) seed %d: E_p log p(x,y) %.2f, KL to the flat box density %.2f nats\n",
				S, D, seed, m, m+float64(D)*math.Log(5)+math.Log(float64(*k)))
		}
	}
}
