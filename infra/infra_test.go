package infra

import (
	"bytes"
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/schemas"
	"gopkg.in/yaml.v3"
)

const root = ".." // the repository root, seen from this package's directory

// templateMetadata is a Flex Template metadata file (the fields gcloud accepts).
type templateMetadata struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Parameters  []struct {
		Name        string   `json:"name"`
		Label       string   `json:"label"`
		HelpText    string   `json:"helpText"`
		IsOptional  bool     `json:"isOptional"`
		ParamType   string   `json:"paramType"`
		Regexes     []string `json:"regexes"`
		HiddenUI    bool     `json:"hiddenUi"`
		DefaultVal  string   `json:"defaultValue"`
		EnumOptions []any    `json:"enumOptions"`
	} `json:"parameters"`
}

var paramTypes = []string{"", "DEFAULT", "TEXT", "GCS_READ_BUCKET", "GCS_WRITE_BUCKET", "GCS_READ_FILE",
	"GCS_WRITE_FILE", "GCS_READ_FOLDER", "GCS_WRITE_FOLDER", "NUMBER", "BOOLEAN", "ENUM", "SERVICE_ACCOUNT",
	"MACHINE_TYPE", "WORKER_REGION", "WORKER_ZONE"}

func metadataFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("dataflow", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("want the sweep and regress metadata in infra/dataflow, found %v", files)
	}
	return files
}

func readMetadata(t *testing.T, file string) templateMetadata {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var m templateMetadata
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return m
}

// TestTemplateMetadata: every metadata file parses strictly and has what gcloud
// requires (name, label and help text per parameter).
func TestTemplateMetadata(t *testing.T) {
	for _, f := range metadataFiles(t) {
		m := readMetadata(t, f)
		if m.Name == "" || m.Description == "" || len(m.Parameters) == 0 {
			t.Errorf("%s: name, description and parameters are required", f)
		}
		seen := map[string]bool{}
		for _, p := range m.Parameters {
			if p.Name == "" || p.Label == "" || p.HelpText == "" {
				t.Errorf("%s: parameter %+v lacks a name, label or helpText", f, p)
			}
			if seen[p.Name] {
				t.Errorf("%s: parameter %q declared twice", f, p.Name)
			}
			seen[p.Name] = true
			if !slices.Contains(paramTypes, p.ParamType) {
				t.Errorf("%s: parameter %q: unknown paramType %q", f, p.Name, p.ParamType)
			}
			for _, re := range p.Regexes {
				if _, err := regexp.Compile(re); err != nil {
					t.Errorf("%s: parameter %q: regex %q: %v", f, p.Name, re, err)
				}
			}
		}
	}
}

// TestTemplateParameterValues: the regexes accept the values the docs and the
// scheduler use and reject obvious garbage.
func TestTemplateParameterValues(t *testing.T) {
	good := map[string][]string{
		"out":           {"gs://bucket/regress/{DATE}", "gs://b/runs/kl-vs-n"},
		"spec":          {"gs://bucket/sweeps/kl-vs-n.yaml"},
		"tables":        {"10000", "1"},
		"samples":       {"1000"},
		"seed":          {"0", "1", "18446744073709551615"},
		"train_batch":   {"4096"},
		"backend":       {"", "xla:cuda", "go:ops_sequential", "xla:cpu"},
		"write_samples": {"true", "false"},
		"jem_px_weight": {"0", "1", "0.5", "1e-3"},
		"margin":        {"0.1", "0.05", "1e-2"},
		"max_p":         {"0.01", "1e-4"},
	}
	bad := map[string][]string{
		"out":    {"/local/path", "s3://x"},
		"tables": {"0", "-1", "ten"},
		"seed":   {"-1"},
		"max_p":  {"abc"},
		"margin": {"-0.1", "ten"},
	}
	for _, f := range metadataFiles(t) {
		for _, p := range readMetadata(t, f).Parameters {
			check := func(v string) bool {
				for _, re := range p.Regexes {
					if !regexp.MustCompile(re).MatchString(v) {
						return false
					}
				}
				return true
			}
			for _, v := range good[p.Name] {
				if !check(v) {
					t.Errorf("%s: parameter %s rejects %q", f, p.Name, v)
				}
			}
			for _, v := range bad[p.Name] {
				if check(v) {
					t.Errorf("%s: parameter %s accepts %q", f, p.Name, v)
				}
			}
		}
	}
}

// Flag-defining methods of package flag and *flag.FlagSet: the flag name is argument
// nameArg.
var flagDefs = map[string]int{
	"String": 0, "Int": 0, "Int64": 0, "Uint": 0, "Uint64": 0, "Float64": 0, "Bool": 0, "Duration": 0,
	"Func": 0, "BoolFunc": 0,
	"StringVar": 1, "IntVar": 1, "Int64Var": 1, "UintVar": 1, "Uint64Var": 1, "Float64Var": 1, "BoolVar": 1,
	"DurationVar": 1, "TextVar": 1, "Var": 1,
}

// parseDir parses the non-test Go files of dir.
func parseDir(t *testing.T, dir string) []*ast.File {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	var out []*ast.File
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", f, err)
		}
		out = append(out, af)
	}
	return out
}

// flagCalls walks n and returns the names of the flags it defines (calls like
// flag.String("spec", ...) or fs.IntVar(&v, "tables", ...)) and the functions it
// calls as pkg.Fn (qualified) or Fn (unqualified).
func flagCalls(n ast.Node) (flags []string, qualified, local []string) {
	ast.Inspect(n, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		switch fn := call.Fun.(type) {
		case *ast.SelectorExpr:
			if i, ok := flagDefs[fn.Sel.Name]; ok && len(call.Args) > i {
				if lit, ok := call.Args[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if name, err := strconv.Unquote(lit.Value); err == nil {
						flags = append(flags, name)
					}
				}
			}
			if x, ok := fn.X.(*ast.Ident); ok {
				qualified = append(qualified, x.Name+"."+fn.Sel.Name)
			}
		case *ast.Ident:
			local = append(local, fn.Name)
		}
		return true
	})
	return flags, qualified, local
}

// pipelineFlags returns the flags a pipeline's main package defines, read from its
// source: its own flag definitions plus those of the pipelines/internal/launch
// functions it calls (followed through launch's own calls), and the grid axes' flags
// (schemas.AxisDefs) where it calls launch.RegisterFlags. ok is false when the
// pipeline has no main.go yet.
func pipelineFlags(t *testing.T, pipeline string) (flags map[string]bool, ok bool) {
	t.Helper()
	dir := filepath.Join(root, "pipelines", pipeline)
	if _, err := os.Stat(filepath.Join(dir, "main.go")); err != nil {
		return nil, false
	}
	launchFuncs := map[string]*ast.FuncDecl{}
	for _, f := range parseDir(t, filepath.Join(root, "pipelines", "internal", "launch")) {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
				launchFuncs[fd.Name.Name] = fd
			}
		}
	}
	flags = map[string]bool{}
	var queue []string
	for _, f := range parseDir(t, dir) {
		names, qualified, _ := flagCalls(f)
		for _, n := range names {
			flags[n] = true
		}
		for _, q := range qualified {
			if fn, found := strings.CutPrefix(q, "launch."); found {
				queue = append(queue, fn)
			}
		}
	}
	seen := map[string]bool{}
	for len(queue) > 0 {
		fn := queue[0]
		queue = queue[1:]
		if fn == "RegisterFlags" { // the grid axes' flags, defined in a loop over schemas.AxisDefs
			for _, a := range schemas.AxisDefs {
				if name := a.FlagName(); name != "" {
					flags[name] = true
				}
			}
		}
		fd, found := launchFuncs[fn]
		if seen[fn] || !found {
			continue
		}
		seen[fn] = true
		names, _, local := flagCalls(fd.Body)
		for _, n := range names {
			flags[n] = true
		}
		queue = append(queue, local...)
	}
	return flags, true
}

// TestTemplateParametersAreFlags: every Flex Template parameter becomes --name=value
// on the pipeline's command line, so it must be a flag the pipeline defines.
func TestTemplateParametersAreFlags(t *testing.T) {
	for _, f := range metadataFiles(t) {
		pipeline := strings.TrimSuffix(filepath.Base(f), "-metadata.json")
		t.Run(pipeline, func(t *testing.T) {
			flags, ok := pipelineFlags(t, pipeline)
			if !ok {
				t.Skipf("pipelines/%s/main.go does not exist yet", pipeline)
			}
			for _, p := range readMetadata(t, f).Parameters {
				if !flags[p.Name] {
					t.Errorf("%s: parameter %q is not a flag of pipelines/%s (flags: %v)", f, p.Name, pipeline, keys(flags))
				}
			}
		})
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestYAMLFiles: the workflow and every YAML file under infra parse.
func TestYAMLFiles(t *testing.T) {
	var files []string
	for _, pat := range []string{
		filepath.Join(root, ".github", "workflows", "*.yml"),
		filepath.Join(root, ".github", "workflows", "*.yaml"),
	} {
		m, _ := filepath.Glob(pat)
		files = append(files, m...)
	}
	filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".yml") || strings.HasSuffix(p, ".yaml")) {
			files = append(files, p)
		}
		return nil
	})
	if len(files) == 0 {
		t.Fatal("no YAML files found")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := yaml.Unmarshal(b, &v); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestRegressWorkflow: the scheduled workflow runs the regress pipeline with flags
// it defines and uploads the outputs.
func TestRegressWorkflow(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, ".github", "workflows", "regress.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		On struct {
			Schedule []struct {
				Cron string `yaml:"cron"`
			} `yaml:"schedule"`
			Dispatch *yaml.Node `yaml:"workflow_dispatch"`
		} `yaml:"on"`
		Jobs map[string]struct {
			Steps []struct {
				Uses string            `yaml:"uses"`
				Run  string            `yaml:"run"`
				With map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatal(err)
	}
	if len(wf.On.Schedule) == 0 || len(strings.Fields(wf.On.Schedule[0].Cron)) != 5 {
		t.Errorf("want a 5-field cron schedule, got %+v", wf.On.Schedule)
	}
	if wf.On.Dispatch == nil {
		t.Error("want a workflow_dispatch trigger")
	}
	var runs, uploads int
	flags, haveFlags := pipelineFlags(t, "regress")
	flagRE := regexp.MustCompile(`--([a-z_]+)=`)
	for _, job := range wf.Jobs {
		for _, s := range job.Steps {
			if strings.Contains(s.Run, "./pipelines/regress") {
				runs++
				if !strings.Contains(s.Run, "--out=") {
					t.Errorf("regress run step has no --out: %q", s.Run)
				}
				for _, m := range flagRE.FindAllStringSubmatch(s.Run, -1) {
					if haveFlags && !flags[m[1]] {
						t.Errorf("workflow passes --%s, which pipelines/regress does not define", m[1])
					}
				}
			}
			if strings.HasPrefix(s.Uses, "actions/upload-artifact@") {
				uploads++
			}
		}
	}
	if runs == 0 || uploads == 0 {
		t.Errorf("want a step running ./pipelines/regress and an upload-artifact step (got %d, %d)", runs, uploads)
	}
}

// TestDockerfiles: the images use the Beam SDK version and Go version go.mod pins, and
// copy files that exist.
func TestDockerfiles(t *testing.T) {
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	beam := regexp.MustCompile(`github.com/apache/beam/sdks/v2 v(\S+)`).FindSubmatch(gomod)
	goVer := regexp.MustCompile(`(?m)^go (\S+)`).FindSubmatch(gomod)
	if beam == nil || goVer == nil {
		t.Fatal("go.mod lacks the go directive or the Beam requirement")
	}
	for _, f := range []string{"docker/Dockerfile", "docker/Dockerfile.gpu"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if !strings.Contains(s, "apache/beam_go_sdk:"+string(beam[1])) {
			t.Errorf("%s: want apache/beam_go_sdk:%s (go.mod's Beam version)", f, beam[1])
		}
		if !strings.Contains(s, "golang:"+string(goVer[1])) {
			t.Errorf("%s: want a golang:%s build image (go.mod's go version)", f, goVer[1])
		}
		for _, m := range regexp.MustCompile(`(?m)^COPY (?:--chmod=\S+ )?(infra/\S+)`).FindAllStringSubmatch(s, -1) {
			if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
				t.Errorf("%s: COPY source %s: %v", f, m[1], err)
			}
		}
		for _, p := range []string{"control", "sweep", "regress"} {
			if !strings.Contains(s, p) {
				t.Errorf("%s does not build %s", f, p)
			}
		}
		if strings.Contains(f, "gpu") {
			for _, want := range []string{"-tags xla", "CGO_ENABLED=1", "PJRT_PLUGIN_LIBRARY_PATH=", "XLA_FLAGS=--xla_gpu_cuda_data_dir=", "GOMLX_NO_AUTO_INSTALL", "infra/docker/pjrt-install"} {
				if !strings.Contains(s, want) {
					t.Errorf("%s lacks %q", f, want)
				}
			}
		}
	}
	// pjrt-install is part of the main module, which must therefore require go-xla.
	if _, err := os.Stat("docker/pjrt-install/go.mod"); err == nil {
		t.Error("docker/pjrt-install has its own go.mod, but the Dockerfile builds it in the main module")
	}
	if !bytes.Contains(gomod, []byte("github.com/gomlx/go-xla ")) {
		t.Error("go.mod does not require github.com/gomlx/go-xla, which docker/pjrt-install imports")
	}
}

// TestTerraform formats-checks the Terraform, and validates it where terraform can
// fetch the google provider (it needs network access for `terraform init`).
func TestTerraform(t *testing.T) {
	tf, err := exec.LookPath("terraform")
	if err != nil {
		t.Skip("terraform is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := func(dir string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, tf, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run("schedule", "fmt", "-check", "-diff"); err != nil {
		t.Errorf("terraform fmt -check: %v\n%s", err, out)
	}
	tmp := t.TempDir()
	for _, f := range []string{"main.tf", "variables.tf"} {
		b, err := os.ReadFile(filepath.Join("schedule", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(tmp, f), b, 0o644)
	}
	if out, err := run(tmp, "init", "-backend=false", "-input=false", "-no-color"); err != nil {
		t.Skipf("terraform init failed (no network for the provider?): skipping validate\n%s", lastLines(out, 5))
	}
	if out, err := run(tmp, "validate", "-no-color"); err != nil {
		t.Errorf("terraform validate: %v\n%s", err, out)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestScripts checks the shell scripts' syntax (and shellcheck, when installed) and
// runs the ones with a dry-run mode.
func TestScripts(t *testing.T) {
	scripts := []string{"dataflow/build-templates.sh", "schedule/schedule.sh", "docker/flex-entry.sh",
		filepath.Join(root, "scripts", "portable.sh")}
	sc, _ := exec.LookPath("shellcheck")
	for _, s := range scripts {
		if _, err := os.Stat(s); err != nil {
			t.Errorf("%s: %v", s, err)
			continue
		}
		shell := "bash"
		if strings.HasSuffix(s, "flex-entry.sh") {
			shell = "sh"
		}
		if out, err := exec.Command(shell, "-n", s).CombinedOutput(); err != nil {
			t.Errorf("%s -n %s: %v\n%s", shell, s, err, out)
		}
		if sc != "" {
			if out, err := exec.Command(sc, s).CombinedOutput(); err != nil {
				t.Errorf("shellcheck %s: %v\n%s", s, err, out)
			}
		}
	}

	t.Run("build-templates dry run", func(t *testing.T) {
		cmd := exec.Command("bash", "dataflow/build-templates.sh")
		cmd.Env = append(os.Environ(), "DRY_RUN=1", "PROJECT=p", "BUCKET=gs://b/jc", "TAG=t1", "GPU=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		for _, want := range []string{
			"--metadata-file=infra/dataflow/sweep-metadata.json", "--metadata-file=infra/dataflow/regress-metadata.json",
			"gs://b/jc/templates/regress.json", "gs://b/jc/templates/sweep-gpu.json", "--sdk-language=GO",
			"--target launcher --build-arg PIPELINE=regress",
		} {
			if !strings.Contains(string(out), want) {
				t.Errorf("dry run output lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("schedule dry run", func(t *testing.T) {
		cmd := exec.Command("bash", "schedule/schedule.sh")
		cmd.Env = append(os.Environ(), "DRY_RUN=1", "PROJECT=p", "TEMPLATE=gs://b/t/regress.json",
			"OUTPUT_PREFIX=gs://b/r/", "SCHEDULER_SA=s@p.iam.gserviceaccount.com", "WORKER_SA=w@p.iam.gserviceaccount.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		s := string(out)
		i, j := strings.Index(s, "{"), strings.Index(s, "\n}\n")
		if i < 0 || j < 0 {
			t.Fatalf("no request body in:\n%s", s)
		}
		var body struct {
			LaunchParameter struct {
				ContainerSpecGcsPath string            `json:"containerSpecGcsPath"`
				Parameters           map[string]string `json:"parameters"`
				Environment          map[string]any    `json:"environment"`
			} `json:"launchParameter"`
		}
		if err := json.Unmarshal([]byte(s[i:j+2]), &body); err != nil {
			t.Fatalf("request body: %v\n%s", err, s[i:j+2])
		}
		lp := body.LaunchParameter
		if lp.ContainerSpecGcsPath != "gs://b/t/regress.json" || lp.Parameters["out"] != "gs://b/r/{DATE}" ||
			lp.Parameters["tables"] != "10000" || lp.Environment["serviceAccountEmail"] != "w@p.iam.gserviceaccount.com" {
			t.Errorf("request body %+v", lp)
		}
		flags, ok := pipelineFlags(t, "regress")
		for k := range lp.Parameters {
			if ok && !flags[k] {
				t.Errorf("scheduled parameter %q is not a regress flag", k)
			}
		}
		if !strings.Contains(s, "flexTemplates:launch") || !strings.Contains(s, "--oauth-service-account-email=s@p") {
			t.Errorf("command:\n%s", s)
		}
	})

	t.Run("flex entry", func(t *testing.T) {
		dir := t.TempDir()
		fake := filepath.Join(dir, "pipeline")
		os.WriteFile(fake, []byte("#!/bin/sh\nfor a in \"$@\"; do printf '[%s]\\n' \"$a\"; done\n"), 0o755)
		before := time.Now().UTC().Format("20060102")
		cmd := exec.Command("sh", "docker/flex-entry.sh", "--out=gs://b/r/{DATE}", "--job_name=a b", "")
		cmd.Env = append(os.Environ(), "JEMCHECK_BINARY="+fake, "JEMCHECK_EXTRA_ARGS=--backend=xla:cuda --resource_hints=accelerator=type:t4;count:1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		after := time.Now().UTC().Format("20060102")
		got := strings.Split(strings.TrimSpace(string(out)), "\n")
		for _, day := range []string{before, after} {
			want := []string{"[--worker_binary=" + fake + "]", "[--async]", "[--backend=xla:cuda]",
				"[--resource_hints=accelerator=type:t4;count:1]", "[--out=gs://b/r/" + day + "]", "[--job_name=a b]", "[]"}
			if slices.Equal(got, want) {
				return
			}
		}
		t.Errorf("arguments %q", got)
	})
}

// TestTerraformLaunchParameters: the parameters the Terraform scheduler job sends are
// regress flags.
func TestTerraformLaunchParameters(t *testing.T) {
	b, err := os.ReadFile("schedule/main.tf")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "parameters = merge({")
	if i < 0 {
		t.Fatal("main.tf: no `parameters = merge({` block")
	}
	block := s[i+len("parameters = merge({"):]
	block = block[:strings.Index(block, "}")]
	names := regexp.MustCompile(`(?m)^\s*(\w+)\s*=`).FindAllStringSubmatch(block, -1)
	if len(names) == 0 {
		t.Fatal("main.tf: no launch parameters found")
	}
	flags, ok := pipelineFlags(t, "regress")
	if !ok {
		t.Skip("pipelines/regress/main.go does not exist yet")
	}
	for _, m := range names {
		if !flags[m[1]] {
			t.Errorf("main.tf launch parameter %q is not a regress flag", m[1])
		}
	}
	if !strings.Contains(s, "flexTemplates:launch") || !strings.Contains(s, "oauth_token") {
		t.Error("main.tf must call flexTemplates:launch with an OAuth token")
	}
}
