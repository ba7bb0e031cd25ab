package images

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/models/prob/ais"
	"github.com/jemcheck/jemcheck/models/prob/mfa"
)

// TestCalibrationSweep measures the calibration on the truth (log Z = 0) over truth
// seeds, with the old base (one diagonal Gaussian) and the mixture base, at the
// settings in JEMCHECK_AIS_SWEEP ("S:seeds:chains×temps,…", e.g. "8:11-15:64x1000").
// Skipped unless that is set: it is the measurement behind docs/images.md.
func TestCalibrationSweep(t *testing.T) {
	spec := os.Getenv("JEMCHECK_AIS_SWEEP")
	if spec == "" {
		t.Skip("JEMCHECK_AIS_SWEEP not set")
	}
	parts := strings.Split(spec, ":")
	S, _ := strconv.Atoi(parts[0])
	lohi := strings.Split(parts[1], "-")
	lo, _ := strconv.Atoi(lohi[0])
	hi, _ := strconv.Atoi(lohi[1])
	bases := []string{"diag", "mixture"}
	if len(parts) > 3 {
		bases = strings.Split(parts[3], ",")
	}
	for seed := lo; seed <= hi; seed++ {
		tr, err := mfa.New(uint64(seed), mfa.DefaultSpec(S, 2))
		if err != nil {
			t.Fatal(err)
		}
		D := tr.D()
		train, labels := tr.Sample(prob.NewRand(prob.Seed(uint64(seed), 2)), 2000)
		den, err := newDensity(tr)
		if err != nil {
			t.Fatal(err)
		}
		for _, bn := range bases {
			var base ais.Base
			if bn == "diag" {
				base, err = ais.FitBase(train, D, 1.2) // the old base
			} else if bn == "mixture" {
				base, err = fitBase(train, labels, D, uint64(seed))
			} else { // mixC@inflate
				var c, rank int
				var inf float64
				_, _ = fmt.Sscanf(bn, "mix%d@%g/%d", &c, &inf, &rank)
				y := make([]int, len(labels))
				for i, v := range labels {
					y[i] = int(v)
				}
				base, err = ais.FitMixtureBase(train, y, D, ais.MixtureFit{Clusters: c, MinSize: AISMinCluster, Inflate: inf, Rank: rank, Seed: uint64(seed)})
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, ct := range strings.Split(parts[2], ",") {
				c := strings.Split(ct, "x")
				chains, _ := strconv.Atoi(c[0])
				temps, _ := strconv.Atoi(c[1])
				o := aisOptions(prob.Seed(uint64(seed), tagAIS, prob.SeedString("teacher")))
				o.Chains, o.Temps = chains, temps
				o.PilotChains = min(AISPilotChains, chains)
				draws, _ := tr.Sample(prob.NewRand(prob.Seed(uint64(seed), tagAIS, prob.SeedString("reverse draws"))), chains)
				t0 := time.Now()
				cal, err := ais.Calibrate(context.Background(), ais.FromBatch(boxed{truthModel{den}}), 0, base, draws, o, ais.DefaultGapTol)
				if err != nil {
					t.Fatal(err)
				}
				ok := cal.Accept && math.Abs(cal.Gap)+cal.GapSE <= ais.DefaultGapTol
				ncomp := 1
				if m, ok := base.(*ais.MixtureBase); ok {
					ncomp = len(m.Comps)
				}
				t.Logf("D=%d seed=%d base=%s(%d) chains=%d T=%d: lower %.3f±%.3f upper %.3f±%.3f gap %.3f±%.3f k̂ %.2f/%.2f ESS %.0f/%.0f acc %.2f accepted=%v images=%v %s [%.1fs]",
					D, seed, bn, ncomp, chains, temps, cal.Lower.LogZ, cal.Lower.SE, cal.Upper.LogZ, cal.Upper.SE, cal.Gap, cal.GapSE, cal.Lower.K, cal.Upper.K, cal.Lower.ESS, cal.Upper.ESS, cal.Lower.Accept,
					cal.Accept, ok, cal.Reason, time.Since(t0).Seconds())
			}
		}
	}
}
