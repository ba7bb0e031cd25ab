// Package emulators starts real storage protocol servers on loopback for the tests
// that run jemcheck's pipelines against gs:// and s3:// locations:
//
//   - GCS: github.com/fsouza/fake-gcs-server (its fakestorage package, in-process,
//     serving the JSON and XML APIs over HTTP on 127.0.0.1); gocloud's gcsblob (and
//     cloud.google.com/go/storage under it) talk to it through STORAGE_EMULATOR_HOST;
//   - S3: github.com/johannesboyne/gofakes3 with its in-memory backend, over HTTP on
//     127.0.0.1; gocloud's s3blob (AWS SDK v2) talks to it through the URL parameters
//     endpoint, use_path_style and region, with static credentials from the
//     environment.
//
// Each Start function returns a Server: the environment a client process needs (Env,
// to set in the test process and to pass to the processes it starts), the URL of a
// folder in one of its buckets (Loc) and Close. For tests, GCS and S3 start one,
// set its environment with t.Setenv and close it when the test ends.
//
// The servers are what the tests measure the drivers against: both decide a
// create-if-absent (gcsblob's ifGenerationMatch=0, s3blob's If-None-Match: *) under
// the store's own lock, as the real services do.
package emulators

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// Server is a storage server listening on 127.0.0.1.
type Server struct {
	// Scheme is the URL scheme of its buckets: "gs" or "s3".
	Scheme string
	// Addr is the host:port it listens on (always 127.0.0.1).
	Addr string
	// Env holds the environment variables a client needs to reach it (gocloud's
	// drivers read them when a bucket is opened).
	Env map[string]string
	// Params is the query every bucket URL must carry ("" for GCS).
	Params string
	// Buckets are the buckets created at start.
	Buckets []string

	close func()
	log   *requestLog
}

// Request is one request the server answered: what the tests read to see which
// preconditions a driver sent and what the server said.
type Request struct {
	Method string
	URL    string // path and query
	// IfNoneMatch is the If-None-Match header (S3's create-if-absent: "*").
	IfNoneMatch string
	Status      int
}

// Conditional reports whether the request is a write that asks the store to create
// the object only if it is absent: GCS's ifGenerationMatch=0, S3's If-None-Match: *.
func (r Request) Conditional() bool {
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		return false
	}
	u, err := url.Parse(r.URL)
	return r.IfNoneMatch == "*" || err == nil && u.Query().Get("ifGenerationMatch") == "0"
}

// requestLog keeps the last maxRequests requests.
type requestLog struct {
	mu   sync.Mutex
	reqs []Request
}

const maxRequests = 1 << 16

func (l *requestLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		l.mu.Lock()
		defer l.mu.Unlock()
		if len(l.reqs) == maxRequests {
			l.reqs = l.reqs[maxRequests/2:]
		}
		l.reqs = append(l.reqs, Request{Method: r.Method, URL: r.URL.RequestURI(), IfNoneMatch: r.Header.Get("If-None-Match"), Status: sw.status})
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Requests returns the requests answered since the last call (at most the last
// 65,536), and forgets them.
func (s *Server) Requests() []Request {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	r := s.log.reqs
	s.log.reqs = nil
	return r
}

// Conditional counts the create-if-absent writes among reqs and those the server
// refused (412 Precondition Failed).
func Conditional(reqs []Request) (writes, refused int) {
	for _, r := range reqs {
		if r.Conditional() {
			writes++
			if r.Status == http.StatusPreconditionFailed {
				refused++
			}
		}
	}
	return writes, refused
}

// Loc returns the location of the folder dir (slash-separated, may be empty) in
// bucket: gs://bucket/dir or s3://bucket/dir?region=...&endpoint=....
func (s *Server) Loc(bucket, dir string) string {
	u := s.Scheme + "://" + bucket
	if dir = strings.Trim(dir, "/"); dir != "" {
		u += "/" + dir
	}
	if s.Params != "" {
		u += "?" + s.Params
	}
	return u
}

// Object returns the location of one object key in bucket (for flags that name a
// file: --logits, --tables_from, --spec).
func (s *Server) Object(bucket, key string) string { return s.Loc(bucket, key) }

// Close stops the server; what it held is gone.
func (s *Server) Close() {
	if s.close != nil {
		s.close()
		s.close = nil
	}
}

// StartGCS starts fake-gcs-server on 127.0.0.1 (HTTP, in-memory backend) with the
// given buckets. Clients reach it through Env's STORAGE_EMULATOR_HOST.
//
// The listener is opened first, so that the server knows its own host:port: reads go
// through the XML API (GET http://host:port/bucket/object), which fake-gcs-server
// routes by the request's Host header only when it is its public host, and
// resumable uploads are sent to the Location it returns (its external URL).
func StartGCS(buckets ...string) (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("gcs emulator: listen on loopback: %w", err)
	}
	addr := l.Addr().String()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		Scheme:      "http",
		Host:        "127.0.0.1",
		NoListener:  true, // we serve its handler on our own listener, below
		PublicHost:  addr,
		ExternalURL: "http://" + addr,
		Writer:      io.Discard,
	})
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("gcs emulator: %w", err)
	}
	for _, b := range buckets {
		srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: b})
	}
	log := &requestLog{}
	hs := &http.Server{Handler: log.wrap(srv.HTTPHandler()), ReadHeaderTimeout: time.Minute}
	go hs.Serve(l)
	s := &Server{
		log:     log,
		Scheme:  "gs",
		Addr:    addr,
		Env:     map[string]string{"STORAGE_EMULATOR_HOST": addr},
		Buckets: buckets,
	}
	s.close = func() {
		hs.Close()
		srv.Stop()
	}
	return s, waitHTTP("http://"+addr+"/_internal/healthcheck", s)
}

// StartS3 starts gofakes3 (in-memory backend) on 127.0.0.1 with the given buckets.
// Clients reach it through Params (endpoint, path-style addressing, region) and the
// static credentials in Env.
func StartS3(buckets ...string) (*Server, error) {
	be := s3mem.New()
	for _, b := range buckets {
		if err := be.CreateBucket(b); err != nil {
			return nil, fmt.Errorf("s3 emulator: create bucket %s: %w", b, err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("s3 emulator: listen on loopback: %w", err)
	}
	addr := l.Addr().String()
	fake := gofakes3.New(be, gofakes3.WithLogger(gofakes3.DiscardLog()))
	log := &requestLog{}
	hs := &http.Server{Handler: log.wrap(fake.Server()), ReadHeaderTimeout: time.Minute}
	go hs.Serve(l)
	q := url.Values{}
	q.Set("region", "us-east-1")
	q.Set("use_path_style", "true")
	q.Set("endpoint", "http://"+addr)
	s := &Server{
		log:    log,
		Scheme: "s3",
		Addr:   addr,
		Env: map[string]string{
			"AWS_ACCESS_KEY_ID":         "jemcheck-test",
			"AWS_SECRET_ACCESS_KEY":     "jemcheck-test",
			"AWS_REGION":                "us-east-1",
			"AWS_EC2_METADATA_DISABLED": "true",
		},
		Params:  q.Encode(),
		Buckets: buckets,
	}
	s.close = func() { hs.Close() }
	return s, waitHTTP("http://"+addr+"/", s)
}

// waitHTTP waits until the server answers (any status) on u, at most 10 s.
func waitHTTP(u string, s *Server) error {
	c := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := c.Get(u)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) {
			s.Close()
			return fmt.Errorf("%s emulator on %s does not answer: %w", s.Scheme, s.Addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// GCS starts a GCS emulator for t with the given buckets (default "jc-test"), sets its
// environment for the rest of t (t.Setenv: not for parallel tests) and stops it when
// t ends.
func GCS(t testing.TB, buckets ...string) *Server {
	t.Helper()
	return forTest(t, StartGCS, buckets)
}

// S3 starts an S3 emulator for t, like GCS.
func S3(t testing.TB, buckets ...string) *Server {
	t.Helper()
	return forTest(t, StartS3, buckets)
}

// Both starts one emulator of each kind for t, GCS first.
func Both(t testing.TB, buckets ...string) []*Server {
	t.Helper()
	return []*Server{GCS(t, buckets...), S3(t, buckets...)}
}

func forTest(t testing.TB, start func(...string) (*Server, error), buckets []string) *Server {
	t.Helper()
	if len(buckets) == 0 {
		buckets = []string{"jc-test"}
	}
	began := time.Now()
	s, err := start(buckets...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	for k, v := range s.Env {
		t.Setenv(k, v)
	}
	t.Logf("%s emulator on %s (started in %v)", s.Scheme, s.Addr, time.Since(began).Round(time.Millisecond))
	return s
}
