package deploy

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"
)

// binaries builds tord and roceperf once, static as the image builds
// them, and returns the folder holding them.
var binaries = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "rocetor-deploy-")
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "rocetor/cmd/tord", "rocetor/cmd/roceperf")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return dir, nil
})

func TestMain(m *testing.M) {
	code := m.Run()
	if dir, err := binaries(); err == nil {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

func bin(t *testing.T, name string) string {
	t.Helper()
	dir, err := binaries()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, name)
}

// flagsOf runs a command's -h and returns the flags it lists.
func flagsOf(t *testing.T, args ...string) map[string]bool {
	t.Helper()
	cmd := exec.Command(args[0], append(args[1:], "-h")...)
	out, _ := cmd.CombinedOutput() // -h exits 0 (tord) or 2 (flag's default)
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+-([a-z][a-z0-9-]*)`).FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	if len(flags) == 0 {
		t.Fatalf("%q -h listed no flags:\n%s", args, out)
	}
	return flags
}

// invocation is a command line of tord or roceperf found in a deploy file.
type invocation struct {
	where string
	cmd   string // tord, or roceperf SUBCOMMAND
	flags []string
}

var invocationRE = regexp.MustCompile(`(?:^|[\s/"'])(tord|roceperf)((?:\s+[^\s'"\\]+)*)`)

// invocations finds every tord and roceperf command line in text: the
// tokens after the binary's name up to a quote or the end of the line.
func invocations(where string, text []byte) []invocation {
	var out []invocation
	sc := bufio.NewScanner(bytes.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		for _, ix := range invocationRE.FindAllStringSubmatchIndex(line, -1) {
			// Not a command: docker run --name tord, go test ./cmd/tord,
			// journalctl -u tord.
			if before := line[:ix[2]]; strings.HasSuffix(before, "--name ") || strings.HasSuffix(before, "cmd/") || strings.HasSuffix(before, "-u ") {
				continue
			}
			m := []string{line[ix[0]:ix[1]], line[ix[2]:ix[3]], line[ix[4]:ix[5]]}
			inv := invocation{where: fmt.Sprintf("%s:%d", where, n), cmd: m[1]}
			toks := strings.Fields(m[2])
			if m[1] == "roceperf" {
				if len(toks) == 0 || !slices.Contains([]string{"serve", "write", "send", "read"}, toks[0]) {
					continue
				}
				inv.cmd += " " + toks[0]
			}
			for _, tok := range toks {
				if strings.HasPrefix(tok, "-") {
					inv.flags = append(inv.flags, strings.TrimLeft(strings.SplitN(tok, "=", 2)[0], "-"))
				}
			}
			if len(inv.flags) > 0 {
				out = append(out, inv)
			}
		}
	}
	return out
}

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every flag that the unit, the image, the DaemonSet, the containerlab lab
// and deploy/README.md pass to tord or roceperf is one the binary has.
func TestFlagsExist(t *testing.T) {
	known := map[string]map[string]bool{"tord": flagsOf(t, bin(t, "tord"))}
	for _, sub := range []string{"serve", "write", "send", "read"} {
		known["roceperf "+sub] = flagsOf(t, bin(t, "roceperf"), sub)
	}
	var all []invocation
	for _, name := range []string{"systemd/tord.service", "container/Dockerfile", "kubernetes/daemonset.yaml",
		"containerlab/chain.clab.yml", "README.md"} {
		all = append(all, invocations(name, read(t, name))...)
	}
	// The DaemonSet's and the image's arguments go to tord's entrypoint.
	for _, c := range daemonSetContainers(t) {
		all = append(all, invocations("kubernetes/daemonset.yaml args", []byte("tord "+strings.Join(c.Args, " ")))...)
	}
	for _, line := range strings.Split(string(read(t, "container/Dockerfile")), "\n") {
		if rest, ok := strings.CutPrefix(line, "CMD "); ok && strings.Contains(rest, "--") {
			var args []string
			if err := json.Unmarshal([]byte(rest), &args); err != nil {
				t.Fatalf("Dockerfile: %s: %v", line, err)
			}
			all = append(all, invocations("Dockerfile CMD", []byte("tord "+strings.Join(args, " ")))...)
		}
	}
	seen := map[string]bool{}
	for _, inv := range all {
		seen[inv.cmd] = true
		for _, f := range inv.flags {
			if !known[inv.cmd][f] {
				t.Errorf("%s: %s has no flag -%s", inv.where, inv.cmd, f)
			}
		}
	}
	// The search must find what is there, or it checks nothing.
	for _, want := range []string{"tord", "roceperf serve", "roceperf write"} {
		if !seen[want] {
			t.Errorf("no %s command line found in the deploy files", want)
		}
	}
}

// Every YAML file parses, every document of it; the dashboard is JSON.
func TestFilesParse(t *testing.T) {
	var files []string
	filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml") || strings.HasSuffix(path, ".json")) {
			files = append(files, path)
		}
		return err
	})
	if len(files) < 10 {
		t.Fatalf("found only %q", files)
	}
	for _, f := range files {
		b := read(t, f)
		if strings.HasSuffix(f, ".json") {
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Errorf("%s: %v", f, err)
			}
			continue
		}
		d := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var v any
			err := d.Decode(&v)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Errorf("%s: %v", f, err)
				break
			}
		}
	}
}

type container struct {
	Name         string
	Args         []string
	VolumeMounts []struct{ MountPath string } `yaml:"volumeMounts"`
	Security     struct {
		Capabilities struct{ Add, Drop []string }
	} `yaml:"securityContext"`
}

func daemonSetContainers(t *testing.T) []container {
	t.Helper()
	d := yaml.NewDecoder(bytes.NewReader(read(t, "kubernetes/daemonset.yaml")))
	for {
		var obj struct {
			Kind string
			Spec struct {
				Template struct {
					Spec struct {
						HostNetwork bool `yaml:"hostNetwork"`
						Containers  []container
					}
				}
			}
		}
		if err := d.Decode(&obj); err != nil {
			t.Fatalf("no DaemonSet in kubernetes/daemonset.yaml: %v", err)
		}
		if obj.Kind == "DaemonSet" {
			if !obj.Spec.Template.Spec.HostNetwork {
				t.Error("the DaemonSet's pods must use the host's network namespace: tord switches its interfaces")
			}
			return obj.Spec.Template.Spec.Containers
		}
	}
}

// capSet normalises capability names: CAP_NET_ADMIN, NET_ADMIN and
// cap_net_admin are one.
func capSet(names ...string) string {
	var out []string
	for _, n := range names {
		for _, f := range strings.FieldsFunc(n, func(r rune) bool { return r == ' ' || r == ',' }) {
			out = append(out, strings.TrimPrefix(strings.ToUpper(f), "CAP_"))
		}
	}
	sort.Strings(out)
	return strings.Join(slices.Compact(out), " ")
}

// The unit, the DaemonSet and the image's docker run line grant the same
// capabilities, and the DaemonSet drops every other.
func TestCapabilitiesAgree(t *testing.T) {
	unit := map[string]string{}
	for _, line := range strings.Split(string(read(t, "systemd/tord.service")), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			unit[k] = v
		}
	}
	want := capSet(unit["AmbientCapabilities"])
	if want == "" {
		t.Fatal("tord.service grants no capabilities")
	}
	if got := capSet(unit["CapabilityBoundingSet"]); got != want {
		t.Errorf("tord.service: bounding set %q, ambient %q", got, want)
	}
	for _, c := range daemonSetContainers(t) {
		if got := capSet(c.Security.Capabilities.Add...); got != want {
			t.Errorf("DaemonSet container %s adds %q, the unit %q", c.Name, got, want)
		}
		if capSet(c.Security.Capabilities.Drop...) != "ALL" {
			t.Errorf("DaemonSet container %s drops %q, want ALL", c.Name, c.Security.Capabilities.Drop)
		}
	}
	var docker []string
	for _, m := range regexp.MustCompile(`--cap-add (\S+)`).FindAllStringSubmatch(string(read(t, "container/Dockerfile")), -1) {
		docker = append(docker, m[1])
	}
	if got := capSet(docker...); got != want {
		t.Errorf("Dockerfile's docker run adds %q, the unit %q", got, want)
	}
}

// tord pins nothing in bpffs (its programs hang on bpf_links it owns), so
// the DaemonSet mounts no /sys/fs/bpf; a pin in bpf/ must bring the mount.
func TestBPFFSMount(t *testing.T) {
	pins := false
	srcs, _ := filepath.Glob("../bpf/*.go")
	for _, f := range srcs {
		if !strings.HasSuffix(f, "_test.go") && regexp.MustCompile(`\.Pin\(|PinPath|LoadPinned`).Match(read(t, f)) {
			pins = true
		}
	}
	mounted := false
	for _, c := range daemonSetContainers(t) {
		for _, m := range c.VolumeMounts {
			mounted = mounted || strings.HasPrefix(m.MountPath, "/sys/fs/bpf")
		}
	}
	if pins != mounted {
		t.Errorf("bpf/ pins objects: %v; the DaemonSet mounts /sys/fs/bpf: %v", pins, mounted)
	}
}

// The scrape job is "tord" everywhere: prometheus.yml's job, the
// Service the ServiceMonitor follows (its name becomes the job), and the
// job the alerting rules and the dashboard match.
func TestJobName(t *testing.T) {
	var prom struct {
		ScrapeConfigs []struct {
			JobName string `yaml:"job_name"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(read(t, "prometheus/prometheus.yml"), &prom); err != nil {
		t.Fatal(err)
	}
	if len(prom.ScrapeConfigs) != 1 || prom.ScrapeConfigs[0].JobName != "tord" {
		t.Errorf("prometheus.yml scrape configs %+v, want one job tord", prom.ScrapeConfigs)
	}
	d := yaml.NewDecoder(bytes.NewReader(read(t, "kubernetes/servicemonitor.yaml")))
	kinds := map[string]string{}
	for {
		var obj struct {
			Kind     string
			Metadata struct{ Name string }
		}
		if err := d.Decode(&obj); err != nil {
			break
		}
		kinds[obj.Kind] = obj.Metadata.Name
	}
	if kinds["Service"] != "tord" || kinds["ServiceMonitor"] == "" {
		t.Errorf("servicemonitor.yaml holds %v, want a Service tord and a ServiceMonitor", kinds)
	}
	for _, f := range []string{"prometheus/rules.yml", "grafana/rocetor.json"} {
		for _, m := range regexp.MustCompile(`job\s*=\s*\\?"([^"\\]*)`).FindAllStringSubmatch(string(read(t, f)), -1) {
			if m[1] != "tord" {
				t.Errorf("%s matches job %q, want tord", f, m[1])
			}
		}
	}
}

// The image's binaries are static: built as the Dockerfile builds them
// (CGO_ENABLED=0), they have no interpreter and need no shared library,
// which distroless/static requires.
func TestStaticBinaries(t *testing.T) {
	df := string(read(t, "container/Dockerfile"))
	if !strings.Contains(df, "CGO_ENABLED=0") {
		t.Error("the Dockerfile does not build with CGO_ENABLED=0")
	}
	for _, name := range []string{"tord", "roceperf"} {
		f, err := elf.Open(bin(t, name))
		if err != nil {
			t.Fatal(err)
		}
		libs, _ := f.ImportedLibraries()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s has an ELF interpreter: not static", name)
			}
		}
		if len(libs) > 0 {
			t.Errorf("%s needs %q", name, libs)
		}
		f.Close()
	}
	// What the image copies from the context exists and is not ignored.
	ignore := read(t, "container/Dockerfile.dockerignore")
	for _, m := range regexp.MustCompile(`(?m)^COPY\s+(?:--\S+\s+)?(\S+)`).FindAllStringSubmatch(df, -1) {
		if m[1] == "." || strings.HasPrefix(m[1], "/") {
			continue
		}
		if _, err := os.Stat(filepath.Join("..", m[1])); err != nil {
			t.Errorf("Dockerfile copies %s: %v", m[1], err)
		}
	}
	for _, line := range strings.Split(string(ignore), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		for _, need := range []string{"go.mod", "go.sum", "cmd", "bpf", "deploy"} {
			if line == need || strings.HasPrefix(need+"/", line+"/") {
				t.Errorf("Dockerfile.dockerignore leaves out %s, which the build needs", need)
			}
		}
	}
}

func lookPath(t *testing.T, tool, why string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		t.Skipf("%s not installed (%s): apt-get install %s", tool, why, map[string]string{"promtool": "prometheus", "systemd-analyze": "systemd"}[tool])
	}
	return p
}

func run(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	t.Logf("%s:\n%s", strings.Join(args, " "), out)
	if err != nil {
		t.Errorf("%s: %v", strings.Join(args, " "), err)
	}
}

// promtool checks the rules, runs their unit tests and checks the scrape
// configuration; the dashboard's queries, with Grafana's variables
// filled in, must parse as PromQL too.
func TestPromtool(t *testing.T) {
	promtool := lookPath(t, "promtool", "checks the rules and the dashboard's PromQL")
	run(t, "prometheus", promtool, "check", "rules", "rules.yml")
	run(t, "prometheus", promtool, "test", "rules", "rules_test.yml")
	run(t, "prometheus", promtool, "check", "config", "prometheus.yml")

	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(read(t, "grafana/rocetor.json"), &dash); err != nil {
		t.Fatal(err)
	}
	vars := strings.NewReplacer("$__rate_interval", "1m", "$instance", ".*", "$port", ".*")
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rule
	for _, p := range dash.Panels {
		for i, tg := range p.Targets {
			rules = append(rules, rule{fmt.Sprintf("dashboard:panel_%d:%d", len(rules), i), vars.Replace(tg.Expr)})
		}
	}
	if len(rules) == 0 {
		t.Fatal("the dashboard has no queries")
	}
	b, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard-queries.yml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, ".", promtool, "check", "rules", path)
}

// systemd-analyze verify checks the unit's directives, with ExecStart
// pointed at the binary just built (verify wants it to exist). verify
// exits 0 on unknown keys and bad values, only saying so: any output
// fails the test.
func TestSystemdVerify(t *testing.T) {
	analyze := lookPath(t, "systemd-analyze", "checks the unit file")
	unit := strings.ReplaceAll(string(read(t, "systemd/tord.service")), "/usr/local/bin/tord", bin(t, "tord"))
	dir := t.TempDir()
	path := filepath.Join(dir, "tord.service")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// The sweep Job runs the sweep from the ConfigMap its instructions
// fill from a "torsim sweep-pack" bundle, mounted where --sweep looks.
func TestSweepJob(t *testing.T) {
	text := read(t, "kubernetes/torsim-sweep.yaml")
	var job struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Command      []string
						VolumeMounts []struct {
							Name      string
							MountPath string `yaml:"mountPath"`
						} `yaml:"volumeMounts"`
					}
					Volumes []struct {
						Name      string
						ConfigMap struct{ Name string } `yaml:"configMap"`
					}
				}
			}
		}
	}
	if err := yaml.NewDecoder(bytes.NewReader(text)).Decode(&job); err != nil {
		t.Fatal(err)
	}
	ps := job.Spec.Template.Spec
	if len(ps.Containers) != 1 {
		t.Fatalf("%d containers", len(ps.Containers))
	}
	c := ps.Containers[0]
	i := slices.Index(c.Command, "--sweep")
	if i < 0 || i+1 >= len(c.Command) {
		t.Fatalf("no --sweep in %q", c.Command)
	}
	dir := filepath.Dir(c.Command[i+1])
	var cm string
	for _, m := range c.VolumeMounts {
		for _, v := range ps.Volumes {
			if v.Name == m.Name && m.MountPath == dir {
				cm = v.ConfigMap.Name
			}
		}
	}
	if cm == "" {
		t.Fatalf("no ConfigMap mounted at %s, where --sweep %s looks", dir, c.Command[i+1])
	}
	pack := regexp.MustCompile(`torsim sweep-pack \S+ (\S+)`).FindSubmatch(text)
	if pack == nil || !strings.Contains(string(text), "kubectl create configmap "+cm+" --from-file="+string(pack[1])) {
		t.Errorf("the instructions do not fill ConfigMap %s from a sweep-pack bundle", cm)
	}
}

// torsim builds torsim once, for the experiment Job's test.
var torsim = sync.OnceValues(func() (string, error) {
	dir, err := binaries()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "torsim")
	if out, err := exec.Command("go", "build", "-o", path, "rocetor/cmd/torsim").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build torsim: %v\n%s", err, out)
	}
	return path, nil
})

// experimentJob is the parts of torsim-experiment.yaml's Job the test
// reads.
type experimentJob struct {
	Kind string
	Spec struct {
		CompletionMode string `yaml:"completionMode"`
		Completions    int
		Parallelism    int
		Template       struct {
			Spec struct {
				Containers []struct {
					Command   []string
					Resources struct {
						Requests map[string]string
					}
					VolumeMounts []struct {
						Name      string
						MountPath string `yaml:"mountPath"`
						ReadOnly  bool   `yaml:"readOnly"`
					} `yaml:"volumeMounts"`
				}
				Volumes []struct {
					Name                  string
					PersistentVolumeClaim struct {
						ClaimName string `yaml:"claimName"`
					} `yaml:"persistentVolumeClaim"`
				}
			}
		}
	}
}

// The experiment Job runs torsim run EXP --shard $JOB_COMPLETION_INDEX/N
// with N its completions, one CPU a pod, no more pods than the
// experiment has cells (torsim, given the pod's command and index,
// counts them), its cells on the shared claim; its instructions merge
// them with the same experiment flags and directory; its claim is the
// sweep Job's.
func TestExperimentJob(t *testing.T) {
	text := read(t, "kubernetes/torsim-experiment.yaml")
	job, claim := decodeExperimentJob(t, text)
	ps := job.Spec.Template.Spec
	if job.Spec.CompletionMode != "Indexed" || len(ps.Containers) != 1 {
		t.Fatalf("completion mode %q, %d containers: want one container, Indexed", job.Spec.CompletionMode, len(ps.Containers))
	}
	c := ps.Containers[0]
	if len(c.Command) < 3 || filepath.Base(c.Command[0]) != "torsim" || c.Command[1] != "run" {
		t.Fatalf("command %q: want torsim run EXPERIMENT …", c.Command)
	}
	if c.Resources.Requests["cpu"] != "1" {
		t.Errorf("requests %v CPU: a simulation is single-threaded, want 1", c.Resources.Requests["cpu"])
	}
	flagValue := func(name string) (string, int) {
		i := slices.Index(c.Command, name)
		if i < 0 || i+1 >= len(c.Command) {
			t.Fatalf("no %s in %q", name, c.Command)
		}
		return c.Command[i+1], i
	}
	shard, _ := flagValue("--shard")
	n := job.Spec.Completions
	if shard != fmt.Sprintf("$JOB_COMPLETION_INDEX/%d", n) || job.Spec.Parallelism != n {
		t.Errorf("--shard %s with %d completions, parallelism %d: want $JOB_COMPLETION_INDEX/completions, as many in parallel",
			shard, n, job.Spec.Parallelism)
	}
	cells, _ := flagValue("--cells")
	mounted := false
	for _, m := range c.VolumeMounts {
		for _, v := range ps.Volumes {
			if v.Name == m.Name && v.PersistentVolumeClaim.ClaimName != "" && !m.ReadOnly && strings.HasPrefix(cells, m.MountPath+"/") {
				mounted = true
			}
		}
	}
	if !mounted {
		t.Errorf("--cells %s is on no writable claim's mount", cells)
	}
	// The last pod's command, run by torsim with --count-cells: every
	// flag exists and checks, and the experiment has a cell per pod.
	ts, err := torsim()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(ts, append(slices.Clone(c.Command[1:]), "--count-cells")...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("JOB_COMPLETION_INDEX=%d", n-1))
	out, err := cmd.CombinedOutput()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(c.Command[2]) + `: (\d+) cells$`).FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("%q --count-cells: %v\n%s", c.Command, err, out)
	}
	if cellsN, _ := strconv.Atoi(string(m[1])); cellsN < n {
		t.Errorf("%d pods for %d cells: some would simulate nothing", n, cellsN)
	}
	checkMergeInstructions(t, text, c.Command, cells)
	sweep := regexp.MustCompile(`(?s)---\n(apiVersion: v1\nkind: PersistentVolumeClaim.*)`).FindSubmatch(read(t, "kubernetes/torsim-sweep.yaml"))
	var sweepClaim any
	if sweep == nil || yaml.Unmarshal(sweep[1], &sweepClaim) != nil {
		t.Fatal("no claim in torsim-sweep.yaml")
	}
	if !reflect.DeepEqual(sweepClaim, claim) {
		t.Errorf("the experiment Job's claim differs from the sweep Job's (applying both would change it):\n%v\n%v", claim, sweepClaim)
	}
}

// decodeExperimentJob decodes the Job and the claim of
// torsim-experiment.yaml.
func decodeExperimentJob(t *testing.T, text []byte) (job experimentJob, claim any) {
	t.Helper()
	d := yaml.NewDecoder(bytes.NewReader(text))
	for {
		var doc yaml.Node
		if err := d.Decode(&doc); err == io.EOF {
			return job, claim
		} else if err != nil {
			t.Fatal(err)
		}
		var kind struct{ Kind string }
		doc.Decode(&kind)
		switch kind.Kind {
		case "Job":
			if err := doc.Decode(&job); err != nil {
				t.Fatal(err)
			}
		case "PersistentVolumeClaim":
			doc.Decode(&claim)
		}
	}
}

// checkMergeInstructions: the instructions' merge-run names the pod
// command's experiment and flags, and its --cells.
func checkMergeInstructions(t *testing.T, text []byte, command []string, cells string) {
	t.Helper()
	var want []string
	for i := 2; i < len(command); i++ {
		if command[i] == "--shard" || command[i] == "--cells" {
			i++
			continue
		}
		want = append(want, command[i])
	}
	merge := regexp.MustCompile(`torsim merge-run ((?:[^\n\\]|\\\n#)+)`).FindSubmatch(text)
	if merge == nil {
		t.Fatal("the instructions do not merge the cells (torsim merge-run)")
	}
	got := strings.Fields(strings.ReplaceAll(string(merge[1]), "\\\n#", " "))
	if i := slices.Index(got, "--cells"); i < 0 || i+1 >= len(got) || got[i+1] != cells || !slices.Equal(got[:i], want) {
		t.Errorf("the instructions merge %q: want %q --cells %s first", got, want, cells)
	}
}
