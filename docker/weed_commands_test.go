package docker_test

import (
	"bytes"
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// weed's subcommands and their flags, read from the Go source, and the
// compose command lines checked against them.

// repoRoot is the repository root, seen from this package's folder, docker/
// (where go test runs its tests).
const repoRoot = ".."

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
