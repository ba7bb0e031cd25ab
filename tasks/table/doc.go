// Package table is the task kind of random joint tables: the task "table", p(x,y) on
// X·K cells, drawn from the generator the point names and seeded by the task's ordinal
// (or read from --tables_from), N draws of each table as multinomial cell counts.
// Models see x as a scalar or one-hot (Encodings) and are trained on the counts by the
// fused kernels or a GoMLX graph: baseline (cross-entropy), jem (the exact JEM joint
// likelihood), oracle (the JEM loss on the true table) and the sampler recipes methods
// lists for tables (pcd and others). Every KL is exact by enumerating the X·K cells.
//
// The points' verdict is the Tables rule: exact JEM's error split (its optimisation
// gap, q(x)'s gap and the family's approximation error, against the family's best fit
// and the add-½ reference on the same counts) as shares of the statistical error, with
// the samplers checked against exact jem beside it. support.go gives the x values
// 0..X−1 as an export's evaluation support.
package table
