package tasks

// DefaultTrainBatch is the default number of runs trained together in one graph.
const DefaultTrainBatch = 4096
