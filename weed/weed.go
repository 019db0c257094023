// Command weed is SeaweedFS's weed binary, every upstream command included,
// with this project's Kafka gateway as `weed mq.kafka.gateway` and its load
// generator as `weed mq.kafka.bench`.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing/fstest"
	"text/template"

	swcommand "github.com/seaweedfs/seaweedfs/weed/command"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	weed_server "github.com/seaweedfs/seaweedfs/weed/server"
	"github.com/seaweedfs/seaweedfs/weed/util"
	flag "github.com/seaweedfs/seaweedfs/weed/util/fla9"
	util_http "github.com/seaweedfs/seaweedfs/weed/util/http"

	"github.com/seaweedfs-kafka/gateway/weed/command"
)

// commands is upstream's table with our gateway in the place of upstream's
// mq.kafka.gateway, and our own commands added.
var commands = func() []*swcommand.Command {
	var out []*swcommand.Command
	for _, c := range swcommand.Commands {
		if c.Name() == command.MqKafkaGateway.Name() {
			c = command.MqKafkaGateway
		}
		out = append(out, c)
	}
	return append(out, command.MqKafkaBench, command.MqKafkaLink)
}()

func init() {
	// Upstream embeds the master and volume status pages' images and
	// styles; they are not part of the module's importable packages, so
	// those pages render unstyled here.
	weed_server.StaticFS = fstest.MapFS{}
	flag.Var(&util.ConfigurationFileDirectory, "config_dir", "directory with toml configuration files")
}

func main() {
	glog.MaxSize = 10 << 20
	glog.MaxFileCount = 5
	flag.Usage = usage

	if swcommand.AutocompleteMain(commands) {
		return
	}
	flag.Parse()
	args := flag.Args()
	if len(args) < 1 {
		usage()
	}
	if args[0] == "help" {
		help(args[1:])
		return
	}
	if args[0] != swcommand.GetFuseCommandName() {
		util_http.InitGlobalHttpClient()
	}
	for _, cmd := range commands {
		if cmd.Name() != args[0] || cmd.Run == nil {
			continue
		}
		cmd.Flag.Usage = func() { cmd.Usage() }
		cmd.Flag.Parse(args[1:])
		status := 0
		if !cmd.Run(cmd, cmd.Flag.Args()) {
			fmt.Fprintln(os.Stderr)
			cmd.Flag.Usage()
			fmt.Fprintln(os.Stderr, "Default Parameters:")
			cmd.Flag.PrintDefaults()
			status = 1
		}
		status = max(status, swcommand.CommandExitStatus())
		glog.Flush()
		os.Exit(status)
	}
	fmt.Fprintf(os.Stderr, "weed: unknown subcommand %q\nRun 'weed help' for usage.\n", args[0])
	os.Exit(2)
}

const usageText = `
SeaweedFS: store billions of files and serve them fast!
This build serves the Kafka protocol too: see "weed help mq.kafka.gateway".

Usage:

	weed command [arguments]

The commands are:
{{range .}}{{if .Runnable}}
    {{.Name | printf "%-18s"}} {{.Short}}{{end}}{{end}}

Use "weed help [command]" for more information about a command.

`

const helpText = `{{if .Runnable}}Usage: weed {{.UsageLine}}
{{end}}
  {{.Long}}
`

func render(w io.Writer, text string, data any) {
	t := template.Must(template.New("top").Funcs(template.FuncMap{"trim": strings.TrimSpace}).Parse(text))
	if err := t.Execute(w, data); err != nil {
		panic(err)
	}
}

func usage() {
	render(os.Stderr, usageText, commands)
	fmt.Fprintln(os.Stderr, `For Logging, use "weed [logging_options] [command]". The logging options are:`)
	flag.PrintDefaults()
	os.Exit(2)
}

func help(args []string) {
	if len(args) == 0 {
		render(os.Stdout, usageText, commands)
		return
	}
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: weed help command\n\nToo many arguments given.")
		os.Exit(2)
	}
	for _, cmd := range commands {
		if cmd.Name() == args[0] {
			render(os.Stdout, helpText, cmd)
			if cmd.Run != nil {
				fmt.Fprintln(os.Stderr, "Default Parameters:")
				cmd.Flag.PrintDefaults()
			}
			return
		}
	}
	fmt.Fprintf(os.Stderr, "Unknown help topic %#q.  Run 'weed help'.\n", args[0])
	os.Exit(2)
}
