// Package examples holds clients of jemcheck: programs in other languages that train a
// JEM on the tasks jemcheck exports and hand back logits for its evaluate pipeline
// (README.md). client_test.go runs them on a tiny hand-made export.
package examples
