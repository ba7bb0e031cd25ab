package stages

import (
	"context"
	"fmt"

	"github.com/jemcheck/jemcheck/tasks"
)

// Sources is the configuration every DoFn over a point's tasks shares: the run's
// options and points. Setup opens each point's source (tasks.Kind.Open), Teardown
// closes them; source gives a block's.
type Sources struct {
	Options Options
	Points  []Point

	points  map[int64]Point
	sources map[int64]tasks.Source
}

// Setup opens the sources.
func (s *Sources) Setup(ctx context.Context) error {
	s.points = tasks.PointsByID(s.Points)
	srcs, err := tasks.Sources(ctx, tasks.Env{Options: s.Options, Progress: progress}, s.Points)
	if err != nil {
		return err
	}
	s.sources = srcs
	return nil
}

// Teardown closes the sources; nil-safe.
func (s *Sources) Teardown() error {
	err := tasks.CloseSources(s.sources)
	s.sources = nil
	return err
}

// source returns the point and source of a block's point.
func (s *Sources) source(point int64) (Point, tasks.Source, error) {
	p, ok := s.points[point]
	if !ok {
		return Point{}, nil, fmt.Errorf("unknown point %d", point)
	}
	return p, s.sources[point], nil
}
