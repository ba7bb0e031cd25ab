package schemas

// TableRow is one cell of a true joint table p(x,y): the rows of tables.parquet.
// A complete table has one row for every (x, y) with x in [0, X) and y in [0, K).
type TableRow struct {
	TableID int64   `parquet:"table_id" json:"table_id"`
	X       int64   `parquet:"x" json:"x"`
	Y       int64   `parquet:"y" json:"y"`
	P       float64 `parquet:"p" json:"p"`
}

// SampleRow is one i.i.d. draw (x, y) from a table: the rows of samples/*.parquet.
// Heldout is 1 for a draw held out of training (tasks.Options.HeldOut); tables and
// binary tables train on every draw, so it is 0 on their rows.
type SampleRow struct {
	TableID int64 `parquet:"table_id" json:"table_id"`
	X       int64 `parquet:"x" json:"x"`
	Y       int64 `parquet:"y" json:"y"`
	Heldout int64 `parquet:"heldout" json:"heldout"`
}

// ResultRow is one training run and its evaluation: the rows of the results/ files (one per block).
// The grid-point columns (point_id .. replicate) are constant in the control pipeline
// and vary in sweeps.
type ResultRow struct {
	RunID   string `parquet:"run_id" json:"run_id"`
	TableID int64  `parquet:"table_id" json:"table_id"`
	Method  string `parquet:"method" json:"method"`

	// Grid point: the configuration this run was trained under.
	PointID   int64   `parquet:"point_id" json:"point_id"`
	XValues   int64   `parquet:"x_values" json:"x_values"`
	Classes   int64   `parquet:"classes" json:"classes"`
	Encoding  string  `parquet:"encoding" json:"encoding"`
	Generator string  `parquet:"generator" json:"generator"`
	Model     string  `parquet:"model" json:"model"`
	Samples   int64   `parquet:"samples" json:"samples"`
	Steps     int64   `parquet:"steps" json:"steps"`
	LR        float64 `parquet:"lr" json:"lr"`
	BatchSize int64   `parquet:"batch_size" json:"batch_size"`
	PxWeight  float64 `parquet:"px_weight" json:"px_weight"`
	Replicate int64   `parquet:"replicate" json:"replicate"`

	// The task and the sampler options (see schemas.Grid): task "table" or a 2-D task;
	// grid, box and train_grid apply to 2-D tasks, the sgld_* options to sgld runs,
	// buffer_size and reinit_freq to sgld and pcd runs, chain_steps and proposal to pcd.
	Task       string  `parquet:"task" json:"task"`
	GridCells  int64   `parquet:"grid" json:"grid"`
	Box        float64 `parquet:"box" json:"box"`
	TrainGrid  int64   `parquet:"train_grid" json:"train_grid"`
	SGLDPreset string  `parquet:"sgld_preset" json:"sgld_preset"`
	SGLDLR     float64 `parquet:"sgld_lr" json:"sgld_lr"`
	SGLDStd    float64 `parquet:"sgld_std" json:"sgld_std"`
	SGLDSteps  int64   `parquet:"sgld_steps" json:"sgld_steps"`
	SGLDClamp  bool    `parquet:"sgld_clamp" json:"sgld_clamp"`
	BufferSize int64   `parquet:"buffer_size" json:"buffer_size"`
	ReinitFreq float64 `parquet:"reinit_freq" json:"reinit_freq"`
	ChainSteps int64   `parquet:"chain_steps" json:"chain_steps"`
	Proposal   string  `parquet:"proposal" json:"proposal"`
	Recipe             // mala, jarzynski, shortrun and ed: step_size .. ed_w
	// MethodOptions are the options of the run's method, in the method's own form: a
	// JSON object of its option keys (methods/<name> declares them), "" for a method
	// without options. It is the one place every method's options are read from
	// (methods.OptionsOf); the columns sgld_preset .. ed_w above are kept for readers
	// of earlier files, which lack this one (methods.OptionsOf rebuilds it from them).
	MethodOptions string `parquet:"method_options" json:"method_options"`
	// MethodStats are what the run's method reports of itself beyond the shared
	// columns, as a JSON object (e.g. snl's and nce's learned log Z beside the exact
	// one); "" for none.
	MethodStats string `parquet:"method_stats" json:"method_stats"`

	// Evaluation against the true table.
	KLJoint       float64 `parquet:"kl_joint" json:"kl_joint"`
	KLMarginal    float64 `parquet:"kl_marginal" json:"kl_marginal"`
	KLConditional float64 `parquet:"kl_conditional" json:"kl_conditional"`
	// KLJointSE is kl_joint's Monte Carlo standard error where kl_joint is a Monte Carlo
	// estimate over exact draws of the truth with the model's exact log Z (images with
	// the MFA model); 0 where kl_joint is exact; NaN where kl_joint is not measured.
	KLJointSE float64 `parquet:"kl_joint_se" json:"kl_joint_se"`

	// Block tasks: kl_marginal and kl_conditional are Monte Carlo estimates there, and these
	// their standard errors (95% CI: ± 1.96 SE); NaN for the other kinds, whose KLs are exact.
	KLMarginalSE    float64 `parquet:"kl_marginal_se" json:"kl_marginal_se"`
	KLConditionalSE float64 `parquet:"kl_conditional_se" json:"kl_conditional_se"`

	// Block tasks: the model's log Z over the box, exact (the grids' quadrature, per unit
	// volume) and estimated by importance sampling from the truth with each block
	// replaced by a uniform draw on its box with a small probability (prob.ImportanceLogZ),
	// with its standard error (with an allowance for the weights' unseen tail) and
	// effective sample size; kl_joint_is is kl_joint with the estimated log Z, and
	// kl_joint_is_se its standard error. An estimate is refused (is_refused says why:
	// ESS < 100, or the weights' Pareto k̂ > 0.5, whose variance is infinite) with
	// kl_joint_is and the SEs NaN and log_z_is kept as a stochastic lower bound; is_khat
	// is k̂ (NaN where it is not fitted).
	// On a joint point (--model=joint:…) every run is measured from its logits at the
	// task's evaluation points (tasks/blocks.EvaluateLogits): kl_joint_is is the Monte
	// Carlo mean of log p − f plus log Ẑ, kl_joint_is_se combines both SEs, and log_z is
	// NaN for the joint model (no exact Z). NaN for the other kinds.
	LogZ        float64 `parquet:"log_z" json:"log_z"`
	LogZIS      float64 `parquet:"log_z_is" json:"log_z_is"`
	LogZISSE    float64 `parquet:"log_z_is_se" json:"log_z_is_se"`
	ISESS       float64 `parquet:"is_ess" json:"is_ess"`
	KLJointIS   float64 `parquet:"kl_joint_is" json:"kl_joint_is"`
	KLJointISSE float64 `parquet:"kl_joint_is_se" json:"kl_joint_is_se"`
	ISKHat      float64 `parquet:"is_khat" json:"is_khat"`
	ISRefused   string  `parquet:"is_refused" json:"is_refused"`
	// ISProposal is the proposal log_z_is was drawn from: "truth" (the task's truth
	// proposal alone), "adapted" (on a joint point, a run with parameters: the truth
	// proposal's draws pooled with as many fresh draws of a mixture fitted to the model's
	// own Metropolis chains, tasks/blocks.EvalSet.AdaptedLogZ), "" where there is no
	// estimate.
	ISProposal string `parquet:"is_proposal" json:"is_proposal"`
	// Block tasks, the report's tasks (--report_tables): log Z by annealed importance
	// sampling (prob.AISLogZ: 512 chains, 200 temperatures) as a cross-check, with the SE
	// and ESS of its chains' weights; NaN otherwise.
	LogZAIS   float64 `parquet:"log_z_ais" json:"log_z_ais"`
	LogZAISSE float64 `parquet:"log_z_ais_se" json:"log_z_ais_se"`
	AISESS    float64 `parquet:"ais_ess" json:"ais_ess"`

	Accuracy      float64 `parquet:"accuracy" json:"accuracy"`
	BayesAccuracy float64 `parquet:"bayes_accuracy" json:"bayes_accuracy"`
	Floor         float64 `parquet:"floor" json:"floor"`
	KLEmpirical   float64 `parquet:"kl_empirical" json:"kl_empirical"`
	EmptyCells    int64   `parquet:"empty_cells" json:"empty_cells"`

	// The error split: kl_joint = kl_approximation + kl_optimisation_gap + kl_estimation.
	// p̂ is the run's empirical table (the true table for the oracle, which trains on it).
	KLApproximation   float64 `parquet:"kl_approximation" json:"kl_approximation"`       // min over the model family of KL(p‖q): what the family cannot represent (0 for a complete family)
	KLOptimisationGap float64 `parquet:"kl_optimisation_gap" json:"kl_optimisation_gap"` // KL(p̂‖q) − min over the family of KL(p̂‖·): how far q is from the joint maximum-likelihood fit of the same data
	KLEstimation      float64 `parquet:"kl_estimation" json:"kl_estimation"`             // the rest, kl_joint − kl_approximation − kl_optimisation_gap: the error of fitting N draws (0 for the oracle)
	KLMarginalGap     float64 `parquet:"kl_marginal_gap" json:"kl_marginal_gap"`         // the optimisation gap of q(x) alone: KL(p̂(x)‖q(x)) − KL(p̂(x)‖q*(x)), q* the family's fit of p̂

	// The temperature diagnostic (prob.BestTemperature): β* = argmin_β KL(p‖q^β/Z_β) on
	// the evaluation support (all cells and classes; searched in [1e-3, 1e3], a bound
	// when the minimum lies beyond it), and the joint KL there. β* is 1 for a correct
	// fit, above 1 for a model too hot (too flat), below 1 for one too cold. The
	// official SGLD step (lr 1, noise std 0.01) samples at temperature std²/(2·lr) =
	// 1/20000 rather than 1, so a model trained on its samples can be off by a
	// temperature; the part of kl_joint that temperature alone explains is kl_joint −
	// kl_joint_best_temperature. NaN for runs whose logits are missing or not finite.
	BestTemperature        float64 `parquet:"best_temperature" json:"best_temperature"`
	KLJointBestTemperature float64 `parquet:"kl_joint_best_temperature" json:"kl_joint_best_temperature"`

	// References, properties of the table and N (the same for every method of a table).
	KLReference                 float64 `parquet:"kl_reference" json:"kl_reference"`                                     // KL(p‖r) of the reference estimate r on the same counts: the family's fit of the add-½ table (n+½)/(N+C/2)
	KLReferenceExpected         float64 `parquet:"kl_reference_expected" json:"kl_reference_expected"`                   // E[kl_reference] over N-draw datasets: exact (binomial sums) for a complete family; kl_approximation + tr(J⁺K)/(2N) (first order) for a restricted one
	KLMarginalReferenceExpected float64 `parquet:"kl_marginal_reference_expected" json:"kl_marginal_reference_expected"` // E[KL(p(x)‖add-½ estimate of p(x))], exact: the statistical scale of q(x)

	// The paper's promises beyond the joint, exact by enumeration of the table. OOD: the
	// AUROC of x ~ p(x) (in distribution) against x uniform over 0..X-1 (out), for the
	// score log q(x) (logsumexp f(x), the paper's p(x) score), max_y q(y|x) (its p(y|x)
	// score) and the true p(x) (the ceiling: the likelihood ratio). Calibration: the
	// exact expected calibration error Σ_x p(x) |max_y q(y|x) − p(ŷ(x)|x)|, no binning
	// (0 for the Bayes classifier).
	AUROCPx              float64 `parquet:"auroc_px" json:"auroc_px"`
	AUROCPy              float64 `parquet:"auroc_py" json:"auroc_py"`
	AUROCTruePx          float64 `parquet:"auroc_true_px" json:"auroc_true_px"`
	CalibrationErrorTrue float64 `parquet:"calibration_error_true" json:"calibration_error_true"`

	// The promises on 2-D tasks, from HeldOut held-out draws of the task and as many
	// OOD draws (--ood; NaN for tables but ece): the AUROC of the paper's gradient score
	// −‖∇x log q(x)‖; the binned expected calibration error (15 equal-width bins; for
	// tables its exact expectation under p(x)); the accuracy of argmax q(y|x) on the
	// held-out draws clean, after an L∞ PGD attack of radius --attack_eps, and after
	// --purify_steps of energy descent from the attacked points, and the Bayes
	// classifier's accuracy at the purified points; for the report's runs, the total-
	// variation distance from p(x) of long-run Langevin chains of q(x) started from
	// uniform noise and from the final replay buffer (sgld).
	AUROCPxGrad      float64 `parquet:"auroc_pxgrad" json:"auroc_pxgrad"`
	ECE              float64 `parquet:"ece" json:"ece"`
	AccClean         float64 `parquet:"acc_clean" json:"acc_clean"`
	AccAttacked      float64 `parquet:"acc_attacked" json:"acc_attacked"`
	AccPurified      float64 `parquet:"acc_purified" json:"acc_purified"`
	AccBayesPurified float64 `parquet:"acc_bayes_purified" json:"acc_bayes_purified"`
	SamplesTVNoise   float64 `parquet:"samples_tv_noise" json:"samples_tv_noise"`
	SamplesTVBuffer  float64 `parquet:"samples_tv_buffer" json:"samples_tv_buffer"`

	// The sampler's replay buffer at the end of training (sgld and pcd runs; NaN for
	// the others): the share of its samples inside the box (1 for tables), and its
	// total-variation distance from the true p(x) and from the model's own q(x), on
	// the evaluation grid's cells for 2-D tasks (a histogram of the buffer) and on the
	// X values for tables.
	BufferInBox   float64 `parquet:"buffer_in_box" json:"buffer_in_box"`
	BufferTVTruth float64 `parquet:"buffer_tv_truth" json:"buffer_tv_truth"`
	BufferTVModel float64 `parquet:"buffer_tv_model" json:"buffer_tv_model"`
	// The sampler's own distribution on 2-D tasks (NaN elsewhere and where it does not
	// apply), each the total-variation distance of n independent chains' end points
	// (n = --sampler_chains: 512 by default, 2,000 the full measure) from the true p(x)
	// (_truth) and from the model's own q(x) (_model, exact on the grid), on
	// bufferTV2D's pooled cells plus one bin for the points outside the box (where
	// neither has mass), with its delta-method standard error (_se: the
	// multinomial's; ± 1.96 se is a 95% CI). short_*: a fresh run of the method's own
	// sampler (its start, steps, step and noise: the plane.sampler hook) on the
	// selected model; NaN for methods without a sampler. long_*: MALA at temperature 1
	// (two grid cells per move, plane.LongSteps moves from uniform) on the selected model,
	// whose steady state is q, for every method that trains log q(x) (NaN for the
	// baseline); long_accept its acceptance. sampler_tv_floor(_model): the expected TV
	// of n exact draws of p(x) (of q(x)) from it, prob.TVFloor: a TV at its floor is as
	// close as n perfect samples get.
	ShortTVTruth        float64 `parquet:"short_tv_truth" json:"short_tv_truth"`
	ShortTVModel        float64 `parquet:"short_tv_model" json:"short_tv_model"`
	ShortTVTruthSE      float64 `parquet:"short_tv_truth_se" json:"short_tv_truth_se"`
	ShortTVModelSE      float64 `parquet:"short_tv_model_se" json:"short_tv_model_se"`
	LongTVTruth         float64 `parquet:"long_tv_truth" json:"long_tv_truth"`
	LongTVModel         float64 `parquet:"long_tv_model" json:"long_tv_model"`
	LongTVTruthSE       float64 `parquet:"long_tv_truth_se" json:"long_tv_truth_se"`
	LongTVModelSE       float64 `parquet:"long_tv_model_se" json:"long_tv_model_se"`
	LongAccept          float64 `parquet:"long_accept" json:"long_accept"`
	SamplerTVFloor      float64 `parquet:"sampler_tv_floor" json:"sampler_tv_floor"`
	SamplerTVFloorModel float64 `parquet:"sampler_tv_floor_model" json:"sampler_tv_floor_model"`
	// Z-free divergences of the selected model from the truth (models/prob/zfree.go),
	// over the task's exact held-out draws, each with its standard error (_se): they need
	// no normaliser, so they exist for any model. fisher_div: E_p ‖∇x log p(x) −
	// ∇x LSE_y f(x)[y]‖²; fisher_div_cond: E_p(x,y) ‖∇x log p(x | y) − ∇x f(x)[y]‖²;
	// log_ratio_sd: sd_p[log p(x, y) − f(x)[y]]. Each is 0 exactly when q = p. 2-D tasks
	// (NaN elsewhere and for diverged runs).
	FisherDiv       float64 `parquet:"fisher_div" json:"fisher_div"`
	FisherDivSE     float64 `parquet:"fisher_div_se" json:"fisher_div_se"`
	FisherDivCond   float64 `parquet:"fisher_div_cond" json:"fisher_div_cond"`
	FisherDivCondSE float64 `parquet:"fisher_div_cond_se" json:"fisher_div_cond_se"`
	LogRatioSD      float64 `parquet:"log_ratio_sd" json:"log_ratio_sd"`
	LogRatioSDSE    float64 `parquet:"log_ratio_sd_se" json:"log_ratio_sd_se"`
	// pcd and pcd-exact runs: the joint KL at the parameters averaged over the last 10%
	// of the training steps (Polyak averaging, which cancels gradient noise; NaN for the
	// other methods and for diverged runs).
	KLJointAveraged float64 `parquet:"kl_joint_averaged" json:"kl_joint_averaged"`
	// 2-D exact references (jem, jem-converged, oracle): what the steps after the first
	// third gained, KL(best check of the first third) − KL(best check) ≥ 0, a diagnostic
	// of the reference's own convergence read off its curve (never used to choose an
	// iterate); NaN for the other methods.
	RefGap float64 `parquet:"ref_gap" json:"ref_gap"`

	// The protocol (config.json "protocol"): every method of a point is trained and
	// selected alike. SelectedStep is the training step of the iterate every metric of
	// the row is taken at: the last step (rule "last") or the check of least held-out
	// NLL (rule "heldout"), chosen without the truth; the run's curve holds that step
	// and its kl_joint there equals this row's. HeldoutNLL is the mean −log q(x, y) of
	// the held-out draws (the learned joint normalised on the evaluation grid or
	// enumeration, per unit volume) at the selected iterate, HeldoutNLLFinal at the last
	// step. Unstable: the held-out NLL ended more than protocol.unstable_nats above its
	// best, or above the baseline's on the same task (a collapse, counted per recipe).
	// GradEvals are the model's forward+backward passes per point over all steps (data,
	// negatives and sampler steps together; GradEvalsSelected up to SelectedStep), and
	// CPUSeconds the run's own CPU time (with --timings; NaN without).
	SelectedStep      int64   `parquet:"selected_step" json:"selected_step"`
	HeldoutNLL        float64 `parquet:"heldout_nll" json:"heldout_nll"`
	HeldoutNLLFinal   float64 `parquet:"heldout_nll_final" json:"heldout_nll_final"`
	Unstable          bool    `parquet:"unstable" json:"unstable"`
	GradEvals         int64   `parquet:"grad_evals" json:"grad_evals"`
	GradEvalsSelected int64   `parquet:"grad_evals_selected" json:"grad_evals_selected"`
	CPUSeconds        float64 `parquet:"cpu_seconds" json:"cpu_seconds"`
	// TrainBatch and TrainLR are the minibatch and Adam rate the run actually trained
	// with (the point's batch_size and lr, but jem-converged's full batch and rate).
	TrainBatch int64   `parquet:"train_batch" json:"train_batch"`
	TrainLR    float64 `parquet:"train_lr" json:"train_lr"`
	// Converged: the protocol's convergence rule (tasks.Converged: the best held-out NLL
	// improved by less than tasks.ConvergeTol nats over the last fifth of the checks, at
	// least tasks.ConvergeMinChecks checks) held on the run's curve by its last step;
	// ConvergedStep is the first check at which it held (0 when it never did, or the run
	// has no held-out curve). jem-converged (the converged yardstick) trains until it
	// holds, up to tasks.YardstickCap steps; every other run is only read.
	Converged     bool  `parquet:"converged" json:"converged"`
	ConvergedStep int64 `parquet:"converged_step" json:"converged_step"`

	FinalLoss float64 `parquet:"final_loss" json:"final_loss"`
	// A run's status: diverged when the trainer flagged it (a divergence guard fired,
	// at DivergedStep on 2-D kernels); nonfinite when no guard fired but its learned
	// joint's KL (or its logits) is not finite, e.g. q put zero mass (exp underflowed)
	// where the truth has mass. Neither is an ordinary run: diverged runs are left out
	// of a verdict (up to a share), nonfinite ones count against their method.
	Diverged     bool    `parquet:"diverged" json:"diverged"`
	DivergedStep int64   `parquet:"diverged_step" json:"diverged_step"` // the training step whose divergence guard fired (1-based), 0 if none or unknown
	Nonfinite    bool    `parquet:"nonfinite" json:"nonfinite"`
	TrainMS      float64 `parquet:"train_ms" json:"train_ms"` // --timings: 2-D, the run's own CPU ms (its thread's clock); tables, the block's wall ms per run

	// Image tasks (tasks/images; NaN, false or "" elsewhere): the joint KL with log Z_θ
	// from forward annealed importance sampling, a stochastic LOWER bound on log Z_θ and
	// so on the KL (kl_joint_lower, with its SE); the upper side needs exact draws of
	// the model (kl_joint_upper: NaN for a learned model). The AIS schedule is first run
	// both ways on the task's truth, whose log Z is 0: its forward (lower) and reverse
	// (upper) estimates and their gap; ais_accepted when the gap is within 0.1 nat, else
	// kl_joint_lower is NaN and ais_refused says why.
	KLJointLower    float64 `parquet:"kl_joint_lower" json:"kl_joint_lower"`
	KLJointLowerSE  float64 `parquet:"kl_joint_lower_se" json:"kl_joint_lower_se"`
	KLJointUpper    float64 `parquet:"kl_joint_upper" json:"kl_joint_upper"`
	AISTeacherLower float64 `parquet:"ais_teacher_lower" json:"ais_teacher_lower"`
	AISTeacherUpper float64 `parquet:"ais_teacher_upper" json:"ais_teacher_upper"`
	AISTeacherGap   float64 `parquet:"ais_teacher_gap" json:"ais_teacher_gap"`
	AISAccepted     bool    `parquet:"ais_accepted" json:"ais_accepted"`
	AISRefused      string  `parquet:"ais_refused" json:"ais_refused"`
}

// LearnedRow is one cell of a learned joint: the rows of learned.parquet.
type LearnedRow struct {
	RunID   string  `parquet:"run_id" json:"run_id"`
	TableID int64   `parquet:"table_id" json:"table_id"`
	Method  string  `parquet:"method" json:"method"`
	PointID int64   `parquet:"point_id" json:"point_id"`
	X       int64   `parquet:"x" json:"x"`
	Y       int64   `parquet:"y" json:"y"`
	Logit   float64 `parquet:"logit" json:"logit"`
	Q       float64 `parquet:"q" json:"q"`
}

// SampleRow2D is one i.i.d. draw (x0, x1, y) from a 2-D task: the rows of a 2-D point's
// samples/*.parquet, in draw order; Heldout is 1 for the draws held out of training
// (the last ⌈N·holdout⌉ of the task, tasks.Options.HeldOut), 0 for those trained on.
type SampleRow2D struct {
	TaskID  int64   `parquet:"task_id" json:"task_id"`
	X0      float64 `parquet:"x0" json:"x0"`
	X1      float64 `parquet:"x1" json:"x1"`
	Y       int64   `parquet:"y" json:"y"`
	Heldout int64   `parquet:"heldout" json:"heldout"`
}

// TruthRow is one cell and class of a 2-D task's true joint on the evaluation grid
// (normalised on the grid): the rows of truth.parquet. Cell c = i·G + j is centred at
// (x0, x1) = (−b + (i+½)h, −b + (j+½)h), h = 2b/G.
type TruthRow struct {
	TaskID int64   `parquet:"task_id" json:"task_id"`
	Cell   int64   `parquet:"cell" json:"cell"`
	X0     float64 `parquet:"x0" json:"x0"`
	X1     float64 `parquet:"x1" json:"x1"`
	Y      int64   `parquet:"y" json:"y"`
	P      float64 `parquet:"p" json:"p"`
}

// LearnedGridRow is one cell and class of a 2-D run's learned joint on the evaluation
// grid: the rows of learned_grid/*.parquet; q is normalised over all cells and classes.
type LearnedGridRow struct {
	RunID  string  `parquet:"run_id" json:"run_id"`
	TaskID int64   `parquet:"task_id" json:"task_id"`
	Cell   int64   `parquet:"cell" json:"cell"`
	Y      int64   `parquet:"y" json:"y"`
	Logit  float64 `parquet:"logit" json:"logit"`
	Q      float64 `parquet:"q" json:"q"`
}

// BufferRow is one sample of a sampler run's final replay buffer: the rows of
// buffers/*.parquet (x1 is 0 and x0 the x value for a table's pcd chains).
type BufferRow struct {
	RunID  string  `parquet:"run_id" json:"run_id"`
	TaskID int64   `parquet:"task_id" json:"task_id"`
	Index  int64   `parquet:"index" json:"index"`
	X0     float64 `parquet:"x0" json:"x0"`
	X1     float64 `parquet:"x1" json:"x1"`
}

// CurveRow is a run's exact KL on the evaluation grid after a training step: the rows
// of curves/*.parquet (2-D runs, every --eval_every steps).
type CurveRow struct {
	RunID         string  `parquet:"run_id" json:"run_id"`
	TaskID        int64   `parquet:"task_id" json:"task_id"`
	Method        string  `parquet:"method" json:"method"`
	PointID       int64   `parquet:"point_id" json:"point_id"`
	Step          int64   `parquet:"step" json:"step"`
	KLJoint       float64 `parquet:"kl_joint" json:"kl_joint"`
	KLMarginal    float64 `parquet:"kl_marginal" json:"kl_marginal"`
	KLConditional float64 `parquet:"kl_conditional" json:"kl_conditional"`
	HeldoutNLL    float64 `parquet:"heldout_nll" json:"heldout_nll"` // the selection criterion at this step (NaN without held-out draws)
	GradEvals     int64   `parquet:"grad_evals" json:"grad_evals"`   // forward+backward passes per point up to this step
}

// ResultBlock is the result rows of a block's runs, in run-id order: the rows of the
// table with ordinal First, then First+1, ... (the element Evaluate emits and
// Aggregate combines).
type ResultBlock struct {
	PointID, Index, First int64
	Rows                  []ResultRow
}

// RunID names a run: point, table ordinal (see Table) and method, e.g.
// p0000-t0000003-jem. It uses the ordinal, not the user's table id, so every run id has
// the same well-formed shape (no minus sign, no 19-digit ids) and run ids sort in table
// order; the user's id is in the table_id column beside it.
func RunID(pointID, ordinal int64, method string) string {
	return formatRunID(pointID, ordinal, method)
}

// Options are the row's method options as Grid.Options holds them (from
// method_options; nil when empty or unreadable: methods.OptionsOf reads legacy rows).
func (r ResultRow) Options() Options {
	if r.MethodOptions == "" {
		return nil
	}
	var o Options
	if err := o.UnmarshalJSON([]byte(r.MethodOptions)); err != nil {
		return nil
	}
	return o
}

// LaterColumns are the result columns added after the first released results format:
// a file written before them reads with their zero values ("" for method_options,
// which methods.OptionsOf then rebuilds from the legacy option columns; 0 for the
// sampler's distribution, whose sampler_tv_floor is > 0 wherever it was measured).
func (*ResultRow) LaterColumns() []string {
	return []string{"method_options", "method_stats",
		"short_tv_truth", "short_tv_model", "short_tv_truth_se", "short_tv_model_se", "long_tv_truth", "long_tv_model", "long_tv_truth_se", "long_tv_model_se", "long_accept", "sampler_tv_floor", "sampler_tv_floor_model",
		"kl_joint_lower", "kl_joint_lower_se", "kl_joint_upper", "ais_teacher_lower", "ais_teacher_upper", "ais_teacher_gap", "ais_accepted", "ais_refused",
		"fisher_div", "fisher_div_se", "fisher_div_cond", "fisher_div_cond_se", "log_ratio_sd", "log_ratio_sd_se",
		"converged", "converged_step", "is_proposal", "kl_joint_se"}
}

// LaterColumns: samples written before the held-out marker existed read as all 0.
func (*SampleRow) LaterColumns() []string { return []string{"heldout"} }

// LaterColumns: samples written before the held-out marker existed read as all 0.
func (*SampleRow2D) LaterColumns() []string { return []string{"heldout"} }
