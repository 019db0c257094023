package metrics

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seaweedfs/seaweedfs/weed/stats"
	"gopkg.in/yaml.v3"
)

// repoRoot is the repository root, seen from this package's folder (where
// go test runs its tests).
const repoRoot = "../../../.."

// TestDashboard checks the docker/ folder: the compose file runs weed
// commands with flags they have and wires its services together, Prometheus
// scrapes the gateways where compose serves their metrics, the files it
// mounts are there, and every metric the Grafana dashboard queries is one
// the gateway exports.
func TestDashboard(t *testing.T) {
	dockerDir := filepath.Join(repoRoot, "docker")
	composePath := filepath.Join(dockerDir, "compose.yml")
	var compose composeFile
	readYAML(t, composePath, &compose)
	commands := weedCommands(t)

	t.Run("compose", func(t *testing.T) { checkCompose(t, dockerDir, &compose, commands) })
	t.Run("prometheus", func(t *testing.T) { checkPrometheus(t, dockerDir, &compose, commands) })
	t.Run("grafana", func(t *testing.T) { checkGrafanaProvisioning(t, dockerDir, &compose) })
	t.Run("docker compose config", func(t *testing.T) { checkDockerCompose(t, composePath) })
	t.Run("metrics", func(t *testing.T) {
		checkDashboardMetrics(t, filepath.Join(dockerDir, "grafana", "dashboards", "kafka-gateway.json"))
	})
}

// gatewayServices are the compose services that run the Kafka gateway.
var gatewayServices = []string{"gateway1", "gateway2"}

func checkCompose(t *testing.T, dockerDir string, c *composeFile, commands map[string]weedCommand) {
	if len(c.Services) == 0 {
		t.Fatal("compose.yml has no services")
	}

	// One service builds the image from docker/Dockerfile; it and the
	// others that run that image are weed commands.
	var weedImage string
	for name, s := range c.Services {
		if s.Build == nil {
			continue
		}
		if weedImage != "" {
			t.Errorf("service %s builds an image too: build it once and reuse its image name", name)
			continue
		}
		if s.Image == "" {
			t.Errorf("service %s builds without an image name for the others to reuse", name)
		}
		weedImage = s.Image
		dockerfile := filepath.Join(dockerDir, s.Build.Context, s.Build.Dockerfile)
		if s.Build.Dockerfile == "" {
			dockerfile = filepath.Join(dockerDir, s.Build.Context, "Dockerfile")
		}
		if _, err := os.Stat(dockerfile); err != nil {
			t.Errorf("service %s builds from %s: %v", name, dockerfile, err)
		}
	}
	if weedImage == "" {
		t.Fatal("no service builds the weed image")
	}

	for name, s := range c.Services {
		for _, dep := range s.DependsOn {
			if _, ok := c.Services[dep]; !ok {
				t.Errorf("service %s depends on %s, which is not a service", name, dep)
			}
		}
		checkMounts(t, dockerDir, c, name, s)
		if s.Image != weedImage {
			continue
		}
		cmd, err := parseWeedCommand(s.Command, commands)
		if err != nil {
			t.Errorf("service %s: %v", name, err)
			continue
		}
		for _, m := range strings.Split(cmd.flags["master"], ",") {
			if m != "" {
				checkServiceAddress(t, c, commands, name, "-master", m, "port")
			}
		}
	}

	for _, name := range gatewayServices {
		s, ok := c.Services[name]
		if !ok {
			t.Errorf("no service %s", name)
			continue
		}
		if s.Image != weedImage {
			t.Errorf("service %s runs %q, not the weed image %q", name, s.Image, weedImage)
			continue
		}
		cmd, err := parseWeedCommand(s.Command, commands)
		if err != nil {
			continue // reported above
		}
		if cmd.name != "mq.kafka.gateway" {
			t.Errorf("service %s runs weed %s, not mq.kafka.gateway", name, cmd.name)
			continue
		}
		// Clients connect to the advertised -ip:-port, so in the compose
		// network it is the service name, and the port is published as is.
		if ip := cmd.flags["ip"]; ip != name {
			t.Errorf("service %s advertises -ip=%q, not its service name", name, ip)
		}
		port, ok := cmd.flags["port"]
		if !ok {
			port = commands[cmd.name].flags["port"].def
		}
		if !slices.Contains(s.Ports, port+":"+port) {
			t.Errorf("service %s listens on %s but publishes %v: clients outside reach the advertised port only if it is published on the same port", name, port, s.Ports)
		}
		mport := cmd.flags["metricsPort"]
		if mport == "" || mport == "0" {
			t.Errorf("service %s serves no metrics (-metricsPort)", name)
		}
		if s.Healthcheck == nil || !slices.ContainsFunc(s.Healthcheck.Test, func(a string) bool {
			u, err := url.Parse(a)
			return err == nil && u.Port() == mport && u.Path == "/ready"
		}) {
			t.Errorf("service %s has no healthcheck on /ready of its metrics port %s", name, mport)
		}
	}
}

// checkMounts checks that the files a service mounts from the docker/
// folder exist, and that its named volumes are declared.
func checkMounts(t *testing.T, dockerDir string, c *composeFile, service string, s composeService) {
	for _, v := range s.Volumes {
		if v.Source == "" {
			continue
		}
		if !strings.HasPrefix(v.Source, ".") && !strings.HasPrefix(v.Source, "/") && !strings.HasPrefix(v.Source, "~") {
			if _, ok := c.Volumes[v.Source]; !ok {
				t.Errorf("service %s mounts volume %s, which is not declared under volumes", service, v.Source)
			}
			continue
		}
		if filepath.IsAbs(v.Source) || strings.HasPrefix(v.Source, "~") {
			t.Errorf("service %s mounts %s: mount files of the docker/ folder, by relative paths", service, v.Source)
			continue
		}
		if _, err := os.Stat(filepath.Join(dockerDir, v.Source)); err != nil {
			t.Errorf("service %s mounts %s: %v", service, v.Source, err)
		}
	}
}

// checkServiceAddress checks that host:port names a compose service and
// the port it is started with (its portFlag, or that flag's default).
func checkServiceAddress(t *testing.T, c *composeFile, commands map[string]weedCommand, from, what, addr, portFlag string) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Errorf("service %s: %s %q: %v", from, what, addr, err)
		return
	}
	s, ok := c.Services[host]
	if !ok {
		t.Errorf("service %s: %s %s is not a compose service", from, what, addr)
		return
	}
	cmd, err := parseWeedCommand(s.Command, commands)
	if err != nil {
		t.Errorf("service %s: %s %s: service %s: %v", from, what, addr, host, err)
		return
	}
	want, ok := cmd.flags[portFlag]
	if !ok {
		want = commands[cmd.name].flags[portFlag].def
	}
	if port != want {
		t.Errorf("service %s: %s %s, but %s runs with -%s=%s", from, what, addr, host, portFlag, want)
	}
}

func checkPrometheus(t *testing.T, dockerDir string, c *composeFile, commands map[string]weedCommand) {
	var prom struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, filepath.Join(dockerDir, "prometheus.yml"), &prom)
	scraped := map[string]bool{}
	for _, sc := range prom.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			for _, target := range st.Targets {
				checkServiceAddress(t, c, commands, "prometheus", "job "+sc.JobName+" target", target, "metricsPort")
				host, _, _ := net.SplitHostPort(target)
				scraped[host] = true
			}
		}
	}
	for _, g := range gatewayServices {
		if !scraped[g] {
			t.Errorf("prometheus.yml does not scrape %s", g)
		}
	}
}

// checkGrafanaProvisioning checks that Grafana's data source is the compose
// service of Prometheus and that its dashboards provider reads a folder
// compose mounts from docker/.
func checkGrafanaProvisioning(t *testing.T, dockerDir string, c *composeFile) {
	grafana, ok := c.Services["grafana"]
	if !ok {
		t.Fatal("no service grafana")
	}
	if _, ok := c.Services["prometheus"]; !ok {
		t.Fatal("no service prometheus")
	}
	prov := filepath.Join(dockerDir, "grafana", "provisioning")

	var ds struct {
		Datasources []struct {
			Type string `yaml:"type"`
			URL  string `yaml:"url"`
		} `yaml:"datasources"`
	}
	readYAML(t, filepath.Join(prov, "datasources", "prometheus.yml"), &ds)
	if len(ds.Datasources) == 0 {
		t.Error("no Grafana data source")
	}
	for _, d := range ds.Datasources {
		u, err := url.Parse(d.URL)
		if err != nil || d.Type != "prometheus" {
			t.Errorf("data source %s %q", d.Type, d.URL)
			continue
		}
		if _, ok := c.Services[u.Hostname()]; !ok {
			t.Errorf("data source %s is not a compose service", d.URL)
		}
	}

	var dp struct {
		Providers []struct {
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, filepath.Join(prov, "dashboards", "kafka-gateway.yml"), &dp)
	if len(dp.Providers) == 0 {
		t.Error("no Grafana dashboards provider")
	}
	for _, p := range dp.Providers {
		i := slices.IndexFunc(grafana.Volumes, func(v volumeMount) bool { return v.Target == p.Options.Path })
		if i < 0 {
			t.Errorf("dashboards provider reads %s, which compose does not mount", p.Options.Path)
			continue
		}
		if m, _ := filepath.Glob(filepath.Join(dockerDir, grafana.Volumes[i].Source, "*.json")); len(m) == 0 {
			t.Errorf("dashboards provider reads %s, mounted from %s, which has no dashboards", p.Options.Path, grafana.Volumes[i].Source)
		}
	}
}

// checkDockerCompose has docker compose check the file, when it is here.
func checkDockerCompose(t *testing.T, composePath string) {
	docker, err := exec.LookPath("docker")
	if err != nil {
		t.Log("docker is not on PATH: docker compose config not run")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := exec.CommandContext(ctx, docker, "compose", "version").Run(); err != nil {
		t.Logf("docker has no compose (%v): docker compose config not run", err)
		return
	}
	out, err := exec.CommandContext(ctx, docker, "compose", "-f", composePath, "config", "-q").CombinedOutput()
	if err != nil {
		t.Errorf("docker compose -f %s config -q: %v\n%s", composePath, err, out)
	}
}

// requiredMetrics are metrics the dashboard shows at least once.
var requiredMetrics = []string{
	"SeaweedFS_kafka_requests_total",
	"SeaweedFS_kafka_request_duration_seconds",
	"SeaweedFS_kafka_backend_duration_seconds",
	"SeaweedFS_kafka_errors_total",
	"SeaweedFS_kafka_messages_in_total",
	"SeaweedFS_kafka_messages_out_total",
	"SeaweedFS_kafka_bytes_in_total",
	"SeaweedFS_kafka_bytes_out_total",
	"SeaweedFS_kafka_connections",
	"SeaweedFS_kafka_groups",
	"SeaweedFS_kafka_group_rebalances_total",
	"kafka_consumergroup_lag",
}

func checkDashboardMetrics(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID           string            `json:"uid"`
		Title         string            `json:"title"`
		SchemaVersion int               `json:"schemaVersion"`
		Panels        []json.RawMessage `json:"panels"`
		Templating    struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if dash.UID == "" || dash.Title != "SeaweedFS Kafka gateway" || dash.SchemaVersion < 36 {
		t.Errorf("dashboard uid %q, title %q, schemaVersion %d", dash.UID, dash.Title, dash.SchemaVersion)
	}

	// The expressions of every panel (rows hold theirs when collapsed) and
	// of the query variables.
	var exprs []string
	ids := map[int]bool{}
	var walk func([]json.RawMessage)
	walk = func(panels []json.RawMessage) {
		for _, raw := range panels {
			var p struct {
				ID      int               `json:"id"`
				Title   string            `json:"title"`
				Type    string            `json:"type"`
				Panels  []json.RawMessage `json:"panels"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			}
			if err := json.Unmarshal(raw, &p); err != nil {
				t.Fatalf("panel: %v", err)
			}
			if ids[p.ID] {
				t.Errorf("panel id %d used twice", p.ID)
			}
			ids[p.ID] = true
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("panel %q queries nothing", p.Title)
			}
			for _, tg := range p.Targets {
				exprs = append(exprs, tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q string
		if json.Unmarshal(v.Query, &q) != nil {
			var obj struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(v.Query, &obj); err != nil {
				t.Errorf("variable %s: query %s", v.Name, v.Query)
			}
			q = obj.Query
		}
		// label_values(selector, label) queries selector's series.
		if rest, ok := strings.CutPrefix(strings.TrimSpace(q), "label_values("); ok {
			if i := strings.LastIndex(rest, ","); i >= 0 {
				q = rest[:i]
			}
		}
		exprs = append(exprs, q)
	}

	// The gateway's /metrics is SeaweedFS's registry: the metrics of this
	// package, and the consumer group metrics once RegisterGroups has run.
	gc := &groupCollector{groups: noGroups{}}
	switch err := stats.Gather.Register(gc); {
	case err == nil:
		defer stats.Gather.Unregister(gc)
	case errors.As(err, &prometheus.AlreadyRegisteredError{}):
	default:
		t.Fatalf("registering the group metrics: %v", err)
	}

	used := map[string]bool{}
	for _, expr := range exprs {
		names := promqlMetricNames(expr)
		if len(names) == 0 {
			t.Errorf("no metric in %q", expr)
		}
		for _, name := range names {
			base, ok := registeredMetric(name)
			if !ok {
				t.Errorf("the dashboard queries %s, which the gateway does not export (in %q)", name, expr)
			}
			used[base] = true
		}
	}
	for _, name := range requiredMetrics {
		if !used[name] {
			t.Errorf("no panel shows %s", name)
		}
	}
	if !t.Failed() {
		t.Logf("%d expressions, %d metrics, all exported", len(exprs), len(used))
	}
}

type noGroups struct{}

func (noGroups) GroupStats(context.Context) ([]GroupStat, error) { return nil, nil }

// registeredMetric tells whether SeaweedFS's registry, which the gateway's
// /metrics serves, has a metric of this name, or, for a histogram's
// _bucket, _sum and _count series, of its base name; it returns that name.
func registeredMetric(name string) (string, bool) {
	if registered(name) {
		return name, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && registered(base) {
			return base, true
		}
	}
	return name, false
}

// registered asks the registry itself: a registry lists no names, but it
// refuses a collector describing a metric name it already has (with other
// help), and takes one describing a name it does not have, given back at
// once. The names come from promqlMetricNames, so they are valid.
func registered(name string) bool {
	p := probe{prometheus.NewDesc(name, "dashboard test probe", nil, nil)}
	if err := stats.Gather.Register(p); err != nil {
		return true
	}
	stats.Gather.Unregister(p)
	return false
}

type probe struct{ desc *prometheus.Desc }

func (p probe) Describe(ch chan<- *prometheus.Desc) { ch <- p.desc }
func (p probe) Collect(chan<- prometheus.Metric)    {}

// promqlKeywords are PromQL's aggregations, operators and modifiers; an
// identifier followed by "(" is a function.
var promqlKeywords = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
	"limitk": true, "limit_ratio": true, "and": true, "or": true, "unless": true, "atan2": true,
	"bool": true, "offset": true, "inf": true, "nan": true,
}

// promqlGrouping are the keywords followed by a list of label names.
var promqlGrouping = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

// promqlMetricNames returns the metric names a PromQL expression (with
// Grafana's $variables) selects: its identifiers that are not functions,
// keywords, label names of groupings, or inside label matchers, ranges and
// strings.
func promqlMetricNames(expr string) []string {
	var names []string
	isIdentStart := func(c byte) bool { return c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
	isIdent := func(c byte) bool { return isIdentStart(c) || '0' <= c && c <= '9' }
	skipSpace := func(i int) int {
		for i < len(expr) && strings.IndexByte(" \t\r\n", expr[i]) >= 0 {
			i++
		}
		return i
	}
	// skipTo returns the index after the close matching the opener at i,
	// passing over strings.
	skipTo := func(i int, open, close byte) int {
		depth := 0
		for ; i < len(expr); i++ {
			switch c := expr[i]; {
			case c == '"' || c == '\'' || c == '`':
				for i++; i < len(expr) && expr[i] != c; i++ {
					if expr[i] == '\\' && c != '`' {
						i++
					}
				}
			case c == open:
				depth++
			case c == close:
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for ; j < len(expr) && expr[j] != c; j++ {
				if expr[j] == '\\' && c != '`' {
					j++
				}
			}
			i = j + 1
		case c == '{':
			i = skipTo(i, '{', '}')
		case c == '[':
			i = skipTo(i, '[', ']')
		case c == '#':
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case c == '$': // a Grafana variable: $name or ${name...}
			i++
			if i < len(expr) && expr[i] == '{' {
				i = skipTo(i, '{', '}')
			}
			for i < len(expr) && isIdent(expr[i]) {
				i++
			}
		case '0' <= c && c <= '9' || c == '.': // a number or a duration
			for i < len(expr) && (isIdent(expr[i]) || expr[i] == '.') {
				i++
			}
		case isIdentStart(c):
			j := i
			for j < len(expr) && isIdent(expr[j]) {
				j++
			}
			word, next := expr[i:j], skipSpace(j)
			i = j
			switch {
			case promqlGrouping[word]:
				if next < len(expr) && expr[next] == '(' {
					i = skipTo(next, '(', ')')
				}
			case promqlKeywords[word], next < len(expr) && expr[next] == '(':
			default:
				names = append(names, word)
			}
		default:
			i++
		}
	}
	return names
}

// weedCommand is a weed subcommand: its name and flags, as its source
// declares them.
type weedCommand struct {
	name  string
	flags map[string]weedFlag
}

type weedFlag struct {
	isBool bool
	def    string // the default value, when it is a literal
}

// weedCommands reads the subcommands of the weed binary from the source:
// SeaweedFS's table of commands (from the module this repository builds
// with), in which this repository's commands of the same name take the
// place of SeaweedFS's, as weed/weed.go does.
func weedCommands(t *testing.T) map[string]weedCommand {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/seaweedfs/seaweedfs")
	cmd.Dir = repoRoot
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m github.com/seaweedfs/seaweedfs: %v\n%s", err, stderr.Bytes())
	}
	upstream := parseCommands(t, filepath.Join(strings.TrimSpace(string(out)), "weed", "command"), "Commands")
	ours := parseCommands(t, filepath.Join(repoRoot, "weed", "command"), "")
	if len(upstream) == 0 || len(ours) == 0 {
		t.Fatalf("found %d SeaweedFS commands and %d of this repository", len(upstream), len(ours))
	}
	for name, c := range ours {
		upstream[name] = c
	}
	return upstream
}

// parseCommands returns the commands declared in the Go files of dir (only
// those listed in the slice variable table, if table is set).
func parseCommands(t *testing.T, dir, table string) map[string]weedCommand {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	byVar := map[string]*weedCommand{} // command variable -> command
	listed := map[string]bool{}
	type flagDecl struct {
		cmdVar, name string
		flag         weedFlag
	}
	var decls []flagDecl
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parsing %s: %v", path, err)
		}
		aliases := map[string]string{} // f := &cmd.Flag
		bind := func(lhs, rhs ast.Expr) {
			id, ok := lhs.(*ast.Ident)
			if !ok {
				return
			}
			if u, ok := rhs.(*ast.UnaryExpr); ok && u.Op == token.AND {
				rhs = u.X
			}
			switch r := rhs.(type) {
			case *ast.CompositeLit:
				for _, e := range r.Elts {
					if kv, ok := e.(*ast.KeyValueExpr); ok && isIdentNamed(kv.Key, "UsageLine") {
						if usage, ok := stringLit(kv.Value); ok && len(strings.Fields(usage)) > 0 {
							byVar[id.Name] = &weedCommand{name: strings.Fields(usage)[0], flags: map[string]weedFlag{}}
						}
					}
				}
				if id.Name == table {
					for _, e := range r.Elts {
						if v, ok := e.(*ast.Ident); ok {
							listed[v.Name] = true
						}
					}
				}
			case *ast.SelectorExpr:
				if x, ok := r.X.(*ast.Ident); ok && r.Sel.Name == "Flag" {
					aliases[id.Name] = x.Name
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i := range min(len(n.Names), len(n.Values)) {
					bind(n.Names[i], n.Values[i])
				}
			case *ast.AssignStmt:
				for i := range min(len(n.Lhs), len(n.Rhs)) {
					bind(n.Lhs[i], n.Rhs[i])
				}
			case *ast.CallExpr:
				// cmdX.Flag.Type("name", ...), alias.Type("name", ...),
				// and the *Var forms with the name second.
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				var cmdVar string
				switch x := sel.X.(type) {
				case *ast.SelectorExpr:
					if id, ok := x.X.(*ast.Ident); ok && x.Sel.Name == "Flag" {
						cmdVar = id.Name
					}
				case *ast.Ident:
					cmdVar = aliases[x.Name]
				}
				method := sel.Sel.Name
				arg := 0
				if strings.HasSuffix(method, "Var") {
					arg = 1
				}
				if cmdVar == "" || len(n.Args) <= arg+1 {
					return true
				}
				name, ok := stringLit(n.Args[arg])
				if !ok {
					return true
				}
				fl := weedFlag{isBool: strings.HasPrefix(method, "Bool")}
				if arg == 0 {
					if lit, ok := n.Args[1].(*ast.BasicLit); ok {
						fl.def = strings.Trim(lit.Value, "\"`")
					}
				}
				decls = append(decls, flagDecl{cmdVar, name, fl})
			}
			return true
		})
	}
	for _, d := range decls {
		if c := byVar[d.cmdVar]; c != nil {
			c.flags[d.name] = d.flag
		}
	}
	cmds := map[string]weedCommand{}
	for v, c := range byVar {
		if table == "" || listed[v] {
			cmds[c.name] = *c
		}
	}
	return cmds
}

func isIdentNamed(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// parsedCommand is a compose command line run by weed.
type parsedCommand struct {
	name  string
	flags map[string]string
}

// parseWeedCommand checks that args are a weed subcommand and flags it has.
func parseWeedCommand(args []string, commands map[string]weedCommand) (parsedCommand, error) {
	if len(args) == 0 {
		return parsedCommand{}, errors.New("no command")
	}
	wc, ok := commands[args[0]]
	if !ok {
		return parsedCommand{}, errors.New("weed has no subcommand " + strconv.Quote(args[0]))
	}
	if len(wc.flags) == 0 {
		return parsedCommand{}, errors.New("found no flags of weed " + args[0] + " in its source")
	}
	pc := parsedCommand{name: args[0], flags: map[string]string{}}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			return pc, errors.New("weed " + args[0] + ": unexpected argument " + strconv.Quote(a))
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		fl, ok := wc.flags[name]
		if !ok {
			return pc, errors.New("weed " + args[0] + " has no flag -" + name)
		}
		if !hasValue && !fl.isBool && i+1 < len(args) {
			i++
			value = args[i]
		}
		pc.flags[name] = strings.Trim(value, `"'`)
	}
	return pc, nil
}

// composeFile is the part of a compose file the test reads.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image string `yaml:"image"`
	Build *struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
	Command     words         `yaml:"command"`
	DependsOn   keys          `yaml:"depends_on"`
	Volumes     []volumeMount `yaml:"volumes"`
	Ports       []string      `yaml:"ports"`
	Healthcheck *struct {
		Test words `yaml:"test"`
	} `yaml:"healthcheck"`
}

// words is a command: a string split at spaces, or a list.
type words []string

func (w *words) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*w = strings.Fields(n.Value)
		return nil
	}
	var list []string
	err := n.Decode(&list)
	*w = list
	return err
}

// keys is depends_on: a list of services, or a map of them.
type keys []string

func (k *keys) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		for i := 0; i < len(n.Content); i += 2 {
			*k = append(*k, n.Content[i].Value)
		}
		return nil
	}
	var list []string
	err := n.Decode(&list)
	*k = list
	return err
}

// volumeMount is a service's volume, "source:target[:mode]" or the long
// syntax.
type volumeMount struct{ Source, Target string }

func (v *volumeMount) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		parts := strings.Split(n.Value, ":")
		if len(parts) == 1 {
			v.Target = parts[0] // an anonymous volume
		} else {
			v.Source, v.Target = parts[0], parts[1]
		}
		return nil
	}
	var long struct {
		Source string `yaml:"source"`
		Target string `yaml:"target"`
	}
	err := n.Decode(&long)
	v.Source, v.Target = long.Source, long.Target
	return err
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
