// Package examples holds clients of jemcheck: programs in other languages that train a
// JEM on the tasks jemcheck exports and hand back logits for its evaluate pipeline
// (README.md). client_test.go runs them on a tiny hand-made export;
// python_client_test.go takes exports of three kinds through the Python client
// (python/jemcheck) and frequency.py, the smallest client, into evaluate, and TestTorch2D
// runs torch_2d.py, an exact JEM in PyTorch through jemcheck.evaluate.
package examples
