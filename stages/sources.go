package stages

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jemcheck/jemcheck/tasks"
)

// maxOpenSources bounds the points' sources a DoFn instance holds open: blocks come
// point by point, so a few suffice, and a sweep of thousands of points does not hold
// a source per point in every instance of every stage.
const maxOpenSources = 8

// Sources is the configuration every DoFn over a point's tasks shares: the run's
// options and points. A point's source (tasks.Kind.Open) is opened when a block of the
// point first needs it and kept among the maxOpenSources most recently used; Teardown
// closes those still open; source gives a block's.
type Sources struct {
	Options Options
	Points  []Point

	ctx    context.Context
	points map[int64]Point
	open   []openSource // most recently used last
}

type openSource struct {
	id  int64
	src tasks.Source
}

// Setup indexes the points; it opens nothing.
func (s *Sources) Setup(ctx context.Context) error {
	s.ctx = ctx
	s.points = tasks.PointsByID(s.Points)
	return nil
}

// Teardown closes the sources still open; nil-safe.
func (s *Sources) Teardown() error {
	var errs []error
	for _, o := range s.open {
		errs = append(errs, o.src.Close())
	}
	s.open = nil
	return errors.Join(errs...)
}

// source returns the point and source of a block's point, opening the source if it is
// not open (and closing the least recently used one beyond maxOpenSources).
func (s *Sources) source(point int64) (Point, tasks.Source, error) {
	p, ok := s.points[point]
	if !ok {
		return Point{}, nil, fmt.Errorf("unknown point %d", point)
	}
	if i := slices.IndexFunc(s.open, func(o openSource) bool { return o.id == point }); i >= 0 {
		o := s.open[i]
		s.open = append(slices.Delete(s.open, i, i+1), o)
		return p, o.src, nil
	}
	k, err := tasks.Of(p.Task)
	if err != nil {
		return Point{}, nil, err
	}
	ctx := s.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	src, err := k.Open(ctx, tasks.Env{Options: s.Options, Progress: progress}, p)
	if err != nil {
		return Point{}, nil, fmt.Errorf("point %d: %w", p.ID, err)
	}
	if len(s.open) >= maxOpenSources {
		oldest := s.open[0]
		s.open = slices.Delete(s.open, 0, 1)
		if err := oldest.src.Close(); err != nil {
			src.Close()
			return Point{}, nil, fmt.Errorf("point %d: close: %w", oldest.id, err)
		}
	}
	s.open = append(s.open, openSource{id: point, src: src})
	return p, src, nil
}
