package docker_test

import (
	"context"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// TestDashboard and its checks of compose.yml, prometheus.yml and Grafana's
// provisioning, with the part of a compose file they read. The dashboard's
// expressions are checked in dashboard_test.go; weed's commands and flags
// are read from the source in weed_commands_test.go.

// TestDashboard checks the docker/ folder: the compose file runs weed
// commands with flags they have and wires its services together, Prometheus
// scrapes the gateways where compose serves their metrics, the files it
// mounts are there, and every metric the Grafana dashboard queries is one
// the gateway exports.
func TestDashboard(t *testing.T) {
	dockerDir := "." // the folder checked is this test's own
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
